// Reference for test_wccp_bram.py: the same ports and timing as wccp_bram, written
// as a plain inferred memory so that yosys maps it to DP16KD itself (its own NOREG mapping,
// then fabric registers). Simulating that netlist checks fpga/tb/ecp5_sim.v's DP16KD model
// against yosys' understanding of the primitive's pins.
`timescale 1ns / 1ps
`default_nettype none
module ref_bram #(
    parameter AW = 8,
    parameter DW = 8
) (
    input  wire          clk,
    input  wire          a_we,
    input  wire [AW-1:0] a_addr,
    input  wire [DW-1:0] a_wdata,
    output reg  [DW-1:0] a_rdata,
    input  wire [AW-1:0] b_addr,
    output reg  [DW-1:0] b_rdata
);
    (* no_rw_check *)
    reg [DW-1:0] mem [0:(1 << AW) - 1];
    reg [DW-1:0] aq, bq;
    always @(posedge clk) begin
        if (a_we) mem[a_addr] <= a_wdata;
        else aq <= mem[a_addr];
        bq <= mem[b_addr];
        a_rdata <= aq;
        b_rdata <= bq;
    end
endmodule
`default_nettype wire
