// ARP-reply detector (one per receive port, active discovery): watches the receive MAC's
// stream (FCS removed; m_last with m_good) and reports every good frame that is an ARP reply
// addressed to the appliance: Ethernet destination = appl_mac, ethertype 0x0806 (after at
// most one 802.1Q tag), hardware type 1, protocol type 0x0800, lengths 6 / 4, opcode 2.
// cap_valid pulses four cycles after the frame's last byte, with the ARP sender protocol
// address (cap_sip) and the Ethernet source MAC (cap_mac). It only observes: the frame goes
// through the receive queue and the decision like any other (forwarded normally).
// Timing: byte positions are a one-hot shift register and the byte compares against the
// few constants are registered with the byte, so every check is one or two LUTs from
// registers, and so are the field captures' enables; the destination compare is registered
// every cycle (the MAC is final long before the frame's end).
`timescale 1ns / 1ps
`default_nettype none
module wccp_arpcap (
    input  wire        clk,
    input  wire        rst,
    input  wire [7:0]  s_data,
    input  wire        s_valid,
    input  wire        s_last,
    input  wire        s_good,
    input  wire [47:0] appl_mac,
    output reg         cap_valid,
    output reg  [31:0] cap_sip,
    output reg  [47:0] cap_mac
);
    // stage 1: the byte, its position and its compares
    reg [35:0] ps;            // one-hot position of the next byte (0 past byte 35)
    /* verilator lint_off UNUSEDSIGNAL */
    reg [25:0] pos;           // one-hot position of the byte in d, up to the last checked byte
    /* verilator lint_on UNUSEDSIGNAL */
    reg [7:0]  d;
    reg        v, l, g;
    reg        e00, e01, e02, e04, e06, e08, e81;
    // the field captures' enables for the byte in d (registered with it: each enable fans
    // out to 32 or 48 flip-flops, so it is one flip-flop, not a gate on the position bits)
    reg        c_dm, c_sm, c_su, c_st;
    always @(posedge clk) begin
        v <= s_valid && !rst;
        c_dm <= s_valid && !rst && |ps[5:0];
        c_sm <= s_valid && !rst && |ps[11:6];
        c_su <= s_valid && !rst && |ps[31:28];
        c_st <= s_valid && !rst && |ps[35:32];
        l <= s_valid && s_last && !rst;
        g <= s_good;
        d <= s_data;
        pos <= ps[25:0];
        e00 <= s_data == 8'h00;
        e01 <= s_data == 8'h01;
        e02 <= s_data == 8'h02;
        e04 <= s_data == 8'h04;
        e06 <= s_data == 8'h06;
        e08 <= s_data == 8'h08;
        e81 <= s_data == 8'h81;
        if (rst || (s_valid && s_last))
            ps <= 36'd1;
        else if (s_valid)
            ps <= {ps[34:0], 1'b0};
    end

    // stage 2: fields and the two readings (untagged: ARP at byte 14; one tag: at byte 18)
    reg [47:0] dmac, smac;
    reg [31:0] sip_u, sip_t;
    reg        ok_u, ok_t;    // every byte checked so far fits the untagged / tagged reading
    reg        dm_hi, dm_lo;  // dmac == appl_mac, halves (registered)
    wire       dm_eq = dm_hi && dm_lo;
    reg        first;         // the byte checked last (bad_u/bad_t) was the frame's first
    reg [1:0]  bad_u;         // it does not fit the untagged reading (two halves)
    reg [2:0]  bad_t;         // ... the tagged reading (the tag, two halves)
    reg        fin, fin_g;    // the frame's last byte was in d / the frame was good
    reg        fin2, fin2_g;  // ... a cycle later (its checks are in ok_u / ok_t now)
    // the ethertype 0806 and the ARP header's fixed bytes (htype 0001, ptype 0800, hlen 06,
    // plen 04, op 0002) in two halves (at[0] = the ethertype's first byte): one OR of five
    // position/compare pairs each
    function arp_bad_a(input [4:0] at, input x08, input x06, input x00, input x01);
        arp_bad_a = (at[0] && !x08) || (at[1] && !x06) || (at[2] && !x00) || (at[3] && !x01) ||
                    (at[4] && !x08);
    endfunction
    function arp_bad_b(input [4:0] at, input x06, input x00, input x04, input x02);
        arp_bad_b = (at[0] && !x00) || (at[1] && !x06) || (at[2] && !x04) || (at[3] && !x00) ||
                    (at[4] && !x02);
    endfunction
    always @(posedge clk) begin
        dm_hi <= dmac[47:24] == appl_mac[47:24];
        dm_lo <= dmac[23:0] == appl_mac[23:0];
        fin <= l;
        fin_g <= g;
        fin2 <= fin;
        fin2_g <= fin_g;
        // the byte's checks registered, then folded into the readings (timing)
        first <= v && pos[0];
        bad_u[0] <= v && arp_bad_a(pos[16:12], e08, e06, e00, e01);
        bad_u[1] <= v && arp_bad_b(pos[21:17], e06, e00, e04, e02);
        bad_t[0] <= v && ((pos[12] && !e81) || (pos[13] && !e00));
        bad_t[1] <= v && arp_bad_a(pos[20:16], e08, e06, e00, e01);
        bad_t[2] <= v && arp_bad_b(pos[25:21], e06, e00, e04, e02);
        if (first) begin
            ok_u <= 1'b1;
            ok_t <= 1'b1;
        end else begin
            if (|bad_u) ok_u <= 1'b0;
            if (|bad_t) ok_t <= 1'b0;
        end
        if (c_dm) dmac <= {dmac[39:0], d};
        if (c_sm) smac <= {smac[39:0], d};
        if (c_su) sip_u <= {sip_u[23:0], d};
        if (c_st) sip_t <= {sip_t[23:0], d};
        if (rst) begin
            ok_u <= 1'b0;
            ok_t <= 1'b0;
            fin <= 1'b0;
            fin2 <= 1'b0;
            first <= 1'b0;
            bad_u <= 2'd0;
            bad_t <= 3'd0;
        end
    end

    // stage 3: the report
    always @(posedge clk) begin
        cap_valid <= !rst && fin2 && fin2_g && dm_eq && (ok_u || ok_t);
        cap_sip <= ok_t ? sip_t : sip_u;
        cap_mac <= smac;
    end
endmodule
`default_nettype wire
