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

    localparam S_IDLE = 5'd0, S_CLASS = 5'd1, S_SISSUE = 5'd2, S_SCHK = 5'd3, S_SLEARN = 5'd4,
               S_DEC = 5'd5, S_B1 = 5'd6, S_B2 = 5'd7, S_M0 = 5'd8, S_M1 = 5'd9, S_M2 = 5'd10,
               S_CIDX = 5'd11, S_C = 5'd12, S_OUT = 5'd13, S_GRE = 5'd14, S_MA = 5'd15,
               S_CLASS2 = 5'd16, S_H = 5'd17, S_MT = 5'd18, S_GRE2 = 5'd19, S_GRE3 = 5'd20,
               S_WAIT = 5'd21, S_PRE = 5'd22, S_SW1 = 5'd23, S_SW2 = 5'd24, S_M1B = 5'd25;
    // table reads have a 2-cycle latency (registered RAM outputs): issue state -> S_WAIT -> wnext
    reg [4:0] wnext;
    reg [4:0] state;
    assign busy = (state != S_IDLE);

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

    // classification (combinational over the 8 slots)
    reg [7:0] smatch;
    integer s, j;
    always @(*) begin
        for (s = 0; s < 8; s = s + 1) begin : cls
            reg [7:0]  sp;
            reg [31:0] fl;
            reg [15:0] pp;
            reg        pm;
            sp = grp_svc[s*32+24 +: 8];
            fl = grp_flags[s*32 +: 32];
            pp = fl[5] ? f_sport : f_dport;
            pm = 1'b0;
            for (j = 0; j < 8; j = j + 1)
                if (grp_ports[s*128 + (7-j)*16 +: 16] == pp && pp != 16'd0) pm = 1'b1;
            smatch[s] = grp_ctrl[s*32] && (sp == 8'd0 || sp == f_proto) &&
                        (!((sp == 8'd6 || sp == 8'd17) && fl[4]) || pm);
        end
    end

    reg [2:0] msl;
    reg [7:0] smatch_r;
    reg [1:0] r_assign;
    reg [2:0] r_nsets;
    reg [5:0] r_ncache;
    reg       r_fromc, r_toobig;
    reg       mfound;
    reg [2:0] first_slot;
    reg       any_slot;
    always @(*) begin
        first_slot = 3'd0;
        any_slot = 1'b0;
        for (s = 7; s >= 0; s = s - 1)
            if (smatch_r[s]) begin
                first_slot = s[2:0];
                any_slot = 1'b1;
            end
    end

    reg  [31:0] m_ctrl, m_svc, m_flags;
    wire [1:0]  m_assign = m_ctrl[2:1];
    wire [2:0]  m_nsets  = m_ctrl[10:8];
    wire [5:0]  m_ncache = m_ctrl[21:16];

    // hash keys
    function [7:0] fold32;
        input [31:0] k;
        fold32 = k[31:24] ^ k[23:16] ^ k[15:8] ^ k[7:0];
    endfunction
    wire [31:0] key1 = (m_flags[0] ? f_sip : 32'd0) ^ (m_flags[1] ? f_dip : 32'd0) ^
                       (m_flags[2] ? {16'd0, f_sport} : 32'd0) ^ (m_flags[3] ? {16'd0, f_dport} : 32'd0);
    wire [31:0] key2 = (m_flags[8] ? f_sip : 32'd0) ^ (m_flags[9] ? f_dip : 32'd0) ^
                       (m_flags[10] ? {16'd0, f_sport} : 32'd0) ^ (m_flags[11] ? {16'd0, f_dport} : 32'd0);
    wire [7:0] b1 = fold32(key1);
    wire [7:0] b2 = fold32(key2);

    // mask index from the 96-bit key and the set's bit positions
    wire [95:0] key96 = {f_sip, f_dip, f_sport, f_dport};
    reg  [31:0] mw0, mw1;
    reg  [55:0] mpos;
    reg  [6:0]  midx;
    always @(*) begin
        mpos = {mw1[23:0], mw0};
        for (j = 0; j < 7; j = j + 1)
            midx[j] = mpos[j*8+7] && (mpos[j*8 +: 7] < 7'd96) && key96[mpos[j*8 +: 7]];
    end

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

    function [6:0] bsel_lo7;
        input [31:0] w;
        input [1:0] i;
        reg [7:0] b;
        begin
            b = bsel(w, i);
            bsel_lo7 = b[6:0];
        end
    endfunction

    // GRE return checks
    wire [15:0] hlen    = {10'd0, f_ihl, 2'b00};
    wire        ret_hit = f_ip_ok && f_proto == 8'd47 && f_dip == router_id && f_l4w0 == 32'h0000883E &&
                          (hlen + 16'd4 <= f_totlen);
    wire        nib4    = (f_l4b4[7:4] == 4'd4);
    wire [15:0] p_rel   = hlen + (nib4 ? 16'd4 : 16'd8);
    wire [15:0] il      = nib4 ? f_len4 : f_len8;
    wire        ret_bad = (hlen + 16'd4 >= f_totlen) || (p_rel + 16'd4 > f_totlen) ||
                          (il < 16'd20) || (p_rel + il > f_totlen);
    wire [10:0] l2len   = f_vlan ? 11'd18 : 11'd14;

    // outer IPv4 header checksum for GRE
    wire [15:0] gre_tl = f_totlen + 16'd28;
    reg  [31:0] cache_ip;
    // pipelined: rid_sum (every cycle), s1/s2 (S_GRE), s3 (S_GRE2), fold (S_GRE3)
    reg  [19:0] rid_sum, cs1, cs2, cs3;
    reg  [15:0] gre_tl_r;
    always @(posedge clk) rid_sum <= 20'h0C52F + {4'd0, router_id[31:16]} + {4'd0, router_id[15:0]};
    wire [16:0] csum1 = {1'b0, cs3[15:0]} + {13'd0, cs3[19:16]};
    wire [15:0] csum  = ~(csum1[15:0] + {15'd0, csum1[16]});
    // GRE-return checks registered in S_CLASS
    reg         r_ret_hit, r_ret_bad;
    reg  [10:0] r_dec_off, r_il;

    // scan state
    reg [2:0] sc_slot;
    reg [4:0] sc_idx;
    // scan loop control, all registered (timing): entries left in the current slot and the
    // counts of the slots after it (shifted down one slot per advance: no slot mux)
    reg [5:0]  sc_rem;
    reg [41:0] sc_nsh;
    reg        sc_last;            // sc_slot == 7
    // registered scan comparisons (valid one cycle after the table data)
    reg        sc_ipeq, sc_maceq;
    always @(posedge clk) begin
        sc_ipeq  <= (ca_rdata == f_sip);
        sc_maceq <= (cm_rdata[3:2] == 2'd2) && ln_rdata[52] && (ln_rdata[47:0] == f_src);
    end
    function [5:0] nclamp;        // entries that take part in the scan: min(ncache, 32)
        input [5:0] n;
        nclamp = n[5] ? 6'd32 : n;
    endfunction
    reg [7:0] ipm, macm;
    reg [2:0] mset;
    reg [6:0] cidx;
    reg       alt_used;
    reg [7:0] pb, ab;
    reg       is_hash;

    wire [31:0] rh = {6'd0, alt_used, (m_svc[7:0] == 8'd1), m_svc[15:8],
                      (alt_used ? ab : 8'd0), (is_hash ? pb : 8'd0)};

    integer sk;
    always @(*) begin
        m_ctrl = 32'd0;
        m_svc = 32'd0;
        m_flags = 32'd0;
        for (sk = 0; sk < 8; sk = sk + 1) begin
            if (msl == sk[2:0]) begin
                m_ctrl = grp_ctrl[sk*32 +: 32];
                m_svc = grp_svc[sk*32 +: 32];
                m_flags = grp_flags[sk*32 +: 32];
            end
        end
    end

    // table read addresses (combinational: data is valid in the next state)
    always @(*) begin
        c_raddr  = (state == S_SISSUE) ? {sc_slot, sc_idx} : {msl, cidx[4:0]};
        bk_raddr = (state == S_H) ? {msl, pb[7:2]} : {msl, ab[7:2]};
        mp_raddr = {msl, mset[1:0], state == S_M0};
        mt_raddr = {msl, mset[1:0], cidx[6:2]};
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

    always @(posedge clk) begin
        in_ready <= 1'b0;
        ev_cause <= 11'd0;
        ev_slot <= 1'b0;
        ev_cache <= 1'b0;
        ev_bucket <= 1'b0;
        if (rst) begin
            state <= S_IDLE;
            act_valid <= 1'b0;
            lr_valid <= 1'b0;
        end else begin
            case (state)
            S_IDLE: begin
                if (in_valid && !hold && !in_ready) begin
                    in_ready <= 1'b1;
                    f_start <= in_start; f_flen <= in_flen; f_dst <= in_dst_mac; f_src <= in_src_mac;
                    f_vlan <= in_vlan; f_tci <= in_tci; f_is_ip <= in_is_ip; f_ip_ok <= in_ip_ok;
                    f_proto <= in_proto; f_sip <= in_sip; f_dip <= in_dip; f_sport <= in_sport;
                    f_dport <= in_dport; f_totlen <= in_totlen; f_ihl <= in_ihl; f_l4w0 <= in_l4w0;
                    f_l4b4 <= in_l4b4; f_len4 <= in_len4; f_len8 <= in_len8;
                    state <= S_CLASS;
                end
            end
            S_CLASS: begin
                ipm <= 8'd0;
                macm <= 8'd0;
                sc_slot <= 3'd0;
                sc_idx <= 5'd0;
                sc_last <= 1'b0;
                sc_rem <= nclamp(grp_ctrl[16 +: 6]);
                sc_nsh <= {nclamp(grp_ctrl[7*32+16 +: 6]), nclamp(grp_ctrl[6*32+16 +: 6]),
                           nclamp(grp_ctrl[5*32+16 +: 6]), nclamp(grp_ctrl[4*32+16 +: 6]),
                           nclamp(grp_ctrl[3*32+16 +: 6]), nclamp(grp_ctrl[2*32+16 +: 6]),
                           nclamp(grp_ctrl[1*32+16 +: 6])};
                act_start <= f_start;
                smatch_r <= smatch;
                r_toobig <= (gre_tl > mtu);
                gre_tl_r <= gre_tl;
                r_ret_hit <= ret_hit;
                r_ret_bad <= ret_bad;
                r_dec_off <= l2len + p_rel[10:0];
                r_il <= il[10:0];
                act_flen <= f_flen;
                ev_bytes <= {1'b0, f_flen} + 12'd4;
                alt_used <= 1'b0;
                is_hash <= 1'b0;
                pb <= 8'd0;
                ab <= 8'd0;
                state <= S_CLASS2;
            end
            S_CLASS2: begin
                msl <= first_slot;
                mfound <= any_slot;
                state <= f_ip_ok ? S_SISSUE : S_PRE;
            end
            S_SISSUE: begin
                // table read of {sc_slot, sc_idx} issued now; data registered 2 cycles later,
                // compared in the cycle after that (S_SCHK)
                if (sc_rem != 6'd0) begin
                    state <= S_SW1;
                end else begin
                    sc_idx <= 5'd0;
                    sc_slot <= sc_slot + 3'd1;
                    sc_last <= (sc_slot == 3'd6);
                    sc_rem <= sc_nsh[5:0];
                    sc_nsh <= {6'd0, sc_nsh[41:6]};
                    if (sc_last) state <= S_PRE;
                end
            end
            S_SW1: state <= S_SW2;
            S_SW2: state <= S_SCHK;
            S_SCHK: begin
                if (sc_ipeq) begin
                    ipm[sc_slot] <= 1'b1;
                    lr_valid <= 1'b1;
                    lr_idx <= {sc_slot, sc_idx};
                    lr_mac <= f_src;
                    ev_cause[C_LEARN] <= 1'b1;
                    state <= S_SLEARN;
                end else begin
                    state <= S_SISSUE;
                end
                if (sc_maceq)
                    macm[sc_slot] <= 1'b1;
                sc_idx <= sc_idx + 5'd1;
                sc_rem <= sc_rem - 6'd1;
            end
            S_SLEARN: begin
                if (lr_ack) begin
                    lr_valid <= 1'b0;
                    state <= S_SISSUE;
                end
            end
            S_PRE: begin
                // register everything S_DEC needs about the matched slot (timing)
                r_assign <= m_assign;
                r_nsets <= m_nsets;
                r_ncache <= m_ncache;
                r_fromc <= ipm[msl] | macm[msl];
                pb <= b1;
                ab <= b2;
                state <= S_DEC;
            end
            S_DEC: begin
                state <= S_OUT;
                set_normal;
                if (!f_is_ip) begin
                    // not IPv4: forward, not counted
                end else if (!f_ip_ok) begin
                    if (active) ev_cause[C_NOTRED] <= 1'b1;
                end else if (r_ret_hit) begin
                    if (r_ret_bad) begin
                        act_drop <= 1'b1;
                        ev_cause[C_RETBAD] <= 1'b1;
                    end else begin
                        ev_cause[C_RET] <= 1'b1;
                        act_hlen <= f_vlan ? 6'd18 : 6'd14;
                        act_kind <= 2'd3;
                        act_dmac <= (nh_mac != 48'd0) ? nh_mac : f_dst;
                        act_smac <= appl_mac;
                        act_vlan <= f_vlan;
                        act_tci <= f_tci;
                        act_src_off <= r_dec_off;
                        act_copy_len <= r_il;
                    end
                end else if (!active || !mfound) begin
                    // fail-open or no slot: forward normally
                end else begin
                    ev_slot <= 1'b1;
                    ev_slot_idx <= msl;
                    if (r_fromc) begin
                        ev_cause[C_FROMC] <= 1'b1;
                    end else if (r_assign == 2'd1) begin
                        is_hash <= 1'b1;
                        state <= S_H;
                    end else if (r_assign == 2'd2 && r_nsets != 3'd0) begin
                        mset <= 3'd0;
                        state <= S_MA;
                    end else begin
                        ev_cause[C_UNASS] <= 1'b1;
                    end
                end
            end
            S_H: begin               // bucket read issued from the registered index
                state <= S_WAIT;
                wnext <= S_B1;
            end
            S_WAIT: state <= wnext;
            S_B1: begin
                ev_bucket <= 1'b1;
                ev_bucket_idx <= pb;
                ev_slot_idx <= msl;
                if (bsel(bk_rdata, pb[1:0]) == 8'hFF) begin
                    ev_cause[C_UNASS] <= 1'b1;
                    state <= S_OUT;
                end else if (bsel(bk_rdata, pb[1:0]) >= 8'h80) begin
                    alt_used <= 1'b1;
                    state <= S_WAIT;
                    wnext <= S_B2;
                end else begin
                    cidx <= bsel_lo7(bk_rdata, pb[1:0]);
                    state <= S_CIDX;
                end
            end
            S_B2: begin
                if (bsel(bk_rdata, ab[1:0]) == 8'hFF) begin
                    ev_cause[C_UNASS] <= 1'b1;
                    state <= S_OUT;
                end else begin
                    cidx <= bsel_lo7(bk_rdata, ab[1:0]);
                    state <= S_CIDX;
                end
            end
            S_MA: begin
                state <= S_WAIT;
                wnext <= S_M0;
            end
            S_M0: begin
                mw0 <= mp_rdata;
                state <= S_WAIT;
                wnext <= S_M1;
            end
            S_M1: begin              // second position word registered (timing)
                mw1 <= mp_rdata;
                state <= S_M1B;
            end
            S_M1B: begin
                cidx <= midx;
                state <= S_MT;
            end
            S_MT: begin              // mask table read issued from the registered index
                state <= S_WAIT;
                wnext <= S_M2;
            end
            S_M2: begin
                if (bsel(mt_rdata, cidx[1:0]) != 8'hFF) begin
                    cidx <= bsel_lo7(mt_rdata, cidx[1:0]);
                    state <= S_CIDX;
                end else if (mset + 3'd1 < r_nsets) begin
                    mset <= mset + 3'd1;
                    state <= S_MA;
                end else begin
                    ev_cause[C_UNASS] <= 1'b1;
                    state <= S_OUT;
                end
            end
            S_CIDX: begin
                if ({1'b0, cidx} >= {2'b0, r_ncache}) begin
                    ev_cause[C_UNASS] <= 1'b1;
                    state <= S_OUT;
                end else begin
                    state <= S_WAIT;
                    wnext <= S_C;
                end
            end
            S_C: begin
                cache_ip <= ca_rdata;
                if (!(ln_rdata[52] && ln_rdata[53])) begin
                    ev_cause[C_UNKN] <= 1'b1;
                    state <= S_OUT;
                end else if (cm_rdata[1:0] == 2'd2) begin
                    ev_cause[C_L2] <= 1'b1;
                    ev_cache <= 1'b1;
                    ev_cache_idx <= cidx[4:0];
                    act_port <= ln_rdata[48];
                    act_hlen <= 6'd12;
                    act_kind <= 2'd1;
                    act_dmac <= ln_rdata[47:0];
                    act_smac <= appl_mac;
                    act_src_off <= 11'd12;
                    act_copy_len <= f_flen - 11'd12;
                    state <= S_OUT;
                end else if (r_toobig) begin
                    ev_cause[C_TOOBIG] <= 1'b1;
                    state <= S_OUT;
                end else begin
                    // GRE: header assembled in S_GRE (needs cache_ip for the checksum)
                    ev_cause[C_GRE] <= 1'b1;
                    ev_cache <= 1'b1;
                    ev_cache_idx <= cidx[4:0];
                    act_port <= ln_rdata[48];
                    lr_mac <= ln_rdata[47:0];   // reuse as cache MAC holder
                    state <= S_GRE;
                end
            end
            S_GRE: begin
                cs1 <= rid_sum + {4'd0, gre_tl_r};
                cs2 <= {4'd0, cache_ip[31:16]} + {4'd0, cache_ip[15:0]};
                state <= S_GRE2;
            end
            S_GRE2: begin
                cs3 <= cs1 + cs2;
                state <= S_GRE3;
            end
            S_GRE3: begin
                act_hlen <= f_vlan ? 6'd46 : 6'd42;
                act_kind <= 2'd2;
                act_dmac <= lr_mac;
                act_smac <= appl_mac;
                act_vlan <= f_vlan;
                act_tci <= f_tci;
                act_tl <= gre_tl_r;
                act_csum <= csum;
                act_rid <= router_id;
                act_cip <= cache_ip;
                act_rh <= rh;
                act_src_off <= l2len;
                act_copy_len <= f_totlen[10:0];
                state <= S_OUT;
            end
            S_OUT: begin
                if (!act_valid) begin
                    act_valid <= 1'b1;
                end else if (act_ready) begin
                    act_valid <= 1'b0;
                    state <= S_IDLE;
                end
            end
            default: state <= S_IDLE;
            endcase
        end
    end

endmodule
/* verilator lint_on UNUSEDSIGNAL */
`default_nettype wire
