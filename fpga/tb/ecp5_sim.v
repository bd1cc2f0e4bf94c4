// Simulation models of the ECP5 DDR I/O primitives used by wccp_rgmii_rx/tx, following the
// Lattice libraries reference: IDDRX1F presents the bit captured at a rising edge (Q0) and
// the bit captured at the FOLLOWING falling edge (Q1) together at the next rising edge;
// ODDRX1F registers D0/D1 at a rising edge and drives D0 while SCLK is high, D1 while low.
// (fpga/lint/ecp5_stubs.v is a lint-only stand-in: its IDDRX1F pairs a rising-edge bit with
// the PREVIOUS falling-edge bit.)
`timescale 1ns / 1ps
module IDDRX1F (input wire D, input wire SCLK, input wire RST, output reg Q0, output reg Q1);
    reg r, f;
    always @(posedge SCLK) r <= D;
    always @(negedge SCLK) f <= D;
    always @(posedge SCLK) begin
        Q0 <= r;
        Q1 <= f;
    end
endmodule

module ODDRX1F (input wire D0, input wire D1, input wire SCLK, input wire RST, output wire Q);
    reg q0, q1;
    always @(posedge SCLK) begin
        q0 <= D0;
        q1 <= D1;
    end
    assign Q = SCLK ? q0 : q1;
endmodule
