// Behavioural stand-ins for the ECP5 primitives used by fpga/rtl/fpga.v, for linting the
// board top with Verilator only (synthesis uses Yosys' own ECP5 cell library).
`timescale 1ns / 1ps
/* verilator lint_off DECLFILENAME */
/* verilator lint_off UNUSEDSIGNAL */
/* verilator lint_off UNUSEDPARAM */
/* verilator lint_off MULTIDRIVEN */
module IDDRX1F (input wire D, input wire SCLK, input wire RST, output reg Q0, output reg Q1);
    reg fall;
    always @(negedge SCLK) fall <= D;
    always @(posedge SCLK) begin
        Q0 <= D;
        Q1 <= fall;
    end
endmodule

module ODDRX1F (input wire D0, input wire D1, input wire SCLK, input wire RST, output wire Q);
    assign Q = SCLK ? D0 : D1;
endmodule

module EHXPLLL #(
    parameter PLLRST_ENA = "DISABLED", parameter INTFB_WAKE = "DISABLED",
    parameter STDBY_ENABLE = "DISABLED", parameter DPHASE_SOURCE = "DISABLED",
    parameter OUTDIVIDER_MUXA = "DIVA", parameter OUTDIVIDER_MUXB = "DIVB",
    parameter OUTDIVIDER_MUXC = "DIVC", parameter OUTDIVIDER_MUXD = "DIVD",
    parameter integer CLKI_DIV = 1, parameter CLKOP_ENABLE = "ENABLED",
    parameter integer CLKOP_DIV = 8, parameter integer CLKOP_CPHASE = 0,
    parameter integer CLKOP_FPHASE = 0, parameter FEEDBK_PATH = "CLKOP",
    parameter integer CLKFB_DIV = 1
) (
    input wire RST, input wire STDBY, input wire CLKI, output wire CLKOP, input wire CLKFB,
    input wire PHASESEL0, input wire PHASESEL1, input wire PHASEDIR, input wire PHASESTEP,
    input wire PHASELOADREG, input wire PLLWAKESYNC, input wire ENCLKOP, output wire LOCK
);
    assign CLKOP = CLKI;
    assign LOCK = 1'b1;
endmodule
/* verilator lint_on MULTIDRIVEN */
/* verilator lint_on UNUSEDPARAM */
/* verilator lint_on UNUSEDSIGNAL */
