// Decision engine (one per receive port): takes the parse bundle of a good frame, learns
// cache locations, recognises GRE return traffic, classifies against the service-group
// slots, runs the hash (or mask) assignment and the cache resolution, and hands the
// builder an action: which port, which header to prepend and which bytes of the received
// frame to copy. Tables are read from the live bank; `hold` (commit pending) keeps it from
// starting a new frame so that a commit always falls between two decisions.
`timescale 1ns / 1ps
`default_nettype none
/* verilator lint_off UNUSEDSIGNAL */
module wccp_decide #(
    parameter PORT = 0
) (
    input  wire          clk,
    input  wire          rst,
    input  wire          hold,
    output wire          busy,
    // parse bundle
    input  wire          in_valid,
    output reg           in_ready,
    input  wire [11:0]   in_start,
    input  wire [10:0]   in_flen,
    input  wire [47:0]   in_dst_mac,
    input  wire [47:0]   in_src_mac,
    input  wire          in_vlan,
    input  wire [15:0]   in_tci,
    input  wire          in_is_ip,
    input  wire          in_ip_ok,
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
    // live configuration
    input  wire          active,
    input  wire [31:0]   router_id,
    input  wire [47:0]   appl_mac,
    input  wire [15:0]   mtu,
    input  wire [47:0]   nh_mac,
    input  wire [255:0]  grp_ctrl,
    input  wire [255:0]  grp_svc,
    input  wire [255:0]  grp_flags,
    input  wire [1023:0] grp_ports,
    // table reads (1-cycle latency)
    output reg  [7:0]    c_raddr,
    input  wire [31:0]   ca_rdata,
    input  wire [3:0]    cm_rdata,
    input  wire [53:0]   ln_rdata,    // {port_known, mac_known, port[3:0], mac[47:0]}
    output reg  [8:0]    bk_raddr,
    input  wire [31:0]   bk_rdata,
    output reg  [5:0]    mp_raddr,
    input  wire [31:0]   mp_rdata,
    output reg  [9:0]    mt_raddr,
    input  wire [31:0]   mt_rdata,
    // learning
    output reg           lr_valid,
    output reg  [7:0]    lr_idx,
    output reg  [47:0]   lr_mac,
    input  wire          lr_ack,
    // action
    output reg           act_valid,
    input  wire          act_ready,
    output reg           act_drop,
    output reg           act_port,
    output reg  [11:0]   act_start,
    output reg  [10:0]   act_flen,
    output reg  [5:0]    act_hlen,
    output reg  [1:0]    act_kind,    // 0 copy, 1 L2 rewrite, 2 GRE, 3 decap (header fields below)
    output reg  [47:0]   act_dmac,
    output reg  [47:0]   act_smac,
    output reg           act_vlan,
    output reg  [15:0]   act_tci,
    output reg  [15:0]   act_tl,
    output reg  [15:0]   act_csum,
    output reg  [31:0]   act_rid,
    output reg  [31:0]   act_cip,
    output reg  [31:0]   act_rh,
    output reg  [10:0]   act_src_off,
    output reg  [10:0]   act_copy_len,
    // events (one-cycle pulses)
    output reg  [10:0]   ev_cause,    // see CAUSE_* below
    output reg           ev_slot,
    output reg           ev_cache,
    output reg           ev_bucket,
    output reg  [2:0]    ev_slot_idx,
    output reg  [4:0]    ev_cache_idx,
    output reg  [7:0]    ev_bucket_idx,
    output reg  [11:0]   ev_bytes
);
    localparam C_NOTRED = 0, C_FROMC = 1, C_UNASS = 2, C_UNKN = 3, C_TOOBIG = 4, C_RET = 5,
               C_L2 = 6, C_GRE = 7, C_LEARN = 8, C_RETBAD = 9;

    // ------------------------------------------------------------------------------------
    // Every state does little: compares are registered before they steer the state machine,
    // table addresses are registers, and the cache-table scan is a pipeline that issues one
    // entry per cycle (results 5 cycles later; a learn hit rewinds the issue state to the
    // entry after the hit). Decision time is about 30 + (cache entries of all slots) cycles.
    // ------------------------------------------------------------------------------------
    localparam integer
        S_IDLE = 0,
        S_C1 = 1,
        S_C2 = 2,
        S_C3 = 3,
        S_SCAN = 4,
        S_PRE = 6,
        S_PRE2 = 7,
        S_DEC = 8,
        S_H = 9,
        S_HW1 = 10,
        S_B1 = 12,
        S_AW1 = 13,
        S_AW2 = 14,
        S_B2 = 15,
        S_MA = 16,
        S_MA1 = 17,
        S_MA2 = 18,
        S_MA3 = 19,
        S_MA4 = 20,
        S_MS1 = 21,
        S_MS2 = 22,
        S_MT = 23,
        S_MTW1 = 24,
        S_MTW2 = 25,
        S_M2 = 26,
        S_CIDX = 27,
        S_CW1 = 28,
        S_CW2 = 29,
        S_C = 30,
        S_GRE = 31,
        S_GRE2 = 32,
        S_GRE3 = 33,
        S_GRE4 = 34,
        S_OUT = 35,
        S_B1L = 36,
        S_B2L = 37,
        S_M2L = 38,
        S_HW2 = 39,
        S_AW3 = 40,
        S_MA2B = 41,
        S_MTW3 = 42,
        S_CW3 = 43,
        S_CK = 44;
    localparam integer NS = 45;
    // one-hot state (shallow next-state logic)
    reg [NS-1:0] state;
    assign busy = !state[S_IDLE];
    function [NS-1:0] oh;
        input integer i;
        oh = {{(NS-1){1'b0}}, 1'b1} << i;
    endfunction

    // latched bundle
    reg [11:0] f_start;
    reg [10:0] f_flen;
    reg [47:0] f_dst, f_src;
    reg        f_vlan;
    reg [15:0] f_tci;
    reg        f_is_ip, f_ip_ok;
    reg [7:0]  f_proto;
    reg [31:0] f_sip, f_dip;
    reg [15:0] f_sport, f_dport, f_totlen;
    reg [3:0]  f_ihl;
    reg [31:0] f_l4w0;
    reg [7:0]  f_l4b4;
    reg [15:0] f_len4, f_len8;

    integer s, j;

    // ---- classification, stage 1 (S_C1): per (slot, list entry) port equality ----
    reg [63:0] c_peq;            // slot*8 + j
    reg [7:0]  c_pz, c_protok, c_needp;
    // ---- stage 2 (S_C2): slot match ----
    reg [7:0]  smatch_r;
    // ---- stage 3 (S_C3): first matching slot ----
    reg [2:0]  msl;
    reg        mfound;
    reg [2:0]  first_slot;
    reg        any_slot;
    always @(*) begin
        first_slot = 3'd0;
        any_slot = 1'b0;
        for (s = 7; s >= 0; s = s - 1)
            if (smatch_r[s]) begin
                first_slot = s[2:0];
                any_slot = 1'b1;
            end
    end

    // ---- GRE return checks, over S_C1..S_C3 ----
    reg  [15:0] g_hlen4, g_prel, g_il, g_prel4, g_prelil;
    reg         g_pre, g_ret_hit, g_ret_bad;
    reg  [10:0] r_dec_off, r_il;
    wire [10:0] l2len = f_vlan ? 11'd18 : 11'd14;
    wire        nib4  = (f_l4b4[7:4] == 4'd4);
    wire [15:0] hlen  = {10'd0, f_ihl, 2'b00};

    // ---- GRE encapsulation: total length, MTU check, outer checksum ----
    reg  [15:0] gre_tl_r;
    reg         r_toobig;
    reg  [31:0] cache_ip;
    reg  [19:0] rid_sum, cs1, cs2, cs3;
    reg  [16:0] cs4;
    always @(posedge clk) rid_sum <= 20'h0C52F + {4'd0, router_id[31:16]} + {4'd0, router_id[15:0]};

    // ---- matched slot's configuration (registered in S_PRE) ----
    reg  [31:0] m_ctrl, m_svc, m_flags;
    reg  [1:0]  r_assign;
    reg  [2:0]  r_nsets;
    reg  [5:0]  r_ncache;
    reg         r_fromc, r_dyn;
    reg  [7:0]  r_svcid;
    reg  [47:0] r_decmac;

    function [7:0] fold32;
        input [31:0] k;
        fold32 = k[31:24] ^ k[23:16] ^ k[15:8] ^ k[7:0];
    endfunction
    wire [31:0] key1 = (m_flags[0] ? f_sip : 32'd0) ^ (m_flags[1] ? f_dip : 32'd0) ^
                       (m_flags[2] ? {16'd0, f_sport} : 32'd0) ^ (m_flags[3] ? {16'd0, f_dport} : 32'd0);
    wire [31:0] key2 = (m_flags[8] ? f_sip : 32'd0) ^ (m_flags[9] ? f_dip : 32'd0) ^
                       (m_flags[10] ? {16'd0, f_sport} : 32'd0) ^ (m_flags[11] ? {16'd0, f_dport} : 32'd0);

    // ---- decision outcome flags (registered in S_PRE2) ----
    reg d_notip, d_inval, d_ret, d_retbad, d_nored, d_hash, d_mask;

    // ---- mask index: the 96-bit key and 7 bit positions, two stages ----
    wire [95:0] key96 = {f_sip, f_dip, f_sport, f_dport};
    reg  [31:0] mw0, mw1;
    reg  [111:0] ms_chunk;       // per position: the 16-bit key chunk it points into
    reg  [27:0]  ms_bit;         // per position: bit within the chunk
    reg  [6:0]   ms_en;          // per position: used and inside the key
    reg  [6:0]   midx;
    reg  [55:0]  mpos;
    always @(*) mpos = {mw1[23:0], mw0};

    function [7:0] bsel;
        input [31:0] w;
        input [1:0] i;
        case (i)
        2'd0: bsel = w[31:24];
        2'd1: bsel = w[23:16];
        2'd2: bsel = w[15:8];
        default: bsel = w[7:0];
        endcase
    endfunction

    function bit16;
        input [15:0] v;
        input [3:0] i;
        bit16 = v[i];
    endfunction

    // ---- cache-table scan pipeline ----
    function [5:0] nclamp;        // entries that take part in the scan: min(ncache, 32)
        input [5:0] n;
        nclamp = n[5] ? 6'd32 : n;
    endfunction
    // issue state: slot, index, entries left in this slot, counts of the later slots
    // (shifted down one slot per advance), last-slot flag
    reg        iss_on;
    reg [2:0]  iss_slot;
    reg [4:0]  iss_idx;
    reg [5:0]  iss_rem;
    reg [41:0] iss_nsh;
    reg        iss_last;
    localparam SNW = 3 + 5 + 6 + 42 + 1;
    wire [SNW-1:0] iss_snap = {iss_slot, iss_idx, iss_rem, iss_nsh, iss_last};
    // in-flight entries: t0 = address register, results valid with t4
    reg        t0_v, t1_v, t2_v, t3_v, t4_v, t5_v;
    reg [7:0]  t1_a, t2_a, t3_a, t4_a, t5_a;
    reg [SNW-1:0] t0_s, t1_s, t2_s, t3_s, t4_s;
    // comparisons of the table words read for t2 (registered twice: t3 halves, t4 result)
    reg        ip_hi, ip_lo, mac_ok;
    reg        ck_known, ck_l2;       // S_CK: the chosen cache's flags
    reg  [3:0] mac_q;
    reg        sc_ipeq, sc_maceq;
    always @(posedge clk) begin
        ip_hi  <= (ca_rdata[31:16] == f_sip[31:16]);
        ip_lo  <= (ca_rdata[15:0] == f_sip[15:0]);
        mac_q[3] <= (ln_rdata[47:36] == f_src[47:36]);
        mac_q[2] <= (ln_rdata[35:24] == f_src[35:24]);
        mac_q[1] <= (ln_rdata[23:12] == f_src[23:12]);
        mac_q[0] <= (ln_rdata[11:0] == f_src[11:0]);
        mac_ok <= (cm_rdata[3:2] == 2'd2) && ln_rdata[52];
        sc_ipeq  <= ip_hi && ip_lo;
        sc_maceq <= (&mac_q) && mac_ok;
    end
    wire scan_busy = iss_on || t0_v || t1_v || t2_v || t3_v || t4_v;
    reg [7:0] ipm, macm;

    reg [2:0] mset;
    // table bytes selected from the RAM words every cycle (registered before any decision)
    reg [7:0] byte_pb, byte_ab, byte_mt;
    reg       m_more;
    always @(posedge clk) begin
        byte_pb <= bsel(bk_rdata, pb[1:0]);
        byte_ab <= bsel(bk_rdata, ab[1:0]);
        byte_mt <= bsel(mt_rdata, cidx[1:0]);
    end
    reg [6:0] cidx;
    reg       alt_used;
    reg [7:0] pb, ab;
    reg       is_hash;
    reg [10:0] l2_copy;

    wire [31:0] rh = {6'd0, alt_used, r_dyn, r_svcid,
                      (alt_used ? ab : 8'd0), (is_hash ? pb : 8'd0)};


    // classification and GRE checks: registered every cycle from the latched bundle and the
    // live configuration (both stable while a frame is decided), four stages deep (each
    // slot's port, port compares, slot matches, first slot); the state machine only waits
    // for them: the first slot is read in S_PRE, at the earliest 5 cycles after the latch
    reg [127:0] c_port;          // slot*16: the frame's source or destination port
    integer cs, cj;
    always @(posedge clk) begin
        for (cs = 0; cs < 8; cs = cs + 1) begin
            c_port[cs*16 +: 16] <= grp_flags[cs*32 + 5] ? f_sport : f_dport;
            for (cj = 0; cj < 8; cj = cj + 1)
                c_peq[cs*8 + cj] <= (grp_ports[cs*128 + (7-cj)*16 +: 16] == c_port[cs*16 +: 16]);
            c_pz[cs] <= (c_port[cs*16 +: 16] == 16'd0);
            c_protok[cs] <= grp_ctrl[cs*32] && (grp_svc[cs*32+24 +: 8] == 8'd0 ||
                                              grp_svc[cs*32+24 +: 8] == f_proto);
            c_needp[cs] <= (grp_svc[cs*32+24 +: 8] == 8'd6 || grp_svc[cs*32+24 +: 8] == 8'd17) &&
                          grp_flags[cs*32 + 4];
        end
        g_hlen4 <= hlen + 16'd4;
        g_prel <= hlen + (nib4 ? 16'd4 : 16'd8);
        g_il <= nib4 ? f_len4 : f_len8;
        g_pre <= f_ip_ok && f_proto == 8'd47 && f_dip == router_id && f_l4w0 == 32'h0000883E;
        gre_tl_r <= f_totlen + 16'd28;
        l2_copy <= f_flen - 11'd12;
        r_decmac <= (nh_mac != 48'd0) ? nh_mac : f_dst;
        for (cs = 0; cs < 8; cs = cs + 1)
            smatch_r[cs] <= c_protok[cs] && (!c_needp[cs] || (!c_pz[cs] && (|c_peq[cs*8 +: 8])));
        g_prel4 <= g_prel + 16'd4;
        g_prelil <= g_prel + g_il;
        r_toobig <= (gre_tl_r > mtu);
        r_dec_off <= l2len + g_prel[10:0];
        r_il <= g_il[10:0];
        msl <= first_slot;
        mfound <= any_slot;
        g_ret_hit <= g_pre && (g_hlen4 <= f_totlen);
        g_ret_bad <= (g_hlen4 >= f_totlen) || (g_prel4 > f_totlen) || (g_il < 16'd20) ||
                     (g_prelil > f_totlen);
    end

    task set_normal;
        begin
            act_drop <= 1'b0;
            act_kind <= 2'd0;
            act_port <= PORT[0] ^ 1'b1;
            act_hlen <= 6'd0;
            act_src_off <= 11'd0;
            act_copy_len <= f_flen;
        end
    endtask

    // action fields that only depend on the configuration or the latched bundle follow them
    // every cycle (both are stable from the latch until the action is taken; a commit waits
    // for idle engines): no enable from the state machine
    always @(posedge clk) begin
        act_smac <= appl_mac;
        act_vlan <= f_vlan;
        act_tci <= f_tci;
        act_tl <= gre_tl_r;
        act_rid <= router_id;
    end

    always @(posedge clk) begin
        in_ready <= 1'b0;
        ev_cause <= 11'd0;
        ev_slot <= 1'b0;
        ev_cache <= 1'b0;
        ev_bucket <= 1'b0;
        if (rst) begin
            state <= oh(S_IDLE);
            act_valid <= 1'b0;
            lr_valid <= 1'b0;
            iss_on <= 1'b0;
            t0_v <= 1'b0; t1_v <= 1'b0; t2_v <= 1'b0; t3_v <= 1'b0; t4_v <= 1'b0; t5_v <= 1'b0;
        end else begin
            // ---- scan pipeline (runs while iss_on or entries are in flight) ----
            t1_v <= t0_v; t2_v <= t1_v; t3_v <= t2_v; t4_v <= t3_v; t5_v <= t4_v;
            t1_a <= c_raddr; t2_a <= t1_a; t3_a <= t2_a; t4_a <= t3_a; t5_a <= t4_a;
            t1_s <= t0_s; t2_s <= t1_s; t3_s <= t2_s; t4_s <= t3_s;
            t0_v <= 1'b0;
            if (iss_on) begin
                t0_s <= iss_snap;
                if (iss_rem != 6'd0) begin
                    c_raddr <= {iss_slot, iss_idx};
                    t0_v <= 1'b1;
                    iss_idx <= iss_idx + 5'd1;
                    iss_rem <= iss_rem - 6'd1;
                end else begin
                    iss_idx <= 5'd0;
                    iss_slot <= iss_slot + 3'd1;
                    iss_last <= (iss_slot == 3'd6);
                    iss_rem <= iss_nsh[5:0];
                    iss_nsh <= {6'd0, iss_nsh[41:6]};
                    if (iss_last) iss_on <= 1'b0;
                end
            end
            // a learn write is acknowledged: resume the scan after the learnt entry
            if (lr_valid && lr_ack) begin
                lr_valid <= 1'b0;
                iss_on <= 1'b1;
            end
            if (t5_v) begin
                if (sc_maceq) macm[t5_a[7:5]] <= 1'b1;
                if (sc_ipeq) begin
                    // learn this entry: stop, drop what is in flight, resume after the hit
                    ipm[t5_a[7:5]] <= 1'b1;
                    lr_valid <= 1'b1;
                    lr_idx <= t5_a;
                    lr_mac <= f_src;
                    ev_cause[C_LEARN] <= 1'b1;
                    iss_on <= 1'b0;
                    t0_v <= 1'b0; t1_v <= 1'b0; t2_v <= 1'b0; t3_v <= 1'b0; t4_v <= 1'b0; t5_v <= 1'b0;
                    {iss_slot, iss_idx, iss_rem, iss_nsh, iss_last} <= t4_s;
                end
            end

            (* parallel_case *)
            case (1'b1)
            state[S_IDLE]: begin
                if (in_valid && !hold && !in_ready) begin
                    in_ready <= 1'b1;
                    f_start <= in_start; f_flen <= in_flen; f_dst <= in_dst_mac; f_src <= in_src_mac;
                    f_vlan <= in_vlan; f_tci <= in_tci; f_is_ip <= in_is_ip; f_ip_ok <= in_ip_ok;
                    f_proto <= in_proto; f_sip <= in_sip; f_dip <= in_dip; f_sport <= in_sport;
                    f_dport <= in_dport; f_totlen <= in_totlen; f_ihl <= in_ihl; f_l4w0 <= in_l4w0;
                    f_l4b4 <= in_l4b4; f_len4 <= in_len4; f_len8 <= in_len8;
                    state <= oh(S_C1);
                end
            end
            state[S_C1]: begin
                act_start <= f_start;
                act_flen <= f_flen;
                ev_bytes <= {1'b0, f_flen} + 12'd4;
                ipm <= 8'd0;
                macm <= 8'd0;
                iss_slot <= 3'd0;
                iss_idx <= 5'd0;
                iss_last <= 1'b0;
                iss_rem <= nclamp(grp_ctrl[16 +: 6]);
                iss_nsh <= {nclamp(grp_ctrl[7*32+16 +: 6]), nclamp(grp_ctrl[6*32+16 +: 6]),
                            nclamp(grp_ctrl[5*32+16 +: 6]), nclamp(grp_ctrl[4*32+16 +: 6]),
                            nclamp(grp_ctrl[3*32+16 +: 6]), nclamp(grp_ctrl[2*32+16 +: 6]),
                            nclamp(grp_ctrl[1*32+16 +: 6])};
                alt_used <= 1'b0;
                is_hash <= 1'b0;
                pb <= 8'd0;
                ab <= 8'd0;
                state <= oh(S_C2);
            end
            state[S_C2]: begin
                // the scan starts now for valid IPv4 (learning happens also while disabled)
                iss_on <= f_ip_ok;
                state <= oh(S_C3);
            end
            state[S_C3]: begin
                state <= oh(S_SCAN);
            end
            state[S_SCAN]: begin
                if (!lr_valid && !scan_busy && !t5_v) state <= oh(S_PRE);
            end
            state[S_PRE]: begin
                m_ctrl <= 32'd0; m_svc <= 32'd0; m_flags <= 32'd0;
                for (s = 0; s < 8; s = s + 1)
                    if (msl == s[2:0]) begin
                        m_ctrl <= grp_ctrl[s*32 +: 32];
                        m_svc <= grp_svc[s*32 +: 32];
                        m_flags <= grp_flags[s*32 +: 32];
                    end
                r_fromc <= ipm[msl] | macm[msl];
                state <= oh(S_PRE2);
            end
            state[S_PRE2]: begin
                r_assign <= m_ctrl[2:1];
                r_nsets <= m_ctrl[10:8];
                r_ncache <= m_ctrl[21:16];
                r_dyn <= (m_svc[7:0] == 8'd1);
                r_svcid <= m_svc[15:8];
                pb <= fold32(key1);
                ab <= fold32(key2);
                d_notip  <= !f_is_ip;
                d_inval  <= f_is_ip && !f_ip_ok;
                d_ret    <= f_ip_ok && g_ret_hit;
                d_retbad <= g_ret_bad;
                d_nored  <= !active || !mfound;
                d_hash   <= (m_ctrl[2:1] == 2'd1);
                d_mask   <= (m_ctrl[2:1] == 2'd2) && (m_ctrl[10:8] != 3'd0);
                state <= oh(S_DEC);
            end
            state[S_DEC]: begin
                state <= oh(S_OUT);
                set_normal;
                if (d_notip) begin
                    // not IPv4: forward, not counted
                end else if (d_inval) begin
                    if (active) ev_cause[C_NOTRED] <= 1'b1;
                end else if (d_ret) begin
                    if (d_retbad) begin
                        act_drop <= 1'b1;
                        ev_cause[C_RETBAD] <= 1'b1;
                    end else begin
                        ev_cause[C_RET] <= 1'b1;
                        act_hlen <= f_vlan ? 6'd18 : 6'd14;
                        act_kind <= 2'd3;
                        act_dmac <= r_decmac;
                        act_src_off <= r_dec_off;
                        act_copy_len <= r_il;
                    end
                end else if (d_nored) begin
                    // fail-open or no slot: forward normally
                end else begin
                    ev_slot <= 1'b1;
                    ev_slot_idx <= msl;
                    if (r_fromc) begin
                        ev_cause[C_FROMC] <= 1'b1;
                    end else if (d_hash) begin
                        is_hash <= 1'b1;
                        bk_raddr <= {msl, pb[7:2]};
                        state <= oh(S_H);
                    end else if (d_mask) begin
                        mset <= 3'd0;
                        state <= oh(S_MA);
                    end else begin
                        ev_cause[C_UNASS] <= 1'b1;
                    end
                end
            end
            // hash: primary bucket word (address registered in S_DEC), data in S_B1
            state[S_H]: state <= oh(S_HW1);
            state[S_HW1]: state <= oh(S_HW2);
            state[S_HW2]: state <= oh(S_B1);
            state[S_B1]: begin
                ev_bucket <= 1'b1;
                ev_bucket_idx <= pb;
                ev_slot_idx <= msl;
                state <= oh(S_B1L);
            end
            state[S_B1L]: begin
                if (byte_pb == 8'hFF) begin
                    ev_cause[C_UNASS] <= 1'b1;
                    state <= oh(S_OUT);
                end else if (byte_pb[7]) begin
                    alt_used <= 1'b1;
                    bk_raddr <= {msl, ab[7:2]};
                    state <= oh(S_AW1);
                end else begin
                    cidx <= byte_pb[6:0];
                    state <= oh(S_CIDX);
                end
            end
            state[S_AW1]: state <= oh(S_AW2);
            state[S_AW2]: state <= oh(S_AW3);
            state[S_AW3]: state <= oh(S_B2);
            state[S_B2]: begin
                state <= oh(S_B2L);
            end
            state[S_B2L]: begin
                if (byte_ab == 8'hFF) begin
                    ev_cause[C_UNASS] <= 1'b1;
                    state <= oh(S_OUT);
                end else begin
                    cidx <= byte_ab[6:0];
                    state <= oh(S_CIDX);
                end
            end
            // mask: two position words, then the index in two stages, then the value table
            state[S_MA]: begin
                mp_raddr <= {msl, mset[1:0], 1'b0};
                state <= oh(S_MA1);
            end
            state[S_MA1]: begin
                mp_raddr <= {msl, mset[1:0], 1'b1};
                state <= oh(S_MA2);
            end
            state[S_MA2]: state <= oh(S_MA2B);
            state[S_MA2B]: state <= oh(S_MA3);
            state[S_MA3]: begin
                mw0 <= mp_rdata;
                state <= oh(S_MA4);
            end
            state[S_MA4]: begin
                mw1 <= mp_rdata;
                state <= oh(S_MS1);
            end
            state[S_MS1]: begin
                for (j = 0; j < 7; j = j + 1) begin
                    ms_en[j] <= mpos[j*8+7] && (mpos[j*8 +: 7] < 7'd96);
                    ms_bit[j*4 +: 4] <= mpos[j*8 +: 4];
                    case (mpos[j*8+4 +: 3])
                    3'd0: ms_chunk[j*16 +: 16] <= key96[15:0];
                    3'd1: ms_chunk[j*16 +: 16] <= key96[31:16];
                    3'd2: ms_chunk[j*16 +: 16] <= key96[47:32];
                    3'd3: ms_chunk[j*16 +: 16] <= key96[63:48];
                    3'd4: ms_chunk[j*16 +: 16] <= key96[79:64];
                    default: ms_chunk[j*16 +: 16] <= key96[95:80];
                    endcase
                end
                state <= oh(S_MS2);
            end
            state[S_MS2]: begin
                for (j = 0; j < 7; j = j + 1)
                    midx[j] <= ms_en[j] && bit16(ms_chunk[j*16 +: 16], ms_bit[j*4 +: 4]);
                state <= oh(S_MT);
            end
            state[S_MT]: begin
                mt_raddr <= {msl, mset[1:0], midx[6:2]};
                cidx <= midx;
                state <= oh(S_MTW1);
            end
            state[S_MTW1]: state <= oh(S_MTW2);
            state[S_MTW2]: state <= oh(S_MTW3);
            state[S_MTW3]: state <= oh(S_M2);
            state[S_M2]: begin
                m_more <= (mset + 3'd1 < r_nsets);
                state <= oh(S_M2L);
            end
            state[S_M2L]: begin
                if (byte_mt != 8'hFF) begin
                    cidx <= byte_mt[6:0];
                    state <= oh(S_CIDX);
                end else if (m_more) begin
                    mset <= mset + 3'd1;
                    state <= oh(S_MA);
                end else begin
                    ev_cause[C_UNASS] <= 1'b1;
                    state <= oh(S_OUT);
                end
            end
            state[S_CIDX]: begin
                if ({1'b0, cidx} >= {2'b0, r_ncache}) begin
                    ev_cause[C_UNASS] <= 1'b1;
                    state <= oh(S_OUT);
                end else begin
                    c_raddr <= {msl, cidx[4:0]};
                    state <= oh(S_CW1);
                end
            end
            state[S_CW1]: state <= oh(S_CW2);
            state[S_CW2]: state <= oh(S_CW3);
            state[S_CW3]: state <= oh(S_CK);
            state[S_CK]: begin
                // the cache's learnt and method flags registered before they steer S_C
                ck_known <= ln_rdata[52] && ln_rdata[53];
                ck_l2 <= (cm_rdata[1:0] == 2'd2);
                state <= oh(S_C);
            end
            state[S_C]: begin
                cache_ip <= ca_rdata;
                if (!ck_known) begin
                    ev_cause[C_UNKN] <= 1'b1;
                    state <= oh(S_OUT);
                end else if (ck_l2) begin
                    ev_cause[C_L2] <= 1'b1;
                    ev_cache <= 1'b1;
                    ev_cache_idx <= cidx[4:0];
                    act_port <= ln_rdata[48];
                    act_hlen <= 6'd12;
                    act_kind <= 2'd1;
                    act_dmac <= ln_rdata[47:0];
                    act_src_off <= 11'd12;
                    act_copy_len <= l2_copy;
                    state <= oh(S_OUT);
                end else if (r_toobig) begin
                    ev_cause[C_TOOBIG] <= 1'b1;
                    state <= oh(S_OUT);
                end else begin
                    // GRE: header assembled in S_GRE..S_GRE4 (needs cache_ip for the checksum)
                    ev_cause[C_GRE] <= 1'b1;
                    ev_cache <= 1'b1;
                    ev_cache_idx <= cidx[4:0];
                    act_port <= ln_rdata[48];
                    act_dmac <= ln_rdata[47:0];
                    state <= oh(S_GRE);
                end
            end
            state[S_GRE]: begin
                cs1 <= rid_sum + {4'd0, gre_tl_r};
                cs2 <= {4'd0, cache_ip[31:16]} + {4'd0, cache_ip[15:0]};
                state <= oh(S_GRE2);
            end
            state[S_GRE2]: begin
                cs3 <= cs1 + cs2;
                state <= oh(S_GRE3);
            end
            state[S_GRE3]: begin
                cs4 <= {1'b0, cs3[15:0]} + {13'd0, cs3[19:16]};
                state <= oh(S_GRE4);
            end
            state[S_GRE4]: begin
                act_hlen <= f_vlan ? 6'd46 : 6'd42;
                act_kind <= 2'd2;
                act_csum <= ~(cs4[15:0] + {15'd0, cs4[16]});
                act_cip <= cache_ip;
                act_rh <= rh;
                act_src_off <= l2len;
                act_copy_len <= f_totlen[10:0];
                state <= oh(S_OUT);
            end
            state[S_OUT]: begin
                if (!act_valid) begin
                    act_valid <= 1'b1;
                end else if (act_ready) begin
                    act_valid <= 1'b0;
                    state <= oh(S_IDLE);
                end
            end
            default: state <= oh(S_IDLE);
            endcase
        end
    end

endmodule
/* verilator lint_on UNUSEDSIGNAL */
`default_nettype wire
