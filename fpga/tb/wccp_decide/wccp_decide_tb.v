// Testbench wrapper for wccp_decide: the engine with its real table RAMs behind it, wired
// as in fpga_core (cache address / cache method / bucket / mask position / mask table bank
// RAMs, learnt-location RAM), with the table write ports exposed to the test. The learnt
// RAM is written by the test (tl_wr, like the register file's CACHE_MAC writes) or by the
// engine's learning request when the test grants it (lr_ack = lr_valid & lr_ack_en). The
// test drives the bundle and the status FIFO's head (wccp_rxq's place) directly.
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
    input  wire          in_valid,
    output wire          in_ready,
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
    input  wire [15:0]   in_sport,
    input  wire [15:0]   in_dport,
    input  wire [15:0]   in_totlen,
    input  wire [3:0]    in_ihl,
    input  wire [31:0]   in_l4w0,
    input  wire [7:0]    in_l4b4,
    input  wire [15:0]   in_len4,
    input  wire [15:0]   in_len8,
    // the status FIFO's head (driven by the test, which pops it on st_valid && st_pop)
    input  wire          st_valid,
    output wire          st_pop,
    input  wire          st_good,
    input  wire          st_avail,
    input  wire [10:0]   st_flen,
    input  wire          active,
    input  wire [31:0]   router_id,
    input  wire [47:0]   appl_mac,
    input  wire [15:0]   mtu,
    input  wire [47:0]   nh_mac,
    input  wire [255:0]  grp_ctrl,
    input  wire [255:0]  grp_svc,
    input  wire [255:0]  grp_flags,
    input  wire [1023:0] grp_ports,
    // table writes (shadow bank) and bank select
    input  wire          live,
    input  wire          t_wr,
    input  wire [2:0]    t_sel,       // 0 cache addr, 1 cache method, 2 bucket, 3 maskpos, 4 masktab
    input  wire [9:0]    t_addr,
    input  wire [31:0]   t_data,
    // live redirect-list RAM writes from the test (wccp_regs' commit copy: slot*32 + word)
    input  wire          acl_wr,
    input  wire [7:0]    acl_waddr,
    input  wire [31:0]   acl_wdata,
    // learnt-location writes from the test
    input  wire          tl_wr,
    input  wire [7:0]    tl_idx,
    input  wire [53:0]   tl_data,
    // learning
    input  wire          lr_ack_en,
    output wire          lr_valid,
    output wire [7:0]    lr_idx,
    output wire [47:0]   lr_mac,
    output wire          lr_ack,
    // action
    output wire          act_valid,
    input  wire          act_ready,
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
    input  wire          out_idle,
    output wire          fin_valid,
    input  wire          fin_ready,
    output wire          fin_good,
    output wire [10:0]   fin_flen,
    output wire [11:0]   ev_cause,
    output wire          ev_slot,
    output wire          ev_cache,
    output wire          ev_bucket,
    output wire [2:0]    ev_slot_idx,
    output wire [4:0]    ev_cache_idx,
    output wire [7:0]    ev_bucket_idx,
    output wire [11:0]   ev_bytes
);
    wire [7:0]  c_raddr;
    wire [31:0] ca_rdata, bk_rdata, mp_rdata, mt_rdata;
    wire [3:0]  cm_rdata;
    wire [53:0] ln_rdata;
    wire [8:0]  bk_raddr;
    wire [5:0]  mp_raddr;
    wire [9:0]  mt_raddr;
    /* verilator lint_off UNUSEDSIGNAL */
    wire [4:0]  copy_busy;
    /* verilator lint_on UNUSEDSIGNAL */

    assign lr_ack = lr_valid && lr_ack_en && !tl_wr;
    wire        ln_we = tl_wr | lr_ack;
    wire [7:0]  ln_widx = tl_wr ? tl_idx : lr_idx;
    wire [53:0] ln_wdata = tl_wr ? tl_data : {2'b11, PORT[3:0], lr_mac};

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
    wccp_ram #(.AW(8), .DW(54), .RD_REG(0)) learnt (
        .clk(clk), .wr_en(ln_we), .wr_addr(ln_widx), .wr_data(ln_wdata),
        .rd_addr(c_raddr), .rd_data(ln_rdata));
    // the live redirect-lists (wccp_regs' acl RAM: written by the test, read by the engine)
    wire [7:0]  acl_raddr;
    wire [31:0] acl_rdata;
    /* verilator lint_off PINCONNECTEMPTY */
    wccp_bram #(.AW(8), .DW(32)) acl (
        .clk(clk), .a_we(acl_wr), .a_addr(acl_waddr), .a_wdata(acl_wdata), .a_rdata(),
        .b_addr(acl_raddr), .b_rdata(acl_rdata));
    /* verilator lint_on PINCONNECTEMPTY */

    wccp_decide #(.PORT(PORT)) dut (
        .clk(clk), .rst(rst), .hold(hold), .busy(busy),
        .in_valid(in_valid), .in_ready(in_ready), .in_start(in_start),
        .in_dst_mac(in_dst_mac), .in_src_mac(in_src_mac), .in_vlan(in_vlan), .in_tci(in_tci),
        .in_is_ip(in_is_ip), .in_ip_hdr_ok(in_ip_hdr_ok), .in_proto(in_proto), .in_sip(in_sip),
        .in_dip(in_dip), .in_sport(in_sport), .in_dport(in_dport), .in_totlen(in_totlen),
        .in_ihl(in_ihl), .in_l4w0(in_l4w0), .in_l4b4(in_l4b4), .in_len4(in_len4), .in_len8(in_len8),
        .st_valid(st_valid), .st_pop(st_pop), .st_good(st_good), .st_avail(st_avail), .st_flen(st_flen),
        .active(active), .router_id(router_id), .appl_mac(appl_mac), .mtu(mtu), .nh_mac(nh_mac),
        .grp_ctrl(grp_ctrl), .grp_svc(grp_svc), .grp_flags(grp_flags), .grp_ports(grp_ports),
        .c_raddr(c_raddr), .ca_rdata(ca_rdata), .cm_rdata(cm_rdata), .ln_rdata(ln_rdata),
        .bk_raddr(bk_raddr), .bk_rdata(bk_rdata), .mp_raddr(mp_raddr), .mp_rdata(mp_rdata),
        .mt_raddr(mt_raddr), .mt_rdata(mt_rdata), .acl_raddr(acl_raddr), .acl_rdata(acl_rdata),
        .lr_valid(lr_valid), .lr_idx(lr_idx), .lr_mac(lr_mac), .lr_ack(lr_ack),
        .sf_ip_wr(t_wr && t_sel == 3'd0), .sf_ip_key(t_data), .sf_mac_wr(ln_we), .sf_mac_key(ln_wdata[47:0]),
        .sf_l2_wr(t_wr && t_sel == 3'd1 && t_data[`WCCP_METHOD_RET_SHIFT +: 2] == `WCCP_RET_L2),
        .act_valid(act_valid), .act_ready(act_ready), .act_drop(act_drop), .act_port(act_port),
        .act_start(act_start), .act_flen(act_flen), .act_hlen(act_hlen), .act_kind(act_kind),
        .act_dmac(act_dmac), .act_smac(act_smac), .act_vlan(act_vlan), .act_tci(act_tci),
        .act_tl(act_tl), .act_csum(act_csum), .act_rid(act_rid), .act_cip(act_cip), .act_rh(act_rh),
        .act_src_off(act_src_off), .act_cut(act_cut), .act_go(act_go), .out_idle(out_idle),
        .fin_valid(fin_valid), .fin_ready(fin_ready), .fin_good(fin_good), .fin_flen(fin_flen),
        .ev_cause(ev_cause), .ev_slot(ev_slot), .ev_cache(ev_cache), .ev_bucket(ev_bucket),
        .ev_slot_idx(ev_slot_idx), .ev_cache_idx(ev_cache_idx), .ev_bucket_idx(ev_bucket_idx),
        .ev_bytes(ev_bytes));
endmodule
`default_nettype wire
