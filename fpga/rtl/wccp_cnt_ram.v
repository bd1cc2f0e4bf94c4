// Counter RAM (ECP5 DP16KD): read-modify-write increments from the two ports' commit units and
// host reads through the register bus. Each word holds {bytes[31:0], frames[31:0]} (or
// frames only when BYTES = 0). One operation every four cycles (RAM address and data from
// registers); host reads first.
`timescale 1ns / 1ps
`default_nettype none
module wccp_cnt_ram #(
    parameter AW = 8,
    parameter BYTES = 1
) (
    input  wire          clk,
    input  wire          rst,
    input  wire          ev0,
    input  wire [AW-1:0] ev0_idx,
    input  wire [11:0]   ev0_bytes,
    input  wire          ev1,
    input  wire [AW-1:0] ev1_idx,
    input  wire [11:0]   ev1_bytes,
    input  wire          rd,
    input  wire [AW-1:0] rd_idx,
    input  wire          rd_hi,      // 1: bytes half
    output reg  [31:0]   rdata,
    output reg           rvalid
);
    localparam DW = BYTES ? 64 : 32;
    wire [DW-1:0] q2;
    reg  [DW-1:0] q3;
    reg [AW-1:0] raddr, waddr;
    reg          we;
    reg [DW-1:0] wdata;

    reg          ph, ph_hi, drain;
    reg [AW-1:0] ph_idx;

    // one small event queue per port (registered head): events keep
    // arriving while the RAM is cleared after reset (2**AW cycles) and wait there; one event
    // per port per frame (>= 84 cycles at line rate) fits 2**AW / 84 < 2**(AW-6) entries,
    // the queue has 2**(AW-5) plus the head register
    localparam QAW = (AW >= 7) ? AW - 5 : 2;
    reg [AW+11:0] q0m [0:(1 << QAW) - 1];
    reg [AW+11:0] q1m [0:(1 << QAW) - 1];
    reg [QAW:0]   q0w, q0r, q1w, q1r;
    wire          q0full = (q0w == {~q0r[QAW], q0r[QAW-1:0]});
    wire          q1full = (q1w == {~q1r[QAW], q1r[QAW-1:0]});
    always @(posedge clk) begin
        if (ev0 && !q0full) q0m[q0w[QAW-1:0]] <= {ev0_idx, ev0_bytes};
        if (ev1 && !q1full) q1m[q1w[QAW-1:0]] <= {ev1_idx, ev1_bytes};
    end
    // queue heads: read every cycle (block RAM friendly); a head is used at most every four
    // cycles, so the one-cycle-late valid flag and data after a pop never matter
    reg           h0v, h1v;
    reg [AW+11:0] h0, h1;
    always @(posedge clk) begin
        h0 <= q0m[q0r[QAW-1:0]];
        h1 <= q1m[q1r[QAW-1:0]];
    end
    wire [AW-1:0] p0_idx = h0[AW+11:12];
    wire [AW-1:0] p1_idx = h1[AW+11:12];

    // op: 0 issue (address registered), 1 RAM read, 2 RAM output register, 3 fabric
    // register, 4 result (host read data / increment computed; the write happens in the next
    // cycle, before the next read)
    reg [2:0]    op;
    reg          op_inc;
    reg [11:0]   op_b;
    reg          op_hi;

    // after reset: clear every word (one per cycle) before counting
    reg          clearing;
    reg [AW-1:0] cidx;
    // port A writes (the clear, then the increments), port B reads: data 2 cycles after the
    // address. Port B's read of the word written in the same cycle is undefined, and never
    // used: an operation's read (op 1) comes after the previous operation's write (op 0).
    /* verilator lint_off UNUSEDSIGNAL */
    wire [DW-1:0] a_unused;
    /* verilator lint_on UNUSEDSIGNAL */
    wccp_bram #(.AW(AW), .DW(DW)) ram (
        .clk(clk), .a_we(clearing || we), .a_addr(clearing ? cidx : waddr),
        .a_wdata(clearing ? {DW{1'b0}} : wdata), .a_rdata(a_unused),
        .b_addr(raddr), .b_rdata(q2));
    always @(posedge clk) q3 <= q2;
    always @(posedge clk) begin
        if (rst) begin
            clearing <= 1'b1;
            cidx <= {AW{1'b0}};
        end else if (clearing) begin
            cidx <= cidx + 1'b1;
            if (&cidx) clearing <= 1'b0;
        end
    end

    wire [DW-1:0] inc;
    generate
        if (BYTES) begin : g_bytes
            assign inc = {q3[DW-1:32] + {20'd0, op_b}, q3[31:0] + 32'd1};
        end else begin : g_frames
            assign inc = q3 + 1'b1;
            wire unused_b = &{1'b0, op_b, op_hi};
        end
    endgenerate

    wire take_rd = (op == 3'd0) && !clearing && ph && !drain;
    wire take0 = (op == 3'd0) && !clearing && !take_rd && h0v;
    wire take1 = (op == 3'd0) && !clearing && !take_rd && !h0v && h1v;

    always @(posedge clk) begin
        rvalid <= 1'b0;
        we <= 1'b0;
        if (rst) begin
            q0w <= {(QAW + 1){1'b0}}; q0r <= {(QAW + 1){1'b0}};
            q1w <= {(QAW + 1){1'b0}}; q1r <= {(QAW + 1){1'b0}};
            h0v <= 1'b0; h1v <= 1'b0;
            ph <= 1'b0; op <= 3'd0; drain <= 1'b1;
        end else begin
            // after the clear the queued events go first (a read then sees them all)
            if (!clearing && !h0v && !h1v) drain <= 1'b0;
            if (ev0 && !q0full) q0w <= q0w + 1'b1;   // (full: cannot happen at line rate)
            if (ev1 && !q1full) q1w <= q1w + 1'b1;
            // queue heads
            h0v <= (q0w != q0r) && !take0;
            h1v <= (q1w != q1r) && !take1;
            if (take0) q0r <= q0r + 1'b1;
            if (take1) q1r <= q1r + 1'b1;
            if (rd) begin ph <= 1'b1; ph_idx <= rd_idx; ph_hi <= rd_hi; end
            case (op)
            3'd0: begin
                if (take_rd) begin
                    op <= 3'd1; op_inc <= 1'b0; op_hi <= ph_hi; ph <= rd; raddr <= ph_idx;
                end else if (take0) begin
                    op <= 3'd1; op_inc <= 1'b1; op_b <= h0[11:0]; raddr <= p0_idx; waddr <= p0_idx;
                end else if (take1) begin
                    op <= 3'd1; op_inc <= 1'b1; op_b <= h1[11:0]; raddr <= p1_idx; waddr <= p1_idx;
                end
            end
            3'd1: op <= 3'd2;
            3'd2: op <= 3'd3;
            3'd3: op <= 3'd4;
            default: begin
                op <= 3'd0;
                if (op_inc) begin
                    we <= 1'b1;
                    wdata <= inc;
                end else begin
                    rvalid <= 1'b1;
                    rdata <= (BYTES != 0 && op_hi) ? q3[DW-1:DW-32] : q3[31:0];
                end
            end
            endcase
        end
    end
endmodule
`default_nettype wire
