// Source prefilter of a decision engine's cache-table scan. The scan compares a frame's
// source IPv4 address with every cache address (learning, "from a cache") and its source
// MAC with every learnt L2-return cache MAC, one table entry per cycle: decision time grew
// with the number of configured caches. This filter answers in two cycles whether the scan
// can find anything at all: one bit per 8-bit XOR fold of every cache address and every
// learnt MAC ever written to the tables. The bits are only ever set (never cleared, not even
// by rst: a table or learnt entry survives a reset too), so a "no" is exact (no entry can
// match) and a "maybe" only costs the full scan. Client traffic (source neither a cache nor
// an L2-return cache) is decided in constant time whatever the table size.
// The scan compares MACs only for caches that return traffic at L2, so the MAC bits count
// only once a cache method with L2 return has been written (l2_wr, sticky): with GRE-return
// caches a client frame that carries the same source MAC as a cache's own frames (both
// behind one router) is still filtered out.
//
//   write: ip_wr / mac_wr with the key, l2_wr; set two edges later (registered fold)
//   query: q_en samples q_ip / q_mac (folded) at an edge; maybe is valid after the next edge
`timescale 1ns / 1ps
`default_nettype none
module wccp_srcfilt (
    input  wire        clk,
    input  wire        ip_wr,
    input  wire [31:0] ip_key,
    input  wire        mac_wr,
    input  wire [47:0] mac_key,
    input  wire        l2_wr,
    input  wire        q_en,
    input  wire [31:0] q_ip,
    input  wire [47:0] q_mac,
    output reg         maybe
);
    function [7:0] fold32;
        input [31:0] k;
        fold32 = k[31:24] ^ k[23:16] ^ k[15:8] ^ k[7:0];
    endfunction
    function [7:0] fold48;
        input [47:0] k;
        fold48 = k[47:40] ^ k[39:32] ^ k[31:24] ^ k[23:16] ^ k[15:8] ^ k[7:0];
    endfunction

    // one-bit-wide memories with an asynchronous read port: distributed (LUT) RAM
    (* ram_style = "distributed" *) reg ip_bm  [0:255];
    (* ram_style = "distributed" *) reg mac_bm [0:255];
    integer i;
    initial begin
        for (i = 0; i < 256; i = i + 1) begin
            ip_bm[i] = 1'b0;
            mac_bm[i] = 1'b0;
        end
    end

    reg       w_ip, w_mac, w_l2, l2_any;
    reg [7:0] w_ip_a, w_mac_a, q_ip_a, q_mac_a;
    initial begin
        w_ip = 1'b0;
        w_mac = 1'b0;
        w_l2 = 1'b0;
        l2_any = 1'b0;
    end
    always @(posedge clk) begin
        w_ip <= ip_wr;
        w_mac <= mac_wr;
        w_l2 <= l2_wr;
        if (w_l2) l2_any <= 1'b1;
        w_ip_a <= fold32(ip_key);
        w_mac_a <= fold48(mac_key);
        if (w_ip) ip_bm[w_ip_a] <= 1'b1;
        if (w_mac) mac_bm[w_mac_a] <= 1'b1;
        if (q_en) begin
            q_ip_a <= fold32(q_ip);
            q_mac_a <= fold48(q_mac);
        end
        maybe <= ip_bm[q_ip_a] | (l2_any && mac_bm[q_mac_a]);
    end
endmodule
`default_nettype wire
