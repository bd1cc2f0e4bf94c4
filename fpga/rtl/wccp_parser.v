// Frame parser: watches the receive stream straight from the MAC (FCS included: the
// parser runs 5 cycles ahead of the MAC's FCS delay line) and extracts Ethernet (+ one
// 802.1Q tag), IPv4 and TCP/UDP/GRE fields of the frame without its FCS. s_end marks the
// stream's end, in the cycle after its last byte (s_valid low then).
//
// The FCS: the last 4 bytes of the stream are the FCS, which is only known at the end.
// Every header byte of a frame of at least 64 bytes (the minimum size; shorter frames are
// runts, dropped whatever they carry) before byte 60 is a data byte, so a header point
// before byte 60 is final at once. A header point at byte 60 or later (IPv4 options, VLAN
// and GRE) is final only when 4 more bytes have come (they may be the FCS: then the frame
// ends before its header point, as below): hdr_done waits for them. L4 bytes taken from
// the FCS are cleared at the end (the last 4 bytes' L4 positions are kept); the lengths
// (frame_len, avail) leave the FCS out. Only L4 bytes lie beyond byte 59 in a frame that
// is not a runt.
//
// Two result strobes (a byte on s_data in cycle t is in the input register in t+1 and its
// fields are captured at the end of t+1, visible in t+2; byte index k counts from the
// destination MAC's first byte):
//  - hdr_done: one-cycle pulse, exactly once per frame, in the first cycle in which the
//    header fields the decision uses are final (dst/src MAC, vlan, vlan_tci, is_ip, proto,
//    sip, dip, sport, dport, totlen, ihl, l4_word0, l4_byte4, l4_len4, l4_len8, tcpudp,
//    ip_hdr_ok): cycle t+1 for the header point byte on s_data in cycle t (the byte is then
//    in the input register; L4 bytes 3 and 11, in dport / l4_word0 and l4_len8, were
//    captured straight from s_data into registers of their own), except cycle t+2 where
//    the header point is IPv4 byte 19 (IHL < 5, or < 3 for GRE: a header the decision never
//    redirects on). Header point:
//      not IPv4 (ethertype after at most one 802.1Q tag != 0x0800): the low ethertype
//        byte (byte 13, or 17 when tagged);
//      IPv4 protocol 47 (GRE): IPv4 header byte 19 and L4 byte 11 both received;
//      other IPv4: IPv4 header byte 19 and L4 byte 3 both received (for them l4_byte4,
//        l4_len4 and l4_len8 are not part of the header and go on changing until done);
//    cycle t+1 (t+2: IPv4 byte 19) for a header point byte k < 60; for k >= 60, t+1 for
//    byte k+4 (a data byte: the FCS follows it; the header point byte is captured by then);
//    a frame that ends before its header point gets hdr_done together with done; if its
//    IPv4 datagram is also cut short (avail low), ip_hdr_ok is low with that hdr_done (the
//    fields a decision would use are not all in the frame: forwarded normally).
//    The fields stay valid until done.
//  - done: the second cycle after s_end (t+2 for s_end in t: the input register, then one
//    cycle computes `avail` and `frame_len` from registered fields). frame_len, avail and
//    ip_ok are valid only here. Every field stays valid until done and is cleared after it.
//
// Timing: the input byte is registered with its compares (zero byte/nibbles, 0x08, 0x81,
// TCP/UDP, GRE, version 4 with IHL >= 5) and every field is captured with an enable one LUT
// level from a register: byte positions are one-hot shift registers (Ethernet header
// positions 0..16, IPv4 header bytes 0..19, L4 bytes 0..11) and the L4 start is a small
// down-counter loaded from the IHL; no byte-position arithmetic or comparison sits in front
// of a capture. The IPv4 header point is a register (hp_l4 / hp_ih: the next byte is the
// header point, an L4 byte / IPv4 byte 19) set from one-hot positions selected by flags known
// since IPv4 byte 10; hdr_done's early form is a register computed a cycle ahead (hpe), OR-ed
// with its late form, so hdr_done is one LUT from registers (the receive queue pushes the
// bundle with it, one LUT further). The length checks against totlen (tl_hdr,
// tl_hdr4) are registered every cycle from the captured fields, valid one cycle after them
// (long before the header point, and at done for a frame that ends early).
`timescale 1ns / 1ps
`default_nettype none
module wccp_parser (
    input  wire         clk,
    input  wire         rst,
    input  wire [7:0]   s_data,
    input  wire         s_nz,         // s_data != 0x00, from the stream's source (a register there: timing)
    input  wire         s_valid,
    input  wire         s_end,       // the cycle after the stream's last byte
    output reg          done,
    output reg          hdr_done,    // header fields final (see above), once per frame (not registered)
    output reg  [47:0]  dst_mac,
    output reg  [47:0]  src_mac,
    output reg          vlan,
    output reg  [15:0]  vlan_tci,
    output reg  [10:0]  frame_len,   // bytes without FCS (valid at done)
    output wire         is_ip,       // ethertype 0x0800 and at least one IPv4 byte
    output wire         ip_hdr_ok,   // IPv4 header valid for redirect (valid with hdr_done)
    output reg          avail,       // whole IPv4 datagram received, frame < 2 KiB (at done)
    output wire         ip_ok,       // ip_hdr_ok && avail (valid at done)
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
    output wire [15:0]  l4_len4,     // bytes 6..7 after IP header
    output reg          tcpudp       // protocol is TCP or UDP (sport/dport are l4_word0 then)
);
    reg [11:0] fcnt;         // bytes of this frame, saturating at 2048 (frame_len wraps to 0)
    reg [16:0] eh;           // one-hot: current byte is Ethernet header byte k (eh[0]: first)
    reg        dm_pos, sm_pos;   // |eh[5:0] (destination MAC byte), |eh[11:6] (source MAC)
    reg [19:0] ih;           // one-hot: current byte is IPv4 header byte k
    reg [11:0] lh;           // one-hot: current byte is L4 byte k
    reg [5:0]  lcd;          // bytes still to skip before L4 byte 0
    reg        lcd_on;       // lcd != 0
    reg        lcd1;         // lcd == 1
    reg        in_ip;        // past the Ethernet header of an IPv4 frame
    reg        ip_any;       // at least one IPv4 byte seen
    reg [10:0] ipn;          // IPv4 bytes seen (frame_len - l2len for frames < 2 KiB)
    reg        et08, et81;   // high ethertype byte is 0x08 / 0x81
    reg        et_nx;        // high ethertype byte is neither 0x08 nor (first one) 0x81
    reg        etlo;         // current byte is the low ethertype byte (13, or 17 if tagged)
    reg [3:0]  ihl_r;
    reg        ihl_lo5, ihl_lo3;     // IHL < 5 / IHL < 3 (where the IPv4 header point is)
    reg        gre;          // protocol 47
    reg [15:0] tlen;
    reg        frag_hi0, frag_lo0;   // fragment offset/MF bits zero
    reg [7:0]  prot;
    reg [31:0] s_ip, d_ip;
    reg [7:0]  l4b [0:11];
    reg        done0;        // s_end registered (cycle after the last byte): fields final
    reg        ge60;         // the byte in the input register is byte 60 or later
    reg        at59;         // fcnt == 59
    reg [3:0]  hpw;          // a header point at byte >= 60, 1..4 bytes ago
    reg [47:0] lhx;          // L4 positions (lh) of the last 4 bytes, newest in [11:0]
    reg [16:0] tlen4;        // tlen + 4: the datagram and the FCS
    reg        ihl_good, tl_hdr, tl_hdr4;
    reg        hp_l4;        // the next byte is the IPv4 header point, an L4 byte (3 or 11)
    reg        hp_ih;        // the next byte is the IPv4 header point, IPv4 byte 19
    reg        hd_r;         // hdr_done a cycle after its byte (IPv4 byte 19, or at the end)
    reg        hd_seen;      // hdr_done already given for this frame
    reg        hd_late;      // hdr_done at the frame end (header point not reached)
    integer k;

    // input register stage with the byte compares precomputed (timing: every capture
    // enable and flag is then one or two LUT levels from registers)
    reg        v;
    reg [7:0]  d;
    reg        zlo, z54, b00, b08, b81, b_tu, b_gre, b_v45;
    always @(posedge clk) begin
        v <= s_valid && !rst;
        done0 <= !rst && s_end;
        d <= s_data;
        zlo <= (s_data[3:0] == 4'd0);
        z54 <= (s_data[5:4] == 2'd0);
        b00 <= (s_data == 8'h00);
        b08 <= (s_data == 8'h08);
        b81 <= (s_data == 8'h81);
        b_tu <= (s_data == 8'd6) || (s_data == 8'd17);
        b_gre <= (s_data == 8'd47);
        b_v45 <= (s_data[7:4] == 4'd4) && (s_data[3:0] >= 4'd5);   // version 4, IHL >= 5
    end
    // Fields are cleared after `done` (and at reset), so a frame starts from zeros; the
    // first byte of the next frame may coincide with the clear (it only feeds dst_mac).
    wire clr = rst || done;

    // byte positions (one-hot shift registers, restarted by a synchronous reset at the
    // frame end) and the L4 start counter
    wire restart = rst || done0;
    always @(posedge clk) begin
        if (restart) begin
            eh <= 17'd1;
            dm_pos <= 1'b1;
            sm_pos <= 1'b0;
            ih <= 20'd0;
            lh <= 12'd0;
            lcd_on <= 1'b0;
            lcd1 <= 1'b0;
            etlo <= 1'b0;
            hp_l4 <= 1'b0;
            hp_ih <= 1'b0;
            hpw <= 4'd0;
            lhx <= 48'd0;
        end else if (v) begin
            eh <= {eh[15:0], 1'b0};
            dm_pos <= |eh[4:0];
            sm_pos <= |eh[10:5];
            // the next byte is IPv4 byte 0 after an 0x0800 ethertype
            ih <= {ih[18:0], etlo && et08 && b00};
            etlo <= eh[12] || (vlan && eh[16]);
            // L4 byte 0 is IPv4 byte 4*IHL (IHL 0: bytes 1..11 land at L4 index 1..11)
            if (ih[0]) lh <= {10'd0, zlo, 1'b0};
            else lh <= {lh[10:0], lcd1};
            if (ih[0]) begin
                lcd <= zlo ? 6'd0 : {d[3:0] - 4'd1, 2'b11};
                lcd_on <= !zlo;
                lcd1 <= 1'b0;
            end else if (lcd_on) begin
                lcd <= lcd - 6'd1;
                lcd_on <= !lcd1;
                lcd1 <= (lcd == 6'd2);
            end
            // IPv4 header point: the later of IPv4 byte 19 and L4 byte 3 (GRE: 11). L4 byte
            // 3 is IPv4 byte 4*IHL+3 (IHL 0: 3), byte 11 is 4*IHL+11 (IHL 0: 11), so byte 19
            // is the later one for IHL < 5 (GRE: IHL < 3). gre, ihl_lo3/5 are final from
            // IPv4 byte 10 on; every position used here comes after it.
            hp_l4 <= gre ? (!ihl_lo3 && lh[10]) : (!ihl_lo5 && lh[2]);
            hp_ih <= (gre ? ihl_lo3 : ihl_lo5) && ih[18];
            // a header point at byte 60 or later is final with the 4th byte after it
            hpw <= {hpw[2:0], (hp_l4 || hp_ih) && ge60};
            lhx <= {lhx[35:0], lh};
        end
    end
    // header point final with the byte in the input register: the IPv4 one (an L4 byte)
    // before byte 60, the 4th byte after an IPv4 one at byte 60 or later, or the low
    // ethertype byte of a non-IPv4 frame (not 0x0800, and not 0x8100 as the first
    // ethertype; always before byte 60); each field is final with it (a non-IPv4 frame's low
    // ethertype byte is not a field; L4 bytes 3 and 11 are captured from s_data below).
    // IPv4 byte 19 as the header point (hpt_ih): dip's last byte is not captured early,
    // hdr_done follows a cycle later.
    //   hpt_e = v && ((hp_l4 && !ge60) || hpw[3] || (etlo && (!b00 || et_nx)))
    // is a register, hpe: the same function of its terms' next values, one cycle early (each
    // n_* below repeats its register's update; timing: hdr_done, and the receive queue's
    // push from it, are then one LUT from registers). The reset is the flip-flop's own (its
    // set/reset pin): the n_* restart with done0 / done alone, as rst clears hpe anyway (the
    // reset buffer's long route then ends at that pin, not in front of the logic).
    wire n_etp  = eh[12] || (vlan && eh[16]);      // the byte in d is the high ethertype byte
    wire n_hpl4 = done0 ? 1'b0 : v ? (gre ? (!ihl_lo3 && lh[10]) : (!ihl_lo5 && lh[2])) : hp_l4;
    wire n_ge60 = done ? 1'b0 : (v && at59) ? 1'b1 : ge60;
    wire n_hpw3 = done0 ? 1'b0 : v ? hpw[2] : hpw[3];
    wire n_etlo = done0 ? 1'b0 : v ? n_etp : etlo;
    wire n_etnx = (v && n_etp) ? (!b08 && (vlan || !b81)) : et_nx;
    reg  hpe;
    always @(posedge clk)
        if (rst) hpe <= 1'b0;
        else hpe <= s_valid && ((n_hpl4 && !n_ge60) || n_hpw3 || (n_etlo && (s_nz || n_etnx)));
    wire hpt_e  = hpe;
    wire hpt_ih = v && hp_ih && !ge60;
    always @(*) hdr_done = hpt_e || hd_r;
    always @(posedge clk) begin
        done <= !rst && done0;
        // v is low in done0's cycle (the idle cycle after the last byte)
        hd_r <= !rst && (hpt_ih || (done0 && !hd_seen));
        hd_late <= !rst && done0 && !hd_seen;
        hd_seen <= !clr && (hd_seen || hpt_e || hpt_ih);
    end
    always @(posedge clk) begin
        if (clr) fcnt <= {11'd0, v && !rst};
        else if (v && !fcnt[11]) fcnt <= fcnt + 12'd1;
        // fcnt is the index of the byte in the input register
        if (clr) ge60 <= 1'b0;
        else if (v && at59) ge60 <= 1'b1;
        // at59: fcnt == 59, kept with fcnt (timing: ge60's next value, and hpe from it,
        // are then a gate over registers, not a 12-bit compare)
        if (clr) at59 <= 1'b0;
        else if (v && !fcnt[11]) at59 <= fcnt == 12'd58;
        if (done0) frame_len <= fcnt[10:0] - 11'd4;
        if (clr) ipn <= 11'd0;
        else if (v && in_ip) ipn <= ipn + 11'd1;
    end

    // L4 bytes 3 and 11 captured straight from s_data (visible with the byte in the input
    // register): the byte on s_data is L4 byte k when the input register's byte was k - 1
    // (v), or when the next byte is k (no byte in the input register: lh holds the next one's
    // position)
    wire c3  = s_valid && (v ? (lh[2] && !ih[0]) : lh[3]);
    wire c11 = s_valid && (v ? (lh[10] && !ih[0]) : lh[11]);
    reg [7:0] l4b3, l4b11;   // (l4b[3] and l4b[11] are not used)
    always @(posedge clk) begin
        if (clr) begin
            l4b3 <= 8'd0;
            l4b11 <= 8'd0;
        end else if (done0) begin
            if (lhx[3] || lhx[15] || lhx[27] || lhx[39]) l4b3 <= 8'd0;
            if (lhx[11] || lhx[23] || lhx[35] || lhx[47]) l4b11 <= 8'd0;
        end else begin
            if (c3) l4b3 <= s_data;
            if (c11) l4b11 <= s_data;
        end
    end
    // field capture: one enable per field (a one-hot position bit and s_valid)
    always @(posedge clk) begin
        if (v && dm_pos) dst_mac <= {dst_mac[39:0], d};
        if (v && sm_pos) src_mac <= {src_mac[39:0], d};
        if (v && (eh[12] || (vlan && eh[16]))) begin
            et08 <= b08;
            et81 <= b81;
            et_nx <= !b08 && (vlan || !b81);
        end
        if (clr) begin
            vlan <= 1'b0;
            vlan_tci <= 16'd0;
            in_ip <= 1'b0;
            ip_any <= 1'b0;
            ihl_r <= 4'd0;
            ihl_good <= 1'b0;
            ihl_lo5 <= 1'b0;
            ihl_lo3 <= 1'b0;
            tlen <= 16'd0;
            frag_hi0 <= 1'b1;
            frag_lo0 <= 1'b1;
            prot <= 8'd0;
            tcpudp <= 1'b0;
            gre <= 1'b0;
            s_ip <= 32'd0;
            d_ip <= 32'd0;
            for (k = 0; k < 12; k = k + 1) if (k != 3 && k != 11) l4b[k] <= 8'd0;
        end else if (v) begin
            if (eh[13]) vlan <= et81 && b00;
            if (vlan && eh[14]) vlan_tci[15:8] <= d;
            if (vlan && eh[15]) vlan_tci[7:0] <= d;
            if (etlo && et08 && b00) in_ip <= 1'b1;
            if (ih[0]) begin
                ihl_r <= d[3:0];
                ihl_good <= b_v45;
                ihl_lo5 <= (d[3:0] < 4'd5);
                ihl_lo3 <= (d[3:0] < 4'd3);
                ip_any <= 1'b1;
            end
            if (ih[2]) tlen[15:8] <= d;
            if (ih[3]) tlen[7:0] <= d;
            if (ih[6]) frag_hi0 <= zlo && z54;
            if (ih[7]) frag_lo0 <= b00;
            if (ih[9]) begin
                prot <= d;
                tcpudp <= b_tu;
                gre <= b_gre;
            end
            if (|ih[15:12]) s_ip <= {s_ip[23:0], d};
            if (|ih[19:16]) d_ip <= {d_ip[23:0], d};
            for (k = 0; k < 12; k = k + 1)
                if (lh[k] && k != 3 && k != 11) l4b[k] <= d;
        end else if (done0) begin
            // L4 bytes taken from the last 4 bytes (the FCS) are not the frame's
            for (k = 0; k < 12; k = k + 1)
                if ((lhx[k] || lhx[12 + k] || lhx[24 + k] || lhx[36 + k]) && k != 3 && k != 11) l4b[k] <= 8'd0;
        end
    end

    // length checks against the IPv4 total length: registered every cycle (valid one cycle
    // after tlen/ihl are captured); the datagram check needs the whole frame (at done0)
    always @(posedge clk) begin
        tl_hdr <= (tlen[15:2] >= {10'd0, ihl_r});    // tlen >= 4*IHL
        tl_hdr4 <= (tlen[15:2] > {10'd0, ihl_r});    // tlen >= 4*IHL + 4
        tlen4 <= {1'b0, tlen} + 17'd4;
        // ipn counts the FCS too (not IPv4: 0, tlen 0); frames of 2 KiB and more (FCS
        // included) never count as available
        if (rst) avail <= 1'b0;
        else if (done0) avail <= (!ip_any || {6'd0, ipn} >= tlen4) && !fcnt[11];
    end

    assign is_ip     = ip_any;
    assign ip_hdr_ok = ip_any && ihl_good && tl_hdr && frag_hi0 && frag_lo0 && (!tcpudp || tl_hdr4) &&
                       !(hd_late && !avail);
    assign ip_ok     = ip_hdr_ok && avail;
    assign proto  = prot;
    assign sip    = s_ip;
    assign dip    = d_ip;
    // L4 bytes 3 and 11 (the last byte of an IPv4 header point) are l4b3 / l4b11, captured
    // from s_data (above): final in the cycle their byte is in the input register (hdr_done)
    assign sport  = tcpudp ? {l4b[0], l4b[1]} : 16'd0;
    assign dport  = tcpudp ? {l4b[2], l4b3} : 16'd0;
    assign totlen = tlen;
    assign ihl    = ihl_r;
    assign l4_word0 = {l4b[0], l4b[1], l4b[2], l4b3};
    assign l4_byte4 = l4b[4];
    assign l4_len4  = {l4b[6], l4b[7]};
    assign l4_len8  = {l4b[10], l4b11};
endmodule
`default_nettype wire
