// Reference for test_wccp_pearson_rom.py: the same table and timing as wccp_pearson_rom,
// written as a plain initialised memory so that yosys maps it to a DP16KD itself (its own
// NOREG mapping with its own INITVAL encoding, then a fabric register). Simulating that
// netlist checks how fpga/tb/ecp5_sim.v's DP16KD model reads INITVAL against yosys.
`timescale 1ns / 1ps
`default_nettype none
module ref_pearson_rom (
    input  wire       clk,
    input  wire [8:0] addr,
    output reg  [7:0] q
);
    `include "wccp_pearson.vh"
    reg [7:0] mem [0:511];
    reg [7:0] q1;
    integer i;
    initial
        for (i = 0; i < 512; i = i + 1)
            mem[i] = (i >= 256) ? i[7:0] : pearson_mix(i[7:0]);
    always @(posedge clk) begin
        q1 <= mem[addr];
        q <= q1;
    end
endmodule
`default_nettype wire
