// Receive queue (one per port): MAC rx + parser + store-and-forward frame buffer + queue
// of parse bundles. A frame enters the buffer only when it is complete and good (FCS and
// size); otherwise, or when buffer/queue are full, it is dropped whole and counted.
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
    input  wire          q_pop,
    output wire [BUF_AW-1:0] q_start,
    output wire [10:0]   q_flen,
    output wire [47:0]   q_dst_mac,
    output wire [47:0]   q_src_mac,
    output wire          q_vlan,
    output wire [15:0]   q_tci,
    output wire          q_is_ip,
    output wire          q_ip_ok,
    output wire [7:0]    q_proto,
    output wire [31:0]   q_sip,
    output wire [31:0]   q_dip,
    output wire [15:0]   q_sport,
    output wire [15:0]   q_dport,
    output wire [15:0]   q_totlen,
    output wire [3:0]    q_ihl,
    output wire [31:0]   q_l4w0,
    output wire [7:0]    q_l4b4,
    output wire [15:0]   q_len4,
    output wire [15:0]   q_len8,
    // events
    output reg           ev_rx,
    output reg  [11:0]   ev_rx_len,
    output reg  [3:0]    ev_drop        // {overflow, oversize, bad_fcs, runt}
);
    wire [7:0]  r_data;
    wire        r_valid, r_last, r_good, r_runt, r_bad, r_over;
    wire [11:0] r_len;
    wccp_mac_rx mac (
        .clk(clk), .rst(rst), .gmii_rxd(gmii_rxd), .gmii_rx_dv(gmii_rx_dv), .gmii_rx_er(gmii_rx_er),
        .m_data(r_data), .m_valid(r_valid), .m_last(r_last), .m_good(r_good), .m_runt(r_runt),
        .m_bad_fcs(r_bad), .m_oversize(r_over), .m_len(r_len));

    wire        p_vlan, p_is_ip, p_ip_ok, p_tcpudp;
    wire        p_done;   // parser results final (a few cycles after r_last)
    /* verilator lint_off UNUSEDSIGNAL */
    wire [15:0] p_sport, p_dport;   // stored as l4w0 + the TCP/UDP flag instead
    /* verilator lint_on UNUSEDSIGNAL */
    wire [47:0] p_dst, p_src;
    wire [15:0] p_tci, p_totlen, p_len4, p_len8;
    wire [10:0] p_flen;
    wire [7:0]  p_proto, p_l4b4;
    wire [31:0] p_sip, p_dip, p_l4w0;
    wire [3:0]  p_ihl;
    wccp_parser parser (
        .clk(clk), .rst(rst), .s_data(r_data), .s_valid(r_valid), .s_last(r_last),
        .done(p_done), .dst_mac(p_dst), .src_mac(p_src), .vlan(p_vlan), .vlan_tci(p_tci),
        .frame_len(p_flen), .is_ip(p_is_ip), .ip_ok(p_ip_ok), .proto(p_proto), .sip(p_sip),
        .dip(p_dip), .sport(p_sport), .dport(p_dport), .totlen(p_totlen), .ihl(p_ihl),
        .l4_word0(p_l4w0), .l4_byte4(p_l4b4), .l4_len8(p_len8), .l4_len4(p_len4),
        .tcpudp(p_tcpudp));

    // ---- frame buffer ----
    // no read/write collision logic: the builder only reads committed frames, which never
    // include the write pointer (wp - rel_ptr stays below the buffer size)
    reg [BUF_AW-1:0] wp, fstart;
    reg              ovf;          // this frame did not fit
    reg              push_pend;    // frame complete and good: push its bundle at p_done
    // occupancy check registered (timing); one cycle stale, so keep a 4-byte margin
    /* verilator lint_off UNUSEDSIGNAL */
    wire [BUF_AW-1:0] used = wp - rel_ptr;   // only the bits above the 4-byte margin matter
    /* verilator lint_on UNUSEDSIGNAL */
    reg              full;
    always @(posedge clk) full <= &used[BUF_AW-1:2];    // used >= size - 4

    /* verilator lint_off UNUSEDSIGNAL */
    wire [7:0] a_unused;
    /* verilator lint_on UNUSEDSIGNAL */
    wccp_bram #(.AW(BUF_AW), .DW(8)) buffer (
        .clk(clk), .a_we(r_valid && !full && !ovf && !(r_last && !r_good)), .a_addr(wp),
        .a_wdata(r_data), .a_rdata(a_unused), .b_addr(buf_raddr), .b_rdata(buf_rdata));

    // ---- bundle queue ----
    // sport/dport are not stored: they are l4w0 when the frame is TCP/UDP (one flag bit)
    localparam BW = BUF_AW + 11 + 48 + 48 + 1 + 16 + 1 + 1 + 8 + 32 + 32 + 1 + 16 + 4 + 32 + 8 + 16 + 16;
    reg [BW-1:0] q [0:(1 << QAW) - 1];
    reg [QAW:0]  qw, qr;
    reg [QAW:0]  q_used;          // qw - qr, kept as a register (q_full without a subtractor)
    reg          q_nempty;        // q_used != 0
    wire         q_full = q_used[QAW];
    wire         q_push = p_done && push_pend;
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
    wire         q_tcpudp;
    assign {q_start, q_flen, q_dst_mac, q_src_mac, q_vlan, q_tci, q_is_ip, q_ip_ok, q_proto, q_sip,
            q_dip, q_tcpudp, q_totlen, q_ihl, q_l4w0, q_l4b4, q_len4, q_len8} = q[qr[QAW-1:0]];
    assign q_sport = q_tcpudp ? q_l4w0[31:16] : 16'd0;
    assign q_dport = q_tcpudp ? q_l4w0[15:0] : 16'd0;

    always @(posedge clk) begin
        ev_rx <= 1'b0;
        ev_drop <= 4'd0;
        if (rst) begin
            wp <= {BUF_AW{1'b0}};
            fstart <= {BUF_AW{1'b0}};
            ovf <= 1'b0;
            push_pend <= 1'b0;
            qw <= {(QAW+1){1'b0}};
            qr <= {(QAW+1){1'b0}};
            q_used <= {(QAW+1){1'b0}};
            q_nempty <= 1'b0;
        end else begin
            q_nempty <= q_push || (q_used > 1) || (q_used[0] && !q_take);
            if (q_take) qr <= qr + 1'b1;
            q_used <= q_used ^ q_tog;
            if (r_valid) begin
                if (full && !r_last) ovf <= 1'b1;
                if (!r_last) begin
                    if (!full && !ovf) wp <= wp + 1'b1;
                end else begin
                    ev_rx <= 1'b1;
                    ev_rx_len <= r_len;
                    ovf <= 1'b0;
                    if (!r_good) begin
                        wp <= fstart;
                        ev_drop <= {1'b0, r_over, r_bad, r_runt};
                    end else if (full || ovf || q_full) begin
                        wp <= fstart;
                        ev_drop <= 4'b1000;
                    end else begin
                        wp <= wp + 1'b1;
                        push_pend <= 1'b1;
                    end
                end
            end
            if (q_push) begin
                // the parse bundle of the kept frame is final: push it
                push_pend <= 1'b0;
                q[qw[QAW-1:0]] <= {fstart, p_flen, p_dst, p_src, p_vlan, p_tci, p_is_ip, p_ip_ok, p_proto,
                                   p_sip, p_dip, p_tcpudp, p_totlen, p_ihl, p_l4w0, p_l4b4,
                                   p_len4, p_len8};
                qw <= qw + 1'b1;
                fstart <= wp;
            end
        end
    end
endmodule
`default_nettype wire
