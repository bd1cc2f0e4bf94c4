// Receive queue (one per port): MAC rx + parser + frame buffer + queue of parse bundles +
// queue of frame statuses (one per bundle, in the same order).
//
// Every byte of a frame is written to the buffer as it comes out of the MAC's FCS delay line
// (while there is room). The parser watches the MAC's early stream, 5 cycles ahead of that
// line (see wccp_parser: a header point at byte 60 or later waits for 4 more bytes). The
// bundle (header fields, start address) is pushed as soon as the parser's header fields are
// final (in the parser's hdr_done cycle; q_valid in the next one), while the frame is still
// arriving, if the frame has not overflowed the buffer and the bundle queue has room; the
// decision can then run while the rest of the frame arrives. Otherwise the frame takes the
// store-and-forward path: its bundle is pushed at the parser's done if it is complete and
// good, else it is dropped whole. At the parser's done (the cycle after the MAC's last byte)
// the frame's status is pushed for every frame whose bundle was pushed: st_good (complete,
// FCS and size good, not overflowed), st_avail (the whole IPv4 datagram arrived) and st_flen
// (the bytes the frame occupies in the buffer: its length without FCS when good, 0
// otherwise). A bad or overflowed frame is always dropped whole at its end and counted,
// whether or not its bundle went early: the write pointer goes back to the frame's start,
// so it leaves no trace in the buffer (its bundle's consumer releases start + 0).
// Timing: the early push is the parser's hdr_done (one LUT from its registers: it
// comes in the cycle its header point byte is in the parser's input register, with every
// field already in a register) and e_arm (registered: the previous cycle took a byte that
// was not the last, without overflow, and the queue will not be full) with r_last, one LUT
// further. The push only moves the queue's write pointer: the queue's distributed RAM
// writes the parser's fields into the free entry at the write pointer in every cycle in
// which the queue is not full (a push never meets a full queue: e_arm and push_pend are
// only set when it is not), so its write enable is a register bit, not the push.
// The status FIFO needs no full check: it holds the statuses of the <= 2^QAW queued
// bundles plus the one taken by the consumer (which pops its status before the next
// bundle), fewer than its 2^(QAW+1) entries.
`timescale 1ns / 1ps
`default_nettype none
module wccp_rxq #(
    parameter BUF_AW = 12,
    parameter QAW = 4
) (
    input  wire          clk,
    input  wire          rst,
    input  wire [7:0]    gmii_rxd,
    input  wire          gmii_rx_dv,
    input  wire          gmii_rx_er,
    // buffer read side (builder)
    input  wire [BUF_AW-1:0] buf_raddr,
    output wire [7:0]    buf_rdata,     // 2 cycles after buf_raddr
    input  wire [BUF_AW-1:0] rel_ptr,
    // bundle queue
    output wire          q_valid,
    output reg           q_soon,        // a frame arrives whose bundle is not queued yet (a hint)
    input  wire          q_pop,
    output wire [BUF_AW-1:0] q_start,
    output wire [47:0]   q_dst_mac,
    output wire [47:0]   q_src_mac,
    output wire          q_vlan,
    output wire [15:0]   q_tci,
    output wire          q_is_ip,
    output wire          q_ip_hdr_ok,
    output wire [7:0]    q_proto,
    output wire [31:0]   q_sip,
    output wire [31:0]   q_dip,
    output wire          q_tcpudp,      // TCP or UDP: the ports are q_l4w0's halves
    output wire [15:0]   q_totlen,
    output wire [3:0]    q_ihl,
    output wire [31:0]   q_l4w0,
    output wire [7:0]    q_l4b4,
    output wire [15:0]   q_len4,
    output wire [15:0]   q_len8,
    // frame status queue (one entry per bundle, same order)
    output wire          st_valid,
    input  wire          st_pop,
    output wire          st_good,
    output wire          st_avail,
    output wire [10:0]   st_flen,
    // the receive MAC's stream (FCS removed; m_last with m_good), for wccp_arpcap
    output wire [7:0]    m_data,
    output wire          m_valid,
    output wire          m_last,
    output wire          m_good,
    // events
    output reg           ev_rx,
    output reg  [11:0]   ev_rx_len,
    output reg  [3:0]    ev_drop        // {overflow, oversize, bad_fcs, runt}
);
    wire [7:0]  r_data;
    wire        r_valid, r_last, r_good, r_runt, r_bad, r_over;
    wire [11:0] r_len;
    wire [7:0]  e_data;           // the MAC's early stream (FCS included) for the parser
    wire        e_valid, e_end, e_nz;
    wccp_mac_rx mac (
        .clk(clk), .rst(rst), .gmii_rxd(gmii_rxd), .gmii_rx_dv(gmii_rx_dv), .gmii_rx_er(gmii_rx_er),
        .m_data(r_data), .m_valid(r_valid), .m_last(r_last), .m_good(r_good), .m_runt(r_runt),
        .m_bad_fcs(r_bad), .m_oversize(r_over), .m_len(r_len), .e_data(e_data), .e_nz(e_nz), .e_valid(e_valid),
        .e_end(e_end));
    assign m_data = r_data;
    assign m_valid = r_valid;
    assign m_last = r_last;
    assign m_good = r_good;

    wire        p_vlan, p_is_ip, p_ip_hdr_ok, p_avail, p_tcpudp;
    wire        p_hdr_done;   // header fields final (while the frame arrives, or with p_done)
    wire        p_done;       // frame results final (the cycle after r_last)
    /* verilator lint_off UNUSEDSIGNAL */
    wire [15:0] p_sport, p_dport;   // stored as l4w0 + the TCP/UDP flag instead
    wire        p_ip_ok;
    /* verilator lint_on UNUSEDSIGNAL */
    wire [47:0] p_dst, p_src;
    wire [15:0] p_tci, p_totlen, p_len4, p_len8;
    wire [10:0] p_flen;
    wire [7:0]  p_proto, p_l4b4;
    wire [31:0] p_sip, p_dip, p_l4w0;
    wire [3:0]  p_ihl;
    wccp_parser parser (
        .clk(clk), .rst(rst), .s_data(e_data), .s_nz(e_nz), .s_valid(e_valid), .s_end(e_end),
        .done(p_done), .hdr_done(p_hdr_done), .dst_mac(p_dst), .src_mac(p_src), .vlan(p_vlan),
        .vlan_tci(p_tci), .frame_len(p_flen), .is_ip(p_is_ip), .ip_hdr_ok(p_ip_hdr_ok),
        .avail(p_avail), .ip_ok(p_ip_ok), .proto(p_proto), .sip(p_sip), .dip(p_dip),
        .sport(p_sport), .dport(p_dport), .totlen(p_totlen), .ihl(p_ihl), .l4_word0(p_l4w0),
        .l4_byte4(p_l4b4), .l4_len8(p_len8), .l4_len4(p_len4), .tcpudp(p_tcpudp));

    // ---- frame buffer ----
    // no read/write collision logic: the builder only reads frames whose status it has
    // (complete), which never include the write pointer (wp - rel_ptr stays below the
    // buffer size)
    reg [BUF_AW-1:0] wp, fstart;
    reg              ovf;          // this frame did not fit
    reg              early;        // this frame's bundle was pushed before its end
    reg              e_arm;        // a bundle may go early in this cycle (see e_push)
    reg              push_pend;    // frame complete and good, not early: push its bundle at p_done
    reg              fr_ok;        // the frame that ended is kept (its status: good)
    // occupancy check registered (timing); one cycle stale, so keep a 4-byte margin
    /* verilator lint_off UNUSEDSIGNAL */
    wire [BUF_AW-1:0] used = wp - rel_ptr;   // only the bits above the 4-byte margin matter
    /* verilator lint_on UNUSEDSIGNAL */
    reg              full;
    always @(posedge clk) full <= &used[BUF_AW-1:2];    // used >= size - 4

    /* verilator lint_off UNUSEDSIGNAL */
    wire [7:0] a_unused;
    /* verilator lint_on UNUSEDSIGNAL */
    // the byte at wp is never part of a stored frame: writing the last byte of a frame that
    // is then dropped (wp back to its start) is harmless
    wccp_bram #(.AW(BUF_AW), .DW(8)) buffer (
        .clk(clk), .a_we(r_valid && !full && !ovf), .a_addr(wp),
        .a_wdata(r_data), .a_rdata(a_unused), .b_addr(buf_raddr), .b_rdata(buf_rdata));

    // ---- bundle queue ----
    // sport/dport are not stored: they are l4w0's halves when the frame is TCP/UDP (a flag)
    localparam BW = BUF_AW + 48 + 48 + 1 + 16 + 1 + 1 + 8 + 32 + 32 + 1 + 16 + 4 + 32 + 8 + 16 + 16;
    reg [BW-1:0] q [0:(1 << QAW) - 1];
    reg [QAW:0]  qw, qr;
    reg [QAW:0]  q_used;          // qw - qr, kept as a register (q_full without a subtractor)
    reg          q_nempty;        // q_used != 0
    wire         q_full = q_used[QAW];
    wire         st_push = p_done && (push_pend || early);   // one status per pushed bundle
    // early push: the header is final while the frame still arrives (its last byte is not
    // in this cycle), it has not overflowed and the queue has room. e_arm holds the last two
    // from the previous cycle: a byte (not the last) was taken there without overflow, and
    // the queue is not full now (no push can come between: the previous frame's was at its
    // done, long ago; a take frees a slot). A frame whose previous cycle had no byte (the
    // MAC's gap before the last byte) goes the store-and-forward way.
    wire         e_push = p_hdr_done && e_arm && !r_last;
    wire         q_push = e_push || (p_done && push_pend);
    wire         q_take = q_pop && q_nempty;
    assign q_valid = q_nempty;
    // q_used +1 (push only) / -1 (take only) without an adder: bit k toggles when the bits
    // below it are all ones (up) / all zeros (down)
    wire         q_up = q_push && !q_take;
    wire         q_dn = q_take && !q_push;
    reg [QAW:0]  q_tog;
    reg          q_all1, q_all0;
    integer      j;
    always @* begin
        q_all1 = 1'b1;
        q_all0 = 1'b1;
        for (j = 0; j <= QAW; j = j + 1) begin
            q_tog[j] = (q_up && q_all1) || (q_dn && q_all0);
            q_all1 = q_all1 && q_used[j];
            q_all0 = q_all0 && !q_used[j];
        end
    end
    assign {q_start, q_dst_mac, q_src_mac, q_vlan, q_tci, q_is_ip, q_ip_hdr_ok, q_proto, q_sip,
            q_dip, q_tcpudp, q_totlen, q_ihl, q_l4w0, q_l4b4, q_len4, q_len8} = q[qr[QAW-1:0]];

    // a frame is arriving (from its first byte on the MAC's early stream to its parser's done)
    // and its bundle is not pushed yet: the decision core turns its port pointer to a port
    // about to push while the other has nothing to take (a hint only: a wrong one costs the
    // core a cycle)
    always @(posedge clk)
        q_soon <= !rst && !q_push && (e_valid ? !early : (q_soon && !p_done));

    // ---- status queue (2^(QAW+1) entries, same counter scheme) ----
    localparam SAW = QAW + 1;
    reg [12:0]   sq [0:(1 << SAW) - 1];
    reg [SAW:0]  sw, sr;
    reg [SAW:0]  s_used;
    reg          s_nempty;
    wire         s_take = st_pop && s_nempty;
    assign st_valid = s_nempty;
    wire         s_up = st_push && !s_take;
    wire         s_dn = s_take && !st_push;
    reg [SAW:0]  s_tog;
    reg          s_all1, s_all0;
    always @* begin
        s_all1 = 1'b1;
        s_all0 = 1'b1;
        for (j = 0; j <= SAW; j = j + 1) begin
            s_tog[j] = (s_up && s_all1) || (s_dn && s_all0);
            s_all1 = s_all1 && s_used[j];
            s_all0 = s_all0 && !s_used[j];
        end
    end
    assign {st_good, st_avail, st_flen} = sq[sr[SAW-1:0]];

    always @(posedge clk) begin
        ev_rx <= 1'b0;
        ev_drop <= 4'd0;
        if (rst) begin
            wp <= {BUF_AW{1'b0}};
            fstart <= {BUF_AW{1'b0}};
            ovf <= 1'b0;
            early <= 1'b0;
            e_arm <= 1'b0;
            push_pend <= 1'b0;
            fr_ok <= 1'b0;
            qw <= {(QAW+1){1'b0}};
            qr <= {(QAW+1){1'b0}};
            q_used <= {(QAW+1){1'b0}};
            q_nempty <= 1'b0;
            sw <= {(SAW+1){1'b0}};
            sr <= {(SAW+1){1'b0}};
            s_used <= {(SAW+1){1'b0}};
            s_nempty <= 1'b0;
        end else begin
            q_nempty <= q_push || (q_used > 1) || (q_used[0] && !q_take);
            if (q_take) qr <= qr + 1'b1;
            q_used <= q_used ^ q_tog;
            s_nempty <= st_push || (s_used > 1) || (s_used[0] && !s_take);
            if (s_take) sr <= sr + 1'b1;
            s_used <= s_used ^ s_tog;
            e_arm <= r_valid && !r_last && !full && !ovf && !(q_full && !q_take);
            if (e_push) early <= 1'b1;
            if (r_valid) begin
                if (full && !r_last) ovf <= 1'b1;
                if (!r_last) begin
                    if (!full && !ovf) wp <= wp + 1'b1;
                end else begin
                    ev_rx <= 1'b1;
                    ev_rx_len <= r_len;
                    ovf <= 1'b0;
                    fr_ok <= 1'b0;
                    if (!r_good) begin
                        wp <= fstart;
                        ev_drop <= {1'b0, r_over, r_bad, r_runt};
                    end else if (full || ovf || (q_full && !early)) begin
                        wp <= fstart;
                        ev_drop <= 4'b1000;
                    end else begin
                        wp <= wp + 1'b1;
                        fr_ok <= 1'b1;
                        if (!early) push_pend <= 1'b1;
                    end
                end
            end
            // the parse bundle (header fields final: e_push, or the whole frame kept: done)
            // is written to the free entry at qw while the queue is not full (see Timing
            // above); the push makes it the queue's
            if (!q_full)
                q[qw[QAW-1:0]] <= {fstart, p_dst, p_src, p_vlan, p_tci, p_is_ip, p_ip_hdr_ok, p_proto,
                                   p_sip, p_dip, p_tcpudp, p_totlen, p_ihl, p_l4w0, p_l4b4,
                                   p_len4, p_len8};
            if (q_push) qw <= qw + 1'b1;
            if (st_push) begin
                sq[sw[SAW-1:0]] <= {fr_ok, p_avail, fr_ok ? p_flen : 11'd0};
                sw <= sw + 1'b1;
            end
            if (p_done) begin
                // the frame's end is settled (wp past it if kept, back at its start if not)
                push_pend <= 1'b0;
                early <= 1'b0;
                fstart <= wp;
            end
        end
    end
`ifndef SYNTHESIS
    // invariants the design relies on (simulation only: every testbench stops at a violation)
    always @(posedge clk) if (!rst) begin
        if (q_push && q_full)       // its fields were not written (the entry is written while not full)
            $fatal(1, "wccp_rxq: a bundle pushed into the full bundle queue");
        if (st_push && s_used[SAW] && !s_take)
            $fatal(1, "wccp_rxq: a status pushed into the full status queue");
        if (r_valid && !full && !ovf && used == {BUF_AW{1'b1}})   // the buffer would look empty
            $fatal(1, "wccp_rxq: a byte written into the last free byte of the buffer");
    end
`endif
endmodule
`default_nettype wire
