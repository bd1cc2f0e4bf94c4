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

// DP16KD (ECP5 16 kbit true dual-port block RAM), enough of it for the RAMs in this design
// and for the netlists yosys makes from inferred memories (fpga/tb/wccp_bram):
// DATA_WIDTH 18/9/4/2/1 (the word address in AD[13:4]/[13:3]/[13:2]/[13:1]/[13:0]; in x18
// mode AD[1:0] enable the write of DI[8:0]/DI[17:9]), REGMODE NOREG/OUTREG (OCE enables the
// output register), WRITEMODE NORMAL (a write leaves the port's output unchanged) /
// WRITETHROUGH (output shows the new data) / READBEFOREWRITE (old data), CE, CSDECODE, and
// a synchronous RST that clears the port's output latch and register. Both ports must
// run on the same clock. Bits are stored flat (word w of width n at bits w*n .. w*n+n-1);
// ports of different widths are only consistent between the 18 and 9 bit modes. A read on
// one port of a word the other port writes (any byte of it) at the same edge returns X. Initial contents
// come from INITVAL_00 .. INITVAL_3F (in the x18 layout, as yosys' own mapping writes them).
module DP16KD (
    input  wire DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9, DIA8, DIA7, DIA6, DIA5, DIA4, DIA3, DIA2, DIA1, DIA0,
    input  wire ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5, ADA4, ADA3, ADA2, ADA1, ADA0,
    input  wire CEA, OCEA, CLKA, WEA, RSTA, CSA2, CSA1, CSA0,
    output wire DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9, DOA8, DOA7, DOA6, DOA5, DOA4, DOA3, DOA2, DOA1, DOA0,
    input  wire DIB17, DIB16, DIB15, DIB14, DIB13, DIB12, DIB11, DIB10, DIB9, DIB8, DIB7, DIB6, DIB5, DIB4, DIB3, DIB2, DIB1, DIB0,
    input  wire ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4, ADB3, ADB2, ADB1, ADB0,
    input  wire CEB, OCEB, CLKB, WEB, RSTB, CSB2, CSB1, CSB0,
    output wire DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6, DOB5, DOB4, DOB3, DOB2, DOB1, DOB0
);
    parameter DATA_WIDTH_A = 18;
    parameter DATA_WIDTH_B = 18;
    parameter REGMODE_A = "NOREG";
    parameter REGMODE_B = "NOREG";
    parameter RESETMODE = "SYNC";
    parameter ASYNC_RESET_RELEASE = "SYNC";
    parameter CSDECODE_A = "0b000";
    parameter CSDECODE_B = "0b000";
    parameter WRITEMODE_A = "NORMAL";
    parameter WRITEMODE_B = "NORMAL";
    parameter CLKAMUX = "CLKA";
    parameter CLKBMUX = "CLKB";
    parameter GSR = "ENABLED";
    parameter INIT_DATA = "STATIC";
    parameter WID = 0;
    parameter [319:0] INITVAL_00 = 320'h0;
    parameter [319:0] INITVAL_01 = 320'h0;
    parameter [319:0] INITVAL_02 = 320'h0;
    parameter [319:0] INITVAL_03 = 320'h0;
    parameter [319:0] INITVAL_04 = 320'h0;
    parameter [319:0] INITVAL_05 = 320'h0;
    parameter [319:0] INITVAL_06 = 320'h0;
    parameter [319:0] INITVAL_07 = 320'h0;
    parameter [319:0] INITVAL_08 = 320'h0;
    parameter [319:0] INITVAL_09 = 320'h0;
    parameter [319:0] INITVAL_0A = 320'h0;
    parameter [319:0] INITVAL_0B = 320'h0;
    parameter [319:0] INITVAL_0C = 320'h0;
    parameter [319:0] INITVAL_0D = 320'h0;
    parameter [319:0] INITVAL_0E = 320'h0;
    parameter [319:0] INITVAL_0F = 320'h0;
    parameter [319:0] INITVAL_10 = 320'h0;
    parameter [319:0] INITVAL_11 = 320'h0;
    parameter [319:0] INITVAL_12 = 320'h0;
    parameter [319:0] INITVAL_13 = 320'h0;
    parameter [319:0] INITVAL_14 = 320'h0;
    parameter [319:0] INITVAL_15 = 320'h0;
    parameter [319:0] INITVAL_16 = 320'h0;
    parameter [319:0] INITVAL_17 = 320'h0;
    parameter [319:0] INITVAL_18 = 320'h0;
    parameter [319:0] INITVAL_19 = 320'h0;
    parameter [319:0] INITVAL_1A = 320'h0;
    parameter [319:0] INITVAL_1B = 320'h0;
    parameter [319:0] INITVAL_1C = 320'h0;
    parameter [319:0] INITVAL_1D = 320'h0;
    parameter [319:0] INITVAL_1E = 320'h0;
    parameter [319:0] INITVAL_1F = 320'h0;
    parameter [319:0] INITVAL_20 = 320'h0;
    parameter [319:0] INITVAL_21 = 320'h0;
    parameter [319:0] INITVAL_22 = 320'h0;
    parameter [319:0] INITVAL_23 = 320'h0;
    parameter [319:0] INITVAL_24 = 320'h0;
    parameter [319:0] INITVAL_25 = 320'h0;
    parameter [319:0] INITVAL_26 = 320'h0;
    parameter [319:0] INITVAL_27 = 320'h0;
    parameter [319:0] INITVAL_28 = 320'h0;
    parameter [319:0] INITVAL_29 = 320'h0;
    parameter [319:0] INITVAL_2A = 320'h0;
    parameter [319:0] INITVAL_2B = 320'h0;
    parameter [319:0] INITVAL_2C = 320'h0;
    parameter [319:0] INITVAL_2D = 320'h0;
    parameter [319:0] INITVAL_2E = 320'h0;
    parameter [319:0] INITVAL_2F = 320'h0;
    parameter [319:0] INITVAL_30 = 320'h0;
    parameter [319:0] INITVAL_31 = 320'h0;
    parameter [319:0] INITVAL_32 = 320'h0;
    parameter [319:0] INITVAL_33 = 320'h0;
    parameter [319:0] INITVAL_34 = 320'h0;
    parameter [319:0] INITVAL_35 = 320'h0;
    parameter [319:0] INITVAL_36 = 320'h0;
    parameter [319:0] INITVAL_37 = 320'h0;
    parameter [319:0] INITVAL_38 = 320'h0;
    parameter [319:0] INITVAL_39 = 320'h0;
    parameter [319:0] INITVAL_3A = 320'h0;
    parameter [319:0] INITVAL_3B = 320'h0;
    parameter [319:0] INITVAL_3C = 320'h0;
    parameter [319:0] INITVAL_3D = 320'h0;
    parameter [319:0] INITVAL_3E = 320'h0;
    parameter [319:0] INITVAL_3F = 320'h0;

    wire [17:0] dia = {DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9, DIA8, DIA7, DIA6, DIA5, DIA4, DIA3, DIA2, DIA1, DIA0};
    wire [17:0] dib = {DIB17, DIB16, DIB15, DIB14, DIB13, DIB12, DIB11, DIB10, DIB9, DIB8, DIB7, DIB6, DIB5, DIB4, DIB3, DIB2, DIB1, DIB0};
    wire [13:0] ada = {ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5, ADA4, ADA3, ADA2, ADA1, ADA0};
    wire [13:0] adb = {ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4, ADB3, ADB2, ADB1, ADB0};
    reg  [17:0] lat_a, lat_b, reg_a, reg_b;
    reg         mem [0:18431];
    integer     i;

    function integer shift_of(input integer w);
        shift_of = (w == 18) ? 4 : (w == 9) ? 3 : (w == 4) ? 2 : (w == 2) ? 1 : 0;
    endfunction
    function [2:0] csval(input [39:0] s);     // "0bxyz"
        csval = {s[16], s[8], s[0]};
    endfunction
    localparam WA = DATA_WIDTH_A, WB = DATA_WIDTH_B;
    wire [13:0] wa = ada >> shift_of(WA);
    wire [13:0] wb = adb >> shift_of(WB);
    wire sel_a = CEA && ({CSA2, CSA1, CSA0} == csval(CSDECODE_A));
    wire sel_b = CEB && ({CSB2, CSB1, CSB0} == csval(CSDECODE_B));
    // bit j of port data is written when: x18: its byte enable; else always
    function ben(input integer w, input [13:0] ad, input integer j);
        ben = (w == 18) ? ((j < 9) ? ad[0] : ad[1]) : 1'b1;
    endfunction

    function [319:0] initval(input integer k);
        case (k)
        0: initval = INITVAL_00;
        1: initval = INITVAL_01;
        2: initval = INITVAL_02;
        3: initval = INITVAL_03;
        4: initval = INITVAL_04;
        5: initval = INITVAL_05;
        6: initval = INITVAL_06;
        7: initval = INITVAL_07;
        8: initval = INITVAL_08;
        9: initval = INITVAL_09;
        10: initval = INITVAL_0A;
        11: initval = INITVAL_0B;
        12: initval = INITVAL_0C;
        13: initval = INITVAL_0D;
        14: initval = INITVAL_0E;
        15: initval = INITVAL_0F;
        16: initval = INITVAL_10;
        17: initval = INITVAL_11;
        18: initval = INITVAL_12;
        19: initval = INITVAL_13;
        20: initval = INITVAL_14;
        21: initval = INITVAL_15;
        22: initval = INITVAL_16;
        23: initval = INITVAL_17;
        24: initval = INITVAL_18;
        25: initval = INITVAL_19;
        26: initval = INITVAL_1A;
        27: initval = INITVAL_1B;
        28: initval = INITVAL_1C;
        29: initval = INITVAL_1D;
        30: initval = INITVAL_1E;
        31: initval = INITVAL_1F;
        32: initval = INITVAL_20;
        33: initval = INITVAL_21;
        34: initval = INITVAL_22;
        35: initval = INITVAL_23;
        36: initval = INITVAL_24;
        37: initval = INITVAL_25;
        38: initval = INITVAL_26;
        39: initval = INITVAL_27;
        40: initval = INITVAL_28;
        41: initval = INITVAL_29;
        42: initval = INITVAL_2A;
        43: initval = INITVAL_2B;
        44: initval = INITVAL_2C;
        45: initval = INITVAL_2D;
        46: initval = INITVAL_2E;
        47: initval = INITVAL_2F;
        48: initval = INITVAL_30;
        49: initval = INITVAL_31;
        50: initval = INITVAL_32;
        51: initval = INITVAL_33;
        52: initval = INITVAL_34;
        53: initval = INITVAL_35;
        54: initval = INITVAL_36;
        55: initval = INITVAL_37;
        56: initval = INITVAL_38;
        57: initval = INITVAL_39;
        58: initval = INITVAL_3A;
        59: initval = INITVAL_3B;
        60: initval = INITVAL_3C;
        61: initval = INITVAL_3D;
        62: initval = INITVAL_3E;
        63: initval = INITVAL_3F;
        default: initval = 320'h0;
        endcase
    endfunction
    reg [319:0] iv;
    integer     iv_i, iv_w, iv_b;

    initial begin
        for (i = 0; i < 18432; i = i + 1) mem[i] = 1'b0;
        lat_a = 18'd0; lat_b = 18'd0; reg_a = 18'd0; reg_b = 18'd0;
        // INITVAL_xx holds the 16 words of 18 bits from word 16 * xx of the x18 layout, each in
        // a 20-bit field (bits 18 and 19 unused)
        for (iv_i = 0; iv_i < 64; iv_i = iv_i + 1) begin
            iv = initval(iv_i);
            for (iv_w = 0; iv_w < 16; iv_w = iv_w + 1) begin
                for (iv_b = 0; iv_b < 18; iv_b = iv_b + 1)
                    mem[(iv_i * 16 + iv_w) * 18 + iv_b] = iv[iv_w * 20 + iv_b];
                if (iv[iv_w * 20 + 18 +: 2] != 2'b00)
                    $display("ERROR: DP16KD %m: INITVAL_%02h has a bit set outside the 18-bit words", iv_i);
            end
        end
        if (!((WA == 18 || WA == 9 || WA == 4 || WA == 2 || WA == 1) &&
              (WB == 18 || WB == 9 || WB == 4 || WB == 2 || WB == 1)))
            $display("ERROR: DP16KD %m: unsupported DATA_WIDTH %0d/%0d", WA, WB);
        if (CLKAMUX != "CLKA" || CLKBMUX != "CLKB" || RESETMODE != "SYNC")
            $display("ERROR: DP16KD %m: inverted clocks or asynchronous reset are not modelled");
    end

    reg [17:0] old_a, old_b, new_a, new_b;
    reg        we_a, we_b, coll_a, coll_b;
    integer    j;
    always @(posedge CLKA) begin
        we_a = sel_a && WEA;
        we_b = sel_b && WEB;
        // current contents, and the contents after this edge's writes
        old_a = 18'd0; old_b = 18'd0;
        for (j = 0; j < 18; j = j + 1) begin
            if (j < WA) old_a[j] = mem[wa * WA + j];
            if (j < WB) old_b[j] = mem[wb * WB + j];
        end
        new_a = old_a; new_b = old_b;
        coll_a = 1'b0; coll_b = 1'b0;
        for (j = 0; j < 18; j = j + 1) begin
            if (j < WA && we_a && ben(WA, ada, j)) new_a[j] = dia[j];
            if (j < WB && we_b && ben(WB, adb, j)) new_b[j] = dib[j];
        end
        // a read of a word the other port writes now is undefined
        if (wa * WA < wb * WB + WB && wb * WB < wa * WA + WA) begin
            coll_a = we_b;
            coll_b = we_a;
        end
        // output registers take the latch before this edge
        if (RSTA) reg_a <= 18'd0; else if (OCEA) reg_a <= lat_a;
        if (RSTB) reg_b <= 18'd0; else if (OCEB) reg_b <= lat_b;
        if (RSTA) lat_a <= 18'd0;
        else if (sel_a) begin
            if (!WEA) lat_a <= coll_a ? {18{1'bx}} : old_a;
            else if (WRITEMODE_A == "WRITETHROUGH") lat_a <= new_a;
            else if (WRITEMODE_A == "READBEFOREWRITE") lat_a <= coll_a ? {18{1'bx}} : old_a;
        end
        if (RSTB) lat_b <= 18'd0;
        else if (sel_b) begin
            if (!WEB) lat_b <= coll_b ? {18{1'bx}} : old_b;
            else if (WRITEMODE_B == "WRITETHROUGH") lat_b <= new_b;
            else if (WRITEMODE_B == "READBEFOREWRITE") lat_b <= coll_b ? {18{1'bx}} : old_b;
        end
        for (j = 0; j < 18; j = j + 1) begin
            if (j < WA && we_a && ben(WA, ada, j)) mem[wa * WA + j] <= dia[j];
            if (j < WB && we_b && ben(WB, adb, j)) mem[wb * WB + j] <= dib[j];
        end
    end
    wire [17:0] do_a = (REGMODE_A == "OUTREG") ? reg_a : lat_a;
    wire [17:0] do_b = (REGMODE_B == "OUTREG") ? reg_b : lat_b;
    assign {DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9, DOA8, DOA7, DOA6, DOA5, DOA4, DOA3, DOA2, DOA1, DOA0} = do_a;
    assign {DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6, DOB5, DOB4, DOB3, DOB2, DOB1, DOB0} = do_b;
endmodule
