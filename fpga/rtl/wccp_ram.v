// Simple dual-port RAM: one write port, one read port, data 2 + RD_REG cycles after the
// address (wccp_bram: the block RAM with its output register, then, with RD_REG = 1, one
// fabric register). A read of the address written in the same cycle returns the written
// data (the block RAM's own result is undefined then; the collision is detected with the
// address and resolved after the block RAM's output register).
`timescale 1ns / 1ps
`default_nettype none
module wccp_ram #(
    parameter AW = 8,
    parameter DW = 8,
    parameter RD_REG = 1          // 1: a fabric register after the collision select
) (
    input  wire          clk,
    input  wire          wr_en,
    input  wire [AW-1:0] wr_addr,
    input  wire [DW-1:0] wr_data,
    input  wire [AW-1:0] rd_addr,
    output wire [DW-1:0] rd_data
);
    // port B reads; port A only writes (its read data is unused)
    wire [DW-1:0] rd_q2;
    /* verilator lint_off UNUSEDSIGNAL */
    wire [DW-1:0] a_unused;
    /* verilator lint_on UNUSEDSIGNAL */
    wccp_bram #(.AW(AW), .DW(DW)) ram (
        .clk(clk), .a_we(wr_en), .a_addr(wr_addr), .a_wdata(wr_data), .a_rdata(a_unused),
        .b_addr(rd_addr), .b_rdata(rd_q2));
    reg [DW-1:0] wd1, wd2;
    reg [AW-1:0] wa1, ra1;
    reg          we1, coll2;
    always @(posedge clk) begin
        // the collision compare from registered addresses (they may come from muxes)
        we1 <= wr_en;
        wa1 <= wr_addr;
        ra1 <= rd_addr;
        coll2 <= we1 && (wa1 == ra1);
        wd1 <= wr_data;
        wd2 <= wd1;
    end
    wire [DW-1:0] rd2 = coll2 ? wd2 : rd_q2;
    generate
        if (RD_REG != 0) begin : g_rd_reg
            reg [DW-1:0] rd_q3;
            always @(posedge clk) rd_q3 <= rd2;
            assign rd_data = rd_q3;
        end else begin : g_rd_bram
            assign rd_data = rd2;
        end
    endgenerate
endmodule
`default_nettype wire
