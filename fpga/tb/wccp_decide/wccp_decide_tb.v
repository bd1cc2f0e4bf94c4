// Testbench wrapper for the decision core (wccp_decide) with its two commit units
// (wccp_commit), wired as in fpga_core: one set of table RAMs (cache address / cache method /
// bucket / mask position / mask table / source index bank RAMs, learnt-location RAM) behind
// the core, the table write ports exposed to the test. The learnt RAM is written by the test
// (tl_wr, like the register file's CACHE_MAC writes) or by a commit unit's learning request
// when the test grants it (lr_ack = lr_valid & lr_ack_en, port PORT's commit unit before the
// other's). The
// test plays both ports' receive queues (wccp_rxq): it drives each port's bundle (queue head)
// and status FIFO head, and takes each port's actions, fins and events: receive port PORT's
// signals have the plain names, the other port's the prefix o_ (a test of one port leaves
// o_in_valid low).
`timescale 1ns / 1ps
`include "wccp_regmap.vh"
`default_nettype none
module wccp_decide_tb #(
    parameter PORT = 0
) (
    input  wire          clk,
    input  wire          rst,
    input  wire          hold,
    output wire          busy,
    // receive port PORT: queue head, status FIFO head, learning grant, builder handshakes
    input  wire          in_valid,
    input  wire [11:0]   in_start,
    input  wire [47:0]   in_dst_mac,
    input  wire [47:0]   in_src_mac,
    input  wire          in_vlan,
    input  wire [15:0]   in_tci,
    input  wire          in_is_ip,
    input  wire          in_ip_hdr_ok,
    input  wire [7:0]    in_proto,
    input  wire [31:0]   in_sip,
    input  wire [31:0]   in_dip,
    input  wire          in_tcpudp,
    input  wire [15:0]   in_totlen,
    input  wire [3:0]    in_ihl,
    input  wire [31:0]   in_l4w0,
    input  wire [7:0]    in_l4b4,
    input  wire [15:0]   in_len4,
    input  wire [15:0]   in_len8,
    input  wire          st_valid,
    input  wire          st_good,
    input  wire          st_avail,
    input  wire [10:0]   st_flen,
    input  wire          lr_ack_en,
    input  wire          act_ready,
    input  wire          out_idle,
    input  wire          fin_ready,
    // receive port PORT: pops, learning requests, action, fin, events
    output wire          in_ready,
    output wire          st_pop,
    output wire          lr_valid,
    output wire [7:0]    lr_idx,
    output wire [47:0]   lr_mac,
    output wire          lr_ack,
    output wire          act_valid,
    output wire          act_drop,
    output wire          act_port,
    output wire [11:0]   act_start,
    output wire [10:0]   act_flen,
    output wire [5:0]    act_hlen,
    output wire [1:0]    act_kind,
    output wire [47:0]   act_dmac,
    output wire [47:0]   act_smac,
    output wire          act_vlan,
    output wire [15:0]   act_tci,
    output wire [15:0]   act_tl,
    output wire [15:0]   act_csum,
    output wire [31:0]   act_rid,
    output wire [31:0]   act_cip,
    output wire [31:0]   act_rh,
    output wire [10:0]   act_src_off,
    output wire          act_cut,
    output wire [1:0]    act_go,
    output wire          fin_valid,
    output wire          fin_good,
    output wire [10:0]   fin_flen,
    output wire [11:0]   ev_cause,
    output wire          ev_slot,
    output wire          ev_cache,
    output wire          ev_bucket,
    output wire [2:0]    ev_slot_idx,
    output wire [4:0]    ev_cache_idx,
    output wire [7:0]    ev_bucket_idx,
    output wire [11:0]   ev_bytes,
    // the other receive port: queue head, status FIFO head, learning grant, builder handshakes
    input  wire          o_in_valid,
    input  wire [11:0]   o_in_start,
    input  wire [47:0]   o_in_dst_mac,
    input  wire [47:0]   o_in_src_mac,
    input  wire          o_in_vlan,
    input  wire [15:0]   o_in_tci,
    input  wire          o_in_is_ip,
    input  wire          o_in_ip_hdr_ok,
    input  wire [7:0]    o_in_proto,
    input  wire [31:0]   o_in_sip,
    input  wire [31:0]   o_in_dip,
    input  wire          o_in_tcpudp,
    input  wire [15:0]   o_in_totlen,
    input  wire [3:0]    o_in_ihl,
    input  wire [31:0]   o_in_l4w0,
    input  wire [7:0]    o_in_l4b4,
    input  wire [15:0]   o_in_len4,
    input  wire [15:0]   o_in_len8,
    input  wire          o_st_valid,
    input  wire          o_st_good,
    input  wire          o_st_avail,
    input  wire [10:0]   o_st_flen,
    input  wire          o_lr_ack_en,
    input  wire          o_act_ready,
    input  wire          o_out_idle,
    input  wire          o_fin_ready,
    // the other receive port: pops, learning requests, action, fin, events
    output wire          o_in_ready,
    output wire          o_st_pop,
    output wire          o_lr_valid,
    output wire [7:0]    o_lr_idx,
    output wire [47:0]   o_lr_mac,
    output wire          o_lr_ack,
    output wire          o_act_valid,
    output wire          o_act_drop,
    output wire          o_act_port,
    output wire [11:0]   o_act_start,
    output wire [10:0]   o_act_flen,
    output wire [5:0]    o_act_hlen,
    output wire [1:0]    o_act_kind,
    output wire [47:0]   o_act_dmac,
    output wire [47:0]   o_act_smac,
    output wire          o_act_vlan,
    output wire [15:0]   o_act_tci,
    output wire [15:0]   o_act_tl,
    output wire [15:0]   o_act_csum,
    output wire [31:0]   o_act_rid,
    output wire [31:0]   o_act_cip,
    output wire [31:0]   o_act_rh,
    output wire [10:0]   o_act_src_off,
    output wire          o_act_cut,
    output wire [1:0]    o_act_go,
    output wire          o_fin_valid,
    output wire          o_fin_good,
    output wire [10:0]   o_fin_flen,
    output wire [11:0]   o_ev_cause,
    output wire          o_ev_slot,
    output wire          o_ev_cache,
    output wire          o_ev_bucket,
    output wire [2:0]    o_ev_slot_idx,
    output wire [4:0]    o_ev_cache_idx,
    output wire [7:0]    o_ev_bucket_idx,
    output wire [11:0]   o_ev_bytes,
    input  wire          active,
    input  wire [31:0]   router_id,
    input  wire [47:0]   appl_mac,
    input  wire [15:0]   mtu,
    input  wire [95:0]   nh_mac,      // next hop towards egress 1, egress 0
    input  wire [255:0]  grp_ctrl,
    input  wire [255:0]  grp_svc,
    input  wire [255:0]  grp_flags,
    input  wire [1023:0] grp_ports,
    // table writes (shadow bank) and bank select
    input  wire          live,
    input  wire          t_wr,
    input  wire [2:0]    t_sel,       // 0 cache addr, 1 cache method, 2 bucket, 3 maskpos, 4 masktab,
                                      // 5 source index heads, 6 its list
    input  wire [9:0]    t_addr,
    input  wire [31:0]   t_data,
    // live redirect-list RAM writes from the test (wccp_regs' commit copy: slot*32 + word)
    input  wire          acl_wr,
    input  wire [7:0]    acl_waddr,
    input  wire [31:0]   acl_wdata,
    // learnt-location writes from the test
    input  wire          tl_wr,
    input  wire [7:0]    tl_idx,
    input  wire [53:0]   tl_data
);
    localparam OP = PORT ^ 1;
    // per receive port p (index p: port PORT is the test's plain-named one)
    wire          p_in_valid [0:1];
    wire [11:0]   p_in_start [0:1];
    wire [47:0]   p_in_dst_mac [0:1];
    wire [47:0]   p_in_src_mac [0:1];
    wire          p_in_vlan [0:1];
    wire [15:0]   p_in_tci [0:1];
    wire          p_in_is_ip [0:1];
    wire          p_in_ip_hdr_ok [0:1];
    wire [7:0]    p_in_proto [0:1];
    wire [31:0]   p_in_sip [0:1];
    wire [31:0]   p_in_dip [0:1];
    wire          p_in_tcpudp [0:1];
    wire [15:0]   p_in_totlen [0:1];
    wire [3:0]    p_in_ihl [0:1];
    wire [31:0]   p_in_l4w0 [0:1];
    wire [7:0]    p_in_l4b4 [0:1];
    wire [15:0]   p_in_len4 [0:1];
    wire [15:0]   p_in_len8 [0:1];
    wire          p_st_valid [0:1];
    wire          p_st_good [0:1];
    wire          p_st_avail [0:1];
    wire [10:0]   p_st_flen [0:1];
    wire          p_lr_ack_en [0:1];
    wire          p_act_ready [0:1];
    wire          p_out_idle [0:1];
    wire          p_fin_ready [0:1];
    wire          p_in_ready [0:1];
    wire          p_st_pop [0:1];
    wire          p_lr_valid [0:1];
    wire [7:0]    p_lr_idx [0:1];
    wire [47:0]   p_lr_mac [0:1];
    wire          p_lr_ack [0:1];
    wire          p_act_valid [0:1];
    wire          p_act_drop [0:1];
    wire          p_act_port [0:1];
    wire [11:0]   p_act_start [0:1];
    wire [10:0]   p_act_flen [0:1];
    wire [5:0]    p_act_hlen [0:1];
    wire [1:0]    p_act_kind [0:1];
    wire [47:0]   p_act_dmac [0:1];
    wire [47:0]   p_act_smac [0:1];
    wire          p_act_vlan [0:1];
    wire [15:0]   p_act_tci [0:1];
    wire [15:0]   p_act_tl [0:1];
    wire [15:0]   p_act_csum [0:1];
    wire [31:0]   p_act_rid [0:1];
    wire [31:0]   p_act_cip [0:1];
    wire [31:0]   p_act_rh [0:1];
    wire [10:0]   p_act_src_off [0:1];
    wire          p_act_cut [0:1];
    wire [1:0]    p_act_go [0:1];
    wire          p_fin_valid [0:1];
    wire          p_fin_good [0:1];
    wire [10:0]   p_fin_flen [0:1];
    wire [11:0]   p_ev_cause [0:1];
    wire          p_ev_slot [0:1];
    wire          p_ev_cache [0:1];
    wire          p_ev_bucket [0:1];
    wire [2:0]    p_ev_slot_idx [0:1];
    wire [4:0]    p_ev_cache_idx [0:1];
    wire [7:0]    p_ev_bucket_idx [0:1];
    wire [11:0]   p_ev_bytes [0:1];
    assign p_in_valid[PORT] = in_valid; assign p_in_valid[OP] = o_in_valid;
    assign p_in_start[PORT] = in_start; assign p_in_start[OP] = o_in_start;
    assign p_in_dst_mac[PORT] = in_dst_mac; assign p_in_dst_mac[OP] = o_in_dst_mac;
    assign p_in_src_mac[PORT] = in_src_mac; assign p_in_src_mac[OP] = o_in_src_mac;
    assign p_in_vlan[PORT] = in_vlan; assign p_in_vlan[OP] = o_in_vlan;
    assign p_in_tci[PORT] = in_tci; assign p_in_tci[OP] = o_in_tci;
    assign p_in_is_ip[PORT] = in_is_ip; assign p_in_is_ip[OP] = o_in_is_ip;
    assign p_in_ip_hdr_ok[PORT] = in_ip_hdr_ok; assign p_in_ip_hdr_ok[OP] = o_in_ip_hdr_ok;
    assign p_in_proto[PORT] = in_proto; assign p_in_proto[OP] = o_in_proto;
    assign p_in_sip[PORT] = in_sip; assign p_in_sip[OP] = o_in_sip;
    assign p_in_dip[PORT] = in_dip; assign p_in_dip[OP] = o_in_dip;
    assign p_in_tcpudp[PORT] = in_tcpudp; assign p_in_tcpudp[OP] = o_in_tcpudp;
    assign p_in_totlen[PORT] = in_totlen; assign p_in_totlen[OP] = o_in_totlen;
    assign p_in_ihl[PORT] = in_ihl; assign p_in_ihl[OP] = o_in_ihl;
    assign p_in_l4w0[PORT] = in_l4w0; assign p_in_l4w0[OP] = o_in_l4w0;
    assign p_in_l4b4[PORT] = in_l4b4; assign p_in_l4b4[OP] = o_in_l4b4;
    assign p_in_len4[PORT] = in_len4; assign p_in_len4[OP] = o_in_len4;
    assign p_in_len8[PORT] = in_len8; assign p_in_len8[OP] = o_in_len8;
    assign p_st_valid[PORT] = st_valid; assign p_st_valid[OP] = o_st_valid;
    assign p_st_good[PORT] = st_good; assign p_st_good[OP] = o_st_good;
    assign p_st_avail[PORT] = st_avail; assign p_st_avail[OP] = o_st_avail;
    assign p_st_flen[PORT] = st_flen; assign p_st_flen[OP] = o_st_flen;
    assign p_lr_ack_en[PORT] = lr_ack_en; assign p_lr_ack_en[OP] = o_lr_ack_en;
    assign p_act_ready[PORT] = act_ready; assign p_act_ready[OP] = o_act_ready;
    assign p_out_idle[PORT] = out_idle; assign p_out_idle[OP] = o_out_idle;
    assign p_fin_ready[PORT] = fin_ready; assign p_fin_ready[OP] = o_fin_ready;
    assign in_ready = p_in_ready[PORT]; assign o_in_ready = p_in_ready[OP];
    assign st_pop = p_st_pop[PORT]; assign o_st_pop = p_st_pop[OP];
    assign lr_valid = p_lr_valid[PORT]; assign o_lr_valid = p_lr_valid[OP];
    assign lr_idx = p_lr_idx[PORT]; assign o_lr_idx = p_lr_idx[OP];
    assign lr_mac = p_lr_mac[PORT]; assign o_lr_mac = p_lr_mac[OP];
    assign lr_ack = p_lr_ack[PORT]; assign o_lr_ack = p_lr_ack[OP];
    assign act_valid = p_act_valid[PORT]; assign o_act_valid = p_act_valid[OP];
    assign act_drop = p_act_drop[PORT]; assign o_act_drop = p_act_drop[OP];
    assign act_port = p_act_port[PORT]; assign o_act_port = p_act_port[OP];
    assign act_start = p_act_start[PORT]; assign o_act_start = p_act_start[OP];
    assign act_flen = p_act_flen[PORT]; assign o_act_flen = p_act_flen[OP];
    assign act_hlen = p_act_hlen[PORT]; assign o_act_hlen = p_act_hlen[OP];
    assign act_kind = p_act_kind[PORT]; assign o_act_kind = p_act_kind[OP];
    assign act_dmac = p_act_dmac[PORT]; assign o_act_dmac = p_act_dmac[OP];
    assign act_smac = p_act_smac[PORT]; assign o_act_smac = p_act_smac[OP];
    assign act_vlan = p_act_vlan[PORT]; assign o_act_vlan = p_act_vlan[OP];
    assign act_tci = p_act_tci[PORT]; assign o_act_tci = p_act_tci[OP];
    assign act_tl = p_act_tl[PORT]; assign o_act_tl = p_act_tl[OP];
    assign act_csum = p_act_csum[PORT]; assign o_act_csum = p_act_csum[OP];
    assign act_rid = p_act_rid[PORT]; assign o_act_rid = p_act_rid[OP];
    assign act_cip = p_act_cip[PORT]; assign o_act_cip = p_act_cip[OP];
    assign act_rh = p_act_rh[PORT]; assign o_act_rh = p_act_rh[OP];
    assign act_src_off = p_act_src_off[PORT]; assign o_act_src_off = p_act_src_off[OP];
    assign act_cut = p_act_cut[PORT]; assign o_act_cut = p_act_cut[OP];
    assign act_go = p_act_go[PORT]; assign o_act_go = p_act_go[OP];
    assign fin_valid = p_fin_valid[PORT]; assign o_fin_valid = p_fin_valid[OP];
    assign fin_good = p_fin_good[PORT]; assign o_fin_good = p_fin_good[OP];
    assign fin_flen = p_fin_flen[PORT]; assign o_fin_flen = p_fin_flen[OP];
    assign ev_cause = p_ev_cause[PORT]; assign o_ev_cause = p_ev_cause[OP];
    assign ev_slot = p_ev_slot[PORT]; assign o_ev_slot = p_ev_slot[OP];
    assign ev_cache = p_ev_cache[PORT]; assign o_ev_cache = p_ev_cache[OP];
    assign ev_bucket = p_ev_bucket[PORT]; assign o_ev_bucket = p_ev_bucket[OP];
    assign ev_slot_idx = p_ev_slot_idx[PORT]; assign o_ev_slot_idx = p_ev_slot_idx[OP];
    assign ev_cache_idx = p_ev_cache_idx[PORT]; assign o_ev_cache_idx = p_ev_cache_idx[OP];
    assign ev_bucket_idx = p_ev_bucket_idx[PORT]; assign o_ev_bucket_idx = p_ev_bucket_idx[OP];
    assign ev_bytes = p_ev_bytes[PORT]; assign o_ev_bytes = p_ev_bytes[OP];

    wire [7:0]  c_raddr;
    wire [31:0] ca_rdata, bk_rdata, mp_rdata, mt_rdata;
    wire [3:0]  cm_rdata;
    wire [53:0] ln_rdata;
    wire [8:0]  bk_raddr;
    wire [5:0]  mp_raddr;
    wire [9:0]  mt_raddr;
    /* verilator lint_off UNUSEDSIGNAL */
    wire [6:0]  copy_busy;
    /* verilator lint_on UNUSEDSIGNAL */

    // the learnt-location writer (fpga_core's order: the test, port 0, port 1)
    wire        ack0 = p_lr_valid[0] && p_lr_ack_en[0] && !tl_wr;
    wire        ack1 = p_lr_valid[1] && p_lr_ack_en[1] && !tl_wr && !ack0;
    assign p_lr_ack[0] = ack0;
    assign p_lr_ack[1] = ack1;
    wire        ln_we = tl_wr | ack0 | ack1;
    wire [7:0]  ln_widx = tl_wr ? tl_idx : ack0 ? p_lr_idx[0] : p_lr_idx[1];
    wire [53:0] ln_wdata = tl_wr ? tl_data : ack0 ? {2'b11, 4'd0, p_lr_mac[0]} : {2'b11, 4'd1, p_lr_mac[1]};

    wccp_bank_ram #(.AW(8), .DW(32), .RD_REG(0)) cache_addr (
        .clk(clk), .rst(rst), .live(live), .wr_en(t_wr && t_sel == 3'd0), .wr_addr(t_addr[7:0]),
        .wr_data(t_data), .rd_addr(c_raddr), .rd_data(ca_rdata), .copy_start(1'b0),
        .copy_busy(copy_busy[0]));
    wccp_bank_ram #(.AW(8), .DW(4), .RD_REG(0)) cache_meth (
        .clk(clk), .rst(rst), .live(live), .wr_en(t_wr && t_sel == 3'd1), .wr_addr(t_addr[7:0]),
        .wr_data(t_data[3:0]), .rd_addr(c_raddr), .rd_data(cm_rdata), .copy_start(1'b0),
        .copy_busy(copy_busy[1]));
    wccp_bank_ram #(.AW(9), .DW(32), .RD_REG(0)) bucket (
        .clk(clk), .rst(rst), .live(live), .wr_en(t_wr && t_sel == 3'd2), .wr_addr(t_addr[8:0]),
        .wr_data(t_data), .rd_addr(bk_raddr), .rd_data(bk_rdata), .copy_start(1'b0),
        .copy_busy(copy_busy[2]));
    wccp_bank_ram #(.AW(6), .DW(32)) maskpos (
        .clk(clk), .rst(rst), .live(live), .wr_en(t_wr && t_sel == 3'd3), .wr_addr(t_addr[5:0]),
        .wr_data(t_data), .rd_addr(mp_raddr), .rd_data(mp_rdata), .copy_start(1'b0),
        .copy_busy(copy_busy[3]));
    wccp_bank_ram #(.AW(10), .DW(32)) masktab (
        .clk(clk), .rst(rst), .live(live), .wr_en(t_wr && t_sel == 3'd4), .wr_addr(t_addr),
        .wr_data(t_data), .rd_addr(mt_raddr), .rd_data(mt_rdata), .copy_start(1'b0),
        .copy_busy(copy_busy[4]));
    // the cache-source index (t_sel 5: heads {count, start}, 6: the list)
    wire [8:0]  hd_raddr, ls_raddr;
    wire [17:0] hd_rdata;
    wire [7:0]  ls_rdata;
    wccp_bank_ram #(.AW(9), .DW(18), .RD_REG(1)) srcidx_head (
        .clk(clk), .rst(rst), .live(live), .wr_en(t_wr && t_sel == 3'd5), .wr_addr(t_addr[8:0]),
        .wr_data({t_data[16 +: 9], t_data[8:0]}), .rd_addr(hd_raddr), .rd_data(hd_rdata),
        .copy_start(1'b0), .copy_busy(copy_busy[5]));
    wccp_bank_ram #(.AW(9), .DW(8), .RD_REG(1)) srcidx_list (
        .clk(clk), .rst(rst), .live(live), .wr_en(t_wr && t_sel == 3'd6), .wr_addr(t_addr[8:0]),
        .wr_data(t_data[7:0]), .rd_addr(ls_raddr), .rd_data(ls_rdata),
        .copy_start(1'b0), .copy_busy(copy_busy[6]));
    wccp_ram #(.AW(8), .DW(54), .RD_REG(0)) learnt (
        .clk(clk), .wr_en(ln_we), .wr_addr(ln_widx), .wr_data(ln_wdata),
        .rd_addr(c_raddr), .rd_data(ln_rdata));
    // the live redirect-lists (wccp_regs' acl RAM: written by the test, read by the core)
    wire [7:0]  acl_raddr;
    wire [31:0] acl_rdata;
    /* verilator lint_off PINCONNECTEMPTY */
    wccp_bram #(.AW(8), .DW(32)) acl (
        .clk(clk), .a_we(acl_wr), .a_addr(acl_waddr), .a_wdata(acl_wdata), .a_rdata(),
        .b_addr(acl_raddr), .b_rdata(acl_rdata));
    /* verilator lint_on PINCONNECTEMPTY */

    wire [1:0]  ho, free, lt_room, lt_pend;
    wire        lt_valid, lt_port;
    wire [7:0]  lt_idx;
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
    wire [1:0]  in_ready_v;
    assign p_in_ready[0] = in_ready_v[0];
    assign p_in_ready[1] = in_ready_v[1];
    wccp_decide dut (
        .clk(clk), .rst(rst), .hold(hold), .busy(busy),
        .in_valid({p_in_valid[1], p_in_valid[0]}), .in_ready(in_ready_v), .in_free(free), .in_soon(2'b00),
        .in_dst_mac({p_in_dst_mac[1], p_in_dst_mac[0]}),
        .in_src_mac({p_in_src_mac[1], p_in_src_mac[0]}),
        .in_vlan({p_in_vlan[1], p_in_vlan[0]}),
        .in_is_ip({p_in_is_ip[1], p_in_is_ip[0]}),
        .in_ip_hdr_ok({p_in_ip_hdr_ok[1], p_in_ip_hdr_ok[0]}),
        .in_proto({p_in_proto[1], p_in_proto[0]}),
        .in_sip({p_in_sip[1], p_in_sip[0]}),
        .in_dip({p_in_dip[1], p_in_dip[0]}),
        .in_tcpudp({p_in_tcpudp[1], p_in_tcpudp[0]}),
        .in_totlen({p_in_totlen[1], p_in_totlen[0]}),
        .in_ihl({p_in_ihl[1], p_in_ihl[0]}),
        .in_l4w0({p_in_l4w0[1], p_in_l4w0[0]}),
        .in_l4b4({p_in_l4b4[1], p_in_l4b4[0]}),
        .in_len4({p_in_len4[1], p_in_len4[0]}),
        .in_len8({p_in_len8[1], p_in_len8[0]}),
        .active(active), .router_id(router_id), .mtu(mtu), .nh_mac(nh_mac),
        .grp_ctrl(grp_ctrl), .grp_svc(grp_svc), .grp_flags(grp_flags), .grp_ports(grp_ports),
        .c_raddr(c_raddr), .ca_rdata(ca_rdata), .cm_rdata(cm_rdata), .ln_rdata(ln_rdata),
        .bk_raddr(bk_raddr), .bk_rdata(bk_rdata), .mp_raddr(mp_raddr), .mp_rdata(mp_rdata),
        .mt_raddr(mt_raddr), .mt_rdata(mt_rdata), .acl_raddr(acl_raddr), .acl_rdata(acl_rdata),
        .hd_raddr(hd_raddr), .hd_rdata(hd_rdata), .ls_raddr(ls_raddr), .ls_rdata(ls_rdata),
        .lr_valid(lt_valid), .lr_idx(lt_idx), .lr_port(lt_port), .lr_room(lt_room), .lpend(lt_pend),
        .sf_ip_wr(t_wr && t_sel == 3'd0), .sf_ip_key(t_data), .sf_mac_wr(ln_we), .sf_mac_key(ln_wdata[47:0]),
        .sf_l2_wr(t_wr && t_sel == 3'd1 && t_data[`WCCP_METHOD_RET_SHIFT +: 2] == `WCCP_RET_L2),
        .ho(ho), .d_drop(d_drop), .d_port(d_port), .d_kind(d_kind), .d_hlen(d_hlen), .d_src_off(d_src_off),
        .d_dmac(d_dmac), .d_csum(d_csum), .d_cip(d_cip), .d_rh(d_rh), .d_tl(d_tl),
        .p_ntr(p_ntr), .p_fromc(p_fromc), .p_unass(p_unass), .p_unkn(p_unkn), .p_toobig(p_toobig),
        .p_ret(p_ret), .p_l2(p_l2), .p_gre(p_gre), .p_retbad(p_retbad), .p_slot(p_slot),
        .p_cache(p_cache), .p_bucket(p_bucket), .d_slot_idx(d_slot_idx), .d_cache_idx(d_cache_idx),
        .d_bucket_idx(d_bucket_idx));

    genvar g;
    generate
    for (g = 0; g < 2; g = g + 1) begin : port
        wccp_commit #(.PORT(g)) cu (
            .clk(clk), .rst(rst), .free(free[g]), .take(p_in_ready[g]),
            .q_start(p_in_start[g]), .q_src_mac(p_in_src_mac[g]), .q_vlan(p_in_vlan[g]),
            .q_tci(p_in_tci[g]), .q_is_ip(p_in_is_ip[g]), .q_ip_hdr_ok(p_in_ip_hdr_ok[g]),
            .st_valid(p_st_valid[g]), .st_pop(p_st_pop[g]), .st_good(p_st_good[g]),
            .st_avail(p_st_avail[g]), .st_flen(p_st_flen[g]),
            .l_valid(lt_valid), .l_port(lt_port), .l_idx(lt_idx), .l_room(lt_room[g]), .l_pend(lt_pend[g]),
            .ho(ho[g]), .d_drop(d_drop), .d_port(d_port), .d_kind(d_kind), .d_hlen(d_hlen),
            .d_src_off(d_src_off), .d_dmac(d_dmac), .d_csum(d_csum), .d_cip(d_cip), .d_rh(d_rh),
            .d_tl(d_tl), .p_ntr(p_ntr), .p_fromc(p_fromc), .p_unass(p_unass), .p_unkn(p_unkn),
            .p_toobig(p_toobig), .p_ret(p_ret), .p_l2(p_l2), .p_gre(p_gre), .p_retbad(p_retbad),
            .p_slot(p_slot), .p_cache(p_cache), .p_bucket(p_bucket), .d_slot_idx(d_slot_idx),
            .d_cache_idx(d_cache_idx), .d_bucket_idx(d_bucket_idx), .appl_mac(appl_mac),
            .router_id(router_id),
            .lr_valid(p_lr_valid[g]), .lr_idx(p_lr_idx[g]), .lr_mac(p_lr_mac[g]), .lr_ack(p_lr_ack[g]),
            .act_valid(p_act_valid[g]), .act_ready(p_act_ready[g]), .act_drop(p_act_drop[g]),
            .act_port(p_act_port[g]), .act_start(p_act_start[g]), .act_flen(p_act_flen[g]),
            .act_hlen(p_act_hlen[g]), .act_kind(p_act_kind[g]), .act_dmac(p_act_dmac[g]),
            .act_smac(p_act_smac[g]), .act_vlan(p_act_vlan[g]), .act_tci(p_act_tci[g]),
            .act_tl(p_act_tl[g]), .act_csum(p_act_csum[g]), .act_rid(p_act_rid[g]),
            .act_cip(p_act_cip[g]), .act_rh(p_act_rh[g]), .act_src_off(p_act_src_off[g]),
            .act_cut(p_act_cut[g]), .act_go(p_act_go[g]), .out_idle(p_out_idle[g]),
            .fin_valid(p_fin_valid[g]), .fin_ready(p_fin_ready[g]), .fin_good(p_fin_good[g]),
            .fin_flen(p_fin_flen[g]), .ev_cause(p_ev_cause[g]), .ev_slot(p_ev_slot[g]),
            .ev_cache(p_ev_cache[g]), .ev_bucket(p_ev_bucket[g]), .ev_slot_idx(p_ev_slot_idx[g]),
            .ev_cache_idx(p_ev_cache_idx[g]), .ev_bucket_idx(p_ev_bucket_idx[g]),
            .ev_bytes(p_ev_bytes[g]));
    end
    endgenerate
endmodule
`default_nettype wire
