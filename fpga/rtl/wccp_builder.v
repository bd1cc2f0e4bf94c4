// Frame builder (one per receive port): for each action, streams
//   act_hlen header bytes (built from the action's fields) ++ rx buffer [start + src_off, start + flen)
// towards the egress port, one byte per cycle, then releases the frame's buffer space
// (rel_ptr <= start + flen). flen is act_flen (act_cut = 0: store-and-forward, the frame's status
// was known at the decision) or fin_flen (act_cut = 1: cut-through, the frame is still arriving
// and its length/status follow on the fin channel). For act_kind 2 (GRE) the buffer part is
// clipped to at most gre_max bytes (the MTU - 28 of fpga_core, 1472 or more: an output frame
// of at most l3 + MTU bytes). Kinds: 0 copy,
// 1 L2 rewrite (hlen 12, src_off 12), 2 GRE encapsulation, 3 decapsulation. Every kind copies
// up to the frame end (the IP datagram and whatever follows it: padding, a trailer).
//
// Fin channel (fin_valid / fin_ready / fin_good / fin_flen): one fin per act_cut action, in
// order, taken into a one-entry register whenever it is free (fin_ready; it is freed when the
// cut frame it belongs to is handed over or skipped), so a fin may come before its action,
// during the header or during the copy. A fin is bad when fin_good = 0 or fin_flen <= act_src_off.
//  - Fin margin F = 4: when a fin is taken (fin_valid && fin_ready), the builder's next read
//    address (buf_raddr) must be at least 4 bytes before the frame end, i.e.
//    act_start + fin_flen - buf_raddr >= 4 (mod the buffer size; during the header buf_raddr is
//    act_start + act_src_off). The fin is registered (1 cycle), the end addresses and the bad
//    flag are formed from it (1 cycle) and the "next byte is the last" compare is registered
//    once more (1 cycle): the byte issued 3 cycles after the fin is taken is the first one that
//    can be marked last; reading one byte per cycle at most, the builder reads up to
//    buf_raddr + 2 before it knows the end. Measured by the tb (test_cut_margin, full speed):
//    good fins taken at distance 4 end every frame exactly; at distance 3 the builder reads
//    past the end. (A clipped GRE copy does not need the margin: see below.)
//  - A bad fin that is known when the action is loaded (taken no later than the cycle the
//    action is accepted, i.e. the cycle before act_ready pulses) skips the frame: no egress
//    request, no output, the space is released. A bad fin taken later (the request is raised
//    with the accept, registered, or 2 cycles after it when a fin was there) ends the output with the next byte
//    issued (2 cycles after the fin is taken at the earliest: at least one byte is sent),
//    marked m_abort and m_last; the egress MAC stomps the frame (inverted FCS with TX_ER).
//  - act_drop with act_cut: skipped; its space is released once its fin is there.
//  - GRE (kind 2) with act_cut: the clipped copy's last byte (buffer byte gre_max) is not issued
//    before the fin is there (the frame might still turn out bad); any other byte is issued as
//    soon as the egress takes it.
// The caller guarantees that the builder never reads a buffer byte before it is written: the
// decision (and so the action) comes well after the frame's start, and the builder reads at
// most one byte per cycle, at the egress's pace (1 byte per cycle plus the header's length
// behind the input).
`timescale 1ns / 1ps
`default_nettype none
module wccp_builder #(
    parameter BUF_AW = 12
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              act_valid,
    output reg               act_ready,
    input  wire              act_drop,
    input  wire              act_port,
    input  wire [BUF_AW-1:0] act_start,
    input  wire [10:0]       act_flen,     // frame length without FCS (act_cut = 0)
    input  wire [5:0]        act_hlen,
    input  wire [1:0]        act_kind,
    input  wire [47:0]       act_dmac,
    input  wire [47:0]       act_smac,
    input  wire              act_vlan,
    input  wire [15:0]       act_tci,
    input  wire [15:0]       act_tl,
    input  wire [15:0]       act_csum,
    input  wire [31:0]       act_rid,
    input  wire [31:0]       act_cip,
    input  wire [31:0]       act_rh,
    input  wire [10:0]       act_src_off,
    input  wire              act_cut,      // cut-through: length/status come on the fin channel
    input  wire [10:0]       gre_max,      // GRE: at most this many buffer bytes, >= 1472 (static)
    // frame status for act_cut actions (handshake: taken where fin_valid && fin_ready)
    input  wire              fin_valid,
    output reg               fin_ready,
    input  wire              fin_good,
    input  wire [10:0]       fin_flen,     // frame length without FCS (0 when bad)
    // rx buffer read port (1-cycle latency)
    output wire [BUF_AW-1:0] buf_raddr,
    input  wire [7:0]        buf_rdata,
    output reg  [BUF_AW-1:0] rel_ptr,      // everything before this is free
    // output towards the egress arbiter
    output reg  [1:0]        req,          // one-hot egress request
    output wire [7:0]        m_data,
    output wire              m_valid,
    output wire              m_last,
    output wire              m_abort,      // with m_last: the frame is bad, stomp it
    input  wire              m_ready,
    output wire              idle          // no action accepted and not yet handed over
);
    localparam DEPTH = 8;
    reg [9:0] fifo [0:DEPTH-1];     // {abort, last, data}
    reg [2:0] wp, rp;
    // FIFO fill (0..7) as a thermometer code: c_th[i] = more than i bytes (timing)
    reg [DEPTH-2:0] c_th;

    // ---- the offered action, loaded in every idle cycle (ld_en = !act_on): the accepted
    // action's fields are loaded with the accept and stay until the frame is handed over (no
    // enable from the accept condition; timing) ----
    reg              act_on;        // an action is accepted and not yet handed over / skipped
    reg              ld_en;         // = !act_on (own register: the enable of the a_/h_ fields)
    assign idle = ld_en;
    reg              a_drop, a_port, a_vl, a_cut, a_gre;
    reg              a_h0, a_h1;    // header length 0 / 1
    reg [BUF_AW-1:0] a_rd, a_end;   // first buffer byte, end of frame in buffer (act_cut = 0)
    reg [BUF_AW-1:0] a_st, a_stm1, a_stm2;  // act_start, act_start - 1, act_start - 2
    reg [11:0]       a_cp;          // act_flen - act_src_off (12-bit, negative: none)
    reg [10:0]       a_so;          // act_src_off
    reg [5:0]        a_hlen;
    reg [47:0]       h_dmac, h_smac;
    reg [15:0]       h_tci, h_tl, h_csum;
    reg [31:0]       h_rid, h_cip, h_rh;
    // derived in ld (valid from l2): copy empty / one byte, copy length (clipped; gre_max for a
    // cut GRE action, whose end otherwise comes from the fin)
    reg              c0, c1;
    reg [10:0]       cps;
    // derived in l2 (valid in go): the frame is skipped
    reg              skip_r;
    // ---- fin (status) register: one entry, taken whenever free ----
    reg              f_have, f_good;
    reg [10:0]       f_flen;
    reg              fk;            // the current cut frame has its fin (e_m1, e_m2, e_end valid)
    reg              bad;           // the current cut frame has a bad fin (valid with fk)
    reg              nofin;         // a cut GRE frame without its fin (holds the clip's last byte)
    reg [BUF_AW-1:0] e_m1, e_m2, e_end;     // a_st + f_flen - 1, - 2, + 0 (registered)
    // header bytes 0..47 (byte i at hdr[8i +: 8]) of the untagged layout, with the VLAN tag at
    // 42..45: a tagged header is sent as bytes 0..11, 42..45, 12.. (the byte index sequence, not
    // the table, knows the tag)
    wire [383:0] hdr;
    assign hdr = {8'h00, 8'h00, h_tci[7:0], h_tci[15:8], 8'h00, 8'h81,
                  h_rh[7:0], h_rh[15:8], h_rh[23:16], h_rh[31:24], 8'h3E, 8'h88,
                  8'h00, 8'h00, h_cip[7:0], h_cip[15:8], h_cip[23:16], h_cip[31:24],
                  h_rid[7:0], h_rid[15:8], h_rid[23:16], h_rid[31:24], h_csum[7:0], h_csum[15:8],
                  8'h2F, 8'h40, 8'h00, 8'h40, 8'h00, 8'h00,
                  h_tl[7:0], h_tl[15:8], 8'h00, 8'h45, 8'h00, 8'h08,
                  h_smac[7:0], h_smac[15:8], h_smac[23:16], h_smac[31:24], h_smac[39:32], h_smac[47:40],
                  h_dmac[7:0], h_dmac[15:8], h_dmac[23:16], h_dmac[31:24], h_dmac[39:32], h_dmac[47:40]};

    // ---- issue ----
    reg              run;
    reg              in_hdr;        // the next byte comes from the header
    reg [5:0]        hk, hk_nx;     // header byte index, and the one after it
    reg              j_tag, j_back; // hk_nx is 11 in a tagged header / 45
    reg [5:0]        hcnt;          // header bytes left, incl. hk
    reg              h_last;        // hcnt == 1
    reg [11:0]       tcnt;          // bytes left, incl. the next one (act_cut = 0, or the clip)
    reg              t_last, t_2;   // tcnt == 1, tcnt == 2 (t_2: only for the clip of a cut GRE frame)
    reg              e_last;        // the next byte is a buffer byte at e_m1 (cut: the frame end)
    reg [BUF_AW-1:0] rd;            // next buffer address

    // the header byte hk is picked in three registered 4:1 steps (timing):
    // stage 1: byte hk[1:0] of each of the 12 quads, stage 2: quad hk[3:2] of each third,
    // stage 3: third hk[5:4]; the buffer's byte for stage 3 is in the block RAM's output
    // register (buf_rdata, 2 cycles after buf_raddr) and is registered once more
    reg        s1_v, s1_hdr, s1_last, s1_ab;
    reg [3:0]  s1_sel;
    reg [95:0] s1_q;
    reg        s2_v, s2_last, s2_hdr, s2_ab;
    reg [1:0]  s2_sel;
    reg [23:0] s2_t;
    // stage 3: both candidates, chosen at the FIFO write
    reg        s3_v, s3_last, s3_hdr, s3_ab;
    reg [7:0]  s3_hb, s3_buf;
    // m_ready may come from a registered request (wccp_mac_tx through fpga_core): it can stay
    // high for two cycles after the last byte of a frame was popped. Nothing is popped then:
    // the next frame's first byte reaches the FIFO no earlier than 6 cycles after that pop
    // (act_on falls, accept, ld, issue (fast start: in l2; else in go), stages 1 to 3).
    wire pop  = m_valid && m_ready;
    // accepted action: fields in a_ from the accept on; ld, l2, go in the next three cycles
    reg        ld, l2, go;
    // fast start: a cut-through action, not a drop, accepted with no fin in the register nor
    // taken in that cycle (so it cannot be skipped: a bad fin stomps it): its egress request
    // goes out with the accept (registered: in ld; the commit unit's act_go has asked for the
    // egress a cycle earlier still) and its first byte is issued in l2 (run from ld: hk,
    // hcnt, rd are loaded in ld; t_last is cleared in ld; tcnt is loaded in l2 already
    // counting that first issue: cps is one less)
    reg        fast;
    // occ = FIFO fill + s1_v + s2_v + s3_v (0..7), kept as its own thermometer code (timing)
    reg  [DEPTH-2:0] o_th;
    // can_issue = run && occ < 7 && not holding a cut GRE frame's clip byte for its fin,
    // registered from the next values of all three (timing: it enables the issue registers)
    reg              can_issue;
    // the byte issued in this cycle (can_issue) is the frame's last: the header's last with an
    // empty copy / the copy's last (tcnt), the frame end from the fin (e_last), or a bad fin
    wire             lst = t_last || e_last || bad;
    wire             run_n = (go && !skip_r && !fast) || (ld && fast) || (run && !(can_issue && lst));
    wire [DEPTH-2:0] o_th_n = (can_issue && !pop) ? {o_th[DEPTH-3:0], 1'b1} :
                              (pop && !can_issue) ? {1'b0, o_th[DEPTH-2:1]} : o_th;
    // next byte is the clip's last (not in l2: a fast frame's second issue is decided there,
    // before its tcnt is loaded; a cut GRE frame's clip is gre_max >= 1472 bytes; in ld nofin is
    // still low)
    wire             park_n = nofin && !l2 && (can_issue ? t_2 : t_last);
    wire             adv = can_issue && !in_hdr;                    // rd moves on
    wire             in_hdr_nx = in_hdr && !(can_issue && h_last);
    reg              sk_pend;       // a skipped cut frame waits for its fin (then skip_rel)
    reg              skip_rel;      // release a skipped frame
    wire             f_take = fin_valid && fin_ready;
    wire             done = (pop && m_last) || skip_rel;     // handed over / skipped
    wire             f_done = done && a_cut;
    wire             accept = ld_en && act_valid;
    // in l2: the frame is skipped (dropped, nothing to send, or its fin is bad already)
    wire             skip_n = a_drop || (!a_cut && a_h0 && c0) || (a_cut && fk && bad);

    assign buf_raddr = rd;
    assign m_valid = c_th[0];
    assign m_data  = fifo[rp][7:0];
    assign m_last  = fifo[rp][8];
    assign m_abort = fifo[rp][9];

    integer gi;
    always @(posedge clk) begin
        // no reset: loaded before use
        if (ld_en) begin
            a_drop <= act_drop;
            a_port <= act_port;
            a_vl <= act_vlan && act_kind[1];
            a_cut <= act_cut;
            a_gre <= (act_kind == 2'd2);
            a_h0 <= (act_hlen == 6'd0);
            a_h1 <= (act_hlen == 6'd1);
            a_rd <= act_start + {{(BUF_AW-11){1'b0}}, act_src_off};
            a_end <= act_start + {{(BUF_AW-11){1'b0}}, act_flen};
            a_st <= act_start;
            a_stm1 <= act_start - 1'b1;
            a_stm2 <= act_start - {{(BUF_AW-2){1'b0}}, 2'd2};
            a_cp <= {1'b0, act_flen} - {1'b0, act_src_off};
            a_so <= act_src_off;
            a_hlen <= act_hlen;
            h_dmac <= act_dmac;
            h_smac <= act_smac;
            h_tci <= act_tci;
            h_tl <= act_tl;
            h_csum <= act_csum;
            h_rid <= act_rid;
            h_cip <= act_cip;
            h_rh <= act_rh;
        end
        // ld: copy length (act_cut = 0) and its clip (a fast frame, always a cut one, has
        // issued its first byte when tcnt is loaded in l2)
        c0 <= a_cp[11] || (a_cp[10:0] == 11'd0);
        c1 <= (a_cp == 12'd1);
        cps <= (a_gre && a_cut) ? (fast ? gre_max - 11'd1 : gre_max) :
               (a_gre && !a_cp[11] && a_cp[10:0] > gre_max) ? gre_max :
               a_cp[11] ? 11'd0 : a_cp[10:0];
        // fin: end addresses of the current cut frame (valid with fk)
        e_m1 <= a_stm1 + {{(BUF_AW-11){1'b0}}, f_flen};
        e_m2 <= a_stm2 + {{(BUF_AW-11){1'b0}}, f_flen};
        e_end <= a_st + {{(BUF_AW-11){1'b0}}, f_flen};
        if (f_take) begin
            f_good <= fin_good;
            f_flen <= fin_flen;
        end
        // stage 3 -> FIFO
        if (s3_v) fifo[wp] <= {s3_ab, s3_last, s3_hdr ? s3_hb : s3_buf};
        s3_ab <= s2_ab;
        s2_ab <= s1_ab;
        s1_ab <= bad;
        s3_last <= s2_last;
        s3_hdr <= s2_hdr;
        s3_hb <= s2_t[s2_sel*8 +: 8];
        s3_buf <= buf_rdata;
        // stage 1 -> 2
        s2_last <= s1_last;
        s2_hdr <= s1_hdr;
        s2_sel <= s1_sel[3:2];
        for (gi = 0; gi < 3; gi = gi + 1)
            s2_t[gi*8 +: 8] <= s1_q[{gi[1:0], s1_sel[1:0]}*8 +: 8];
        // stage 0 -> 1: no enable (valid is s1_v; hk only moves when a byte is issued)
        s1_last <= lst;
        s1_hdr <= in_hdr;
        s1_sel <= hk[5:2];
        for (gi = 0; gi < 12; gi = gi + 1)
            s1_q[gi*8 +: 8] <= hdr[{gi[3:0], hk[1:0]}*8 +: 8];
        // the next byte is the cut frame's last buffer byte: compared one byte ahead
        e_last <= fk && !in_hdr_nx && (adv ? (rd == e_m2) : (rd == e_m1));
        if (can_issue) begin
            if (in_hdr) begin
                hk <= hk_nx;
                hk_nx <= j_tag ? 6'd42 : j_back ? 6'd12 : hk_nx + 6'd1;
                j_tag <= a_vl && hk_nx == 6'd10;
                j_back <= (hk_nx == 6'd44);
                hcnt <= hcnt - 6'd1;
                h_last <= (hcnt == 6'd2);
                if (h_last) in_hdr <= 1'b0;
            end else begin
                rd <= rd + 1'b1;
            end
            tcnt <= tcnt - 12'd1;
            t_last <= (tcnt == 12'd2);
            t_2 <= (tcnt == 12'd3);
        end
        if (ld) begin
            hk <= 6'd0;
            hk_nx <= 6'd1;
            j_tag <= 1'b0;
            j_back <= 1'b0;
            hcnt <= a_hlen;
            h_last <= a_h1;
            in_hdr <= !a_h0;
            rd <= a_rd;
            t_last <= 1'b0;         // a fast frame issues in l2 (a skipped frame may leave it set)
        end
        if (l2) begin
            // a cut frame of kind 0, 1, 3 ends with the fin only
            tcnt <= (a_cut && !a_gre) ? 12'hFFF : {6'd0, a_hlen} + {1'b0, cps};
            t_last <= !a_cut && ((a_h0 && c1) || (a_h1 && c0));
            t_2 <= 1'b0;            // (a cut GRE frame's tcnt starts at gre_max >= 1472)
            skip_r <= skip_n;
        end
    end

    always @(posedge clk) begin
        act_ready <= 1'b0;
        ld <= 1'b0;
        l2 <= 1'b0;
        go <= 1'b0;
        if (rst) begin
            wp <= 3'd0; rp <= 3'd0; c_th <= {(DEPTH-1){1'b0}}; o_th <= {(DEPTH-1){1'b0}};
            run <= 1'b0; can_issue <= 1'b0; s1_v <= 1'b0; s2_v <= 1'b0; s3_v <= 1'b0; req <= 2'b00;
            rel_ptr <= {BUF_AW{1'b0}};
            act_on <= 1'b0;
            ld_en <= 1'b1;
            skip_rel <= 1'b0;
            sk_pend <= 1'b0;
            f_have <= 1'b0;
            fin_ready <= 1'b0;
            fk <= 1'b0;
            bad <= 1'b0;
            nofin <= 1'b0;
        end else begin
            // fin register: taken when free, freed when its frame is handed over / released
            f_have <= (f_have && !f_done) || f_take;
            fin_ready <= !((f_have && !f_done) || f_take);
            // the fin belongs to the current cut frame (its fields are in a_ from ld on)
            fk <= f_have && !f_done && act_on && a_cut;
            bad <= f_have && !f_done && act_on && a_cut && (!f_good || f_flen <= a_so);
            nofin <= act_on && a_cut && a_gre && !fk;
            if (s3_v) wp <= wp + 3'd1;
            if (s3_v && !pop) c_th <= {c_th[DEPTH-3:0], 1'b1};
            if (pop && !s3_v) c_th <= {1'b0, c_th[DEPTH-2:1]};
            o_th <= o_th_n;
            run <= run_n;
            can_issue <= run_n && !o_th_n[DEPTH-2] && !park_n;
            s3_v <= s2_v;
            s2_v <= s1_v;
            s1_v <= can_issue;
            if (pop) rp <= rp + 3'd1;
            if (pop && m_last) req <= 2'b00;
            // the frame's buffer space is free once its last byte is popped (or it is skipped)
            if (done) rel_ptr <= a_cut ? e_end : a_end;
            skip_rel <= (go && skip_r && !a_cut) || (sk_pend && fk && !skip_rel);
            if (go && skip_r && a_cut) sk_pend <= 1'b1;
            if (skip_rel) sk_pend <= 1'b0;
            // accept a new action once the previous frame has been handed over completely;
            // its fields are in the a_/h_ registers already (loaded while idle: ld_en), the
            // rest is applied in the next three cycles (ld, l2, go)
            act_on <= (act_on && !done) || accept;
            ld_en <= !((act_on && !done) || accept);
            if (accept) act_ready <= 1'b1;
            ld <= accept;
            l2 <= ld;
            go <= l2;
            if (accept) fast <= act_cut && !act_drop && !f_have && !f_take;
            // the egress request goes out with l2 (the MAC starts its preamble with it, long
            // before the first byte is due; see fpga_core), for a cut frame without a fin yet
            // with the accept already (fast): such a frame is not skipped (skip_n in l2 sees
            // no fin taken before the accept), it is sent, or stomped if its fin turns out bad
            if (l2 && !skip_n && !fast)
                req <= a_port ? 2'b10 : 2'b01;
            if (accept && act_cut && !act_drop && !f_have && !f_take)
                req <= act_port ? 2'b10 : 2'b01;
        end
    end
`ifndef SYNTHESIS
    // invariants the design relies on (simulation only: every testbench stops at a violation)
    reg [BUF_AW-1:0] rel_q;
    reg              rel_d;
    always @(posedge clk) begin
        rel_q <= rel_ptr;
        rel_d <= done;
    end
    always @(posedge clk) if (!rst) begin
        if (s3_v && c_th[DEPTH-2] && !pop)
            $fatal(1, "wccp_builder: a byte written into the full output FIFO");
        if (done && !act_on)
            $fatal(1, "wccp_builder: a frame handed over without an action");
        if (rel_ptr != rel_q && !rel_d)
            $fatal(1, "wccp_builder: buffer space released without a frame handed over");
    end
`endif
endmodule
`default_nettype wire
