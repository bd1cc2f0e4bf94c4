// Register file: global/group configuration (shadow: flip-flops for the globals, a block RAM
// for the groups; live: flip-flops), table write
// strobes for the banked RAMs, commit sequencing, fail-open watchdog and counters.
// Register bus: reg_rd/reg_wr with a 24-bit word address. Every access is decoded in two
// registered steps first (timing: block from the upper address bits, then the register):
// writes take effect three cycles after reg_wr, read data (reg_rvalid) comes four cycles after
// reg_rd, the counter read strobes (cc_rd, bc_rd, st_rd with st_word/st_hi) two cycles after
// reg_rd (the counter index to use is reg_addr delayed by two).
`timescale 1ns / 1ps
`default_nettype none
module wccp_regs #(
    parameter CLK_PER_US = 125,
    parameter WDT_RESET_US = 1000000,
    parameter [31:0] BUILD_ID = 32'd0,     // read back at BUILD_ID (set by the build)
    parameter PEARSON = 0                  // CAPS_PEARSON: the decision core has the Pearson hash
) (
    input  wire          clk,
    input  wire          rst,
    input  wire [23:0]   reg_addr,
    input  wire          reg_wr,
    input  wire [31:0]   reg_wdata,
    input  wire          reg_rd,
    output reg  [31:0]   reg_rdata,
    output reg           reg_rvalid,
    // live configuration
    output reg           active,
    output reg  [31:0]   router_id,
    output reg  [47:0]   appl_mac,
    output reg  [15:0]   mtu,
    output reg  [95:0]   nh_mac,       // {port1, port0}
    output reg  [255:0]  grp_ctrl,
    output reg  [255:0]  grp_svc,
    output reg  [255:0]  grp_flags,
    output reg  [1023:0] grp_ports,
    // banked tables
    output reg           live,
    output reg           copy_start,
    input  wire          copy_busy,
    output reg           hold,
    input  wire          engines_busy,
    output reg  [6:0]    t_we,         // table write strobe, one-hot: 0 cache addr, 1 cache method,
                                       // 2 bucket, 3 maskpos, 4 masktab, 5 source index heads, 6 its
                                       // list (a flip-flop per table: each drives its RAM's write
                                       // enable straight; timing)
    output reg  [9:0]    t_addr,
    output reg  [31:0]   t_data,
    // learnt-state write (live)
    output reg           ln_wr,
    output reg  [7:0]    ln_idx,
    output reg  [53:0]   ln_data,
    input  wire          ln_ack,
    // port/slot counters live in wccp_stats (block RAM): read strobe and word select
    output reg           st_rd,
    output reg  [5:0]    st_word,
    output reg           st_hi,
    // counter RAMs (per cache, per bucket, per cache unknown): read strobes, data returned by
    // the RAMs
    output reg           cc_rd,
    output reg           bc_rd,
    output reg           uc_rd,
    // live redirect-lists (the group words at their group address, slot*32 + offset): read
    // by the decision core, data 2 cycles after the address
    input  wire [7:0]    acl_raddr,
    output wire [31:0]   acl_rdata
);
    reg                  hold2, busy_r;
