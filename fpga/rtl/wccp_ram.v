// Simple dual-port RAM: one write port, one read port, data 3 cycles after the address
// (ECP5 DP16KD, then two fabric registers: the block RAM's output goes straight into a
// flip-flop that can sit next to it, for timing). A read of the address written in the same cycle returns the
// written data (the RAM itself is left without collision logic; the collision is detected
// with the address and resolved after the register).
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
    (* no_rw_check *)
    reg [DW-1:0] mem [0:(1 << AW) - 1];
    integer i;
    initial begin
        for (i = 0; i < (1 << AW); i = i + 1) mem[i] = {DW{1'b0}};
    end
    reg [DW-1:0] rd_q, rd_q2, rd_q3, wd1, wd2, wd3;
    reg          coll1, coll2, coll3;
    always @(posedge clk) begin
        if (wr_en) mem[wr_addr] <= wr_data;
        rd_q <= mem[rd_addr];
        rd_q2 <= rd_q;
        rd_q3 <= rd_q2;
        coll1 <= wr_en && (wr_addr == rd_addr);
        coll2 <= coll1;
        coll3 <= coll2;
        wd1 <= wr_data;
        wd2 <= wd1;
        wd3 <= wd2;
    end
    assign rd_data = coll3 ? wd3 : rd_q3;
endmodule
`default_nettype wire
