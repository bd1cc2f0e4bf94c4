// Port and slot counters in block RAM. Each event increments a small per-counter
// accumulator; a sweeper folds the accumulators into 64-bit RAM words ({bytes, frames})
// round-robin (2 cycles per word, so a counter lags the traffic by < 1 us). Host reads come
// from the RAM through a second read port.
//   word p*16 + 0 rx, 1 tx, 2 runt, 3 bad_fcs, 4 oversize, 5 overflow, 6..15 causes 0..9
//   word 32 + slot*2 + port: slot matches
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
    localparam N = 48;
    reg  [N-1:0]    inc;
    reg  [N*12-1:0] inc_b;
    integer p, i, s;
    always @(*) begin
        inc = {N{1'b0}};
        inc_b = {(N*12){1'b0}};
        for (p = 0; p < 2; p = p + 1) begin
            inc[p*16 + 0] = ev_rx[p];
            inc_b[(p*16 + 0)*12 +: 12] = ev_rx_len[p*12 +: 12];
            inc[p*16 + 1] = ev_tx[p];
            inc_b[(p*16 + 1)*12 +: 12] = ev_tx_len[p*12 +: 12];
            for (i = 0; i < 4; i = i + 1) inc[p*16 + 2 + i] = ev_drop[p*4 + i];
            for (i = 0; i < 10; i = i + 1) inc[p*16 + 6 + i] = ev_cause[p*11 + i];
            for (s = 0; s < 8; s = s + 1) begin
                inc[32 + s*2 + p] = ev_slot[p] && (ev_slot_idx[p*3 +: 3] == s[2:0]);
                inc_b[(32 + s*2 + p)*12 +: 12] = ev_bytes[p*12 +: 12];
            end
        end
    end

    // sweeper
    reg  [5:0]  sw;          // word being folded
    reg  [1:0]  phase;       // 0 read + snapshot, 1 wait, 2 add, 3 write
    reg  [7:0]  snap_f;
    reg  [63:0] wsum;
    reg  [15:0] snap_b;
    wire [N*8-1:0]  acc_f;
    wire [N*16-1:0] acc_b;
    // one-hot select of word `sw`, registered (sw is stable from phase 0 to phase 3)
    reg  [N-1:0] sel_oh;
    integer k;
    always @(posedge clk) begin
        for (k = 0; k < N; k = k + 1) sel_oh[k] <= (sw == k[5:0]);
    end
    wire        take = (phase == 2'd1);     // snapshot/clear accumulator `sw` in phase 1

    genvar g;
    generate
        for (g = 0; g < N; g = g + 1) begin : g_acc
            reg [7:0]  f;
            reg [15:0] b;
            wire       clr = take && sel_oh[g];
            always @(posedge clk) begin
                if (rst) begin
                    f <= 8'd0;
                    b <= 16'd0;
                end else begin
                    f <= (clr ? 8'd0 : f) + {7'd0, inc[g]};
                    b <= (clr ? 16'd0 : b) + (inc[g] ? {4'd0, inc_b[g*12 +: 12]} : 16'd0);
                end
            end
            assign acc_f[g*8 +: 8] = f;
            assign acc_b[g*16 +: 16] = b;
        end
    endgenerate

    // accumulator selected by the sweeper (AND-OR, no priority chain)
    reg [23:0] snap_mux;
    always @(*) begin
        snap_mux = 24'd0;
        for (k = 0; k < N; k = k + 1)
            snap_mux = snap_mux | ({24{sel_oh[k]}} & {acc_b[k*16 +: 16], acc_f[k*8 +: 8]});
    end

    reg [63:0] mem [0:63];
    reg [63:0] q, q2;
    initial begin
        for (i = 0; i < 64; i = i + 1) mem[i] = 64'd0;
    end
    // after reset the sweeper first clears the whole RAM (64 cycles)
    reg clearing;
    always @(posedge clk) begin
        q <= mem[sw];
        q2 <= q;
        if (clearing) mem[sw] <= 64'd0;
        else if (phase == 2'd3) mem[sw] <= wsum;
    end
    always @(posedge clk) begin
        if (rst) begin
            sw <= 6'd0;
            phase <= 2'd0;
            clearing <= 1'b1;
        end else if (clearing) begin
            sw <= sw + 6'd1;
            if (&sw) clearing <= 1'b0;
        end else begin
            phase <= phase + 2'd1;
            if (phase == 2'd1) begin
                snap_f <= snap_mux[7:0];
                snap_b <= snap_mux[23:8];
            end
            if (phase == 2'd2)
                wsum <= {q2[63:32] + {16'd0, snap_b}, q2[31:0] + {24'd0, snap_f}};
            if (phase == 2'd3)
                sw <= (sw == N - 1) ? 6'd0 : sw + 6'd1;
        end
    end

    // host read port
    reg        rd_d, hi_d;
    reg [63:0] hq;
    always @(posedge clk) begin
        hq <= mem[rd_word];
        rd_d <= rd;
        hi_d <= rd_hi;
        rvalid <= rd_d;
        rdata <= hi_d ? hq[63:32] : hq[31:0];
    end
endmodule
`default_nettype wire
