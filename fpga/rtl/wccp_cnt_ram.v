// Counter RAM (ECP5 DP16KD): read-modify-write increments from two decision engines and
// host reads through the register bus. Each word holds {bytes[31:0], frames[31:0]} (or
// frames only when BYTES = 0). One operation every two cycles; host reads first.
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
    reg [DW-1:0] mem [0:(1 << AW) - 1];
    reg [DW-1:0] q, q2;
    reg [AW-1:0] raddr, waddr;
    reg          we;
    reg [DW-1:0] wdata;

    reg          p0, p1, ph, ph_hi;
    reg [AW-1:0] p0_idx, p1_idx, ph_idx;
    reg [11:0]   p0_b, p1_b;

    // op: 0 idle/issue, 1 wait, 2 result (host read data / increment computed), 3 write
    reg [1:0]    op;
    reg          op_inc;
    reg [11:0]   op_b;
    reg          op_hi;

    integer i;
    initial begin
        for (i = 0; i < (1 << AW); i = i + 1) mem[i] = {DW{1'b0}};
    end

    // after reset: clear every word (one per cycle) before counting
    reg          clearing;
    reg [AW-1:0] cidx;
    always @(posedge clk) begin
        if (clearing) mem[cidx] <= {DW{1'b0}};
        else if (we) mem[waddr] <= wdata;
        q <= mem[raddr];
        q2 <= q;          // second read stage: data 2 cycles after the address
    end
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
            assign inc = {q2[DW-1:32] + {20'd0, op_b}, q2[31:0] + 32'd1};
        end else begin : g_frames
            assign inc = q2 + 1'b1;
            wire unused_b = &{1'b0, op_b, op_hi};
        end
    endgenerate

    always @(*) begin
        if (op == 2'd0 && ph) raddr = ph_idx;
        else if (op == 2'd0 && p0) raddr = p0_idx;
        else raddr = p1_idx;
    end

    always @(posedge clk) begin
        rvalid <= 1'b0;
        we <= 1'b0;
        if (rst) begin
            p0 <= 1'b0; p1 <= 1'b0; ph <= 1'b0; op <= 2'd0;
        end else begin
            if (ev0) begin p0 <= 1'b1; p0_idx <= ev0_idx; p0_b <= ev0_bytes; end
            if (ev1) begin p1 <= 1'b1; p1_idx <= ev1_idx; p1_b <= ev1_bytes; end
            if (rd) begin ph <= 1'b1; ph_idx <= rd_idx; ph_hi <= rd_hi; end
            case (op)
            2'd0: begin
                if (clearing) begin
                    // hold pending events until the RAM is cleared
                end else if (ph) begin
                    op <= 2'd1; op_inc <= 1'b0; op_hi <= ph_hi; ph <= rd;
                end else if (p0) begin
                    op <= 2'd1; op_inc <= 1'b1; op_b <= p0_b; waddr <= p0_idx; p0 <= ev0;
                end else if (p1) begin
                    op <= 2'd1; op_inc <= 1'b1; op_b <= p1_b; waddr <= p1_idx; p1 <= ev1;
                end
            end
            2'd1: op <= 2'd2;
            2'd2: begin
                if (op_inc) begin
                    we <= 1'b1;
                    wdata <= inc;
                    op <= 2'd3;
                end else begin
                    rvalid <= 1'b1;
                    rdata <= (BYTES != 0 && op_hi) ? q2[DW-1:DW-32] : q2[31:0];
                    op <= 2'd0;
                end
            end
            default: op <= 2'd0;          // write cycle; the next read sees the new value
            endcase
        end
    end
endmodule
`default_nettype wire