`include "wccp_regmap.vh"

    // ---------------- shadow configuration ----------------
    reg  [31:0]   s_router_id;
    reg  [47:0]   s_mac;
    reg  [15:0]   s_mtu;
    reg  [95:0]   s_nh;
    reg  [31:0]   control, wdt_timeout, wdt_left, commits;
    reg  [6:0]    prescale;
    reg           wdt_armed;
    reg  [31:0]   ln_stage;
    reg           commit_req, commit_copy;

    // ---------------- decode stage (registered) ----------------
    // stage 1: the access and its block (upper address bits) registered
    reg  [10:0] a;
    reg         p_wr, p_rd;
    reg  [31:0] p_wd;
    reg         z_glob, z_grp, z_cache, z_bucket, z_maskset, z_masktab, z_srcidx, z_cc, z_bc, z_pc, z_sc, z_uc;
    always @(posedge clk) begin
        a <= reg_addr[10:0];
        p_wr <= reg_wr && !rst;
        p_rd <= reg_rd && !rst;
        p_wd <= reg_wdata;
        z_glob <= (reg_addr[23:5] == 19'd0);
        z_grp <= ({reg_addr[23:8], 8'd0} == `WCCP_GROUP_BASE);
        z_cache <= ({reg_addr[23:10], 10'd0} == `WCCP_CACHE_BASE);
        z_bucket <= ({reg_addr[23:9], 9'd0} == `WCCP_BUCKET_BASE);
        z_maskset <= ({reg_addr[23:7], 7'd0} == `WCCP_MASKSET_BASE);
        z_masktab <= ({reg_addr[23:10], 10'd0} == `WCCP_MASKTAB_BASE);
        z_srcidx <= ({reg_addr[23:10], 10'd0} == `WCCP_SRCIDX_BASE);
        z_cc <= ({reg_addr[23:9], 9'd0} == `WCCP_CACHECNT_BASE);
        z_bc <= ({reg_addr[23:11], 11'd0} == `WCCP_BUCKETCNT_BASE);
        z_pc <= ({reg_addr[23:6], 6'd0} == `WCCP_PORTCNT_BASE);
        z_sc <= ({reg_addr[23:7], 7'd0} == `WCCP_SLOTCNT_BASE);
        z_uc <= ({reg_addr[23:8], 8'd0} == `WCCP_UNKCNT_BASE);
    end
    // one-hot register offset (a[4:0]) of the access, registered with it
    reg  [31:0] a_oh;
    integer ko;
    always @(posedge clk)
        for (ko = 0; ko < 32; ko = ko + 1) a_oh[ko] <= (reg_addr[4:0] == ko[4:0]);
    // stage 2 decodes (registered below)
    wire        in_glob = z_glob;
    wire        in_group = z_grp;
    wire        in_cache = z_cache;
    wire        in_bucket = z_bucket;
    wire        in_maskset = z_maskset;
    wire        in_masktab = z_masktab;
    wire        in_cc = z_cc;
    wire        in_bc = z_bc;
    // PORTCNT: a[5] port, a[4:0] offset (0/1 rx, 2/3 tx, 4..17 single: stats word p*16 + offset - 2,
    // 18 truncated: stats word 48 + p, 19 closed_drop: 50 + p) ; SLOTCNT: a[6:4] slot, a[1] port,
    // a[0] bytes
    wire        in_pc = z_pc && (a[4:0] < 5'd20);
    wire        in_sc = z_sc && (a[3:2] == 2'd0);
    wire        in_st = in_pc || in_sc;
    wire [3:0]  pc_m2 = a[3:0] - 4'd2;   // offset - 2 (offsets 4..17)

    reg         w_ctrl, w_hb, w_wdt, w_commit, w_rid, w_mac_hi, w_mac_lo, w_mtu;
    reg  [3:0]  w_nh;                    // NEXTHOP_MAC_HI/LO port 0, HI/LO port 1
    reg         w_cache, w_bucket, w_maskset, w_masktab, w_srcidx;
    reg  [9:0]  d_a;
    reg  [31:0] d_wd;
    reg         r_rd;                    // read decoded (strobes valid), data two cycles later
    always @(posedge clk) begin
        d_a <= a[9:0];
        d_wd <= p_wd;
        w_ctrl <= p_wr && in_glob && a_oh[`WCCP_CONTROL];
        w_hb <= p_wr && in_glob && a_oh[`WCCP_HEARTBEAT];
        w_wdt <= p_wr && in_glob && a_oh[`WCCP_WDT_TIMEOUT];
        w_commit <= p_wr && in_glob && a_oh[`WCCP_COMMIT] && p_wd[0];
        w_rid <= p_wr && in_glob && a_oh[`WCCP_ROUTER_ID];
        w_mac_hi <= p_wr && in_glob && a_oh[`WCCP_MAC_HI];
        w_mac_lo <= p_wr && in_glob && a_oh[`WCCP_MAC_LO];
        w_mtu <= p_wr && in_glob && a_oh[`WCCP_MTU];
        w_nh[0] <= p_wr && in_glob && a_oh[`WCCP_NEXTHOP_MAC_HI];
        w_nh[1] <= p_wr && in_glob && a_oh[`WCCP_NEXTHOP_MAC_LO];
        w_nh[2] <= p_wr && in_glob && a_oh[`WCCP_NEXTHOP_MAC_HI + 2];
        w_nh[3] <= p_wr && in_glob && a_oh[`WCCP_NEXTHOP_MAC_LO + 2];
        w_cache <= p_wr && in_cache;
        w_bucket <= p_wr && in_bucket;
        w_maskset <= p_wr && in_maskset;
        w_masktab <= p_wr && in_masktab;
        w_srcidx <= p_wr && z_srcidx;
        r_rd <= p_rd;
        cc_rd <= p_rd && in_cc && !rst;
        bc_rd <= p_rd && in_bc && !rst;
        uc_rd <= p_rd && z_uc && !rst;
        st_rd <= p_rd && in_st && !rst;
        // (PORTCNT and SLOTCNT differ in a[10]: the word index needs no block decode; among
        // the PORTCNT offsets 0..19 only 18 and 19 have a[4] and a[1] set)
        st_word <= a[10] ? {2'b10, a[6:4], a[1]} :
                   (a[4] && a[1]) ? {4'b1100, a[0], a[5]} :
                   {1'b0, a[5], (a[4:0] < 5'd4) ? {3'd0, a[1]} : pc_m2[3:0]};
        st_hi <= (a[10] || a[4:0] < 5'd4) ? a[0] : 1'b0;
        if (rst) begin
            w_ctrl <= 1'b0; w_hb <= 1'b0; w_wdt <= 1'b0; w_commit <= 1'b0; w_rid <= 1'b0;
            w_mac_hi <= 1'b0; w_mac_lo <= 1'b0; w_mtu <= 1'b0; w_nh <= 4'd0;
            w_cache <= 1'b0; w_bucket <= 1'b0; w_maskset <= 1'b0; w_masktab <= 1'b0; w_srcidx <= 1'b0;
            r_rd <= 1'b0;
        end
    end
    // global block read: one-hot select of registers 0..12 (the rest reads 0), registered
    reg  [12:0] r_sel, r_sel2;
    reg         r_v2;
    integer k;
    always @(posedge clk) begin
        for (k = 0; k < 13; k = k + 1)
            r_sel[k] <= in_glob && a_oh[k];
        r_sel2 <= r_rd ? r_sel : 13'd0;
        r_v2 <= r_rd && !cc_rd && !bc_rd && !uc_rd && !st_rd && !rst;
        reg_rvalid <= r_v2 && !rst;
    end

    // ---------------- commit ----------------
    // Once the decision core is held and idle, the group copy runs (gc_cp, gc_a the RAM address;
    // see "group configuration" below), gc_wait counts its pipeline out, then the swap is
    // decided (commit_go, registered) and applied when commit_now is set: the core stays
    // held until then (hold clears with the swap). The globals' live enable is a registered
    // copy of commit_go (cm).
    reg          commit_go, commit_now, gc_cp, gc_done;
    reg  [2:0]   gc_wait;
    wire         cm;
    always @(posedge clk) begin
        if (rst) begin
            gc_cp <= 1'b0; gc_done <= 1'b0; gc_wait <= 3'd0; gc_a <= 8'd0;
        end else begin
            if (!gc_cp && !gc_done && commit_req && hold && hold2 && !busy_r && !commit_go && !commit_now) begin
                gc_cp <= 1'b1;
                gc_a <= 8'd0;
            end
            if (gc_cp) begin
                gc_a <= gc_a + 8'd1;
                if (gc_a == 8'd255) begin
                    gc_cp <= 1'b0;
                    gc_done <= 1'b1;
                    gc_wait <= 3'd5;
                end
            end
            if (gc_done && gc_wait != 3'd0) gc_wait <= gc_wait - 3'd1;
            if (commit_go) gc_done <= 1'b0;
        end
        commit_go <= !rst && gc_done && gc_wait == 3'd1;
        commit_now <= commit_go;
    end
    wccp_rst_buf cmb (.clk(clk), .d(commit_go), .q(cm));
    always @(posedge clk) begin
        if (rst) begin
            router_id <= 32'd0; appl_mac <= 48'd0; mtu <= 16'd1500; nh_mac <= 96'd0;
        end else if (cm) begin
            router_id <= s_router_id; appl_mac <= s_mac; mtu <= s_mtu; nh_mac <= s_nh;
        end
    end

    // ---------------- watchdog timing ----------------
    // prescaler: one tick per microsecond (registered compare); wdt_left <= 1 is kept in two
    // registered halves: set with the value loaded, recomputed one cycle after a decrement
    // (exact when ticks are >= 2 cycles apart)
    reg         tick, lz_hi, lz_lo, to_hi, to_lo, to_nz;
    always @(posedge clk) begin
        if (rst) begin
            tick <= 1'b0;
        end else begin
            // CLK_PER_US = 1 (the digital twin's time scale): a tick every cycle; the watchdog
            // then expires one tick late at most (the wdt_left <= 1 flags lag one cycle)
            tick <= (CLK_PER_US <= 1) ? 1'b1 : (prescale == 7'd1);
        end
    end

    always @(posedge clk) t_data <= d_wd;   // (qualified by t_we: no enable)
    // the table write address, also qualified by t_we, every cycle: cache tables a[9:2] (a[9:7]
    // slot, a[6:2] cache) in bits 7:0, the mask positions {a[6:4] slot, a[2:1] set, a[0]
    // word} in bits 5:0, the bucket and value tables a[8:0] / a[9:0], the source index a[8:0];
    // the bits a table does not use are left as they come (a multiplexer, no forced zeros: no
    // set/reset pins on these flip-flops, whose write-address paths were the slowest; timing)
    always @(posedge clk)
        t_addr <= w_cache ? {d_a[9:8], d_a[9:2]} :
                  w_maskset ? {d_a[9:6], d_a[6:4], d_a[2:1], d_a[0]} : d_a[9:0];
    always @(posedge clk) begin
        t_we <= 7'd0;
        copy_start <= 1'b0;
        if (rst) begin
            s_router_id <= 32'd0; s_mac <= 48'd0; s_mtu <= 16'd1500; s_nh <= 96'd0;
            control <= 32'd0; wdt_timeout <= WDT_RESET_US; wdt_left <= 32'd0; wdt_armed <= 1'b0;
            to_hi <= (WDT_RESET_US < 65536); to_lo <= (WDT_RESET_US <= 1); to_nz <= (WDT_RESET_US != 0);
            lz_hi <= 1'b1; lz_lo <= 1'b1;
            prescale <= CLK_PER_US - 1; commits <= 32'd0;
            live <= 1'b0; hold <= 1'b0; commit_req <= 1'b0; commit_copy <= 1'b0;
            hold2 <= 1'b0; busy_r <= 1'b1;
            ln_wr <= 1'b0; active <= 1'b0;
        end else begin
            // ---- watchdog ----
            prescale <= tick ? CLK_PER_US - 1 : prescale - 7'd1;
            lz_hi <= (wdt_left[31:16] == 16'd0);
            lz_lo <= (wdt_left[15:1] == 15'd0);
            if (tick && wdt_armed && to_nz) begin
                if (lz_hi && lz_lo) begin
                    wdt_left <= 32'd0;
                    wdt_armed <= 1'b0;
                end else begin
                    wdt_left <= wdt_left - 32'd1;
                end
            end
            active <= control[0] && wdt_armed;

            // ---- commit sequencing ----
            // engines_busy is registered (it comes from the decision core's state machine and
            // its commit units' learning lists); it is only trusted once hold was already set
            // in the cycle it was sampled, so that no decision can have started in between
            busy_r <= engines_busy;
            hold2 <= hold;
            if (commit_req) begin
                hold <= 1'b1;
                if (commit_now) begin
                    live <= ~live;
                    commits <= commits + 32'd1;
                    commit_req <= 1'b0;
                    commit_copy <= 1'b1;
                    copy_start <= 1'b1;
                    hold <= 1'b0;
                end
            end else if (commit_copy && !copy_start && !copy_busy) begin
                commit_copy <= 1'b0;
            end

            if (ln_ack) ln_wr <= 1'b0;

            // ---- register writes (decoded one cycle earlier) ----
            if (w_ctrl) begin
                control <= d_wd;
                if (d_wd[0] && !control[0]) begin
                    wdt_armed <= 1'b0;
                    wdt_left <= 32'd0;
                    lz_hi <= 1'b1; lz_lo <= 1'b1;
                end
            end
            if (w_hb) begin
                wdt_armed <= 1'b1;
                wdt_left <= wdt_timeout;
                lz_hi <= to_hi; lz_lo <= to_lo;
            end
            if (w_wdt) begin
                wdt_timeout <= d_wd;
                to_hi <= (d_wd[31:16] == 16'd0);
                to_lo <= (d_wd[15:1] == 15'd0);
                to_nz <= (d_wd != 32'd0);
            end
            if (w_commit) commit_req <= 1'b1;
            if (w_rid) s_router_id <= d_wd;
            if (w_mac_hi) s_mac[47:32] <= d_wd[15:0];
            if (w_mac_lo) s_mac[31:0] <= d_wd;
            if (w_mtu) s_mtu <= d_wd[15:0];
            if (w_nh[0]) s_nh[47:32] <= d_wd[15:0];
            if (w_nh[1]) s_nh[31:0] <= d_wd;
            if (w_nh[2]) s_nh[95:80] <= d_wd[15:0];
            if (w_nh[3]) s_nh[79:48] <= d_wd;
            if (w_cache) begin
                // a[9:7] slot, a[6:2] cache, a[1:0] register
                case (d_a[1:0])
                2'd0: t_we[0] <= 1'b1;
                2'd1: t_we[1] <= 1'b1;
                2'd2: begin
                    ln_wr <= 1'b1;
                    ln_idx <= d_a[9:2];
                    ln_data <= {d_wd[17], d_wd[16], d_wd[23:20], d_wd[15:0], ln_stage};
                end
                default: ln_stage <= d_wd;
                endcase
            end
            if (w_bucket) t_we[2] <= 1'b1;
            if (w_maskset) t_we[3] <= 1'b1;
            if (w_masktab) t_we[4] <= 1'b1;
            // SRCIDX: a[9] list (SRCIDX_LIST at offset 0x200), else the heads; a[8:0] the word
            if (w_srcidx) begin
                if (d_a[9]) t_we[6] <= 1'b1;
                else t_we[5] <= 1'b1;
            end
        end
    end

    // ---------------- register reads (AND-OR of the selected register) ----------------
    always @(posedge clk) begin
        reg_rdata <= ({32{r_sel2[`WCCP_ID]}} & `WCCP_ID_VALUE) |
                     ({32{r_sel2[`WCCP_VERSION]}} & `WCCP_REGMAP_VERSION) |
                     ({32{r_sel2[`WCCP_CAPS]}} & ({4'd0, 4'd`WCCP_MAX_MASK_SETS, 8'd`WCCP_MAX_CACHES,
                                                    8'd`WCCP_MAX_GROUPS, 8'd2} | (PEARSON != 0 ? `WCCP_CAPS_PEARSON : 32'd0))) |
                     ({32{r_sel2[`WCCP_CONTROL]}} & control) |
                     ({32{r_sel2[`WCCP_STATUS]}} & {29'd0, commit_req | commit_copy, !wdt_armed, active}) |
                     ({32{r_sel2[`WCCP_HEARTBEAT]}} & wdt_left) |
                     ({32{r_sel2[`WCCP_WDT_TIMEOUT]}} & wdt_timeout) |
                     ({32{r_sel2[`WCCP_COMMIT]}} & commits) |
                     ({32{r_sel2[`WCCP_ROUTER_ID]}} & s_router_id) |
                     ({32{r_sel2[`WCCP_MAC_HI]}} & {16'd0, s_mac[47:32]}) |
                     ({32{r_sel2[`WCCP_MAC_LO]}} & s_mac[31:0]) |
                     ({32{r_sel2[`WCCP_MTU]}} & {16'd0, s_mtu}) |
                     ({32{r_sel2[`WCCP_BUILD_ID]}} & BUILD_ID);
    end

    // ---------------- group configuration ----------------
    // The shadow copy is a 256 x 32 block RAM (wccp_bram: address slot*32 + register offset,
    // registers 0..6 and the redirect-list words 8..31) written from the bus, with a valid bit
    // per word (forgotten at reset: a word never written since reads as 0, as a reset register
    // would). A commit copies it a word a cycle while the decision core is held (gc_cp: 256
    // reads): registers 0..6 into the live flip-flops (the last write four cycles after the
    // last read), every word into the live redirect-list RAM (acl, two cycles after its
    // read), then swaps the globals and the table banks (commit_go). The core sees the live
    // copy only when hold is clear: wholly old before the swap, wholly new after it.
    wire        g_wr = p_wr && in_group && a[4:0] != 5'd7;
    wire [31:0] gc_q;                    // the word at gc_a, two cycles later
    /* verilator lint_off PINCONNECTEMPTY */
    wccp_bram #(.AW(8), .DW(32)) gmem (
        .clk(clk), .a_we(g_wr), .a_addr(a[7:0]), .a_wdata(p_wd), .a_rdata(),
        .b_addr(gc_a), .b_rdata(gc_q));
    /* verilator lint_on PINCONNECTEMPTY */
    // the live redirect-lists: port A takes the copy's writes (gc_v2: the word at gc_a2, while
    // the decision core is held), port B is the core's read port
    /* verilator lint_off PINCONNECTEMPTY */
    wccp_bram #(.AW(8), .DW(32)) acl (
        .clk(clk), .a_we(gc_v2), .a_addr(gc_a2), .a_wdata(gc_ok ? gc_q : 32'd0),
        .a_rdata(), .b_addr(acl_raddr), .b_rdata(acl_rdata));
    /* verilator lint_on PINCONNECTEMPTY */
    // The valid bits: a row of 8 per 8 words (row = address[7:3], bit = address[2:0]) in
    // distributed RAM (asynchronous read), in two copies written alike: one read by the bus
    // write, one by the commit copy; and a flip-flop per row, cleared by reset, that says
    // whether the row was written since (if not, its bits read as 0 and its first write
    // writes the whole row). A bus write reads its row and the row's flag (registered with
    // the write's row and bit) and writes the row back with its bit set a cycle later (v_we);
    // when the write before it, being written back in that cycle, is to the same row, it
    // takes that one's row instead (v_fwd, v_last).
    reg  [7:0]  vram_w [0:31];
    reg  [7:0]  vram_c [0:31];
    reg  [31:0] vrow;
    reg  [7:0]  v_rd, v_bit, v_last;
    reg  [4:0]  v_row;
    reg         v_we, v_rv, v_fwd;
    wire [7:0]  v_new = (v_fwd ? v_last : v_rv ? v_rd : 8'd0) | v_bit;
    always @(posedge clk) begin
        v_rd <= vram_w[a[7:3]];
        v_rv <= vrow[a[7:3]];
        v_fwd <= v_we && v_row == a[7:3];
        v_bit <= 8'd1 << a[2:0];
        v_row <= a[7:3];
        v_we <= g_wr && !rst;
        if (v_we) begin
            vram_w[v_row] <= v_new;
            vram_c[v_row] <= v_new;
            v_last <= v_new;
        end
        if (rst) vrow <= 32'd0;
        else if (v_we) vrow[v_row] <= 1'b1;
    end
    // the copy: read address gc_a (the RAM answers two cycles later), then the word, its valid
    // bit and its (slot, register) strobe registered per slot (timing: the data fans out to
    // 1 792 flip-flops), then applied
    reg  [7:0]  gc_a, gc_a1, gc_a2;
    reg         gc_v1, gc_v2, gc_ok;     // gc_ok: the valid bit of gc_a2's word
    reg  [7:0]  gc_v8;                   // the valid bits of gc_a1's row (read with gc_a)
    reg  [3:0]  gc_vq;                   // and the written-since-reset flags of its 4-row group
    reg  [55:0] gc_hit;
    reg  [255:0] gc_d;
    integer gj, gi;
    always @(posedge clk) begin
        gc_a1 <= gc_a;
        gc_a2 <= gc_a1;
        gc_v1 <= gc_cp && !rst;
        gc_v2 <= gc_v1 && !rst;
        gc_v8 <= vram_c[gc_a[7:3]];      // the lookup in two steps (timing)
        gc_vq <= vrow[gc_a[7:5] * 4 +: 4];
        gc_ok <= gc_vq[gc_a1[4:3]] && gc_v8[gc_a1[2:0]];
        for (gj = 0; gj < 8; gj = gj + 1) begin
            for (gi = 0; gi < 7; gi = gi + 1)
                gc_hit[gj * 7 + gi] <= gc_v2 && gc_a2 == {gj[2:0], 2'b00, gi[2:0]} && !rst;
            if (gc_a2[7:5] == gj[2:0])
                gc_d[gj * 32 +: 32] <= gc_ok ? gc_q : 32'd0;
        end
    end
    genvar gs;
    generate
        for (gs = 0; gs < 8; gs = gs + 1) begin : g_slot_regs
            wire [31:0] d = gc_d[gs * 32 +: 32];
            always @(posedge clk) begin
                if (rst) begin
                    grp_ctrl[gs*32 +: 32] <= 32'd0;
                    grp_svc[gs*32 +: 32] <= 32'd0;
                    grp_flags[gs*32 +: 32] <= 32'd0;
                    grp_ports[gs*128 +: 128] <= 128'd0;
                end else begin
                    if (gc_hit[gs * 7 + 0]) grp_ctrl[gs*32 +: 32] <= d;
                    if (gc_hit[gs * 7 + 1]) grp_svc[gs*32 +: 32] <= d;
                    if (gc_hit[gs * 7 + 2]) grp_flags[gs*32 +: 32] <= d;
                    if (gc_hit[gs * 7 + 3]) grp_ports[gs*128 + 96 +: 32] <= d;
                    if (gc_hit[gs * 7 + 4]) grp_ports[gs*128 + 64 +: 32] <= d;
                    if (gc_hit[gs * 7 + 5]) grp_ports[gs*128 + 32 +: 32] <= d;
                    if (gc_hit[gs * 7 + 6]) grp_ports[gs*128 +: 32] <= d;
                end
            end
        end
    endgenerate

endmodule
`default_nettype wire
