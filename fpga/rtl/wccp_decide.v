// Decision core, shared by both receive ports: takes a frame's parse bundle from either
// port's queue (issued by wccp_rxq at the frame's header point, while the rest of the frame
// still arrives), learns cache locations (as targets for the frame's commit unit), recognises
// GRE return traffic, classifies against the service-group slots, runs the hash (or mask)
// assignment and the cache resolution, and hands the decision to the frame's port's commit
// unit (wccp_commit): which port, which header to prepend and which bytes of the received
// frame to copy, with the events it raises. Everything that waits for the frame's end (its
// status, the builder, cut-through or store-and-forward, the counters' events, the learning
// writes) is the commit unit's; the core goes back to idle with the hand-off, so one core
// decides the frames of both ports in turn.
//
// Taking a frame: round robin between the ports whose queue has a bundle and whose commit
// unit is free (`in_free`: it holds no frame). A port has at most one frame between the take
// and its commit (as its status FIFO holds the statuses in bundle order, the commit pops the
// head). `sel` (a register) is the port whose queue head the bundle registers follow while
// idle; the take is from `sel`. While a frame is decided `sel` turns to the other port if
// that one has a bundle waiting, else stays on the frame's port; while idle it turns when
// only the other port has one. Either way it also turns to a port whose bundle is on its way
// (in_soon: a frame is arriving there) when the other port has none waiting or coming, so
// that a frame reaching an idle core finds `sel` on its port (without the hint it would
// wait a cycle). `prt` is the port of the frame being decided: it sets the
// forwarding egress (prt ^ 1), the next hop, the learnt-location compare ("already this
// frame's") and the commit unit that gets the learning targets and the decision.
//
// Hand-off (S_HO, one cycle, `ho` one-hot by port): every decision register (d_*, p_*, the
// event indices) is stable, and so is the live configuration (busy is high); the commit
// unit takes them in that cycle, acting on them at once (an action may leave with the edge
// that ends S_HO), and keeps its own copies after it. The core reads no table and no
// configuration for the frame after S_HO.
//
// Learning: a source-IP hit whose location is not already this frame's MAC and port is a
// learning target; the scan hands its table index to the commit unit (lr_valid / lr_room:
// a 16-entry list there) and goes on. The commit unit writes the targets once the frame's
// status says it is good and complete, or drops them; the list has room for more targets
// than any table holds of one address but for pathological ones (a cache address listed
// more than 16 times), where the scan waits for room, i.e. for the frame's status (bounded by
// one frame). busy stays high while a commit unit holds targets (`lpend`), so that a table
// commit (which renumbers entries) never falls between a learning frame's decision and its
// learning writes.
//
// `hold` (commit pending) keeps the core from taking a new frame so that a commit always
// falls between two decisions.
//
// Why one file of this size: the core is one state machine, and its parts (the bundle
// latch, classification, the hash and mask lookups, the cache checks, the learning scan and
// the hand-off) are bound together by cycle contracts: each register's comment says in which
// cycle after the latch it is valid and which state reads it first. Split over modules those
// contracts would sit at port boundaries with nothing to check them; kept here they are read
// and changed together. What depends on the configuration only is a module of its own
// (wccp_decide_cfg), so is the cache-source prefilter (wccp_srcfilt), the RFC 3074 mixing
// table (wccp_pearson_rom, a block RAM) and everything after the decision (wccp_commit).
`timescale 1ns / 1ps
`default_nettype none
`include "wccp_regmap.vh"
/* verilator lint_off UNUSEDSIGNAL */
module wccp_decide #(
    parameter PEARSON = 1       // 0: no RFC 3074 Pearson engine (GROUP_FLAGS_PEARSON ignored, S_PH unused)
) (
    input  wire          clk,
    input  wire          rst,
    input  wire          hold,
    output wire          busy,
    // parse bundles: the queue heads of receive ports 1 and 0, {port 1, port 0} in each field
    input  wire [1:0]    in_valid,
    output reg  [1:0]    in_ready,       // the take (registered): the source pops the head with it
    input  wire [1:0]    in_free,        // the port's commit unit holds no frame
    input  wire [1:0]    in_soon,        // a bundle is on its way (wccp_rxq: a frame arrives)
    input  wire [95:0]   in_dst_mac,
    input  wire [95:0]   in_src_mac,
    input  wire [1:0]    in_vlan,
    input  wire [1:0]    in_is_ip,
    input  wire [1:0]    in_ip_hdr_ok,   // the IPv4 header is valid (the datagram may be cut)
    input  wire [15:0]   in_proto,
    input  wire [63:0]   in_sip,
    input  wire [63:0]   in_dip,
    input  wire [1:0]    in_tcpudp,      // TCP or UDP: the ports are in_l4w0's halves
    input  wire [31:0]   in_totlen,
    input  wire [7:0]    in_ihl,
    input  wire [63:0]   in_l4w0,
    input  wire [15:0]   in_l4b4,
    input  wire [31:0]   in_len4,
    input  wire [31:0]   in_len8,
    // live configuration
    input  wire          active,
    input  wire [31:0]   router_id,
    input  wire [15:0]   mtu,
    input  wire [95:0]   nh_mac,         // next hop towards egress 1, egress 0 (0: keep the frame's)
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
    // live redirect-list words (wccp_regs: slot*32 + group word offset; 2-cycle read)
    output wire [7:0]    acl_raddr,
    input  wire [31:0]   acl_rdata,
    // the cache-source index (SRCIDX, 3-cycle reads): heads {count, start} by the fold of a
    // cache address (256: the L2-return run), the list of table entries they point into
    output reg  [8:0]    hd_raddr,
    input  wire [17:0]   hd_rdata,
    output wire [8:0]    ls_raddr,
    input  wire [7:0]    ls_rdata,
    // learning targets, to the commit unit of port lr_port (taken where lr_valid and its
    // lr_room are high)
    output reg           lr_valid,
    output reg  [7:0]    lr_idx,
    output wire          lr_port,
    input  wire [1:0]    lr_room,
    input  wire [1:0]    lpend,       // commit unit p holds learning targets (busy)
    // writes of cache addresses (cache table) and learnt MACs, for the scan's prefilter
    input  wire          sf_ip_wr,
    input  wire [31:0]   sf_ip_key,
    input  wire          sf_mac_wr,
    input  wire [47:0]   sf_mac_key,
    input  wire          sf_l2_wr,    // a cache method with L2 return written
    // hand-off to the commit unit of the frame's port: ho[p] is S_HO for a frame of port p;
    // the decision's registers below are valid then (and until the next frame's S_DEC)
    output reg  [1:0]    ho,
    output reg           d_drop,      // drop (a bad GRE return, a closed slot's unassigned frame)
    output reg           d_port,      // egress
    output reg  [1:0]    d_kind,      // 0 copy, 1 L2 rewrite, 2 GRE, 3 decap
    output reg  [5:0]    d_hlen,
    output reg  [10:0]   d_src_off,   // the builder copies from here to the frame end
    output reg  [47:0]   d_dmac,      // L2 rewrite, GRE, decap: destination MAC
    output reg  [15:0]   d_csum,      // GRE: outer header checksum, cache address, redirect header
    output reg  [31:0]   d_cip,
    output reg  [31:0]   d_rh,
    output wire [15:0]   d_tl,        // GRE: outer total length
    // the decision's events (counted by the commit unit if the status says the decision stands)
    output reg           p_ntr,       // IPv4 while active: not redirectable if the status says so
    output reg           p_fromc,
    output reg           p_unass,
    output reg           p_unkn,
    output reg           p_toobig,
    output reg           p_ret,
    output reg           p_l2,
    output reg           p_gre,
    output reg           p_retbad,
    output reg           p_slot,
    output reg           p_cache,
    output reg           p_bucket,
    output wire [2:0]    d_slot_idx,
    output wire [4:0]    d_cache_idx,
    output wire [7:0]    d_bucket_idx
);
    // ------------------------------------------------------------------------------------
    // Every state does little: compares are registered before they steer the state machine,
    // table addresses are registers, and the cache-table scan is a pipeline that issues one
    // listed entry per cycle (results 9 cycles later; a learn hit rewinds the issue state to
    // the entry after the hit). Decision time for a frame from a cache is about 20 cycles
    // plus one per entry listed under its address's fold (and per L2-return entry when its
    // MAC may be one's), whatever the table size, and a constant 8 (not IPv4, or no slot) to
    // 14 (hash redirect, L2 or GRE; 25 for a mask redirect found in the first set) cycles
    // from the take to S_HO
    // (the action can leave with the edge that ends it) for a client's frame, whose scan the
    // prefilter ends at once. A client's hash redirect,
    // in cycles after the take: S_DEC 7, S_H, S_B1 9 (the primary bucket word, on the bucket
    // table's 2-cycle read: the cache address from its byte), S_B1L 10 (its flags), S_CW2,
    // S_CK 12 (the cache's words, on the cache tables' 2-cycle reads), S_C 13 (the chosen
    // cache's flags, the action fields and the GRE checksum), S_HO 14. An alternate bucket
    // adds 2 (S_B2L 11, S_CW1 .. S_C 15), each further mask set 13.
    // Values that only depend on the latched bundle, the configuration or other registers
    // are registered every cycle (no enable); the outcome of each decision step is a
    // registered flag, so that next-state logic and enables are a state bit and a flag.
    // Where a decision ends, the core hands it to the frame's commit unit (S_HO) and goes
    // back to idle.
    // ------------------------------------------------------------------------------------
    localparam integer
        S_IDLE = 0,
        S_C1 = 1,
        S_C2 = 2,
        S_C3 = 3,
        S_SCAN = 4,
        S_PRE = 5,
        S_PRE2 = 6,
        S_DEC = 7,
        S_H = 8,
        S_B1 = 9,
        S_MA = 10,
        S_MA1 = 11,
        S_MA2 = 12,
        S_MA3 = 13,
        S_MA4 = 14,
        S_MS1 = 15,
        S_MS2 = 16,
        S_MT = 17,
        S_MTW1 = 18,
        S_MTW2 = 19,
        S_M2 = 20,
        S_CW1 = 21,
        S_CW2 = 22,
        S_C = 23,
        S_B1L = 24,
        S_B2L = 25,
        S_M2L = 26,
        S_MA2B = 27,
        S_CK = 28,
        S_HO = 29,
        S_PH = 30;
    localparam integer NS = 31;
    // one-hot state (next state written out per bit below)
    reg [NS-1:0] state;
    reg [NS-1:0] nx;
    // busy (towards the configuration commit, wccp_regs): deciding, up to and including the
    // hand-off, or a commit unit holds learning targets (table indices of this
    // configuration). A commit unit waiting for its frame's status or its builder reads no
    // table and no configuration (it holds its own copies), so a commit may switch banks
    // then; otherwise a commit would wait for the end of a long frame.
    assign busy = !state[S_IDLE] || (|lpend);

    // ---- which port's frame: the queue heads' multiplexer, the take ----
    reg        sel, prt;
    wire [1:0] elig = in_valid & in_free;
    wire [1:0] want = (in_valid | in_soon) & in_free;     // a bundle waiting or on its way
    wire       take = state[S_IDLE] && !hold && (sel ? elig[1] : elig[0]);
    assign lr_port = prt;
    wire [47:0] b_dst = sel ? in_dst_mac[95:48] : in_dst_mac[47:0];
    wire [47:0] b_src = sel ? in_src_mac[95:48] : in_src_mac[47:0];
    wire        b_vlan = sel ? in_vlan[1] : in_vlan[0];
    wire        b_is_ip = sel ? in_is_ip[1] : in_is_ip[0];
    wire        b_ip_hdr_ok = sel ? in_ip_hdr_ok[1] : in_ip_hdr_ok[0];
    wire [7:0]  b_proto = sel ? in_proto[15:8] : in_proto[7:0];
    wire [31:0] b_sip = sel ? in_sip[63:32] : in_sip[31:0];
    wire [31:0] b_dip = sel ? in_dip[63:32] : in_dip[31:0];
    wire        b_tcpudp = sel ? in_tcpudp[1] : in_tcpudp[0];
    wire [15:0] b_totlen = sel ? in_totlen[31:16] : in_totlen[15:0];
    wire [3:0]  b_ihl = sel ? in_ihl[7:4] : in_ihl[3:0];
    wire [31:0] b_l4w0 = sel ? in_l4w0[63:32] : in_l4w0[31:0];
    wire [7:0]  b_l4b4 = sel ? in_l4b4[15:8] : in_l4b4[7:0];
    wire [15:0] b_len4 = sel ? in_len4[31:16] : in_len4[15:0];
    wire [15:0] b_len8 = sel ? in_len8[31:16] : in_len8[15:0];
    always @(posedge clk) begin
        if (take) prt <= sel;
        if (rst) begin
            sel <= 1'b0;
        end else if (state[S_IDLE]) begin
            // idle: to the other port when only that one has a bundle, or only that one has
            // one waiting or coming (not while taking)
            if (!take && !(sel ? elig[1] : elig[0]) &&
                ((sel ? elig[0] : elig[1]) || ((sel ? want[0] : want[1]) && !(sel ? want[1] : want[0]))))
                sel <= !sel;
        end else begin
            // deciding: the other port next if it has a bundle waiting, or if only it has one
            // coming, else this one
            sel <= ((prt ? elig[0] : elig[1]) || ((prt ? want[0] : want[1]) && !(prt ? want[1] : want[0]))) ?
                   !prt : prt;
        end
    end

    // latched bundle
    reg [47:0] f_dst, f_src;
    reg        f_vlan;
    reg        f_is_ip, f_ip_hdr_ok;
    reg [7:0]  f_proto;
    reg [31:0] f_sip, f_dip;
    reg        f_tcpudp;
    reg [15:0] f_totlen;
    reg [3:0]  f_ihl;
    reg [31:0] f_l4w0;
    reg [7:0]  f_l4b4;
    reg [15:0] f_len4, f_len8;

    // the bundle registers follow the queue head while idle: a frame is taken in S_IDLE,
    // so the last load is the taken frame (enable: the state bit, or for half of the bits
    // idle_f, low in reset, so that yosys keeps it apart: high while idle and in S_C1, a
    // register of the state alone, not of the take, whose inputs come from both ports'
    // queues: timing; the load at the end of S_C1 is the taken frame's bundle again, the
    // queue pops it with that edge and `sel` stays on its port until then)
    reg idle_f;
    always @(posedge clk) begin
        idle_f <= !rst && (state[S_IDLE] || state[S_HO]);
        if (idle_f) begin
            f_dst <= b_dst; f_src <= b_src; f_sip <= b_sip; f_dip <= b_dip;
        end
        if (state[S_IDLE]) begin
            f_vlan <= b_vlan; f_is_ip <= b_is_ip; f_ip_hdr_ok <= b_ip_hdr_ok;
            f_proto <= b_proto; f_tcpudp <= b_tcpudp;
            f_totlen <= b_totlen; f_ihl <= b_ihl; f_l4w0 <= b_l4w0;
            f_l4b4 <= b_l4b4; f_len4 <= b_len4; f_len8 <= b_len8;
        end
    end

    integer s, cs, cj, kq, kb, kc, ks;
    wire [7:0]  c_hasacl;        // per slot: has a redirect-list; its entry count (4 bits each)
    wire [31:0] c_nacl;
    reg  [7:0]  a_rej;           // per slot: its redirect-list refused this frame (see the scan)

    // registers that depend on the configuration only
    wccp_decide_cfg cfg (
        .acl(c_hasacl), .nacl(c_nacl),
        .clk(clk), .grp_ctrl(grp_ctrl), .grp_svc(grp_svc), .grp_flags(grp_flags), .mtu(mtu),
        .router_id(router_id), .svp(c_svp), .pr0(c_pr0), .needp(c_needp),
        .mtu_r(mtu_r), .rid_sum(rid_sum), .hsel(c_hsel), .msel(c_msel), .hkf(c_hkf), .psel(c_psel));

    // ---- classification (from the latched bundle and the configuration, every cycle) ----
    // each slot's port; per (slot, list entry) port compares in bytes; slot port match,
    // protocol match; slot match; first matching slot; its configuration
    reg [127:0] c_port;          // slot*16: the frame's source or destination port
    reg [63:0]  c_peqh, c_peql;  // slot*8 + j: high / low byte equal
    reg [7:0]   c_pz, c_preq, c_protok;
    reg [15:0]  f_sport, f_dport;    // the frame's ports (0 unless TCP or UDP)
    reg         f_spz, f_dpz;        // the frame's source / destination port is 0
    wire [63:0] c_svp;           // slot*8: the slot's protocol (a local copy)
    wire [7:0]  c_pr0, c_needp;  // slot's protocol is 0; slot needs a port match
    wire [7:0]  c_hsel, c_msel;  // slot's assignment is hash / mask (with mask sets)
    wire [31:0] c_hkf;           // slot*4: the slot's primary hash key flags
    wire [7:0]  c_psel;          // slot hashes with RFC 3074's Pearson hash (GROUP_FLAGS_PEARSON)
    reg  [3:0]  p_kf;            // the first matching slot's (picked with msl: pb a cycle early)
    reg         p_pear;          // the first matching slot's Pearson flag (with p_kf)
    reg         a_pick;          // the first matching slot has a redirect-list (with p_kf)
    reg  [3:0]  a_n;             // its entry count
    reg [7:0]   smatch_r;
    reg [2:0]   msl;
    // copies of msl for its far consumers (timing: msl feeds the 96-bit configuration mux;
    // the copies reset to different values and msl is not reset, so yosys keeps all three):
    // msl_f picks the slot's from-a-cache flag, msl_a the table addresses and the slot index
    reg [2:0]   msl_f, msl_a;
    reg         mfound;
    // the first matching slot (f_m: matching, not refused by its redirect-list) and its
    // per-slot configuration ({index, key flags, entry count, has a list, Pearson}, 13 bits a
    // slot), picked straight from the match in three levels of 2:1 selects, each a LUT (kept
    // apart for synthesis: no priority encoder followed by 8:1 selects); slot 7's when none
    // matches (any_slot low: nothing reads them then)
    wire [7:0]   f_m = smatch_r & ~a_rej;
    reg  [103:0] c_first;
    always @(*)
        for (s = 0; s < 8; s = s + 1)
            c_first[s*13 +: 13] = {s[2:0], c_hkf[s*4 +: 4], c_nacl[s*4 +: 4], c_hasacl[s], c_psel[s]};
    (* keep *) wire [51:0] f_v1;     // pair j: the first of slots 2j, 2j + 1
    (* keep *) wire [3:0]  f_a1;     // pair j: either matches
    (* keep *) wire [25:0] f_v2;     // quad i: the first of slots 4i .. 4i + 3
    (* keep *) wire [1:0]  f_a2;
    genvar fj;
    generate
        for (fj = 0; fj < 4; fj = fj + 1) begin : g_first1
            assign f_v1[fj*13 +: 13] = f_m[2*fj] ? c_first[2*fj*13 +: 13] : c_first[(2*fj+1)*13 +: 13];
            assign f_a1[fj] = f_m[2*fj] || f_m[2*fj+1];
        end
        for (fj = 0; fj < 2; fj = fj + 1) begin : g_first2
            assign f_v2[fj*13 +: 13] = f_a1[2*fj] ? f_v1[2*fj*13 +: 13] : f_v1[(2*fj+1)*13 +: 13];
            assign f_a2[fj] = f_a1[2*fj] || f_a1[2*fj+1];
        end
    endgenerate
    wire [12:0] f_first = f_a2[0] ? f_v2[12:0] : f_v2[25:13];
    wire [2:0]  first_slot = f_first[12:10];
    wire        any_slot = f_a2[0] || f_a2[1];

    // ---- GRE return checks ----
    reg  [15:0] g_hlen4, g_prel, g_il, g_prel4, g_prelil;
    reg  [6:0]  g_m;             // GRE-to-us compares (router ID bytes, key word halves, proto)
    reg  [3:0]  g_rb;            // bad-return length compares
    reg         g_pre, g_ret_hit;
    reg  [10:0] r_dec_off;
    wire [10:0] l2len = f_vlan ? 11'd18 : 11'd14;
    wire        nib4  = (f_l4b4[7:4] == 4'd4);
    wire [15:0] hlen  = {10'd0, f_ihl, 2'b00};
    // length compares as the borrow of a subtraction (a carry chain each)
    wire [16:0] d_tl_hl4 = {1'b0, f_totlen} - {1'b0, g_hlen4};
    wire [16:0] d_hl4_tl = {1'b0, g_hlen4} - {1'b0, f_totlen};
    wire [16:0] d_tl_pl4 = {1'b0, f_totlen} - {1'b0, g_prel4};
    wire [16:0] d_il_20  = {1'b0, g_il} - 17'd20;
    wire [16:0] d_tl_pil = {1'b0, f_totlen} - {1'b0, g_prelil};
    wire [16:0] d_mtu_tl;

    // ---- GRE encapsulation: total length, MTU check, outer checksum ----
    reg  [15:0] gre_tl_r;
    wire [15:0] mtu_r;
    assign d_mtu_tl = {1'b0, mtu_r} - {1'b0, gre_tl_r};
    reg         r_toobig;
    wire [19:0] rid_sum;
    reg  [19:0] cs1;
    reg  [16:0] cs_k17;
    reg  [15:0] cs_k, cs_a;
    wire [16:0] cs_a0 = {1'b0, ca_rdata[31:16]} + {1'b0, ca_rdata[15:0]};
    wire [17:0] cs_a1c = {1'b0, ca_rdata[31:16], 1'b1} + {1'b0, ca_rdata[15:0], 1'b1};
    wire [16:0] cs_a1 = cs_a1c[17:1];   // + 1 as the carry in
    wire [16:0] cs_b0 = {1'b0, cs_k} + {1'b0, cs_a};
    wire [17:0] cs_b1c = {1'b0, cs_k, 1'b1} + {1'b0, cs_a, 1'b1};
    wire [16:0] cs_b1 = cs_b1c[17:1];

    // ---- matched slot's configuration (every cycle from msl) ----
    reg  [31:0] m_ctrl, m_svc, m_flags;
    reg  [2:0]  r_nsets;
    reg  [5:0]  r_ncache;
    reg         r_fromc, r_dyn;
    reg  [7:0]  r_svcid;
    reg  [47:0] r_decmac;
    reg  [47:0] nh_p;
    reg  [3:0]  nh_nz4;
    reg         nh_nz;

    function [7:0] fold32;
        input [31:0] k32;
        fold32 = k32[31:24] ^ k32[23:16] ^ k32[15:8] ^ k32[7:0];
    endfunction
    // hash key sources folded to a byte (the fold is linear: the key's fold is their XOR)
    reg  [7:0]  h_sip, h_dip, h_sp, h_dp;

    // ---- decision outcome flags (every cycle; read in S_DEC) ----
    reg x_retok, x_retbad, x_inval, x_slot, x_fromc, x_hash, x_mask, x_unass, x_out;
    reg x_ntr;                          // not redirectable if the status says so (IPv4, active)
    reg x_base, m_hash, m_mask;         // a slot applies; its assignment is hash / mask
    reg [10:0] v_src_off;               // S_DEC's action fields
    reg [5:0]  v_hlen;
    // S_C's action fields (L2 rewrite or GRE), from the registered ck_l2 (not from the RAM
    // word: timing)
    wire [5:0]  c_hlen;
    wire [1:0]  c_kind;
    wire [10:0] c_src_off;
    // the decision's action fields (S_DEC, S_C; d_* among the ports): the decided action
    // (the builder copies from d_src_off to the frame end)

    // ---- mask index: the 96-bit key and 7 bit positions, two stages ----
    wire [95:0] key96 = {f_sip, f_dip, f_sport, f_dport};
    reg  [31:0] mw0;
    reg  [111:0] ms_chunk;       // per position: the 16-bit key chunk it points into
    reg  [27:0]  ms_bit;         // per position: bit within the chunk
    reg  [6:0]   ms_en;          // per position: used and inside the key
    reg  [6:0]   midx;
    wire [55:0]  mpos = {mp_rdata[23:0], mw0};   // word 1 stays on mp_rdata from S_MA4

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

    // ---- cache-table scan pipeline (over the cache-source index) ----
    // The scan reads the table entries that the index lists for the frame's source: the run of
    // its address's fold (phase 0: source-IP compares, learning), then, when the prefilter
    // says the source MAC may be an L2-return cache's, the L2-return run (phase 1: MAC
    // compares only; an entry of both runs learns once, in phase 0). Issue state: the phase,
    // the list word issued, the words left in the run after it (iss_last: none), whether the
    // L2 run follows (iss_b), the end of the scan (iss_end: nothing left to issue).
    reg        iss_on;
    reg        iss_ph, iss_last, iss_b, iss_end;
    reg [8:0]  iss_pos, iss_left;
    wire       iss_go = iss_on && !iss_end;   // a list word is issued this cycle
    assign ls_raddr = iss_pos;
    reg        iss_ld;           // load the issue state from t4_s (a learn hit: resume)
    localparam SNW = 1 + 9 + 9 + 1 + 1 + 1;
    wire [SNW-1:0] iss_snap = {iss_ph, iss_pos, iss_left, iss_last, iss_b, iss_end};
    wire           t4_ph = t4_s[SNW-1];
    // the heads: the L2-return run's (read while idle: hd_raddr rests on 256, registered in
    // the prefilter's answer cycle), the fold's (addressed in S_C2, registered a cycle later:
    // hq_*)
    reg  [8:0] b_start, b_lm1, hq_start, hq_lm1;
    reg        b_any, b_one, hq_nz, hq_one;
    reg        sc_pend;          // S_C3, the answer cycle: the scan is about to start
    reg        st_ld1, st_ld;    // the answer was "maybe": the fold's head is read; load the
                                 // issue state from the heads (two cycles after the answer)
    reg        st_mac;           // the answer's MAC half (sf_mmac), kept
    // in-flight entries: u1 the list RAM's address, u3 its word (ls_rdata), t0 = the cache
    // tables' address register, results valid with t5
    reg        u1_v, u2_v, u3_v, t0_v, t1_v, t2_v, t3_v, t4_v, t5_v;
    reg [7:0]  t1_a, t2_a, t3_a, t4_a, t5_a;
    reg [7:0]  t5_oh;            // t5's slot, one-hot
    reg [SNW-1:0] u1_s, u2_s, u3_s, t0_s, t1_s, t2_s, t3_s, t4_s;
    // comparisons of the table words read for t3, registered in bytes; t5: hit flags
    reg  [3:0] ip_q;
    reg  [7:0] mac_q;
    reg        mac_ok;
    reg        learn_r, mhit_r;  // t5 is a source-IP hit (learn) / an L2-return-MAC hit
    reg        khit_r;           // t5 is a source-IP hit whose location is already this
                                 // frame's (MAC and this port known): nothing to learn
    reg        ln_here;          // t4's learnt word: MAC and port known, port = this port
    reg        scan_idle;        // nothing issued, in flight or waiting for a learn ack
    reg  [7:0] fcm;              // per slot: a source-IP or L2-return-MAC hit (from a cache)
    // the cache tables are read in 2 cycles (the block RAMs' output registers, no fabric
    // register: the chosen cache's words are used straight from them, in S_CK and S_C); the
    // scan takes its words through one register of its own (ca_s, cm_s, ln_s: 3 cycles, the
    // entry in t3)
    reg [31:0] ca_s;
    reg [1:0]  cm_s;
    reg [53:0] ln_s;
    always @(posedge clk) begin
        ca_s <= ca_rdata;
        cm_s <= cm_rdata[`WCCP_METHOD_RET_SHIFT +: 2];
        ln_s <= ln_rdata;
        for (kq = 0; kq < 4; kq = kq + 1)
            ip_q[kq] <= (ca_s[kq*8 +: 8] == f_sip[kq*8 +: 8]);
        for (kq = 0; kq < 8; kq = kq + 1)
            mac_q[kq] <= (ln_s[kq*6 +: 6] == f_src[kq*6 +: 6]);
        mac_ok <= (cm_s == `WCCP_RET_L2) && ln_s[52];
        ln_here <= ln_s[52] && ln_s[53] && (ln_s[51:48] == {3'd0, prt});
    end

    reg [2:0] mset;
    reg       m_more;
    // table bytes selected from the RAM words every cycle (registered before any decision),
    // with their "none" (0xFF) flags, in one stage from the RAM word (the byte's place, pb /
    // ab / midx[1:0], is a register that is stable long before): the primary bucket word is
    // on bk_rdata (the RAM's output register: the bucket table has no fabric register) from
    // 9 cycles after the take (bk_raddr follows pb and msl, valid 7 cycles after), its byte
    // and flag 10 cycles after, in S_B1L at the earliest (S_DEC + 3). The bucket address turns
    // to the alternate in S_DEC (bk_alt keeps it; ab is valid then): the primary word stays
    // on bk_rdata until S_DEC + 2 (S_B1), the alternate's is there from S_DEC + 3, so its
    // byte and flag are ready in S_B2L (S_B1L + 1). The value table word (mt_raddr valid in S_MT) is on mt_rdata
    // in S_M2 (S_MT + 3: 3-cycle read), its byte and flag in S_M2L.
    reg [7:0] byte_pb, byte_ab, byte_mt;
    reg [3:0] bk_ff, mt_ff4;     // bucket / value table word bytes that are 0xFF (comb.)
    reg       pb_ff, ab_ff, mt_ff;
    reg [6:0] cidx;
    reg       cidx_bad;          // cidx >= the slot's cache count
    reg       pb_bad;            // the primary bucket byte's index >= the count (from byte_pb)
    reg       k_p;               // the cycle after S_B1L: k_ok from pb_bad (cidx_bad is late)
    wire      k_bad = k_p ? pb_bad : cidx_bad;
    reg       alt_used;
    reg       bk_alt;            // the bucket address is the alternate's (from S_DEC on)
    reg [3:0] cq_pb;             // S_B1: the primary bucket byte's place in the word, one-hot
    // the primary bucket byte's cache index bits, straight from the RAM word in S_B1 (the
    // cache address is set a cycle before S_B1L decides: a read that is not used is harmless)
    wire [4:0] c_pbraw = ({5{cq_pb[0]}} & bk_rdata[28:24]) | ({5{cq_pb[1]}} & bk_rdata[20:16]) |
                         ({5{cq_pb[2]}} & bk_rdata[12:8]) | ({5{cq_pb[3]}} & bk_rdata[4:0]);
    reg [7:0] pb, ab;
    // Pearson hash engine (see pb below)
    localparam [4:0] PH_CYCLES = 5'd26;
    reg [7:0] ph_p, ph_a, ph_b;  // primary / alternate hash, the key byte
    reg [3:0] ph_j;              // index of the byte after ph_b (0: destination port low)
    reg [4:0] ph_n;              // cycles in S_PH
    reg       ph_odd;            // the next step (prepared this cycle) is the alternate's
    reg       ph_first;          // the alternate's next step is its first
    reg       ph_ep, ph_ea;      // ph_b is part of the primary / alternate key
    reg [7:0] ph_sa;             // the alternate's start value (its key length)
    // the step issued this cycle (prepared a cycle earlier): the key byte (0 for a byte the
    // hash skips), skip (read the identity half), the start value and whether it replaces
    // the table's output (the hash's first step), the hash (1: the alternate)
    reg [7:0] ph_ib, ph_is;
    reg       ph_isk, ph_if, ph_io;
    reg       ph_qo1, ph_qo2;    // the hash of the step whose word is on ph_q (2 cycles ago)
    wire [7:0] ph_q;             // the table word of the step issued 2 cycles ago
    wire [8:0] ph_addr = {ph_isk, (ph_if ? ph_is : ph_q) ^ ph_ib};
    generate
        if (PEARSON != 0) begin : g_pearson
            wccp_pearson_rom rom (.clk(clk), .addr(ph_addr), .q(ph_q));
        end else begin : g_no_pearson
            assign ph_q = 8'd0;
        end
    endgenerate
    wire      ph_more = !(ph_j[3] && ph_j[2]);      // ph_j < 12: another key byte
    // the field of key byte j (the hash flag bit: 3 destination port, 2 source port, 1
    // destination IP, 0 source IP) and the byte itself
    function [1:0] ph_field;
        input [3:0] j;
        ph_field = j[3] ? 2'd0 : j[2] ? 2'd1 : j[1] ? 2'd2 : 2'd3;
    endfunction
    function [7:0] ph_byte;
        input [3:0] j;
        case (j)
        4'd0: ph_byte = f_dport[7:0];
        4'd1: ph_byte = f_dport[15:8];
        4'd2: ph_byte = f_sport[7:0];
        4'd3: ph_byte = f_sport[15:8];
        4'd4: ph_byte = f_dip[7:0];
        4'd5: ph_byte = f_dip[15:8];
        4'd6: ph_byte = f_dip[23:16];
        4'd7: ph_byte = f_dip[31:24];
        4'd8: ph_byte = f_sip[7:0];
        4'd9: ph_byte = f_sip[15:8];
        4'd10: ph_byte = f_sip[23:16];
        default: ph_byte = f_sip[31:24];
        endcase
    endfunction
    // the chosen cache (S_CK, read in S_C): index bad, unknown, L2, too big for GRE, GRE;
    // from the learnt and method words and three flags registered before S_CK (cidx is set
    // in S_B1L / S_B2L / S_M2L; k_ok follows 2 cycles later, in S_CK for the last two; the
    // primary bucket's S_CK is S_B1L + 2: its k_ok comes from pb_bad, a cycle earlier)
    reg       ck_unass, ck_unkn, ck_l2, ck_toobig, ck_gre, ck_dm;
    assign c_hlen    = ck_l2 ? 6'd12 : (f_vlan ? 6'd46 : 6'd42);
    assign c_kind    = ck_l2 ? 2'd1 : 2'd2;
    assign c_src_off = ck_l2 ? 11'd12 : l2len;
    reg       k_ok, k_okt, k_okg;   // index good; and too big for GRE / not too big
    wire      ln_known = ln_rdata[52] && ln_rdata[53];
    wire      cm_l2 = (cm_rdata[`WCCP_METHOD_FWD_SHIFT +: 2] == `WCCP_FWD_L2);
    always @(*) begin
        for (kb = 0; kb < 4; kb = kb + 1) begin
            bk_ff[kb] = (bk_rdata[kb*8 +: 8] == 8'hFF);
            mt_ff4[kb] = (mt_rdata[kb*8 +: 8] == 8'hFF);
        end
    end
    always @(posedge clk) begin
        byte_pb <= bsel(bk_rdata, pb[1:0]);
        byte_ab <= bsel(bk_rdata, ab[1:0]);
        byte_mt <= bsel(mt_rdata, midx[1:0]);
        pb_ff <= bk_ff[~pb[1:0]];
        ab_ff <= bk_ff[~ab[1:0]];
        mt_ff <= mt_ff4[~midx[1:0]];
    end

    wire [31:0] rh = {6'd0, alt_used, r_dyn, r_svcid,
                      (alt_used ? ab : 8'd0), (x_hash ? pb : 8'd0)};

    // classification and GRE checks: registered every cycle from the latched bundle and the
    // live configuration (both stable while a frame is decided). Nothing but the bundle
    // registers is loaded from the queue heads (their multiplexer is fed from both ports,
    // far apart): the frame's ports (f_sport, f_dport, their zero flags) are valid 2 cycles
    // after the latch, each slot's port c_port 2, its port-list byte compares 3, the slot
    // matches 4 (the list's OR is part of the match), the key folds h_* 3. The first slot
    // (msl) is valid 5 cycles after the latch, its configuration (m_*) and its hash / mask
    // flags (m_hash, m_mask: per-slot flags of wccp_decide_cfg) 6, the x_* flags and ab 7
    // cycles after; pb 6 (its key flags p_kf are picked with the first slot, like msl, from
    // wccp_decide_cfg's per-slot copy: the bucket address is valid with S_DEC); they only
    // matter for frames with a valid IPv4 header, whose scan (ended by the prefilter's "no" in its
    // first S_SCAN cycle, 4 cycles after the latch, which goes straight to S_PRE) keeps the
    // state machine out of S_PRE until 5 cycles after the latch: S_DEC, 7 cycles after, reads
    // the x_* flags in the first cycle they are valid, and S_B1 / S_B1L the primary bucket's
    // word / flag (above). The GRE return flags (x_retok, x_retbad) are valid 5 cycles after
    // the latch, in time for S_DEC (7 for a frame without a valid IPv4 header too: no scan).
    always @(posedge clk) begin
        for (cs = 0; cs < 8; cs = cs + 1) begin
            // the slot's port, from the frame's first L4 word as stored, without the
            // TCP/UDP check of f_sport / f_dport (that flag would fan out to all 8 slots):
            // for a frame that is not TCP or UDP the port is 0 (c_pz below), which fails a
            // slot that needs a port whatever the list compares say
            c_port[cs*16 +: 16] <= grp_flags[cs*32 + 5] ? f_l4w0[31:16] : f_l4w0[15:0];
            for (cj = 0; cj < 8; cj = cj + 1) begin
                c_peqh[cs*8 + cj] <= (grp_ports[cs*128 + (7-cj)*16 + 8 +: 8] == c_port[cs*16 + 8 +: 8]);
                c_peql[cs*8 + cj] <= (grp_ports[cs*128 + (7-cj)*16 +: 8] == c_port[cs*16 +: 8]);
            end
            // the slot's port is 0: from the frame's two flags (with the list compares)
            c_pz[cs] <= grp_flags[cs*32 + 5] ? f_spz : f_dpz;
            c_preq[cs] <= (c_svp[cs*8 +: 8] == f_proto);
            c_protok[cs] <= grp_ctrl[cs*32] && (c_pr0[cs] || c_preq[cs]);
            // the slot matches: protocol, and a port of its list where it needs one (an
            // entry's two byte compares both equal)
            smatch_r[cs] <= c_protok[cs] && (!c_needp[cs] || (!c_pz[cs] && (|(c_peqh[cs*8 +: 8] & c_peql[cs*8 +: 8]))));
        end
        f_sport <= f_tcpudp ? f_l4w0[31:16] : 16'd0;
        f_dport <= f_tcpudp ? f_l4w0[15:0] : 16'd0;
        f_spz <= !f_tcpudp || (f_l4w0[31:16] == 16'd0);
        f_dpz <= !f_tcpudp || (f_l4w0[15:0] == 16'd0);
        msl <= first_slot;
        {p_kf, a_n, a_pick} <= f_first[9:1];
        p_pear <= (PEARSON != 0) && f_first[0];
        msl_f <= rst ? 3'd0 : first_slot;
        msl_a <= rst ? 3'd7 : first_slot;
        mfound <= any_slot;
        m_ctrl <= grp_ctrl[msl*32 +: 32];
        m_svc <= grp_svc[msl*32 +: 32];
        m_flags <= grp_flags[msl*32 +: 32];
        r_nsets <= m_ctrl[10:8];
        r_ncache <= m_ctrl[21:16];
        r_dyn <= (m_svc[7:0] == 8'd1);
        r_svcid <= m_svc[15:8];
        // read in S_PRE2: the scan (and its last learn) is over since S_PRE
        r_fromc <= fcm[msl_f];

        for (kc = 0; kc < 4; kc = kc + 1)
            g_m[kc] <= (f_dip[kc*8 +: 8] == router_id[kc*8 +: 8]);
        g_m[4] <= (f_l4w0[31:16] == 16'h0000);
        g_m[5] <= (f_l4w0[15:0] == 16'h883E);
        g_m[6] <= f_ip_hdr_ok && f_proto == 8'd47;
        g_pre <= &g_m;
        g_hlen4 <= hlen + 16'd4;
        g_prel <= hlen + (nib4 ? 16'd4 : 16'd8);
        g_il <= nib4 ? f_len4 : f_len8;
        g_prel4 <= g_prel + 16'd4;
        g_prelil <= g_prel + g_il;
        g_ret_hit <= g_pre && !d_tl_hl4[16];     // g_hlen4 <= f_totlen
        g_rb[0] <= !d_hl4_tl[16];                // g_hlen4 >= f_totlen
        g_rb[1] <= d_tl_pl4[16];                 // g_prel4 > f_totlen
        g_rb[2] <= d_il_20[16];                  // g_il < 20
        g_rb[3] <= d_tl_pil[16];                 // g_prelil > f_totlen
        r_dec_off <= l2len + g_prel[10:0];

        gre_tl_r <= f_totlen + 16'd28;
        r_toobig <= d_mtu_tl[16];                // gre_tl_r > mtu
        // the next hop towards the frame's egress (prt ^ 1), valid 4 cycles after the take
        nh_p <= prt ? nh_mac[47:0] : nh_mac[95:48];
        for (kc = 0; kc < 4; kc = kc + 1)
            nh_nz4[kc] <= |nh_p[kc*12 +: 12];
        nh_nz <= |nh_nz4;
        r_decmac <= nh_nz ? nh_p : f_dst;

        // the key folds: 2 (addresses) and 3 (ports) cycles after the latch
        h_sip <= fold32(f_sip);
        h_dip <= fold32(f_dip);
        h_sp <= f_sport[15:8] ^ f_sport[7:0];
        h_dp <= f_dport[15:8] ^ f_dport[7:0];
        // (PEARSON = 0: no path from the Pearson engine, which synthesis then removes)
        pb <= (PEARSON != 0 && p_pear) ? (ph_qo2 ? ph_p : ph_q) :
              (p_kf[0] ? h_sip : 8'd0) ^ (p_kf[1] ? h_dip : 8'd0) ^
              (p_kf[2] ? h_sp : 8'd0) ^ (p_kf[3] ? h_dp : 8'd0);
        ab <= (PEARSON != 0 && m_flags[16]) ? (ph_qo2 ? ph_q : ph_a) :
              (m_flags[8] ? h_sip : 8'd0) ^ (m_flags[9] ? h_dip : 8'd0) ^
              (m_flags[10] ? h_sp : 8'd0) ^ (m_flags[11] ? h_dp : 8'd0);

        // RFC 3074 Pearson hash (a slot with GROUP_FLAGS_PEARSON and hash assignment): the key
        // is the bytes of the fields the (alternate) hash flags select, source IP, destination
        // IP, source port, destination port; the hash starts as the key's length and mixes the
        // key from its last byte: over the 12 field bytes from the destination port's low
        // byte back to the source IP's high byte. The mixing table is a block RAM
        // (wccp_pearson_rom) read 2 cycles after its address, so a step is two cycles and the
        // primary and the alternate hash take the RAM in turns (primary steps in the cycles
        // S_PRE2 + 1 + 2k, alternate + 2 + 2k): each step's address is the table's output
        // (the hash's last step, 2 cycles ago) XOR the key byte, or the start value XOR the
        // byte for the hash's first step, through one LUT from registers prepared a cycle
        // earlier (ph_ib, ph_is, ph_if, ph_isk). A byte that a hash skips (its field is not in
        // the key) is a step into the identity half of the RAM, and so are the steps after
        // the 12th: the hash stays on the RAM's output. ph_p / ph_a take each of their hash's
        // words; the last primary word is on ph_q 25 cycles after S_PRE2, the alternate's 26:
        // pb / ab take them from ph_q then (and from ph_p / ph_a after), so pb is stable from
        // the cycle before S_DEC and ab from S_DEC when S_PH lasts PH_CYCLES, as they are for
        // the WCCP hash. Both stay final until the next frame's S_PRE2: pb is the bucket index
        // that S_HO hands over.
        ph_qo1 <= ph_io;
        ph_qo2 <= ph_qo1;
        if (!ph_qo2) ph_p <= ph_q;
        if (ph_qo2) ph_a <= ph_q;
        if (state[S_PRE2]) begin
            // the primary's first step, issued in the next cycle
            ph_ib <= p_kf[3] ? f_dport[7:0] : 8'd0;
            ph_isk <= !p_kf[3];
            ph_is <= {5'd0, p_kf[0], 2'd0} + {5'd0, p_kf[1], 2'd0} + {6'd0, p_kf[2], 1'd0} + {6'd0, p_kf[3], 1'd0};
            ph_if <= 1'b1;
            ph_io <= 1'b0;
            ph_sa <= {5'd0, m_flags[8], 2'd0} + {5'd0, m_flags[9], 2'd0} + {6'd0, m_flags[10], 1'd0} +
                     {6'd0, m_flags[11], 1'd0};
            ph_j <= 4'd1;
            ph_n <= 5'd0;
            ph_odd <= 1'b1;
            ph_first <= 1'b1;
            ph_b <= f_dport[7:0];
            ph_ea <= m_flags[11];
        end else begin
            ph_ib <= (ph_odd ? ph_ea : ph_ep) ? ph_b : 8'd0;
            ph_isk <= !(ph_odd ? ph_ea : ph_ep);
            ph_is <= ph_sa;
            ph_if <= ph_odd && ph_first;
            ph_io <= ph_odd;
            ph_odd <= !ph_odd;
            ph_n <= ph_n + 5'd1;
            if (ph_odd) begin
                ph_first <= 1'b0;
                if (ph_more) ph_j <= ph_j + 4'd1;      // stops at 12: the hashes stay final
                ph_b <= ph_byte(ph_j);
                ph_ep <= ph_more && p_kf[ph_field(ph_j)];
                ph_ea <= ph_more && m_flags[{3'd2, ph_field(ph_j)}];     // 8 + field
            end
        end

        // decision outcome (S_DEC's priority: not IPv4, invalid, GRE return, no slot, from
        // a cache, hash, mask, unassigned)
        x_retok  <= f_is_ip && f_ip_hdr_ok && g_ret_hit && !(|g_rb);
        x_retbad <= f_is_ip && f_ip_hdr_ok && g_ret_hit && (|g_rb);
        x_inval  <= f_is_ip && !f_ip_hdr_ok && active;
        x_ntr    <= f_is_ip && active;
        x_base   <= f_is_ip && f_ip_hdr_ok && !g_ret_hit && active && mfound;
        m_hash   <= c_hsel[msl];            // per-slot flags (wccp_decide_cfg): with m_ctrl
        m_mask   <= c_msel[msl];
        x_slot   <= x_base;
        x_fromc  <= x_base && r_fromc;
        x_hash   <= x_base && !r_fromc && m_hash;
        x_mask   <= x_base && !r_fromc && !m_hash && m_mask;
        x_unass  <= x_base && !r_fromc && !m_hash && !m_mask;
        x_out    <= !(x_base && !r_fromc && (m_hash || m_mask));
        v_src_off <= x_retok ? r_dec_off : 11'd0;
        v_hlen <= x_retok ? (f_vlan ? 6'd18 : 6'd14) : 6'd0;

        // mask index: position word 0 (S_MA3), word 1 on mp_rdata (S_MA4), then two stages
        // every cycle (midx valid in S_MS2, the value table byte and flag in S_M2L)
        if (state[S_MA3]) mw0 <= mp_rdata;
        for (kc = 0; kc < 7; kc = kc + 1) begin
            ms_en[kc] <= mpos[kc*8+7] && (mpos[kc*8 +: 7] < 7'd96);
            ms_bit[kc*4 +: 4] <= mpos[kc*8 +: 4];
            case (mpos[kc*8+4 +: 3])
            3'd0: ms_chunk[kc*16 +: 16] <= key96[15:0];
            3'd1: ms_chunk[kc*16 +: 16] <= key96[31:16];
            3'd2: ms_chunk[kc*16 +: 16] <= key96[47:32];
            3'd3: ms_chunk[kc*16 +: 16] <= key96[63:48];
            3'd4: ms_chunk[kc*16 +: 16] <= key96[79:64];
            default: ms_chunk[kc*16 +: 16] <= key96[95:80];
            endcase
            midx[kc] <= ms_en[kc] && bit16(ms_chunk[kc*16 +: 16], ms_bit[kc*4 +: 4]);
        end
        m_more <= (mset + 3'd1 < r_nsets);
        if (state[S_DEC]) mset <= 3'd0;
        else if (state[S_M2L] && mt_ff && m_more) mset <= mset + 3'd1;

        // table addresses: every cycle from the registers they depend on (the bucket: the
        // primary until S_DEC, then the alternate)
        // the cache: its index straight from the table byte in the state that reads it; the
        // primary bucket's a cycle earlier, from the RAM word in S_B1 (c_pbraw; S_B1L sets
        // the same value from byte_pb), so that its words are read in S_CK = S_B1L + 2
        c_raddr <= u3_v ? ls_rdata :
                   {msl_a, state[S_B1] ? c_pbraw : state[S_B1L] ? byte_pb[4:0] :
                           state[S_B2L] ? byte_ab[4:0] : state[S_M2L] ? byte_mt[4:0] : cidx[4:0]};
        for (kc = 0; kc < 4; kc = kc + 1)
            cq_pb[kc] <= state[S_H] && (pb[1:0] == kc[1:0]);
        bk_raddr <= {msl_a, (state[S_DEC] || bk_alt) ? ab[7:2] : pb[7:2]};
        bk_alt <= !state[S_C1] && (bk_alt || state[S_DEC]);
        mp_raddr <= {msl_a, mset[1:0], !state[S_MA]};
        mt_raddr <= {msl_a, mset[1:0], midx[6:2]};

        // hash: the bucket byte names the cache, or the alternate bucket (bit 7), or none
        alt_used <= !state[S_C1] && (alt_used || (state[S_B1L] && byte_pb[7] && !pb_ff));
        if (state[S_B1L]) cidx <= byte_pb[6:0];
        else if (state[S_B2L]) cidx <= byte_ab[6:0];
        else if (state[S_M2L]) cidx <= byte_mt[6:0];
        cidx_bad <= ({1'b0, cidx} >= {2'b0, r_ncache});
        pb_bad <= ({1'b0, byte_pb[6:0]} >= {2'b0, r_ncache});
        k_p <= state[S_B1L];
        k_ok  <= !k_bad;
        k_okt <= !k_bad && r_toobig;
        k_okg <= !k_bad && !r_toobig;
        ck_unass  <= !k_ok;
        ck_unkn   <= k_ok && !ln_known;
        ck_l2     <= k_ok && ln_known && cm_l2;
        ck_toobig <= k_okt && ln_known && !cm_l2;
        ck_gre    <= k_okg && ln_known && !cm_l2;
        ck_dm     <= ln_known && (cm_l2 ? k_ok : k_okg);

        // GRE checksum (one's-complement sum of the constant part and the cache address's
        // halves, inverted): the constant part (router ID, protocol words, total length)
        // folded to 16 bits early (cs_k, 5 cycles after the latch); the address halves' sum
        // folded (cs_a) every cycle from the cache table's read data (the chosen cache's
        // address in S_CK), added to cs_k and folded in S_C, where d_csum takes it. A fold
        // r = s0[15:0] + s0[16] (s0 = a + b) is taken as s0[16] ? s1 : s0 with s1 = a + b + 1
        // (one carry chain and a mux); with cs_k nonzero the result is the same as a fold of
        // the whole sum (never 0x0000: 0xFFFF for a multiple of 0xFFFF).
        cs1 <= rid_sum + {4'd0, gre_tl_r};
        cs_k17 <= {1'b0, cs1[15:0]} + {13'd0, cs1[19:16]};
        cs_k <= cs_k17[15:0] + {15'd0, cs_k17[16]};
        cs_a <= cs_a0[16] ? cs_a1[15:0] : cs_a0[15:0];
    end

    // ---- scan prefilter (wccp_srcfilt): can any table entry match this source? ----
    // sampled with the bundle (idle), answered in the first S_SCAN cycle (sf_chk), before the
    // scan issues anything: a "no" ends the scan at once, so a client's frame is decided in
    // constant time, whatever the number of caches; its MAC half (sf_mmac) says whether the
    // scan walks the L2-return run after the address fold's. Table writes reach
    // the live bank only through a commit, learnt MACs a cycle after their write: a learning
    // write of another frame's commit unit while this frame is decided may or may not be
    // seen (the scan could read that entry before the write as well).
    wire sf_maybe, sf_mmac;
    reg  sf_chk;
    always @(posedge clk) sf_chk <= state[S_C3];
    wccp_srcfilt sf (
        .clk(clk), .ip_wr(sf_ip_wr), .ip_key(sf_ip_key), .mac_wr(sf_mac_wr), .mac_key(sf_mac_key),
        .l2_wr(sf_l2_wr), .q_en(idle_f), .q_ip(b_sip), .q_mac(b_src), .maybe(sf_maybe),
        .maybe_mac(sf_mmac));
    wire sf_none = sf_chk && !sf_maybe;

    // ---- scan: issue state, in-flight entries, hits ----
    // In cycles after the take (S_C1 = 1): the L2 run's head is on hd_rdata in the answer
    // cycle (4: the first S_SCAN, sf_chk), registered (b_*) then, the fold's in 5, registered
    // (hq_*) then; the issue state is loaded in 6 (st_ld) from them, the first word issued in
    // 7; a word's entry is on ls_rdata three cycles after its issue (u3), in c_raddr (t0) the
    // cycle after. A learn hit (learn_r) becomes a learning target: its index goes to the frame's
    // commit unit (lr_valid until there is room in its list: lr_ack), then the scan resumes
    // after the hit (t4_s: the state of the word issued the cycle after the hit's, the next
    // word or the end). The commit unit writes the targets if the frame's status is good and
    // complete.
    wire lr_ack = lr_valid && lr_room[prt];
    always @(posedge clk) begin
        hd_raddr <= state[S_C1] ? {1'b0, fold32(f_sip)} : 9'd`WCCP_SRCIDX_L2;
        if (sf_chk) begin
            b_start <= hd_rdata[8:0];
            b_lm1 <= hd_rdata[17:9] - 9'd1;
            b_one <= (hd_rdata[17:9] == 9'd1);
            b_any <= (hd_rdata[17:9] != 9'd0);
        end
        hq_start <= hd_rdata[8:0];
        hq_lm1 <= hd_rdata[17:9] - 9'd1;
        hq_one <= (hd_rdata[17:9] == 9'd1);
        hq_nz <= (hd_rdata[17:9] != 9'd0);
        if (sf_chk) st_mac <= sf_mmac;
        if (iss_ld) begin
            {iss_ph, iss_pos, iss_left, iss_last, iss_b, iss_end} <= t4_s;
        end else if (st_ld) begin
            // the fold's run, then the L2 run if the MAC may match; or the L2 run alone
            iss_ph <= !hq_nz;
            iss_pos <= hq_nz ? hq_start : b_start;
            iss_left <= hq_nz ? hq_lm1 : b_lm1;
            iss_last <= hq_nz ? hq_one : b_one;
            iss_b <= hq_nz && st_mac && b_any;
            iss_end <= !hq_nz && !(st_mac && b_any);
        end else if (iss_go) begin
            if (!iss_last) begin
                iss_pos <= iss_pos + 9'd1;
                iss_left <= iss_left - 9'd1;
                iss_last <= (iss_left == 9'd1);
            end else if (iss_b) begin
                iss_ph <= 1'b1;
                iss_pos <= b_start;
                iss_left <= b_lm1;
                iss_last <= b_one;
                iss_b <= 1'b0;
            end else begin
                iss_end <= 1'b1;
            end
        end
        u1_s <= iss_snap;
        u2_s <= u1_s; u3_s <= u2_s; t0_s <= u3_s;
        t1_s <= t0_s; t2_s <= t1_s; t3_s <= t2_s; t4_s <= t3_s;
        t1_a <= c_raddr; t2_a <= t1_a; t3_a <= t2_a; t4_a <= t3_a; t5_a <= t4_a;
        t5_oh <= 8'd1 << t4_a[7:5];
        for (ks = 0; ks < 8; ks = ks + 1) begin
            fcm[ks] <= !state[S_C1] && (fcm[ks] || ((learn_r || mhit_r || khit_r) && t5_oh[ks]));
        end
        if (learn_r) lr_idx <= t5_a;
        if (rst) begin
            iss_on <= 1'b0;
            iss_ld <= 1'b0;
            sc_pend <= 1'b0;
            st_ld1 <= 1'b0;
            st_ld <= 1'b0;
            learn_r <= 1'b0;
            mhit_r <= 1'b0;
            khit_r <= 1'b0;
            lr_valid <= 1'b0;
            u1_v <= 1'b0; u2_v <= 1'b0; u3_v <= 1'b0;
            t0_v <= 1'b0; t1_v <= 1'b0; t2_v <= 1'b0; t3_v <= 1'b0; t4_v <= 1'b0; t5_v <= 1'b0;
        end else begin
            // the scan of a frame with a valid IPv4 header (learning happens also while
            // disabled) starts once the prefilter has said "maybe" (a "no" ends it at once:
            // nothing is issued before the answer, so a client's frame takes constant time)
            sc_pend <= f_ip_hdr_ok && (state[S_C2] || state[S_C3]);
            st_ld1 <= sf_chk && f_ip_hdr_ok && sf_maybe;
            st_ld <= st_ld1;
            // a learn hit (phase 0): stop, drop what is in flight, resume after the hit once
            // its index is in the commit unit's list; a source-IP hit learns only where the
            // location differs from this frame's (a steady cache's frames go on without a stop)
            learn_r <= !learn_r && t4_v && !t4_ph && (&ip_q) && !(ln_here && (&mac_q));
            khit_r <= !learn_r && t4_v && !t4_ph && (&ip_q) && ln_here && (&mac_q);
            mhit_r <= !learn_r && t4_v && mac_ok && (&mac_q);
            iss_ld <= !learn_r && t4_v && !t4_ph && (&ip_q) && !(ln_here && (&mac_q));
            lr_valid <= learn_r || (lr_valid && !lr_ack);
            if (learn_r) begin
                iss_on <= 1'b0;
                u1_v <= 1'b0; u2_v <= 1'b0; u3_v <= 1'b0;
                t0_v <= 1'b0; t1_v <= 1'b0; t2_v <= 1'b0; t3_v <= 1'b0; t4_v <= 1'b0; t5_v <= 1'b0;
            end else begin
                iss_on <= (st_ld && (hq_nz || (st_mac && b_any))) || lr_ack ||
                          (iss_on && !iss_end && !(iss_last && !iss_b));
                u1_v <= iss_go;
                u2_v <= u1_v; u3_v <= u2_v; t0_v <= u3_v;
                t1_v <= t0_v; t2_v <= t1_v; t3_v <= t2_v; t4_v <= t3_v; t5_v <= t4_v;
            end
        end
        scan_idle <= !(sc_pend || st_ld1 || st_ld || lr_valid || iss_on || u1_v || u2_v || u3_v ||
                       t0_v || t1_v || t2_v || t3_v || t4_v || t5_v);
    end

    // ---- redirect-list (ACL) scan ----
    // The first matching slot (msl, valid in S_PRE) with NUM_ACL > 0 (a_pick, picked with
    // it) takes a frame only if its redirect-list permits it. The entries' words are read
    // from the live redirect-list RAM (wccp_regs; address {slot, word}, 2-cycle read, and a
    // register here: acl_q) one a cycle, CTRL, SRC, DST of entry 0, then of entry 1, ...: a_w
    // is the word address, a_ph
    // the word (one-hot CTRL, SRC, DST), a_e the entry. With its data: CTRL sets the mask
    // of the source prefix length (a_mk) and keeps the destination length and the permit
    // bit; SRC compares the source address under the mask (a_m) and sets the destination
    // mask; DST compares the destination (a_m again, the source's result moves to a_sm); a
    // cycle later the entry's result: a hit (both contain the frame) or the last entry ends
    // the scan (a_fin, registered: 3k + 8 cycles for a decision at entry k), permitted
    // (a_res) or not. Words issued after the deciding entry's are ignored (the pipeline
    // flags clear outside the scan). A refused slot is cleared in a_rej (the slot match
    // then picks the next one: back to S_PRE through a_next, a cycle for msl to follow).
    reg        a_scan, a_next, a_iv, a_fin, a_res, a_pass, a_perm, a_m, a_sm, a_base;
    reg [4:0]  a_w;
    reg [2:0]  a_ph, a_e, a_nm1;
    reg [2:0]  a_p1, a_p2, a_pq; // issued word's one-hot kind, one, two and three cycles later
    reg        a_l1, a_l2, a_lq, a_v3, a_l3;   // last entry's word; the data stage's DST, a cycle later
    reg [31:0] acl_q;            // the redirect-list word (acl_rdata registered)
    reg [5:0]  a_dl;
    reg [31:0] a_mk, a_key;
    reg        r_closed;         // the slot is closed (GROUP_CTRL_CLOSED), with r_nsets
    assign acl_raddr = {msl_a, a_w};
    wire       a_go = state[S_PRE] && a_base && mfound && a_pick && !a_pass;
    wire [5:0] a_len = a_pq[0] ? acl_q[5:0] : a_dl;
    always @(posedge clk) begin
        a_base <= f_is_ip && f_ip_hdr_ok && !g_ret_hit && active;
        r_closed <= m_ctrl[3];
        // issue
        if (a_go) begin
            a_w <= 5'd8 + 5'd2;          // entry 0's CTRL
            a_ph <= 3'b001;
            a_e <= 3'd0;
            a_nm1 <= a_n[2:0] - 3'd1;    // (a_n is 1..8)
        end else begin
            a_w <= a_w + (a_ph[0] ? 5'h1E : a_ph[1] ? 5'd1 : 5'd4);   // CTRL -2, SRC +1, DST +4
            a_ph <= {a_ph[1:0], a_ph[2]};
            if (a_ph[2]) a_e <= a_e + 3'd1;
        end
        a_p1 <= (a_scan && a_iv) ? a_ph : 3'd0;
        a_l1 <= a_e == a_nm1;
        a_p2 <= a_scan ? a_p1 : 3'd0;
        a_l2 <= a_l1;
        // the word, registered (acl_rdata holds the word issued two cycles earlier: the RAM
        // sits in wccp_regs, its output register's route is long; timing), then the data
        // stage (acl_q holds the word issued three cycles earlier)
        acl_q <= acl_rdata;
        a_pq <= a_scan ? a_p2 : 3'd0;
        a_lq <= a_l2;
        a_key <= a_p2[1] ? f_sip : f_dip;
        if (a_pq[0]) begin
            a_dl <= acl_q[13:8];
            a_perm <= acl_q[16];
        end
        if (a_pq[0] || a_pq[1]) a_mk <= ~(32'hFFFFFFFF >> a_len);
        a_m <= ~|((acl_q ^ a_key) & a_mk);
        a_sm <= a_m;
        a_v3 <= a_scan && a_pq[2];
        a_l3 <= a_lq;
        a_fin <= a_scan && a_v3 && ((a_sm && a_m) || a_l3);
        a_res <= a_sm && a_m && a_perm;
        if (rst) begin
            a_scan <= 1'b0;
            a_next <= 1'b0;
            a_iv <= 1'b0;
        end else begin
            a_scan <= a_go || (a_scan && !a_fin);
            a_next <= a_scan && a_fin && !a_res;
            a_iv <= a_go || (a_iv && !(a_ph[2] && a_e == a_nm1));
        end
        if (state[S_IDLE]) begin
            a_rej <= 8'd0;
            a_pass <= 1'b0;
        end else if (a_scan && a_fin) begin
            if (a_res) a_pass <= 1'b1;
            else a_rej[msl_a] <= 1'b1;
        end
    end

    // ---- next state ----
    always @(*) begin
        nx = {NS{1'b0}};
        nx[S_IDLE] = (state[S_IDLE] && !take) || state[S_HO];
        nx[S_C1]   = take;
        nx[S_C2]   = state[S_C1];
        nx[S_C3]   = state[S_C2];
        // scan_idle lags a cycle: the scan is pending (sc_pend) or not started in S_C3
        // the prefilter's "no" (sf_none, the first S_SCAN cycle) ends the scan at once: nothing
        // issued or in flight can hit, no learn is pending (fcm stays clear)
        nx[S_SCAN] = state[S_C3] || (state[S_SCAN] && !scan_idle && !sf_none);
        nx[S_PRE]  = state[S_SCAN] && (scan_idle || sf_none);
        nx[S_PRE2] = state[S_PRE];
        // a Pearson slot with hash assignment computes its buckets first (S_PH)
        nx[S_PH]   = (PEARSON != 0) && ((state[S_PRE2] && p_pear && m_hash) || (state[S_PH] && ph_n != PH_CYCLES - 5'd1));
        nx[S_DEC]  = (state[S_PRE2] && !(p_pear && m_hash)) || (state[S_PH] && ph_n == PH_CYCLES - 5'd1);
        // hash: the primary bucket byte is read in S_B1L (the cache address is set from
        // its word in S_B1), the alternate in S_B2L (its word was addressed from S_DEC on)
        nx[S_H]    = state[S_DEC] && x_hash;
        nx[S_B1]   = state[S_H];
        nx[S_B1L]  = state[S_B1];
        nx[S_B2L]  = state[S_B1L] && byte_pb[7] && !pb_ff;
        // mask: two position words, the index in two stages, then the value table
        nx[S_MA]   = (state[S_DEC] && x_mask) || (state[S_M2L] && mt_ff && m_more);
        nx[S_MA1]  = state[S_MA];
        nx[S_MA2]  = state[S_MA1];
        nx[S_MA2B] = state[S_MA2];
        nx[S_MA3]  = state[S_MA2B];
        nx[S_MA4]  = state[S_MA3];
        nx[S_MS1]  = state[S_MA4];
        nx[S_MS2]  = state[S_MS1];
        nx[S_MT]   = state[S_MS2];
        nx[S_MTW1] = state[S_MT];
        nx[S_MTW2] = state[S_MTW1];
        nx[S_M2]   = state[S_MTW2];
        nx[S_M2L]  = state[S_M2];
        // the cache: address from the table byte's state (the primary bucket's from S_B1:
        // S_B1L skips S_CW1), its words in S_CK (2-cycle reads), flags in S_C (an index past
        // the count too); the GRE checksum is ready in S_C as well, the last decision state
        nx[S_CW1]  = (state[S_B2L] && !ab_ff) || (state[S_M2L] && !mt_ff);
        nx[S_CW2]  = state[S_CW1] || (state[S_B1L] && !byte_pb[7]);
        nx[S_CK]   = state[S_CW2];
        nx[S_C]    = state[S_CK];
        // the decision is made: hand-off
        nx[S_HO]   = (state[S_DEC] && x_out) || (state[S_B1L] && pb_ff) ||
                     (state[S_B2L] && ab_ff) || (state[S_M2L] && mt_ff && !m_more) || state[S_C];
        // the redirect-list scan (a_scan, a_next: outside the state vector, which is all zero
        // meanwhile): S_PRE goes to it instead of S_PRE2 when the first matching slot has a
        // redirect-list; a permit goes on to S_PRE2 (the slot stands), a refusal through
        // a_next (the slot's match is cleared) back to S_PRE with the next matching slot
        if (a_go) nx[S_PRE2] = 1'b0;
        nx[S_PRE2] = nx[S_PRE2] || (a_scan && a_fin && a_res);
        nx[S_PRE]  = nx[S_PRE] || a_next;
    end

    always @(posedge clk) begin
        if (rst) begin
            state <= {{(NS-1){1'b0}}, 1'b1};
            in_ready <= 2'b00;
            ho <= 2'b00;
        end else begin
            state <= nx;
            in_ready <= {take && sel, take && !sel};
            ho <= {nx[S_HO] && prt, nx[S_HO] && !prt};
        end
    end

    // ---- events ----
    // The decision's events (p_*: set from S_DEC on, S_DEC clears the later ones), valid in
    // S_HO (the last decision state sets them); the commit unit emits them with the frame's
    // status. The indices: the slot (msl_a), the chosen cache (cidx), the primary bucket (pb).
    always @(posedge clk) begin
        if (state[S_DEC]) begin
            p_ntr <= x_ntr;
            p_fromc <= x_fromc;
            p_ret <= x_retok;
            p_retbad <= x_retbad;
            p_slot <= x_slot;
        end
        p_unass  <= (state[S_DEC] && x_unass) || (state[S_B1L] && pb_ff) ||
                    (state[S_B2L] && ab_ff) || (state[S_M2L] && mt_ff && !m_more) ||
                    (state[S_C] && ck_unass) || (p_unass && !state[S_DEC]);
        p_unkn   <= (state[S_C] && ck_unkn) || (p_unkn && !state[S_DEC]);
        p_toobig <= (state[S_C] && ck_toobig) || (p_toobig && !state[S_DEC]);
        p_l2     <= (state[S_C] && ck_l2) || (p_l2 && !state[S_DEC]);
        p_gre    <= (state[S_C] && ck_gre) || (p_gre && !state[S_DEC]);
        p_cache  <= (state[S_C] && ck_dm) || (p_cache && !state[S_DEC]);
        p_bucket <= state[S_B1] || (p_bucket && !state[S_DEC]);
    end
    assign d_slot_idx = msl_a;
    assign d_cache_idx = cidx[4:0];
    assign d_bucket_idx = pb;
    assign d_tl = gre_tl_r;

    // the decision's action fields: S_DEC (forward normally, drop, or decapsulate a GRE
    // return), S_C (L2 rewrite, or GRE with its checksum, cache address and redirect header)
    always @(posedge clk) begin
        // a closed slot drops what it would leave unassigned (p_unass's cases; the index
        // check's in S_CK, a cycle before S_C may cut through)
        if (state[S_DEC]) d_drop <= x_retbad || (x_unass && r_closed);
        else if (r_closed && ((state[S_B1L] && pb_ff) || (state[S_B2L] && ab_ff) ||
                              (state[S_M2L] && mt_ff && !m_more) || (state[S_CK] && !k_ok)))
            d_drop <= 1'b1;
        if (state[S_DEC] || (state[S_C] && ck_dm)) begin
            d_port <= state[S_DEC] ? !prt : ln_s[48];
            d_kind <= state[S_DEC] ? {x_retok, x_retok} : c_kind;
            d_hlen <= state[S_DEC] ? v_hlen : c_hlen;
            d_src_off <= state[S_DEC] ? v_src_off : c_src_off;
        end
        if ((state[S_DEC] && x_retok) || (state[S_C] && ck_dm))
            d_dmac <= state[S_DEC] ? r_decmac : ln_s[47:0];
        if (state[S_C] && ck_gre) begin
            d_csum <= ~(cs_b0[16] ? cs_b1[15:0] : cs_b0[15:0]);
            d_cip <= ca_s;
            d_rh <= rh;
        end
    end

endmodule
/* verilator lint_on UNUSEDSIGNAL */
`default_nettype wire
