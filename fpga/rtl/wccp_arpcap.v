// ARP-reply detector (one per receive port, active discovery): watches the receive MAC's
// stream (FCS removed; m_last with m_good) and reports every good frame that is an ARP reply
// addressed to the appliance: Ethernet destination = appl_mac, ethertype 0x0806 (after at
// most one 802.1Q tag), hardware type 1, protocol type 0x0800, lengths 6 / 4, opcode 2.
// cap_valid pulses two cycles after the frame's last byte, with the ARP sender protocol
// address (cap_sip) and the Ethernet source MAC (cap_mac). It only observes: the frame goes
// through the receive queue and the decision like any other (forwarded normally).
// Timing: byte positions are a one-hot shift register and the byte compares against the
// few constants are registered with the byte, so every check is one or two LUTs from
// registers; the destination compare is registered every cycle (the MAC is final long
// before the frame's end).
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
    reg [35:0] pos;           // one-hot position of the byte in d (26, 27: nothing to check)
    /* verilator lint_on UNUSEDSIGNAL */
    reg [7:0]  d;
    reg        v, l, g;
    reg        e00, e01, e02, e04, e06, e08, e81;
    always @(posedge clk) begin
        v <= s_valid && !rst;
        l <= s_valid && s_last && !rst;
        g <= s_good;
        d <= s_data;
        pos <= ps;
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
    reg        dm_eq;         // dmac == appl_mac (registered)
    reg        fin, fin_g;    // the frame's last byte was in d / the frame was good
    // the ARP header's fixed bytes (htype 0001, ptype 0800, hlen 06, plen 04, op 0002)
    // after the ethertype 0806, at byte b of the reading
    function arp_bad(input [9:0] at, input x08, input x06, input x00, input x01, input x04,
                     input x02);
        arp_bad = (at[0] && !x08) || (at[1] && !x06) || (at[2] && !x00) || (at[3] && !x01) ||
                  (at[4] && !x08) || (at[5] && !x00) || (at[6] && !x06) || (at[7] && !x04) ||
                  (at[8] && !x00) || (at[9] && !x02);
    endfunction
    always @(posedge clk) begin
        dm_eq <= dmac == appl_mac;
        fin <= l;
        fin_g <= g;
        if (v) begin
            if (|pos[5:0]) dmac <= {dmac[39:0], d};
            if (|pos[11:6]) smac <= {smac[39:0], d};
            if (|pos[31:28]) sip_u <= {sip_u[23:0], d};
            if (|pos[35:32]) sip_t <= {sip_t[23:0], d};
            if (pos[0]) begin
                ok_u <= 1'b1;
                ok_t <= 1'b1;
            end else begin
                if (arp_bad(pos[21:12], e08, e06, e00, e01, e04, e02)) ok_u <= 1'b0;
                if ((pos[12] && !e81) || (pos[13] && !e00) ||
                    arp_bad(pos[25:16], e08, e06, e00, e01, e04, e02)) ok_t <= 1'b0;
            end
        end
        if (rst) begin
            ok_u <= 1'b0;
            ok_t <= 1'b0;
            fin <= 1'b0;
        end
    end

    // stage 3: the report
    always @(posedge clk) begin
        cap_valid <= !rst && fin && fin_g && dm_eq && (ok_u || ok_t);
        cap_sip <= ok_t ? sip_t : sip_u;
        cap_mac <= smac;
    end
endmodule
`default_nettype wire
