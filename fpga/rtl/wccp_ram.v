// Simple dual-port RAM: one write port, one read port with two register stages
// (ECP5 DP16KD with output register): data 2 cycles after the address.
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
    output reg  [DW-1:0] rd_data
);
    reg [DW-1:0] mem [0:(1 << AW) - 1];
    integer i;
    initial begin
        for (i = 0; i < (1 << AW); i = i + 1) mem[i] = {DW{1'b0}};
    end
    reg [DW-1:0] rd_q;
    always @(posedge clk) begin
        if (wr_en) mem[wr_addr] <= wr_data;
        rd_q <= mem[rd_addr];
        rd_data <= rd_q;
    end
endmodule
`default_nettype wire
