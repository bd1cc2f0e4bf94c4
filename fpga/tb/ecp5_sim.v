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

// PLL: simulation passes the input clock through (the testbench drives clk25 at the core
// frequency) and reports lock immediately.
module EHXPLLL #(
    parameter PLLRST_ENA = "DISABLED", parameter INTFB_WAKE = "DISABLED",
    parameter STDBY_ENABLE = "DISABLED", parameter DPHASE_SOURCE = "DISABLED",
    parameter OUTDIVIDER_MUXA = "DIVA", parameter OUTDIVIDER_MUXB = "DIVB",
    parameter OUTDIVIDER_MUXC = "DIVC", parameter OUTDIVIDER_MUXD = "DIVD",
    parameter CLKI_DIV = 1, parameter CLKOP_ENABLE = "ENABLED", parameter CLKOP_DIV = 8,
    parameter CLKOP_CPHASE = 0, parameter CLKOP_FPHASE = 0, parameter FEEDBK_PATH = "CLKOP",
    parameter CLKFB_DIV = 1
) (
    input wire CLKI, input wire CLKFB, input wire RST, input wire STDBY,
    input wire PHASESEL0, input wire PHASESEL1, input wire PHASEDIR, input wire PHASESTEP,
    input wire PHASELOADREG, input wire PLLWAKESYNC, input wire ENCLKOP,
    output wire CLKOP, output wire LOCK
);
    assign CLKOP = CLKI;
    assign LOCK = 1'b1;
endmodule
