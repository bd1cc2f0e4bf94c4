// Port and slot counters in block RAM ({bytes[31:0], frames[31:0]} per word).
//   word p*16 + 0 rx, 1 tx, 2 runt, 3 bad_fcs, 4 oversize, 5 overflow, 6..15 causes 0..9
//   word 32 + slot*2 + port: slot matches
// Events are kept per source and folded into the RAM by one read-modify-write pipeline
// (read, output register, add, write: 4 cycles) that starts one operation every cycle. A
// fixed 16-cycle wheel gives every source its own turns, at least 4 cycles apart:
//   d0 d1 m0 m1 d0 d1 m2 m3 d0 d1 m4 m5 d0 d1 m6 m7   (dP = decisions of port P, m = misc)
// Each source owns a disjoint set of words, so operations in flight never touch the same
// word and no forwarding is needed. Sources per port:
//   rx      accumulator {frames 6b, bytes 13b}, folded every 16 cycles (runt floods: one
//           frame per 3 cycles at most, <= 4095 + 84 bytes between folds)
//   runt    accumulator (frames 6b)
//   drop    bad_fcs/oversize/overflow: one pending event (such frames are >= 64 bytes, i.e.
//           >= 66 cycles apart; folded within 16)
//   tx      one pending {len} (frames >= 84 cycles apart)
//   dec     16-entry FIFO of {causes, slot, slot index, bytes}: one RAM operation per cause
//           bit and one for the slot, one every 4 cycles (decisions are >= 9 cycles apart,
//           the FIFO absorbs a burst of the 16 frames the receive queue can hold)
// After reset the RAM is cleared (64 cycles) while the sources collect events.
// Host reads: rd/rd_word/rd_hi from registers; rdata/rvalid two cycles later (0 until the
// RAM is cleared).
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
    input  wire [21:0] ev_cause,     // per port 11 bits (wccp_decide cause order, bit 10 unused)
    input  wire [1:0]  ev_slot,
    input  wire [5:0]  ev_slot_idx,
    input  wire [23:0] ev_bytes,
    input  wire        rd,
    input  wire [5:0]  rd_word,
    input  wire        rd_hi,
    output reg  [31:0] rdata,
    output reg         rvalid
);
    wire unused_cause = &{1'b0, ev_cause[21], ev_cause[10]};

    // ---------------- wheel ----------------
    // sel: 0 d0, 1 d1, 2 + 4*p + {0 rx, 1 tx, 2 runt, 3 drop}
    reg  [3:0] wt;
    reg  [9:0] sel;
    reg  [6:0] ccnt;          // reset sequencing: 0..63 clear, 64..67 drain, 68 run
    wire       run = ccnt[6] && ccnt[2];
    always @(posedge clk) begin
        if (rst) begin
            ccnt <= 7'd0;
            wt <= 4'd0;
            sel <= 10'd0;
        end else begin
            if (!run) ccnt <= ccnt + 7'd1;
            wt <= wt + 4'd1;
            sel <= 10'd0;
            if (run) begin
                case (wt[1:0])
                2'd0: sel[0] <= 1'b1;
                2'd1: sel[1] <= 1'b1;
                2'd2: sel[2 + {wt[3:2], 1'b0}] <= 1'b1;
                default: sel[3 + {wt[3:2], 1'b0}] <= 1'b1;
                endcase
            end
        end
    end

    // ---------------- per-port sources ----------------
    wire [2*6-1:0]  o_a, o_f;     // per port: selected operation (zero when not selected)
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
            always @(posedge clk) begin
                if (rst) begin
                    af <= 6'd0; ab <= 13'd0; rf <= 6'd0; tv <= 1'b0; dv <= 1'b0;
                end else begin
                    af <= (t_rx ? 6'd0 : af) + {5'd0, e_rx};
                    ab <= (t_rx ? 13'd0 : ab) + (e_rx ? {1'b0, ev_rx_len[p*12 +: 12]} : 13'd0);
                    rf <= (t_runt ? 6'd0 : rf) + {5'd0, e_drop[0]};
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
            wire [9:0] e_c = ev_cause[p*11 +: 10];
            wire       e_s = ev_slot[p];
            reg  [25:0] fm [0:15];
            reg  [4:0]  fw, fr;
            always @(posedge clk) begin
                if (e_s || (|e_c))
                    fm[fw[3:0]] <= {e_c, e_s, ev_slot_idx[p*3 +: 3], ev_bytes[p*12 +: 12]};
            end
            wire [25:0] fh = fm[fr[3:0]];
            reg  [9:0]  hc;           // head: cause bits not yet counted
            reg         hs;           // head: slot match not yet counted
            reg  [2:0]  hsi;
            reg  [11:0] hb;
            // next operation, registered: lowest pending cause bit, else the slot word
            reg  [5:0]  na;
            reg         nf;
            reg  [11:0] nb;
            reg  [9:0]  noh;          // cause bit the operation counts
            reg         ns;           // the operation counts the slot
            reg  [3:0]  ci;
            integer k;
            always @(*) begin
                ci = 4'd0;
                for (k = 9; k >= 0; k = k - 1)
                    if (hc[k]) ci = k[3:0];
            end
            wire hempty = !hs && (hc == 10'd0);
            always @(posedge clk) begin
                if (rst) begin
                    fw <= 5'd0; fr <= 5'd0;
                    hc <= 10'd0; hs <= 1'b0;
                    nf <= 1'b0; noh <= 10'd0; ns <= 1'b0;
                    na <= 6'd0; nb <= 12'd0;
                end else begin
                    if ((e_s || (|e_c)) && (fw != {~fr[4], fr[3:0]})) fw <= fw + 5'd1;
                    if (t_dec) begin
                        hc <= hc & ~noh;
                        if (ns) hs <= 1'b0;
                    end else if (hempty && fw != fr) begin
                        {hc, hs, hsi, hb} <= fh;
                        fr <= fr + 5'd1;
                    end
                    // (recomputed every cycle; used at least 3 cycles after any head change)
                    if (hc != 10'd0) begin
                        na <= base + 6'd6 + {2'd0, ci};
                        nf <= 1'b1;
                        nb <= 12'd0;
                        noh <= 10'd1 << ci;
                        ns <= 1'b0;
                    end else begin
                        na <= {2'b10, hsi, base[4]};
                        nf <= hs;
                        nb <= hs ? hb : 12'd0;
                        noh <= 10'd0;
                        ns <= hs;
                    end
                end
            end

            // this port's operation for the issue stage
            assign o_a[p*6 +: 6] = ({6{t_dec}} & na) | ({6{t_rx}} & base) |
                                   ({6{t_tx}} & (base | 6'd1)) | ({6{t_runt}} & (base | 6'd2)) |
                                   ({6{t_dr}} & (base + 6'd3 + {4'd0, dk}));
            assign o_f[p*6 +: 6] = ({6{t_rx}} & af) | ({6{t_runt}} & rf) |
                                   {5'd0, (t_dec & nf) | (t_tx & tv) | (t_dr & dv)};
            assign o_b[p*13 +: 13] = ({13{t_rx}} & ab) | ({13{t_tx & tv}} & {1'b0, tl}) |
                                     ({13{t_dec}} & {1'b0, nb});
        end
    endgenerate

    // ---------------- read-modify-write pipeline ----------------
    reg [5:0]  r_a, a1, a2, wa;
    reg [5:0]  r_f, f1, f2;
    reg [12:0] r_b, b1, b2;
    reg        r_v, v1, v2, we, r_z, z1;
    reg [63:0] q, q2, wd;
    reg [63:0] mem [0:63];
    integer i;
    initial begin
        for (i = 0; i < 64; i = i + 1) mem[i] = 64'd0;
    end
    // issue: AND-OR of the selected source (sel is one-hot or zero)
    wire [5:0]  m_a = o_a[5:0] | o_a[11:6];
    wire [5:0]  m_f = o_f[5:0] | o_f[11:6];
    wire [12:0] m_b = o_b[12:0] | o_b[25:13];
    always @(posedge clk) begin
        if (!run) begin
            // clear word ccnt (0..63), then let the pipeline drain
            r_a <= ccnt[5:0]; r_f <= 6'd0; r_b <= 13'd0; r_v <= !ccnt[6]; r_z <= 1'b1;
        end else begin
            r_a <= m_a; r_f <= m_f; r_b <= m_b; r_v <= |sel; r_z <= 1'b0;
        end
        a1 <= r_a; f1 <= r_f; b1 <= r_b; v1 <= r_v && !rst; z1 <= r_z;
        a2 <= a1; f2 <= f1; b2 <= b1; v2 <= v1 && !rst;
        wa <= a2; we <= v2 && !rst;
        wd <= {q2[63:32] + {19'd0, b2}, q2[31:0] + {26'd0, f2}};
    end
    always @(posedge clk) begin
        q <= mem[r_a];
        if (z1) q2 <= 64'd0;
        else q2 <= q;
        if (we) mem[wa] <= wd;
    end

    // ---------------- host read port ----------------
    // (while the RAM is being cleared after reset every counter reads 0)
    reg        rd_d, hi_d, z_d;
    reg [63:0] hq;
    always @(posedge clk) begin
        hq <= mem[rd_word];
        rd_d <= rd;
        hi_d <= rd_hi;
        z_d <= !run;
        rvalid <= rd_d;
        rdata <= z_d ? 32'd0 : hi_d ? hq[63:32] : hq[31:0];
    end
endmodule
`default_nettype wire
