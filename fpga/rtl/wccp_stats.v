// Port and slot counters in block RAM ({bytes[31:0], frames[31:0]} per word).
//   word p*16 + 0 rx, 1 tx, 2 runt, 3 bad_fcs, 4 oversize, 5 overflow, 6..15 causes 0..9
//   word 32 + slot*2 + port: slot matches
//   word 48 + port: cause 10 (truncated); word 50 + port: cause 11 (closed_drop); words
//   52..63 unused (cleared, read as 0)
// Events are kept per source and folded into the RAM by one read-modify-write pipeline
// (read, output register, add, write: 4 cycles) that starts up to three operations every
// four cycles. A fixed wheel gives every source its own turns, 4 cycles apart:
//   d0 d1 m0 - d0 d1 m1 - ... d0 d1 m7 -   (dP = decisions of port P every 4 cycles, m = misc
//   sources, each every 32 cycles, - = no operation)
// Each source owns a disjoint set of words, so operations in flight never touch the same
// word and no forwarding is needed. Sources per port:
//   rx      accumulator {frames 6b, bytes 13b}, folded every 32 cycles (runt floods: one
//           frame per 3 cycles at most; < 63 frames, <= 4095 + 100 bytes between folds, also
//           across the clear after reset)
//   runt    accumulator (frames 6b)
//   drop    bad_fcs/oversize/overflow: one pending event (such frames are >= 64 bytes, i.e.
//           >= 66 cycles apart; folded within 32)
//   tx      one pending {len} (frames >= 84 cycles apart)
//   dec     16-entry FIFO of {causes, slot, slot index, bytes}: one RAM operation per cause
//           bit and one for the slot, one every 4 cycles (a decision that raises events is
//           >= 24 cycles and raises at most three: learn, slot, cause; the FIFO absorbs bursts;
//           a truncated frame's decision raises its cause alone)
// After reset the RAM is cleared (64 cycles) while the sources collect events.
// Host reads: rd/rd_word/rd_hi; rdata/rvalid four cycles later (five when the read met a
// write of the same word), 0 until the RAM is cleared. One read at a time (wait for rvalid).
`timescale 1ns / 1ps
`default_nettype none
module wccp_stats (
    input  wire        clk,
    input  wire        rst,
    input  wire [1:0]  ev_rx,
    input  wire [23:0] ev_rx_len,
    input  wire [7:0]  ev_drop,      // per port {overflow, oversize, bad_fcs, runt}
    input  wire [1:0]  ev_tx,
    input  wire [23:0] ev_tx_len,
    input  wire [23:0] ev_cause,     // per port 12 bits (wccp_decide cause order)
    input  wire [1:0]  ev_slot,
    input  wire [5:0]  ev_slot_idx,
    input  wire [23:0] ev_bytes,
    input  wire        rd,
    input  wire [5:0]  rd_word,
    input  wire        rd_hi,
    output reg  [31:0] rdata,
    output reg         rvalid
);
    // set bits of 4 bits (a LUT per result bit), of the 12 cause bits (three of those added)
    function [2:0] pop4(input [3:0] x);
        pop4 = {2'd0, x[0]} + {2'd0, x[1]} + {2'd0, x[2]} + {2'd0, x[3]};
    endfunction
    function [3:0] pop12(input [11:0] x);
        pop12 = {1'b0, pop4(x[3:0])} + {1'b0, pop4(x[7:4])} + {1'b0, pop4(x[11:8])};
    endfunction

    // ---------------- wheel ----------------
    // sel: 0 d0, 1 d1, 2 + 4*p + {0 rx, 1 tx, 2 runt, 3 drop}
    reg  [1:0] wp;            // 0 d0, 1 d1, 2 misc, 3 none
    reg  [2:0] wm;            // misc source
    reg  [9:0] sel;
    reg  [6:0] ccnt;          // reset sequencing: 0..63 clear, 64..67 drain, 68 run
    wire       run = ccnt[6] && ccnt[2];
    always @(posedge clk) begin
        if (rst) begin
            ccnt <= 7'd0;
            wp <= 2'd0;
            wm <= 3'd0;
            sel <= 10'd0;
        end else begin
            if (!run) ccnt <= ccnt + 7'd1;
            wp <= wp + 2'd1;
            if (wp == 2'd3) wm <= wm + 3'd1;
            sel <= 10'd0;
            if (run) begin
                case (wp)
                2'd0: sel[0] <= 1'b1;
                2'd1: sel[1] <= 1'b1;
                2'd2: sel[2 + wm] <= 1'b1;
                default: ;
                endcase
            end
        end
    end

    // ---------------- per-port sources ----------------
    wire [2*6-1:0]  o_a, o_f;     // per port: selected operation (zero when not selected)
    wire [1:0]      o_x;
    wire [2*13-1:0] o_b;

    genvar p;
    generate
        for (p = 0; p < 2; p = p + 1) begin : g_port
            wire [5:0] base = (p == 0) ? 6'd0 : 6'd16;
            wire t_rx = sel[2 + 4*p];
            wire t_tx = sel[3 + 4*p];
            wire t_runt = sel[4 + 4*p];
            wire t_dr = sel[5 + 4*p];
            wire t_dec = sel[p];
            wire e_rx = ev_rx[p];
            wire [3:0] e_drop = ev_drop[p*4 +: 4];
            reg  [5:0]  af, rf;
            reg  [12:0] ab;
            reg         tv, dv;
            reg  [11:0] tl;
            reg  [1:0]  dk;
            // accumulators: the fold takes the registered sum (events before this cycle) and
            // the accumulator restarts with this cycle's event (no adder before the fold)
            wire [12:0] e_len = e_rx ? {1'b0, ev_rx_len[p*12 +: 12]} : 13'd0;
            always @(posedge clk) begin
                if (rst) begin
                    af <= 6'd0; ab <= 13'd0; rf <= 6'd0;
                end else begin
                    af <= (t_rx ? 6'd0 : af) + {5'd0, e_rx};
                    ab <= (t_rx ? 13'd0 : ab) + e_len;
                    rf <= (t_runt ? 6'd0 : rf) + {5'd0, e_drop[0]};
                end
            end
            always @(posedge clk) begin
                if (rst) begin
                    tv <= 1'b0; dv <= 1'b0; dk <= 2'd0;
                end else begin
                    if (ev_tx[p]) begin
                        tv <= 1'b1;
                        tl <= ev_tx_len[p*12 +: 12];
                    end else if (t_tx) begin
                        tv <= 1'b0;
                    end
                    if (|e_drop[3:1]) begin
                        dv <= 1'b1;
                        dk <= {e_drop[3], e_drop[2]};      // 0 bad_fcs, 1 oversize, 2 overflow
                    end else if (t_dr) begin
                        dv <= 1'b0;
                    end
                end
            end

            // decision FIFO (distributed RAM, registered head)
            // the decision event is registered first (it comes from the commit unit, far away)
            // (with a flag "no cause bit", so that the head's hcz is loaded without a compare
            // after the FIFO's distributed RAM; and the number of cause bits, counted in a stage
            // of its own and written into the FIFO with the record, so that "two or more
            // pending" is a compare of a counter)
            reg  [28:0] e_rec;
            reg         e_any;
            always @(posedge clk) begin
                e_rec <= {ev_cause[p*12 +: 12] == 12'd0, ev_cause[p*12 +: 12], ev_slot[p],
                          ev_slot_idx[p*3 +: 3], ev_bytes[p*12 +: 12]};
                e_any <= !rst && (ev_slot[p] || (|ev_cause[p*12 +: 12]));
            end
            reg  [32:0] e_rec2;
            reg         e_any2;
            always @(posedge clk) begin
                e_rec2 <= {pop12(e_rec[27:16]), e_rec};
                e_any2 <= e_any && !rst;
            end
            reg  [32:0] fm [0:15];
            reg  [4:0]  fw, fr;
            always @(posedge clk) begin
                if (e_any2)
                    fm[fw[3:0]] <= e_rec2;
            end
            wire [32:0] fh = fm[fr[3:0]];
            reg         hv;           // head holds a record with something left to count
            reg  [11:0] hc;           // head: cause bits not yet counted
            reg  [3:0]  hn;           // head: their number
            reg         hs;           // head: slot match not yet counted
            reg  [2:0]  hsi;
            reg  [11:0] hb;
            // next operation (registered from the head; takes are 4 cycles apart and the
            // head only changes at a take or when it is empty)
            reg  [5:0]  na;
            reg         nf;           // there is something to count
            reg  [11:0] nb;
            reg         nc;           // the operation counts the lowest cause bit
            reg         ns;           // the operation counts the slot
            reg         nl;           // last operation of the record
            reg  [3:0]  ci;           // lowest pending cause bit
            reg         multi;        // two or more cause bits pending
            integer k;
            always @(*) begin
                ci = 4'd0;
                for (k = 11; k >= 0; k = k - 1)
                    if (hc[k]) ci = k[3:0];
                multi = |hn[3:1];
            end
            reg  [5:0]  cw;           // word of the cause counter: p*16 + 6 + ci, 48 + p for 10,
                                      // 50 + p for 11
            always @(*) begin
                case (ci)
                4'd0: cw = {1'b0, base[4], 4'd6};
                4'd1: cw = {1'b0, base[4], 4'd7};
                4'd2: cw = {1'b0, base[4], 4'd8};
                4'd3: cw = {1'b0, base[4], 4'd9};
                4'd4: cw = {1'b0, base[4], 4'd10};
                4'd5: cw = {1'b0, base[4], 4'd11};
                4'd6: cw = {1'b0, base[4], 4'd12};
                4'd7: cw = {1'b0, base[4], 4'd13};
                4'd8: cw = {1'b0, base[4], 4'd14};
                4'd9: cw = {1'b0, base[4], 4'd15};
                4'd10: cw = {5'b11000, base[4]};
                default: cw = {5'b11001, base[4]};
                endcase
            end
            reg  hcz;                 // hc == 0 (registered)
            always @(posedge clk) begin
                if (rst) begin
                    fw <= 5'd0; fr <= 5'd0;
                    hv <= 1'b0; hc <= 12'd0; hn <= 4'd0; hcz <= 1'b1; hs <= 1'b0; hsi <= 3'd0;
                    nf <= 1'b0; nc <= 1'b0; ns <= 1'b0; nl <= 1'b0;
                    na <= 6'd0; nb <= 12'd0;
                end else begin
                    if (e_any2 && (fw != {~fr[4], fr[3:0]})) fw <= fw + 5'd1;
                    if (t_dec && nf) begin
                        if (nc) begin
                            hc <= hc & (hc - 12'd1);
                            hn <= hn - 4'd1;
                            hcz <= !multi;
                        end
                        if (ns) hs <= 1'b0;
                        if (nl) hv <= 1'b0;
                    end else if (!hv && fw != fr) begin
                        {hn, hcz, hc, hs, hsi, hb} <= fh;
                        hv <= 1'b1;
                        fr <= fr + 5'd1;
                    end
                    nf <= !hcz || hs;
                    nc <= !hcz;
                    ns <= hcz && hs;
                    nl <= hcz || (!multi && !hs);
                    na <= hcz ? {2'b10, hsi, base[4]} : cw;
                    nb <= (hcz && hs) ? hb : 12'd0;
                end
            end

            // this port's operation for the issue stage
            assign o_a[p*6 +: 6] = ({6{t_dec}} & na) | ({6{t_rx}} & base) |
                                   ({6{t_tx}} & (base | 6'd1)) | ({6{t_runt}} & (base | 6'd2)) |
                                   ({6{t_dr}} & (base + 6'd3 + {4'd0, dk}));
            // (frames: the accumulators; one frame for single events, added later as r_x)
            assign o_f[p*6 +: 6] = ({6{t_rx}} & af) | ({6{t_runt}} & rf);
            assign o_x[p] = (t_dec & nf) | (t_tx & tv) | (t_dr & dv);
            assign o_b[p*13 +: 13] = ({13{t_rx}} & ab) | ({13{t_tx & tv}} & {1'b0, tl}) |
                                     ({13{t_dec}} & {1'b0, nb});
        end
    endgenerate

    // ---------------- read-modify-write pipeline ----------------
    reg [5:0]  r_a, a1, a2, a3;
    reg [5:0]  r_f, f1, f2;
    reg        r_x;
    reg [12:0] r_b, b1, b2;
    reg        r_v, v1, v2, v3, r_z, z1, z2;
    reg [63:0] wsum3;             // the sum, registered before the RAM write (timing)
    // read/write collisions are avoided by construction (see above and the host read port):
    // no collision logic around the block RAMs. Two copies of the counters, written alike:
    // one read by the pipeline, one by the host (a block RAM has two ports).
    wire [63:0] q2, hq2;          // read data (RAM output registers), 2 cycles after the address
    // a word being cleared is written as 0 (z2: a synchronous reset of the sum register, no
    // gate in front of the adders)
    wire [63:0] wsum = {q2[63:32] + {19'd0, b2}, q2[31:0] + {26'd0, f2}};
    /* verilator lint_off UNUSEDSIGNAL */
    wire [63:0] a_unused0, a_unused1;
    /* verilator lint_on UNUSEDSIGNAL */
    wccp_bram #(.AW(6), .DW(64)) ram (
        .clk(clk), .a_we(v3), .a_addr(a3), .a_wdata(wsum3), .a_rdata(a_unused0),
        .b_addr(r_a), .b_rdata(q2));
    // issue: AND-OR of the selected source (sel is one-hot or zero)
    wire [5:0]  m_a = o_a[5:0] | o_a[11:6];
    wire [5:0]  m_f = o_f[5:0] | o_f[11:6];
    wire        m_x = |o_x;
    wire [12:0] m_b = o_b[12:0] | o_b[25:13];
    always @(posedge clk) begin
        if (!run) begin
            // clear word ccnt (0..63), then let the pipeline drain
            r_a <= ccnt[5:0]; r_f <= 6'd0; r_x <= 1'b0; r_b <= 13'd0; r_v <= !ccnt[6]; r_z <= 1'b1;
        end else begin
            r_a <= m_a; r_f <= m_f; r_x <= m_x; r_b <= m_b; r_v <= |sel; r_z <= 1'b0;
        end
        a1 <= r_a; f1 <= r_f + {5'd0, r_x}; b1 <= r_b; v1 <= r_v && !rst; z1 <= r_z;
        a2 <= a1; f2 <= f1; b2 <= b1; v2 <= v1 && !rst; z2 <= z1;
        a3 <= a2; v3 <= v2 && !rst;
        if (z2) wsum3 <= 64'd0;
        else wsum3 <= wsum;
    end
    // operation issued (r_a) in cycle t: RAM read at the end of t, output register at the end
    // of t+1, sum registered at the end of t+2 and written at the end of t+3; the same source
    // is next issued at t+4 or later, so its read sees the write
    // ---------------- host read port ----------------
    // The address is registered; a read that meets the write of the same word in the same
    // cycle (undefined data) is repeated in the next cycle (the next write is to another word).
    // rdata/rvalid four (five after a collision) cycles after rd; 0 until the RAM is cleared.
    reg        hr_v, hr_hi, h_ok;
    reg [5:0]  hr_w;
    reg        h_ok2, hz1, hz2;     // hz: read before the RAM was cleared (reads as 0)
    // h_col = v3 && (a3 == hr_w), registered from the values one cycle earlier
    reg        h_col;
    always @(posedge clk) h_col <= v2 && !rst && (a2 == (rd ? rd_word : hr_w));
    wccp_bram #(.AW(6), .DW(64)) host_ram (
        .clk(clk), .a_we(v3), .a_addr(a3), .a_wdata(wsum3), .a_rdata(a_unused1),
        .b_addr(hr_w), .b_rdata(hq2));
    always @(posedge clk) begin
        hz1 <= !run;
        hz2 <= hz1;
        h_ok <= hr_v && !h_col && !rst;
        h_ok2 <= h_ok && !rst;
        rvalid <= h_ok2 && !rst;
        rdata <= hz2 ? 32'd0 : hr_hi ? hq2[63:32] : hq2[31:0];
        if (rst) begin
            hr_v <= 1'b0;
        end else if (rd) begin
            hr_v <= 1'b1;
            hr_w <= rd_word;
            hr_hi <= rd_hi;
        end else if (!h_col) begin
            hr_v <= 1'b0;
        end
    end
endmodule
`default_nettype wire
