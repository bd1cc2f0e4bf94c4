// Simple dual-port RAM: one write port, one read port, data 3 cycles after the address
// (wccp_bram: the block RAM with its output register, then one fabric register). A read of
// the address written in the same cycle returns the written data (the block RAM's own
// result is undefined then; the collision is detected with the address and resolved after
// the register).
`timescale 1ns / 1ps
`default_nettype none
module wccp_ram #(
    parameter AW = 8,
    parameter DW = 8
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
    reg [DW-1:0] rd_q3, wd1, wd2, wd3;
    reg [AW-1:0] wa1, ra1;
    reg          we1, coll2, coll3;
    always @(posedge clk) begin
        rd_q3 <= rd_q2;
        // the collision compare from registered addresses (they may come from muxes)
        we1 <= wr_en;
        wa1 <= wr_addr;
        ra1 <= rd_addr;
        coll2 <= we1 && (wa1 == ra1);
        coll3 <= coll2;
        wd1 <= wr_data;
        wd2 <= wd1;
        wd3 <= wd2;
    end
    assign rd_data = coll3 ? wd3 : rd_q3;
endmodule
`default_nettype wire
