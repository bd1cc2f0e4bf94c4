// WCCPv2 redirector datapath core: two GMII ports (8 bit x 125 MHz, one clock domain),
// SPI register interface (plus a register-bus port for testbenches; tie off on boards).
`timescale 1ns / 1ps
`default_nettype none
`include "wccp_regmap.vh"
module fpga_core #(
    parameter CLK_PER_US = 125,
    parameter [31:0] BUILD_ID = 32'd0,
    // RFC 3074 Pearson hashing in the decision core (CAPS_PEARSON; one DP16KD for the mixing
    // table). 0 leaves the engine out (CAPS without CAPS_PEARSON: the driver refuses Pearson
    // groups).
    parameter PEARSON = 1,
    parameter BUF_AW = 12
) (
    input  wire        clk,
    input  wire        rst,
    input  wire [7:0]  gmii0_rxd,
    input  wire        gmii0_rx_dv,
    input  wire        gmii0_rx_er,
    output wire [7:0]  gmii0_txd,
    output wire        gmii0_tx_en,
    output wire        gmii0_tx_er,
    input  wire [7:0]  gmii1_rxd,
    input  wire        gmii1_rx_dv,
    input  wire        gmii1_rx_er,
    output wire [7:0]  gmii1_txd,
    output wire        gmii1_tx_en,
    output wire        gmii1_tx_er,
    input  wire        spi_sck,
    input  wire        spi_cs_n,
    input  wire        spi_mosi,
    output wire        spi_miso,
    input  wire [23:0] dbg_reg_addr,
    input  wire        dbg_reg_wr,
    input  wire [31:0] dbg_reg_wdata,
    input  wire        dbg_reg_rd,
    output wire [31:0] dbg_reg_rdata,
    output wire        dbg_reg_rvalid,
    output wire        redirect_active
);
    // ---------------- register bus ----------------
    wire [23:0] spi_addr;
    wire        spi_wr, spi_rd;
    wire [31:0] spi_wdata;
    wire [31:0] reg_rdata;
    wire        reg_rvalid;
    wire [31:0] rg_rdata, cc_rdata, bc_rdata, uc_rdata;
    wire        rg_rvalid, cc_rvalid, bc_rvalid, uc_rvalid, cc_rd, bc_rd, uc_rd;
    // (wccp_probe answers its reads in the same cycle as wccp_regs, which reads 0 there)
    assign reg_rvalid = rg_rvalid | cc_rvalid | bc_rvalid | uc_rvalid | st_rvalid | pr_rvalid;
    assign reg_rdata = cc_rvalid ? cc_rdata : bc_rvalid ? bc_rdata : uc_rvalid ? uc_rdata :
                       st_rvalid ? st_rdata : (rg_rdata | pr_rdata);
    // reset distribution: one registered copy per region (wccp_rst_buf), all one cycle late
    wire        rst_bus, rst_spi, rst_go, rst_st, rst_cc, rst_bc, rst_uc, rst_pr, rst_dc;
    wccp_rst_buf rb_bus (.clk(clk), .d(rst), .q(rst_bus));     // register file, bus
    wccp_rst_buf rb_spi (.clk(clk), .d(rst), .q(rst_spi));     // SPI slave
    wccp_rst_buf rb_go (.clk(clk), .d(rst), .q(rst_go));       // builder requests (b_go)
    wccp_rst_buf rb_st (.clk(clk), .d(rst), .q(rst_st));       // port and slot counters
    wccp_rst_buf rb_cc (.clk(clk), .d(rst), .q(rst_cc));       // per-cache counters
    wccp_rst_buf rb_bc (.clk(clk), .d(rst), .q(rst_bc));       // per-bucket counters
    wccp_rst_buf rb_pr (.clk(clk), .d(rst), .q(rst_pr));       // packet out, ARP capture
    wccp_rst_buf rb_uc (.clk(clk), .d(rst), .q(rst_uc));       // per-cache unknown-location counters
    wccp_rst_buf rb_dc (.clk(clk), .d(rst), .q(rst_dc));       // tables, decision core
    wire        dbg_sel = dbg_reg_wr | dbg_reg_rd;
    // the bus is registered once before the register file (timing)
    reg  [23:0] reg_addr;
    reg         reg_wr, reg_rd;
    reg  [31:0] reg_wdata;
    always @(posedge clk) begin
        reg_addr  <= dbg_sel ? dbg_reg_addr : spi_addr;
        reg_wr    <= !rst_bus && (dbg_reg_wr | spi_wr);
        reg_rd    <= !rst_bus && (dbg_reg_rd | spi_rd);
        reg_wdata <= dbg_reg_wr ? dbg_reg_wdata : spi_wdata;
    end
    assign dbg_reg_rdata = reg_rdata;
    assign dbg_reg_rvalid = reg_rvalid;
    // the register file strobes the counter RAMs two cycles after the access (registered
    // decode): they take the word index from the address of that access
    reg  [10:0] cnt_addr0, cnt_addr;
    always @(posedge clk) begin
        cnt_addr0 <= reg_addr[10:0];
        cnt_addr <= cnt_addr0;
    end

    wccp_spi_slave spi (
        .clk(clk), .rst(rst_spi), .spi_sck(spi_sck), .spi_cs_n(spi_cs_n), .spi_mosi(spi_mosi),
        .spi_miso(spi_miso), .reg_addr(spi_addr), .reg_wr(spi_wr), .reg_wdata(spi_wdata),
        .reg_rd(spi_rd), .reg_rdata(reg_rdata), .reg_rvalid(reg_rvalid));

    // ---------------- register file ----------------
    wire          active;
    wire [31:0]   router_id;
    wire [47:0]   appl_mac;
    wire [15:0]   mtu;
    wire [95:0]   nh_mac;
    wire [255:0]  grp_ctrl, grp_svc, grp_flags;
    wire [1023:0] grp_ports;
    wire          live, copy_start, hold;
    wire [6:0]    t_we;
    wire [9:0]    t_addr;
    wire [31:0]   t_data;
    wire          rg_ln_wr;
    wire [7:0]    rg_ln_idx;
    wire [53:0]   rg_ln_data;
    wire          busy;
    wire [6:0]    copy_busy;

    wire [1:0]    ev_rx, ev_tx;
    wire [23:0]   ev_rx_len, ev_tx_len;
    wire [7:0]    ev_drop;
    wire [23:0]   ev_cause;
    wire [7:0]    acl_raddr;           // the decision core's live redirect-list reads
    wire [31:0]   acl_rdata;
    wire [1:0]    ev_slot;
    wire [5:0]    ev_slot_idx;
    wire [23:0]   ev_bytes;
    wire [1:0]    ev_cache, ev_bucket;
    wire [9:0]    ev_cache_idx;
    wire [15:0]   ev_bucket_idx;

    wire          lr_valid0, lr_valid1;
    wire [7:0]    lr_idx0, lr_idx1;
    wire [47:0]   lr_mac0, lr_mac1;
    // learnt-state writer: register writes first, then port 0's commit unit, then port 1's
    wire          ln_ack_rg = rg_ln_wr;
    wire          lr_ack0 = lr_valid0 && !rg_ln_wr;
    wire          lr_ack1 = lr_valid1 && !rg_ln_wr && !lr_valid0;
    wire          ln_we = rg_ln_wr | lr_valid0 | lr_valid1;
    wire [7:0]    ln_widx = rg_ln_wr ? rg_ln_idx : (lr_valid0 ? lr_idx0 : lr_idx1);
    wire [53:0]   ln_wdata = rg_ln_wr ? rg_ln_data :
                             (lr_valid0 ? {2'b11, 4'd0, lr_mac0} : {2'b11, 4'd1, lr_mac1});

    wccp_regs #(.CLK_PER_US(CLK_PER_US), .BUILD_ID(BUILD_ID), .PEARSON(PEARSON)) regs (
        .clk(clk), .rst(rst_bus), .reg_addr(reg_addr), .reg_wr(reg_wr), .reg_wdata(reg_wdata),
        .reg_rd(reg_rd), .reg_rdata(rg_rdata), .reg_rvalid(rg_rvalid),
        .active(active), .router_id(router_id), .appl_mac(appl_mac), .mtu(mtu), .nh_mac(nh_mac),
        .grp_ctrl(grp_ctrl), .grp_svc(grp_svc), .grp_flags(grp_flags), .grp_ports(grp_ports),
        .live(live), .copy_start(copy_start), .copy_busy(|copy_busy), .hold(hold),
        .engines_busy(busy), .t_we(t_we), .t_addr(t_addr), .t_data(t_data),
        .ln_wr(rg_ln_wr), .ln_idx(rg_ln_idx), .ln_data(rg_ln_data), .ln_ack(ln_ack_rg),
.st_rd(st_rd), .st_word(st_word), .st_hi(st_hi),
        .cc_rd(cc_rd), .bc_rd(bc_rd), .uc_rd(uc_rd),
        .acl_raddr(acl_raddr), .acl_rdata(acl_rdata));

    wire        st_rd, st_hi, st_rvalid;
    wire [5:0]  st_word;
    wire [31:0] st_rdata;
    wccp_stats stats (
        .clk(clk), .rst(rst_st), .ev_rx(ev_rx), .ev_rx_len(ev_rx_len), .ev_drop(ev_drop), .ev_tx(ev_tx),
        .ev_tx_len(ev_tx_len), .ev_cause(ev_cause), .ev_slot(ev_slot), .ev_slot_idx(ev_slot_idx),
        .ev_bytes(ev_bytes), .rd(st_rd), .rd_word(st_word), .rd_hi(st_hi), .rdata(st_rdata),
        .rvalid(st_rvalid));
    assign redirect_active = active;

    // ---------------- active discovery: packet out, ARP-reply capture ----------------
    wire [31:0] pr_rdata;
    wire        pr_rvalid;
    wire [1:0]  cap_v;
    wire [79:0] cap_d [0:1];
    wire [1:0]  pk_req;
    wire [7:0]  pk_data;
    wire        pk_valid, pk_last;
    reg         pk_go;               // registered grant of an egress to the sender
    wccp_probe probe (
        .clk(clk), .rst(rst_pr), .reg_addr(reg_addr), .reg_wr(reg_wr), .reg_wdata(reg_wdata),
        .reg_rd(reg_rd), .rdata(pr_rdata), .rvalid(pr_rvalid),
        .cap0_valid(cap_v[0]), .cap0_data(cap_d[0]), .cap1_valid(cap_v[1]), .cap1_data(cap_d[1]),
        .req(pk_req), .m_data(pk_data), .m_valid(pk_valid), .m_last(pk_last), .m_ready(pk_go));

    // ---------------- receive ports, decision core, commit units, builders ----------------
    // Per port: the receive queue (MAC, parser, buffer, bundle and status FIFOs), a commit
    // unit and a builder. One decision core with one copy of the tables serves both ports'
    // queues in turn (round robin among the ports whose commit unit is free) and hands each
    // decision to the frame's port's commit unit, which waits for the frame's status and its
    // builder, commits the events and the learning and drives the builder.
    wire [7:0] rxd [0:1];
    wire       rxdv [0:1];
    wire       rxer [0:1];
    assign rxd[0] = gmii0_rxd; assign rxdv[0] = gmii0_rx_dv; assign rxer[0] = gmii0_rx_er;
    assign rxd[1] = gmii1_rxd; assign rxdv[1] = gmii1_rx_dv; assign rxer[1] = gmii1_rx_er;

    // a GRE frame carries at most MTU - 28 input bytes, never fewer than 1472 (the decision
    // sends a datagram by GRE only when its length + 28 <= MTU; the clip bounds what follows
    // it) and at most 1504 (the longest datagram a port receives: 1518-byte frames)
    reg  [10:0] gre_max;
    always @(posedge clk)
        gre_max <= (mtu >= 16'd1532) ? 11'd1504 : (mtu > 16'd1500) ? mtu[10:0] - 11'd28 : 11'd1472;

    wire [1:0] b_req [0:1];
    wire [1:0] a_go [0:1];       // port g's cut-through action starts now, on egress 0 / 1
    wire [7:0] b_data [0:1];
    wire       b_valid [0:1];
    wire       b_last [0:1];
    wire       b_abort [0:1];    // with b_last: stomp the frame (cut-through, bad status)
    wire       b_ready [0:1];
    wire       lrv [0:1];
    wire [7:0] lri [0:1];
    wire [47:0] lrm [0:1];
    wire       lra [0:1];
    assign lr_valid0 = lrv[0]; assign lr_idx0 = lri[0]; assign lr_mac0 = lrm[0]; assign lra[0] = lr_ack0;
    assign lr_valid1 = lrv[1]; assign lr_idx1 = lri[1]; assign lr_mac1 = lrm[1]; assign lra[1] = lr_ack1;

    // the queue heads, {port 1, port 0} in each field
    wire [1:0]  q_valid, q_soon, q_pop, q_free, q_vlan, q_is_ip, q_ip_hdr_ok, q_tcpudp;
    wire [2*BUF_AW-1:0] q_start;
    wire [95:0] q_dst, q_src;
    wire [31:0] q_tci, q_totlen, q_len4, q_len8;
    wire [15:0] q_proto, q_l4b4;
    wire [63:0] q_sip, q_dip, q_l4w0;
    wire [7:0]  q_ihl;

    // ---- the decision core and its tables ----
    wire [7:0]  c_raddr;
    wire [31:0] ca_rdata, bk_rdata, mp_rdata, mt_rdata;
    wire [3:0]  cm_rdata;
    wire [53:0] ln_rdata;
    wire [8:0]  bk_raddr;
    wire [5:0]  mp_raddr;
    wire [9:0]  mt_raddr;
    wccp_bank_ram #(.AW(8), .DW(32), .RD_REG(0)) cache_addr (
        .clk(clk), .rst(rst_dc), .live(live), .wr_en(t_we[0]), .wr_addr(t_addr[7:0]),
        .wr_data(t_data), .rd_addr(c_raddr), .rd_data(ca_rdata), .copy_start(copy_start),
        .copy_busy(copy_busy[0]));
    wccp_bank_ram #(.AW(8), .DW(4), .RD_REG(0)) cache_meth (
        .clk(clk), .rst(rst_dc), .live(live), .wr_en(t_we[1]), .wr_addr(t_addr[7:0]),
        .wr_data(t_data[3:0]), .rd_addr(c_raddr), .rd_data(cm_rdata), .copy_start(copy_start),
        .copy_busy(copy_busy[1]));
    wccp_bank_ram #(.AW(9), .DW(32), .RD_REG(0)) bucket (
        .clk(clk), .rst(rst_dc), .live(live), .wr_en(t_we[2]), .wr_addr(t_addr[8:0]),
        .wr_data(t_data), .rd_addr(bk_raddr), .rd_data(bk_rdata), .copy_start(copy_start),
        .copy_busy(copy_busy[2]));
    wccp_bank_ram #(.AW(6), .DW(32)) maskpos (
        .clk(clk), .rst(rst_dc), .live(live), .wr_en(t_we[3]), .wr_addr(t_addr[5:0]),
        .wr_data(t_data), .rd_addr(mp_raddr), .rd_data(mp_rdata), .copy_start(copy_start),
        .copy_busy(copy_busy[3]));
    wccp_bank_ram #(.AW(10), .DW(32)) masktab (
        .clk(clk), .rst(rst_dc), .live(live), .wr_en(t_we[4]), .wr_addr(t_addr),
        .wr_data(t_data), .rd_addr(mt_raddr), .rd_data(mt_rdata), .copy_start(copy_start),
        .copy_busy(copy_busy[4]));
    // the cache-source index (SRCIDX): heads {count, start} by address fold (and the L2-return
    // run at 256), and the list of table entries they point into; 3-cycle reads (a fabric
    // register after each RAM: the core's registers can then sit away from the RAMs)
    wire [8:0]  hd_raddr, ls_raddr;
    wire [17:0] hd_rdata;
    wire [7:0]  ls_rdata;
    wccp_bank_ram #(.AW(9), .DW(18), .RD_REG(1)) srcidx_head (
        .clk(clk), .rst(rst_dc), .live(live), .wr_en(t_we[5]), .wr_addr(t_addr[8:0]),
        .wr_data({t_data[16 +: 9], t_data[8:0]}), .rd_addr(hd_raddr), .rd_data(hd_rdata),
        .copy_start(copy_start), .copy_busy(copy_busy[5]));
    wccp_bank_ram #(.AW(9), .DW(8), .RD_REG(1)) srcidx_list (
        .clk(clk), .rst(rst_dc), .live(live), .wr_en(t_we[6]), .wr_addr(t_addr[8:0]),
        .wr_data(t_data[7:0]), .rd_addr(ls_raddr), .rd_data(ls_rdata),
        .copy_start(copy_start), .copy_busy(copy_busy[6]));
    wccp_ram #(.AW(8), .DW(54), .RD_REG(0)) learnt (
        .clk(clk), .wr_en(ln_we), .wr_addr(ln_widx), .wr_data(ln_wdata),
        .rd_addr(c_raddr), .rd_data(ln_rdata));

    // the decision as handed to a commit unit (valid with its ho)
    wire [1:0]  ho;
    wire        d_drop, d_port;
    wire [1:0]  d_kind;
    wire [5:0]  d_hlen;
    wire [10:0] d_src_off;
    wire [47:0] d_dmac;
    wire [15:0] d_csum, d_tl;
    wire [31:0] d_cip, d_rh;
    wire        p_ntr, p_fromc, p_unass, p_unkn, p_toobig, p_ret, p_l2, p_gre, p_retbad, p_slot,
                p_cache, p_bucket;
    wire [2:0]  d_slot_idx;
    wire [4:0]  d_cache_idx;
    wire [7:0]  d_bucket_idx;
    // learning targets towards the commit units
    wire        lt_valid, lt_port;
    wire [7:0]  lt_idx;
    wire [1:0]  lt_room, lt_pend;
    wccp_decide #(.PEARSON(PEARSON)) decide (
        .clk(clk), .rst(rst_dc), .hold(hold), .busy(busy),
        .in_valid(q_valid), .in_ready(q_pop), .in_free(q_free), .in_soon(q_soon),
        .in_dst_mac(q_dst), .in_src_mac(q_src), .in_vlan(q_vlan),
        .in_is_ip(q_is_ip), .in_ip_hdr_ok(q_ip_hdr_ok), .in_proto(q_proto), .in_sip(q_sip),
        .in_dip(q_dip), .in_tcpudp(q_tcpudp), .in_totlen(q_totlen),
        .in_ihl(q_ihl), .in_l4w0(q_l4w0), .in_l4b4(q_l4b4), .in_len4(q_len4), .in_len8(q_len8),
        .active(active), .router_id(router_id), .mtu(mtu), .nh_mac(nh_mac),
        .grp_ctrl(grp_ctrl), .grp_svc(grp_svc), .grp_flags(grp_flags), .grp_ports(grp_ports),
        .c_raddr(c_raddr), .ca_rdata(ca_rdata), .cm_rdata(cm_rdata), .ln_rdata(ln_rdata),
        .bk_raddr(bk_raddr), .bk_rdata(bk_rdata), .mp_raddr(mp_raddr), .mp_rdata(mp_rdata),
        .mt_raddr(mt_raddr), .mt_rdata(mt_rdata), .acl_raddr(acl_raddr), .acl_rdata(acl_rdata),
        .hd_raddr(hd_raddr), .hd_rdata(hd_rdata), .ls_raddr(ls_raddr), .ls_rdata(ls_rdata),
        .lr_valid(lt_valid), .lr_idx(lt_idx), .lr_port(lt_port), .lr_room(lt_room), .lpend(lt_pend),
        .sf_ip_wr(t_we[0]), .sf_ip_key(t_data), .sf_mac_wr(ln_we),
        .sf_mac_key(ln_wdata[47:0]), .sf_l2_wr(t_we[1] && t_data[`WCCP_METHOD_RET_SHIFT +: 2] == `WCCP_RET_L2),
        .ho(ho), .d_drop(d_drop), .d_port(d_port), .d_kind(d_kind), .d_hlen(d_hlen), .d_src_off(d_src_off),
        .d_dmac(d_dmac), .d_csum(d_csum), .d_cip(d_cip), .d_rh(d_rh), .d_tl(d_tl),
        .p_ntr(p_ntr), .p_fromc(p_fromc), .p_unass(p_unass), .p_unkn(p_unkn), .p_toobig(p_toobig),
        .p_ret(p_ret), .p_l2(p_l2), .p_gre(p_gre), .p_retbad(p_retbad), .p_slot(p_slot),
        .p_cache(p_cache), .p_bucket(p_bucket), .d_slot_idx(d_slot_idx), .d_cache_idx(d_cache_idx),
        .d_bucket_idx(d_bucket_idx));

    genvar g;
    generate
    for (g = 0; g < 2; g = g + 1) begin : port
        wire        rst_rx, rst_cu, rst_bl;
        wccp_rst_buf rb_rx (.clk(clk), .d(rst), .q(rst_rx));   // receive MAC, parser, queue
        wccp_rst_buf rb_cu (.clk(clk), .d(rst), .q(rst_cu));   // commit unit
        wccp_rst_buf rb_bl (.clk(clk), .d(rst), .q(rst_bl));   // builder
        wire [BUF_AW-1:0] buf_raddr, rel_ptr;
        wire [7:0]  buf_rdata;
        // the frame's status (end of frame), one per bundle, in order
        wire        st_valid, st_pop, st_good, st_avail;
        wire [10:0] st_flen;
        wire [7:0]  m_data;
        wire        m_valid, m_last, m_good;
        wire [31:0] c_sip;
        wire [47:0] c_mac;

        wccp_rxq #(.BUF_AW(BUF_AW)) rxq (
            .clk(clk), .rst(rst_rx), .gmii_rxd(rxd[g]), .gmii_rx_dv(rxdv[g]), .gmii_rx_er(rxer[g]),
            .buf_raddr(buf_raddr), .buf_rdata(buf_rdata), .rel_ptr(rel_ptr),
            .q_valid(q_valid[g]), .q_soon(q_soon[g]), .q_pop(q_pop[g]), .q_start(q_start[g*BUF_AW +: BUF_AW]),
            .q_dst_mac(q_dst[g*48 +: 48]), .q_src_mac(q_src[g*48 +: 48]), .q_vlan(q_vlan[g]),
            .q_tci(q_tci[g*16 +: 16]), .q_is_ip(q_is_ip[g]), .q_ip_hdr_ok(q_ip_hdr_ok[g]),
            .q_proto(q_proto[g*8 +: 8]), .q_sip(q_sip[g*32 +: 32]), .q_dip(q_dip[g*32 +: 32]),
            .q_tcpudp(q_tcpudp[g]), .q_totlen(q_totlen[g*16 +: 16]),
            .q_ihl(q_ihl[g*4 +: 4]), .q_l4w0(q_l4w0[g*32 +: 32]), .q_l4b4(q_l4b4[g*8 +: 8]),
            .q_len4(q_len4[g*16 +: 16]), .q_len8(q_len8[g*16 +: 16]),
            .st_valid(st_valid), .st_pop(st_pop), .st_good(st_good), .st_avail(st_avail),
            .st_flen(st_flen), .m_data(m_data), .m_valid(m_valid), .m_last(m_last), .m_good(m_good),
            .ev_rx(ev_rx[g]), .ev_rx_len(ev_rx_len[g*12 +: 12]), .ev_drop(ev_drop[g*4 +: 4]));
        wccp_arpcap arpcap (
            .clk(clk), .rst(rst_rx), .s_data(m_data), .s_valid(m_valid), .s_last(m_last),
            .s_good(m_good), .appl_mac(appl_mac), .cap_valid(cap_v[g]), .cap_sip(c_sip),
            .cap_mac(c_mac));
        assign cap_d[g] = {c_sip, c_mac};

        wire        act_valid, act_ready, act_drop, act_port;
        wire [11:0] act_start;
        wire [10:0] act_flen, act_src_off;
        wire        act_cut, fin_valid, fin_ready, fin_good, b_idle;
        wire [10:0] fin_flen;
        wire [5:0]  act_hlen;
        wire [1:0]  act_kind;
        wire [47:0] act_dmac, act_smac;
        wire        act_vlan;
        wire [15:0] act_tci, act_tl, act_csum;
        wire [31:0] act_rid, act_cip, act_rh;
        wire [11:0] ev_b;
        wccp_commit #(.PORT(g)) cu (
            .clk(clk), .rst(rst_cu), .free(q_free[g]), .take(q_pop[g]),
            .q_start(q_start[g*BUF_AW +: BUF_AW]), .q_src_mac(q_src[g*48 +: 48]), .q_vlan(q_vlan[g]),
            .q_tci(q_tci[g*16 +: 16]), .q_is_ip(q_is_ip[g]), .q_ip_hdr_ok(q_ip_hdr_ok[g]),
            .st_valid(st_valid), .st_pop(st_pop), .st_good(st_good), .st_avail(st_avail), .st_flen(st_flen),
            .l_valid(lt_valid), .l_port(lt_port), .l_idx(lt_idx), .l_room(lt_room[g]), .l_pend(lt_pend[g]),
            .ho(ho[g]), .d_drop(d_drop), .d_port(d_port), .d_kind(d_kind), .d_hlen(d_hlen),
            .d_src_off(d_src_off), .d_dmac(d_dmac), .d_csum(d_csum), .d_cip(d_cip), .d_rh(d_rh),
            .d_tl(d_tl), .p_ntr(p_ntr), .p_fromc(p_fromc), .p_unass(p_unass), .p_unkn(p_unkn),
            .p_toobig(p_toobig), .p_ret(p_ret), .p_l2(p_l2), .p_gre(p_gre), .p_retbad(p_retbad),
            .p_slot(p_slot), .p_cache(p_cache), .p_bucket(p_bucket), .d_slot_idx(d_slot_idx),
            .d_cache_idx(d_cache_idx), .d_bucket_idx(d_bucket_idx), .appl_mac(appl_mac),
            .router_id(router_id),
            .lr_valid(lrv[g]), .lr_idx(lri[g]), .lr_mac(lrm[g]), .lr_ack(lra[g]),
            .act_valid(act_valid), .act_ready(act_ready), .act_drop(act_drop), .act_port(act_port),
            .act_start(act_start), .act_flen(act_flen), .act_hlen(act_hlen), .act_kind(act_kind),
            .act_dmac(act_dmac), .act_smac(act_smac), .act_vlan(act_vlan), .act_tci(act_tci),
            .act_tl(act_tl), .act_csum(act_csum), .act_rid(act_rid), .act_cip(act_cip), .act_rh(act_rh),
            .act_src_off(act_src_off), .act_cut(act_cut), .act_go(a_go[g]), .out_idle(b_idle),
            .fin_valid(fin_valid), .fin_ready(fin_ready), .fin_good(fin_good), .fin_flen(fin_flen),
            .ev_cause(ev_cause[g*12 +: 12]), .ev_slot(ev_slot[g]), .ev_cache(ev_cache[g]),
            .ev_bucket(ev_bucket[g]), .ev_slot_idx(ev_slot_idx[g*3 +: 3]),
            .ev_cache_idx(ev_cache_idx[g*5 +: 5]), .ev_bucket_idx(ev_bucket_idx[g*8 +: 8]),
            .ev_bytes(ev_b));
        assign ev_bytes[g*12 +: 12] = ev_b;

        wccp_builder #(.BUF_AW(BUF_AW)) builder (
            .clk(clk), .rst(rst_bl), .act_valid(act_valid), .act_ready(act_ready), .act_drop(act_drop),
            .act_port(act_port), .act_start(act_start), .act_flen(act_flen), .act_hlen(act_hlen),
            .act_kind(act_kind), .act_dmac(act_dmac), .act_smac(act_smac), .act_vlan(act_vlan),
            .act_tci(act_tci), .act_tl(act_tl), .act_csum(act_csum), .act_rid(act_rid), .act_cip(act_cip),
            .act_rh(act_rh), .act_src_off(act_src_off), .act_cut(act_cut), .gre_max(gre_max),
            .fin_valid(fin_valid), .fin_ready(fin_ready), .fin_good(fin_good), .fin_flen(fin_flen),
            .buf_raddr(buf_raddr), .buf_rdata(buf_rdata), .rel_ptr(rel_ptr),
            .req(b_req[g]), .m_data(b_data[g]), .m_valid(b_valid[g]), .m_last(b_last[g]),
            .m_abort(b_abort[g]), .m_ready(b_ready[g]), .idle(b_idle));
    end
    endgenerate

    // ---------------- per (slot, cache) and per (slot, bucket) counters ----------------
    wccp_cnt_ram #(.AW(8), .BYTES(1)) cache_cnt (
        .clk(clk), .rst(rst_cc),
        .ev0(ev_cache[0]), .ev0_idx({ev_slot_idx[2:0], ev_cache_idx[4:0]}), .ev0_bytes(ev_bytes[11:0]),
        .ev1(ev_cache[1]), .ev1_idx({ev_slot_idx[5:3], ev_cache_idx[9:5]}), .ev1_bytes(ev_bytes[23:12]),
        .rd(cc_rd), .rd_idx(cnt_addr[8:1]), .rd_hi(cnt_addr[0]), .rdata(cc_rdata), .rvalid(cc_rvalid));
    wccp_cnt_ram #(.AW(11), .BYTES(0)) bucket_cnt (
        .clk(clk), .rst(rst_bc),
        .ev0(ev_bucket[0]), .ev0_idx({ev_slot_idx[2:0], ev_bucket_idx[7:0]}), .ev0_bytes(12'd0),
        .ev1(ev_bucket[1]), .ev1_idx({ev_slot_idx[5:3], ev_bucket_idx[15:8]}), .ev1_bytes(12'd0),
        .rd(bc_rd), .rd_idx(cnt_addr[10:0]), .rd_hi(1'b0), .rdata(bc_rdata), .rvalid(bc_rvalid));
    // frames to the origin because the chosen cache's location is unknown (cause 3: cache_unknown)
    wccp_cnt_ram #(.AW(8), .BYTES(0)) unk_cnt (
        .clk(clk), .rst(rst_uc),
        .ev0(ev_cause[3]), .ev0_idx({ev_slot_idx[2:0], ev_cache_idx[4:0]}), .ev0_bytes(12'd0),
        .ev1(ev_cause[12 + 3]), .ev1_idx({ev_slot_idx[5:3], ev_cache_idx[9:5]}), .ev1_bytes(12'd0),
        .rd(uc_rd), .rd_idx(cnt_addr[7:0]), .rd_hi(1'b0), .rdata(uc_rdata), .rvalid(uc_rvalid));

    // ---------------- egress: arbiter + MAC tx per port ----------------
    // Everything between a builder and a MAC is registered once in each direction (the two
    // sit far apart on the die): the MAC's registered byte request becomes the builder's
    // m_ready a cycle later, and the popped byte reaches the MAC a cycle after the pop.
    wire [1:0] e_grant_valid;
    wire [3:0] e_grant;          // which source owns egress e (2 bits each: builder 0 / 1, packet out)
    wire [1:0] tx_ready;
    reg  [1:0] b_go;             // registered request towards builder 0 / 1
    wire [7:0] txd [0:1];
    wire       txen [0:1];
    wire       txer [0:1];
    generate
    for (g = 0; g < 2; g = g + 1) begin : egress
        wire       gv, s_ready, done;
        wire [1:0] gsel;
        // requests: a builder's, or its commit unit's act_go in the cycle before it (the builder
        // takes that action in that cycle and raises its request with it: the arbiter holds
        // the grant; a request that comes later waits, so the owner is never one whose first
        // byte is due before it can be there)
        // (the packet-out sender requests for exactly one frame too, its bytes ready at once)
        wire [2:0] rq = {pk_req[g], b_req[1][g] || a_go[1][g], b_req[0][g] || a_go[0][g]};
        /* verilator lint_off UNUSEDSIGNAL */
        wire       aborted;      // a stomped frame: not counted as transmitted
        /* verilator lint_on UNUSEDSIGNAL */
        wire [11:0] flen;
        reg  [7:0] e_data;
        reg        e_valid, e_last, e_abort, e_start;
        wire       rst_e;
        wccp_rst_buf rb_e (.clk(clk), .d(rst), .q(rst_e));     // arbiter, egress registers, MAC
        wccp_arbiter #(.N(3)) arb (
            .clk(clk), .rst(rst_e), .req(rq), .grant_valid(gv), .grant(gsel));
        assign e_grant_valid[g] = gv;
        assign e_grant[g*2 +: 2] = gsel;
        assign tx_ready[g] = s_ready;
        always @(posedge clk) begin
            e_data  <= gsel[1] ? pk_data : gsel[0] ? b_data[1] : b_data[0];
            e_last  <= gsel[1] ? pk_last : gsel[0] ? b_last[1] : b_last[0];
            e_abort <= !gsel[1] && (gsel[0] ? b_abort[1] : b_abort[0]);
            e_valid <= !rst_e && gv && (gsel[1] ? (pk_valid && pk_go) :
                                        gsel[0] ? (b_valid[1] && b_ready[1]) : (b_valid[0] && b_ready[0]));
        end
        // the preamble starts two cycles after a request (registered: e_start; the arbiter
        // grants it in the next cycle) or a grant: the owner's first byte is popped 4 cycles
        // after the preamble's start at the earliest (the MAC asks for it 2 cycles into the
        // preamble), and is in its FIFO by then: 6 cycles after its request (fast start:
        // act_go, then the builder's issue in l2) or 5 (the builder's request with l2, its
        // issue after go). An idle arbiter grants any request in the next cycle; a builder
        // that requests, or whose commit unit raised act_go, always sends a frame.
        always @(posedge clk) e_start <= !rst_e && (gv || rq != 3'd0);
        wccp_mac_tx mac_tx (
            .clk(clk), .rst(rst_e), .s_data(e_data), .s_valid(e_valid), .s_last(e_last),
            .s_abort(e_abort), .s_start(e_start), .s_ready(s_ready),
            .gmii_txd(txd[g]), .gmii_tx_en(txen[g]), .gmii_tx_er(txer[g]),
            .frame_done(done), .frame_len(flen), .frame_aborted(aborted));
        assign ev_tx[g] = done;
        assign ev_tx_len[g*12 +: 12] = flen;
    end
    endgenerate
    always @(posedge clk) begin
        b_go[0] <= !rst_go && ((e_grant_valid[0] && e_grant[1:0] == 2'd0 && tx_ready[0]) ||
                            (e_grant_valid[1] && e_grant[3:2] == 2'd0 && tx_ready[1]));
        b_go[1] <= !rst_go && ((e_grant_valid[0] && e_grant[1:0] == 2'd1 && tx_ready[0]) ||
                            (e_grant_valid[1] && e_grant[3:2] == 2'd1 && tx_ready[1]));
        pk_go   <= !rst_go && ((e_grant_valid[0] && e_grant[1:0] == 2'd2 && tx_ready[0]) ||
                            (e_grant_valid[1] && e_grant[3:2] == 2'd2 && tx_ready[1]));
    end
    assign b_ready[0] = b_go[0];
    assign b_ready[1] = b_go[1];
    assign gmii0_txd = txd[0]; assign gmii0_tx_en = txen[0]; assign gmii0_tx_er = txer[0];
    assign gmii1_txd = txd[1]; assign gmii1_tx_en = txen[1]; assign gmii1_tx_er = txer[1];
endmodule
`default_nettype wire
