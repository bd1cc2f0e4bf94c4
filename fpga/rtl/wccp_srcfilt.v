// Source prefilter of the decision core's cache-table scan. The scan compares a frame's
// source IPv4 address with the cache addresses the cache-source index lists under its fold
// (learning, "from a cache") and its source MAC with the learnt MACs of the L2-return
// caches, one table entry per cycle. This filter answers in three cycles, before the scan
// issues anything, whether it can find anything at all: one bit per 8-bit XOR fold of every
// cache address and every learnt MAC ever written to the tables. The bits are only ever set
// (never cleared, not even by rst: a table or learnt entry survives a reset too), so a "no"
// is exact (no entry can match) and a "maybe" only costs the scan. Client traffic (source
// neither a cache nor an L2-return cache) is decided in constant time whatever the table
// size; the MAC half alone (maybe_mac) tells the core whether to walk the L2-return run.
// The scan compares MACs only for caches that return traffic at L2, so the MAC bits count
// only once a cache method with L2 return has been written (l2_wr, sticky): with GRE-return
// caches a client frame that carries the same source MAC as a cache's own frames (both
// behind one router) is still filtered out.
//
//   write: ip_wr / mac_wr with the key, l2_wr; set on the edge after the one sampling them
//   query: q_en samples q_ip / q_mac at an edge; folded at the next, the 16 blocks read at
//          the one after, the bit picked at the next: maybe (a gate over three flip-flops) and
//          maybe_mac (over two) are valid after the third edge after the sample
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
    output wire        maybe,
    output wire        maybe_mac     // the MAC half of maybe: an L2-return cache's MAC may match
);
    function [7:0] fold32;
        input [31:0] k;
        fold32 = k[31:24] ^ k[23:16] ^ k[15:8] ^ k[7:0];
    endfunction
    function [7:0] fold48;
        input [47:0] k;
        fold48 = k[47:40] ^ k[39:32] ^ k[31:24] ^ k[23:16] ^ k[15:8] ^ k[7:0];
    endfunction

    // each bit set is 16 distributed-RAM blocks of 16 x 1 (the fold's high nibble picks the
    // block), read in two registered steps: every block at the low nibble, then the 16:1 pick
    reg        w_ip, w_mac, w_l2, l2_any, ip_hit, mac_hit;
    reg [7:0]  w_ip_a, w_mac_a, q_ip_a, q_mac_a;
    reg [3:0]  q_ip_hi, q_mac_hi;
    reg [15:0] ip_r16, mac_r16;
    reg [31:0] q_ip_r;
    reg [47:0] q_mac_r;
    initial begin
        w_ip = 1'b0;
        w_mac = 1'b0;
        w_l2 = 1'b0;
        l2_any = 1'b0;
    end
    genvar k;
    generate
        for (k = 0; k < 16; k = k + 1) begin : blk
            (* ram_style = "distributed" *) reg ipm [0:15];
            (* ram_style = "distributed" *) reg macm [0:15];
            integer i;
            initial begin
                for (i = 0; i < 16; i = i + 1) begin
                    ipm[i] = 1'b0;
                    macm[i] = 1'b0;
                end
            end
            always @(posedge clk) begin
                if (w_ip && w_ip_a[7:4] == k) ipm[w_ip_a[3:0]] <= 1'b1;
                if (w_mac && w_mac_a[7:4] == k) macm[w_mac_a[3:0]] <= 1'b1;
                ip_r16[k] <= ipm[q_ip_a[3:0]];
                mac_r16[k] <= macm[q_mac_a[3:0]];
            end
        end
    endgenerate
    always @(posedge clk) begin
        w_ip <= ip_wr;
        w_mac <= mac_wr;
        w_l2 <= l2_wr;
        if (w_l2) l2_any <= 1'b1;
        w_ip_a <= fold32(ip_key);
        w_mac_a <= fold48(mac_key);
        if (q_en) begin
            q_ip_r <= q_ip;
            q_mac_r <= q_mac;
        end
        q_ip_a <= fold32(q_ip_r);
        q_mac_a <= fold48(q_mac_r);
        q_ip_hi <= q_ip_a[7:4];
        q_mac_hi <= q_mac_a[7:4];
        ip_hit <= ip_r16[q_ip_hi];
        mac_hit <= mac_r16[q_mac_hi];
    end
    assign maybe_mac = l2_any & mac_hit;
    assign maybe = ip_hit | maybe_mac;
endmodule
`default_nettype wire
