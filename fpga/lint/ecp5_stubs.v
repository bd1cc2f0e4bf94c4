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

// DP16KD: ports and the parameters wccp_bram sets, the contents (INITVAL) included (the
// simulation model is fpga/tb/ecp5_sim.v)
module DP16KD #(
    parameter DATA_WIDTH_A = 18, parameter DATA_WIDTH_B = 18,
    parameter REGMODE_A = "NOREG", parameter REGMODE_B = "NOREG",
    parameter RESETMODE = "SYNC", parameter ASYNC_RESET_RELEASE = "SYNC",
    parameter CSDECODE_A = "0b000", parameter CSDECODE_B = "0b000",
    parameter WRITEMODE_A = "NORMAL", parameter WRITEMODE_B = "NORMAL",
    parameter GSR = "ENABLED",
    parameter [319:0] INITVAL_00 = 320'h0, parameter [319:0] INITVAL_01 = 320'h0, parameter [319:0] INITVAL_02 = 320'h0,
    parameter [319:0] INITVAL_03 = 320'h0, parameter [319:0] INITVAL_04 = 320'h0, parameter [319:0] INITVAL_05 = 320'h0,
    parameter [319:0] INITVAL_06 = 320'h0, parameter [319:0] INITVAL_07 = 320'h0, parameter [319:0] INITVAL_08 = 320'h0,
    parameter [319:0] INITVAL_09 = 320'h0, parameter [319:0] INITVAL_0A = 320'h0, parameter [319:0] INITVAL_0B = 320'h0,
    parameter [319:0] INITVAL_0C = 320'h0, parameter [319:0] INITVAL_0D = 320'h0, parameter [319:0] INITVAL_0E = 320'h0,
    parameter [319:0] INITVAL_0F = 320'h0, parameter [319:0] INITVAL_10 = 320'h0, parameter [319:0] INITVAL_11 = 320'h0,
    parameter [319:0] INITVAL_12 = 320'h0, parameter [319:0] INITVAL_13 = 320'h0, parameter [319:0] INITVAL_14 = 320'h0,
    parameter [319:0] INITVAL_15 = 320'h0, parameter [319:0] INITVAL_16 = 320'h0, parameter [319:0] INITVAL_17 = 320'h0,
    parameter [319:0] INITVAL_18 = 320'h0, parameter [319:0] INITVAL_19 = 320'h0, parameter [319:0] INITVAL_1A = 320'h0,
    parameter [319:0] INITVAL_1B = 320'h0, parameter [319:0] INITVAL_1C = 320'h0, parameter [319:0] INITVAL_1D = 320'h0,
    parameter [319:0] INITVAL_1E = 320'h0, parameter [319:0] INITVAL_1F = 320'h0, parameter [319:0] INITVAL_20 = 320'h0,
    parameter [319:0] INITVAL_21 = 320'h0, parameter [319:0] INITVAL_22 = 320'h0, parameter [319:0] INITVAL_23 = 320'h0,
    parameter [319:0] INITVAL_24 = 320'h0, parameter [319:0] INITVAL_25 = 320'h0, parameter [319:0] INITVAL_26 = 320'h0,
    parameter [319:0] INITVAL_27 = 320'h0, parameter [319:0] INITVAL_28 = 320'h0, parameter [319:0] INITVAL_29 = 320'h0,
    parameter [319:0] INITVAL_2A = 320'h0, parameter [319:0] INITVAL_2B = 320'h0, parameter [319:0] INITVAL_2C = 320'h0,
    parameter [319:0] INITVAL_2D = 320'h0, parameter [319:0] INITVAL_2E = 320'h0, parameter [319:0] INITVAL_2F = 320'h0,
    parameter [319:0] INITVAL_30 = 320'h0, parameter [319:0] INITVAL_31 = 320'h0, parameter [319:0] INITVAL_32 = 320'h0,
    parameter [319:0] INITVAL_33 = 320'h0, parameter [319:0] INITVAL_34 = 320'h0, parameter [319:0] INITVAL_35 = 320'h0,
    parameter [319:0] INITVAL_36 = 320'h0, parameter [319:0] INITVAL_37 = 320'h0, parameter [319:0] INITVAL_38 = 320'h0,
    parameter [319:0] INITVAL_39 = 320'h0, parameter [319:0] INITVAL_3A = 320'h0, parameter [319:0] INITVAL_3B = 320'h0,
    parameter [319:0] INITVAL_3C = 320'h0, parameter [319:0] INITVAL_3D = 320'h0, parameter [319:0] INITVAL_3E = 320'h0,
    parameter [319:0] INITVAL_3F = 320'h0
) (
    input  wire DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9, DIA8, DIA7, DIA6, DIA5, DIA4, DIA3, DIA2, DIA1, DIA0,
    input  wire ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5, ADA4, ADA3, ADA2, ADA1, ADA0,
    input  wire CEA, OCEA, CLKA, WEA, RSTA, CSA2, CSA1, CSA0,
    output wire DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9, DOA8, DOA7, DOA6, DOA5, DOA4, DOA3, DOA2, DOA1, DOA0,
    input  wire DIB17, DIB16, DIB15, DIB14, DIB13, DIB12, DIB11, DIB10, DIB9, DIB8, DIB7, DIB6, DIB5, DIB4, DIB3, DIB2, DIB1, DIB0,
    input  wire ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4, ADB3, ADB2, ADB1, ADB0,
    input  wire CEB, OCEB, CLKB, WEB, RSTB, CSB2, CSB1, CSB0,
    output wire DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6, DOB5, DOB4, DOB3, DOB2, DOB1, DOB0
);
    assign {DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9, DOA8, DOA7, DOA6, DOA5, DOA4, DOA3, DOA2, DOA1, DOA0} = 18'd0;
    assign {DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6, DOB5, DOB4, DOB3, DOB2, DOB1, DOB0} = 18'd0;
endmodule

// DELAYG: fixed input delay (the Colorlight i5 top's RGMII receive path); lint sees a wire
module DELAYG #(parameter DEL_MODE = "USER_DEFINED", parameter integer DEL_VALUE = 0) (
    input wire A, output wire Z);
    assign Z = A;
endmodule
// BB: bidirectional pad (the Colorlight i5 top's MDIO)
module BB (input wire I, input wire T, output wire O, inout wire B);
    assign B = T ? 1'bz : I;
    assign O = B;
endmodule
/* verilator lint_on MULTIDRIVEN */
/* verilator lint_on UNUSEDPARAM */
/* verilator lint_on UNUSEDSIGNAL */
