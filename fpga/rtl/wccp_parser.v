// Frame parser: watches the receive stream (FCS already removed) and extracts
// Ethernet (+ one 802.1Q tag), IPv4 and TCP/UDP/GRE fields. Results are valid in the
// cycle `done` is high (the cycle after the last byte).
`timescale 1ns / 1ps
`default_nettype none
module wccp_parser (
    input  wire         clk,
    input  wire         rst,
    input  wire [7:0]   s_data,
    input  wire         s_valid,
    input  wire         s_last,
    output reg          done,
    output reg  [47:0]  dst_mac,
    output reg  [47:0]  src_mac,
    output reg          vlan,
    output reg  [15:0]  vlan_tci,
    output reg  [10:0]  frame_len,   // bytes without FCS
    output wire         is_ip,       // ethertype 0x0800
    output wire         ip_ok,       // IPv4 valid for redirect
    output wire [7:0]   proto,
    output wire [31:0]  sip,
    output wire [31:0]  dip,
    output wire [15:0]  sport,       // 0 unless TCP/UDP
    output wire [15:0]  dport,
    output wire [15:0]  totlen,
    output wire [3:0]   ihl,
    output wire [31:0]  l4_word0,    // first 4 bytes after the IP header (GRE flags+proto)
    output wire [7:0]   l4_byte4,    // 5th byte (first byte after the GRE header)
    output wire [15:0]  l4_len8,     // bytes 10..11 after IP header (inner total length if no redirect hdr... see decide)
    output wire [15:0]  l4_len4      // bytes 6..7 after IP header
);
    reg [10:0] pos;
    reg [15:0] etype;
    reg [7:0]  ver_ihl;
    reg [15:0] tlen;
    reg [13:0] frag;
    reg [7:0]  prot;
    reg [31:0] s_ip, d_ip;
    reg [7:0]  l4b [0:11];
    integer k;

    wire [10:0] l2len = vlan ? 11'd18 : 11'd14;
    wire [10:0] ipb = pos - l2len;
    // position of the first L4 byte, registered once the IHL is known (timing)
    reg  [10:0] l4_start;
    wire [10:0] l4pos = pos - l4_start;
    wire        in_ip = (pos >= l2len) && (pos >= 11'd14) && (etype == 16'h0800);

    always @(posedge clk) begin
        done <= 1'b0;
        if (rst) begin
            pos <= 11'd0;
            vlan <= 1'b0;
            etype <= 16'd0;
            frame_len <= 11'd0;
        end else if (s_valid) begin
            if (pos != 11'h7FF) pos <= pos + 11'd1;
            if (pos < 11'd6) dst_mac <= {dst_mac[39:0], s_data};
            else if (pos < 11'd12) src_mac <= {src_mac[39:0], s_data};
            else if (pos == 11'd12) etype[15:8] <= s_data;
            else if (pos == 11'd13) begin
                etype[7:0] <= s_data;
                vlan <= ({etype[15:8], s_data} == 16'h8100);
            end else if (vlan && pos == 11'd14) vlan_tci[15:8] <= s_data;
            else if (vlan && pos == 11'd15) vlan_tci[7:0] <= s_data;
            else if (vlan && pos == 11'd16) etype[15:8] <= s_data;
            else if (vlan && pos == 11'd17) etype[7:0] <= s_data;
            if (pos == 11'd0) begin
                vlan <= 1'b0;
                vlan_tci <= 16'd0;
                ver_ihl <= 8'd0;
                tlen <= 16'd0;
                frag <= 14'd0;
                prot <= 8'd0;
                s_ip <= 32'd0;
                d_ip <= 32'd0;
                for (k = 0; k < 12; k = k + 1) l4b[k] <= 8'd0;
                l4_start <= 11'h7FF;
            end
            if (in_ip) begin
                case (ipb)
                11'd0: begin
                    ver_ihl <= s_data;
                    l4_start <= l2len + {5'd0, s_data[3:0], 2'b00};
                end
                11'd2: tlen[15:8] <= s_data;
                11'd3: tlen[7:0] <= s_data;
                11'd6: frag[13:8] <= s_data[5:0];
                11'd7: frag[7:0] <= s_data;
                11'd9: prot <= s_data;
                11'd12, 11'd13, 11'd14, 11'd15: s_ip <= {s_ip[23:0], s_data};
                11'd16, 11'd17, 11'd18, 11'd19: d_ip <= {d_ip[23:0], s_data};
                default: ;
                endcase
                if (l4pos < 11'd12)
                    l4b[l4pos[3:0]] <= s_data;
            end
            if (s_last) begin
                pos <= 11'd0;
                done <= 1'b1;
                frame_len <= pos + 11'd1;
            end
        end
    end

    // validity (combinational on the captured fields, valid while done)
    wire [15:0] ip_avail = {5'd0, frame_len} - {5'd0, l2len};
    wire        ihl_ok = (ver_ihl[7:4] == 4'd4) && (ver_ihl[3:0] >= 4'd5);
    wire        len_ok = (tlen >= {10'd0, ver_ihl[3:0], 2'b00}) && (ip_avail >= tlen) &&
                         (frame_len >= l2len);
    wire        nofrag = (frag[13] == 1'b0) && (frag[12:0] == 13'd0);
    wire        tcpudp = (prot == 8'd6) || (prot == 8'd17);
    wire        l4_ok  = !tcpudp || (tlen >= {10'd0, ver_ihl[3:0], 2'b00} + 16'd4);
    assign is_ip  = (etype == 16'h0800) && (frame_len >= l2len + 11'd1);
    assign ip_ok  = is_ip && ihl_ok && len_ok && nofrag && l4_ok;
    assign proto  = prot;
    assign sip    = s_ip;
    assign dip    = d_ip;
    assign sport  = tcpudp ? {l4b[0], l4b[1]} : 16'd0;
    assign dport  = tcpudp ? {l4b[2], l4b[3]} : 16'd0;
    assign totlen = tlen;
    assign ihl    = ver_ihl[3:0];
    assign l4_word0 = {l4b[0], l4b[1], l4b[2], l4b[3]};
    assign l4_byte4 = l4b[4];
    assign l4_len4  = {l4b[6], l4b[7]};
    assign l4_len8  = {l4b[10], l4b[11]};
endmodule
`default_nettype wire
