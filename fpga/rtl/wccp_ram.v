// Simple dual-port RAM: one write port, one registered read port (ECP5 DP16KD / LUT RAM).
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
    always @(posedge clk) begin
        if (wr_en) mem[wr_addr] <= wr_data;
        rd_data <= mem[rd_addr];
    end
endmodule
`default_nettype wire
