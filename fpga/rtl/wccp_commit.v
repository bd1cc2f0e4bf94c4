// Commit unit (one per receive port): everything of a frame's handling that waits for the
// frame's end, behind the shared decision core (wccp_decide). It is reserved for a frame from
// the core's take of it (`take`: the core's in_ready for this port, the queue head is still
// the taken frame then) until the frame's action (and, cut-through, its fin) is handed to
// the port's builder; meanwhile the core may decide the other port's frames.
//
// From the take it latches what the action needs of the bundle (start, VLAN tag, source
// MAC for learning, the IPv4 header flags for the status) from its own queue head, and the
// frame's status from the port's status FIFO (whose head is this frame's status from the
// take on, the previous frame's having been popped at its commit): s_have (known), s_ok
// (good, and the whole datagram received where the decision used the IPv4 header: the
// decision's action stands), s_nok (the other cases: bad, or a truncated IPv4 datagram),
// s_bad (bad: drop), s_nr (good, and not a whole datagram with a valid header: an IPv4 frame
// is not redirectable) and the frame length. The flags are valid the cycle after the latch
// and stable until the next take; s_rdy is s_have a cycle later.
//
// Learning: the core's scan hands over the table indices of the frame's learning targets
// (a 16-entry list, distributed RAM) while it decides; with s_ok the unit writes them, one
// request (lr_valid until lr_ack) every 9 cycles at most (a learn is an event for the
// counters, wccp_stats, which take a port's decision events at least 9 cycles apart):
// {port known, MAC known, this port, the frame's source MAC}; with s_nok it drops them.
// l_pend (towards the core's busy) is high while the list is not empty or a request is
// pending.
//
// The decision arrives in the core's hand-off cycle (`ho`, S_HO): the unit acts on the
// core's registers in that cycle, exactly as in any later waiting cycle, and keeps its own
// copies of them from the edge that ends it (the core goes on with another frame). In that
// cycle or any later one (WST):
//   - the status is latched and the learning is done (s_go): commit. The action carries the
//     status (act_cut = 0): a bad frame a drop of its bytes, a truncated datagram forwarded
//     normally (kind 0) if that was the decision's kind, else dropped; the decided action
//     otherwise (OUT);
//   - the status is not there and the builder is idle (cut_go): cut-through, the action
//     leaves at once (act_cut = 1, CA; act_go names its egress in its first cycle), the
//     status follows (CW: commit) on the fin channel (FIN: fin_good unless the frame is bad
//     or a truncated datagram that the decision redirects, decapsulates or drops);
//   - else wait (the status is being latched, or the builder is busy with an earlier frame:
//     store-and-forward, so that a bad frame is skipped, not stomped).
// The commit pops the status (st_pop, the registered commit) and, in the cycle after the pop,
// raises the decision's events (one-cycle pulses) when the status says the decision stands;
// a bad frame counts nothing here (the receive queue counted its drop), a truncated IPv4
// datagram counts `truncated` (redirect, decapsulation or drop: dropped) or `not
// redirectable` (plain forwarding: forwarded). The events come from this unit's registers
// only (st_pop, the status flags and its copy of the decision), not from the core's.
`timescale 1ns / 1ps
`default_nettype none
module wccp_commit #(
    parameter PORT = 0
) (
    input  wire          clk,
    input  wire          rst,
    output wire          free,        // no frame: the core may take this port's next bundle
    input  wire          take,        // the core takes this port's queue head (its in_ready)
    input  wire [11:0]   q_start,
    input  wire [47:0]   q_src_mac,
    input  wire          q_vlan,
    input  wire [15:0]   q_tci,
    input  wire          q_is_ip,
    input  wire          q_ip_hdr_ok,
    // the frame's status (FIFO head; popped at the edge where st_valid and st_pop are high)
    input  wire          st_valid,
    output reg           st_pop,
    input  wire          st_good,     // frame complete, FCS and size good, not overflowed
    input  wire          st_avail,    // the whole IPv4 datagram was received
    input  wire [10:0]   st_flen,     // bytes the frame occupies in the buffer
    // learning targets from the core (taken where l_valid, l_port = PORT and l_room)
    input  wire          l_valid,
    input  wire          l_port,
    input  wire [7:0]    l_idx,
    output reg           l_room,
    output wire          l_pend,
    // the decision (the core's registers, valid while ho)
    input  wire          ho,
    input  wire          d_drop,
    input  wire          d_port,
    input  wire [1:0]    d_kind,
    input  wire [5:0]    d_hlen,
    input  wire [10:0]   d_src_off,
    input  wire [47:0]   d_dmac,
    input  wire [15:0]   d_csum,
    input  wire [31:0]   d_cip,
    input  wire [31:0]   d_rh,
    input  wire [15:0]   d_tl,
    input  wire          p_ntr,
    input  wire          p_fromc,
    input  wire          p_unass,
    input  wire          p_unkn,
    input  wire          p_toobig,
    input  wire          p_ret,
    input  wire          p_l2,
    input  wire          p_gre,
    input  wire          p_retbad,
    input  wire          p_slot,
    input  wire          p_cache,
    input  wire          p_bucket,
    input  wire [2:0]    d_slot_idx,
    input  wire [4:0]    d_cache_idx,
    input  wire [7:0]    d_bucket_idx,
    input  wire [47:0]   appl_mac,    // live configuration, taken while ho
    input  wire [31:0]   router_id,
    // learning requests (to the learnt-location RAM)
    output reg           lr_valid,
    output reg  [7:0]    lr_idx,
    output reg  [47:0]   lr_mac,
    input  wire          lr_ack,
    // action (to the port's builder)
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
    output reg           act_cut,     // cut-through: flen and status follow on the fin channel
    // with a cut-through action's first act_valid cycle (not a drop): its egress port, one-hot.
    // The builder is idle then (the unit cuts through only then), so it takes the action in
    // that cycle and sends it (it is never skipped): the egress MAC may start its preamble
    // (fpga_core) before the builder's own request
    output reg  [1:0]    act_go,
    input  wire          out_idle,    // the builder is idle (nothing of an earlier frame left)
    // the status of a cut-through action's frame, after the action was taken
    output reg           fin_valid,
    input  wire          fin_ready,
    output reg           fin_good,    // good, and complete unless the action is plain forwarding
    output reg  [10:0]   fin_flen,
    // events (one-cycle pulses)
    output reg  [11:0]   ev_cause,    // see CAUSE_* below
    output reg           ev_slot,
    output reg           ev_cache,
    output reg           ev_bucket,
    output reg  [2:0]    ev_slot_idx,
    output reg  [4:0]    ev_cache_idx,
    output reg  [7:0]    ev_bucket_idx,
    output reg  [11:0]   ev_bytes
);
    localparam C_NOTRED = 0, C_FROMC = 1, C_UNASS = 2, C_UNKN = 3, C_TOOBIG = 4, C_RET = 5,
               C_L2 = 6, C_GRE = 7, C_LEARN = 8, C_RETBAD = 9, C_TRUNC = 10, C_CLOSED = 11;
    // one-hot states: IDLE (free), DEC (the core decides the frame), WST (decided, waiting for
    // the status or the builder), OUT (action with its status offered), CA (cut-through action
    // offered), CW (cut-through action taken, waiting for the status), FIN (fin offered)
    localparam integer U_IDLE = 0, U_DEC = 1, U_WST = 2, U_OUT = 3, U_CA = 4, U_CW = 5, U_FIN = 6;
    localparam integer NU = 7;
    reg [NU-1:0] state;
    reg [NU-1:0] nx;
    assign free = state[U_IDLE];

    // ---- the bundle's fields (from the queue head at the take) ----
    reg f_is_ip, f_ip_hdr_ok;
    always @(posedge clk) begin
        if (take) begin
            act_start <= q_start;
            act_vlan <= q_vlan;
            act_tci <= q_tci;
            lr_mac <= q_src_mac;
            f_is_ip <= q_is_ip;
            f_ip_hdr_ok <= q_ip_hdr_ok;
        end
    end

    // ---- the frame's status ----
    reg        s_want, s_have, s_rdy, s_ok, s_nok, s_bad, s_nr;
    reg [10:0] l_flen;
    wire       st_full = st_good && (st_avail || !(f_is_ip && f_ip_hdr_ok));
    always @(posedge clk) begin
        if (s_want) begin
            s_have <= st_valid;
            s_ok <= st_valid && st_full;
            s_nok <= st_valid && !st_full;
            s_bad <= !st_good;
            s_nr <= st_good && !(st_avail && f_ip_hdr_ok);
            l_flen <= st_flen;
        end else if (take) begin
            s_have <= 1'b0;
            s_ok <= 1'b0;
            s_nok <= 1'b0;
        end
        s_want <= !rst && (take || (s_want && !st_valid));
        s_rdy <= s_have && !take;
    end

    // ---- learning targets ----
    // lq: the list (written at lw, read at lr: 5-bit pointers, empty when equal); lr_idx is
    // loaded from the head while no request is pending, so it is valid with lr_valid. The
    // list's flags are registered from the pointers, so they lag them by a cycle: l_room
    // (fewer than 15 held a cycle ago: room for this cycle's push, at most 16 held) and
    // l_empty (with l_pushed, the push of the cycle before, for l_done); a request never
    // rises right after a take (l_gap).
    reg [7:0] lq [0:15];
    reg [4:0] lw, lr;
    reg       l_empty, l_pushed;
    reg [2:0] l_gap;             // cycles left before the next request may rise
    wire      l_push = l_valid && (l_port == PORT[0]) && l_room;
    wire      l_take = lr_valid && lr_ack;
    wire [4:0] l_used = lw - lr;
    wire      l_done = l_empty && !l_pushed && !lr_valid;
    assign    l_pend = !l_done;
    always @(posedge clk) begin
        if (l_push) lq[lw[3:0]] <= l_idx;
        if (!lr_valid) lr_idx <= lq[lr[3:0]];
        if (rst) begin
            lw <= 5'd0;
            lr <= 5'd0;
            l_empty <= 1'b1;
            l_pushed <= 1'b0;
            l_room <= 1'b0;
            lr_valid <= 1'b0;
            l_gap <= 3'd0;
        end else begin
            if (l_push) lw <= lw + 5'd1;
            // a bad or truncated frame: its targets are dropped (also any pushed later)
            if (s_have && s_nok) lr <= lw;
            else if (l_take) lr <= lr + 5'd1;
            l_empty <= (lw == lr);
            l_pushed <= l_push;
            l_room <= (l_used < 5'd15);
            lr_valid <= lr_valid ? !lr_ack : (s_have && s_ok && l_gap == 3'd0 && !l_empty);
            l_gap <= l_take ? 3'd7 : (l_gap != 3'd0 ? l_gap - 3'd1 : 3'd0);
        end
    end

    // ---- the decision: the core's registers while ho, then this unit's copies ----
    reg        r_drop, r_port;
    reg [1:0]  r_kind;
    reg [5:0]  r_hlen;
    reg [10:0] r_src_off;
    reg [11:0] r_ev;
    wire [11:0] h_ev = {p_ntr, p_fromc, p_unass, p_unkn, p_toobig, p_ret, p_l2, p_gre, p_retbad,
                        p_slot, p_cache, p_bucket};
    always @(posedge clk) begin
        if (ho) begin
            r_drop <= d_drop;
            r_port <= d_port;
            r_kind <= d_kind;
            r_hlen <= d_hlen;
            r_src_off <= d_src_off;
            r_ev <= h_ev;
            // fields that do not depend on the status: straight into the action and event
            // registers, which hold them until the next hand-off
            act_dmac <= d_dmac;
            act_csum <= d_csum;
            act_cip <= d_cip;
            act_rh <= d_rh;
            act_tl <= d_tl;
            act_smac <= appl_mac;
            act_rid <= router_id;
            ev_slot_idx <= d_slot_idx;
            ev_cache_idx <= d_cache_idx;
            ev_bucket_idx <= d_bucket_idx;
        end
    end
    wire        x_drop = ho ? d_drop : r_drop;
    wire        x_port = ho ? d_port : r_port;
    wire [1:0]  x_kind = ho ? d_kind : r_kind;
    wire [5:0]  x_hlen = ho ? d_hlen : r_hlen;
    wire [10:0] x_src_off = ho ? d_src_off : r_src_off;
    // anything but plain forwarding (a truncated datagram is then dropped)
    wire        x_redir = x_drop || x_kind[0] || x_kind[1];

    // ---- states ----
    // cut-through when the decision is there: the status is not latched (one arriving in
    // that very cycle still goes with the cut action's fin: correct either way) and the
    // builder is idle (registered: only this unit's action makes it busy)
    reg  o_idle;
    always @(posedge clk) o_idle <= out_idle;
    wire cut_go = !s_have && o_idle;
    wire s_go = s_rdy && l_done;                  // status latched, learning written or dropped
    wire wst = state[U_WST] || (state[U_DEC] && ho);
    wire commit = (wst || state[U_CW]) && s_go;
    always @(*) begin
        nx = {NU{1'b0}};
        nx[U_IDLE] = (state[U_IDLE] && !take) || (state[U_OUT] && act_valid && act_ready) ||
                     (state[U_FIN] && fin_valid && fin_ready);
        nx[U_DEC]  = (state[U_IDLE] && take) || (state[U_DEC] && !ho);
        nx[U_WST]  = wst && !s_go && !cut_go;
        nx[U_OUT]  = (wst && s_go) || (state[U_OUT] && !(act_valid && act_ready));
        nx[U_CA]   = (wst && !s_go && cut_go) || (state[U_CA] && !(act_valid && act_ready));
        nx[U_CW]   = (state[U_CA] && act_valid && act_ready) || (state[U_CW] && !s_go);
        nx[U_FIN]  = (state[U_CW] && s_go) || (state[U_FIN] && !(fin_valid && fin_ready));
    end
    always @(posedge clk) begin
        if (rst) begin
            state <= {{(NU-1){1'b0}}, 1'b1};
            act_valid <= 1'b0;
            st_pop <= 1'b0;
            fin_valid <= 1'b0;
        end else begin
            state <= nx;
            act_valid <= (wst && (s_go || cut_go)) || (state[U_OUT] && !(act_valid && act_ready)) ||
                         (state[U_CA] && !(act_valid && act_ready));
            st_pop <= commit;
            fin_valid <= (state[U_CW] && s_go) || (state[U_FIN] && !(fin_valid && fin_ready));
        end
    end

    // ---- events ----
    // Registered in the cycle the status is popped (st_pop: the commit was in the cycle
    // before) from this unit's registers: the decision's copies (r_*, loaded at the hand-off,
    // which is never after the commit, and kept until the next frame's) and the status flags
    // (no take falls in the commit cycle or the pop cycle: the unit is not free then, so they
    // are those the commit saw).
    wire        e_ntr = r_ev[11], e_fromc = r_ev[10], e_unass = r_ev[9], e_unkn = r_ev[8],
                e_toobig = r_ev[7], e_ret = r_ev[6], e_l2 = r_ev[5], e_gre = r_ev[4],
                e_retbad = r_ev[3], e_slot = r_ev[2], e_cache = r_ev[1], e_bucket = r_ev[0];
    wire        r_redir = r_drop || r_kind[0] || r_kind[1];
    wire        c_ok = st_pop && s_ok;       // the decision stands
    always @(posedge clk) begin
        ev_cause <= 12'd0;
        ev_cause[C_NOTRED] <= st_pop && s_nr && e_ntr && !r_redir;
        ev_cause[C_TRUNC]  <= st_pop && s_nr && r_redir;     // dropped (see fin_good)
        ev_cause[C_FROMC]  <= c_ok && e_fromc;
        ev_cause[C_UNASS]  <= c_ok && e_unass && !r_drop;
        ev_cause[C_CLOSED] <= c_ok && e_unass && r_drop;     // a closed slot's drop
        ev_cause[C_UNKN]   <= c_ok && e_unkn;
        ev_cause[C_TOOBIG] <= c_ok && e_toobig;
        ev_cause[C_RET]    <= c_ok && e_ret;
        ev_cause[C_L2]     <= c_ok && e_l2;
        ev_cause[C_GRE]    <= c_ok && e_gre;
        ev_cause[C_LEARN]  <= l_take;                        // with each learning write
        ev_cause[C_RETBAD] <= c_ok && e_retbad;
        ev_slot <= c_ok && e_slot && !(e_unass && r_drop);
        ev_cache <= c_ok && e_cache;
        ev_bucket <= c_ok && e_bucket && !(e_unass && r_drop);
        ev_bytes <= {1'b0, l_flen} + 12'd4;
    end

    // ---- the action ----
    // Every cycle from the decision (x_*) and the status flags. Cut-through (CA, and the
    // cycle before it): the decision's action; the builder copies to the end the fin names,
    // and stomps the frame if the fin is bad. Status first (the commit): s_ok the decision's
    // action, a bad frame a drop of its bytes, a truncated datagram forwarded normally
    // (kind 0) if that was the decision's kind, else dropped.
    // Which of the two is told by this unit's registers alone (not by the hand-off): an
    // action leaves from WST (or DEC with ho) either cut through, where the status is not
    // latched (cut_go), or committed, where it is (s_go: s_rdy), and CA / OUT hold it; so
    // cut_a (CA, or no status latched) is the cut-through form in every cycle whose fields
    // the builder may take (the cycle before act_valid and those in which it is held).
    wire cut_a = state[U_CA] || !s_have;
    wire use_d = cut_a || s_ok;
    always @(posedge clk) begin
        act_flen <= cut_a ? 11'd0 : l_flen;    // cut-through: the fin's, and stable while offered
        act_cut <= cut_a;
        // a cut-through action's first cycle (CA holds it)
        act_go <= (wst && !s_go && cut_go && !x_drop) ? (x_port ? 2'b10 : 2'b01) : 2'b00;
        act_drop <= cut_a ? x_drop : (s_bad || (s_ok && x_drop) || (s_nr && x_redir));
        act_port <= use_d ? x_port : (PORT[0] ^ 1'b1);
        act_kind <= use_d ? x_kind : 2'd0;
        act_hlen <= use_d ? x_hlen : 6'd0;
        act_src_off <= use_d ? x_src_off : 11'd0;
        // (read in FIN, long after the hand-off: the unit's copy)
        fin_good <= !s_bad && !(s_nr && r_redir);
        fin_flen <= l_flen;
    end
endmodule
`default_nettype wire
