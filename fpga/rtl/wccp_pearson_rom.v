// The RFC 3074 mixing table for wccp_decide's Pearson engine, in one block RAM: 512 x 8,
// words 0 .. 255 the table (hash = pearson_mix(hash ^ key byte)), words 256 .. 511 the
// identity (a step that leaves the hash as it is, for a key byte the hash skips). The word
// is on q 2 cycles after its address: the RAM registers the address and its output
// register the data, so q comes from a flip-flop inside the RAM (about 1 ns clock-to-out)
// and the engine can feed q back into the next address through one LUT.
//
// Synthesis (yosys defines SYNTHESIS; simulation can define WCCP_ECP5_BRAM) instantiates one
// ECP5 DP16KD in the x18 mode with REGMODE_A = "OUTREG" (yosys' own memory mapping never
// uses the output register) and the contents in INITVAL_00 .. INITVAL_1F: each INITVAL holds
// 16 words, word w of the tile at bits (w mod 16) * 20 of INITVAL (w / 16), 18 bits of a
// 20-bit field. fpga/tb/wccp_pearson_rom checks that encoding against yosys' own mapping of
// an initialised memory and against the behavioural branch below.
`timescale 1ns / 1ps
`default_nettype none
`ifdef SYNTHESIS
`define WCCP_PROM_PRIM
`endif
`ifdef WCCP_ECP5_BRAM
`define WCCP_PROM_PRIM
`endif
module wccp_pearson_rom (
    input  wire       clk,
    input  wire [8:0] addr,
    output wire [7:0] q
);
    `include "wccp_pearson.vh"

    function [7:0] word;
        input integer a;
        word = (a >= 256) ? a[7:0] : pearson_mix(a[7:0]);
    endfunction

`ifdef WCCP_PROM_PRIM
    function [319:0] initval;
        input integer k;
        integer w;
        begin
            initval = 320'd0;
            for (w = 0; w < 16; w = w + 1)
                if (k * 16 + w < 512) initval[w * 20 +: 8] = word(k * 16 + w);
        end
    endfunction

    // x18: the word address in AD[13:4]; AD[1:0] (byte enables) only matter for writes
    wire [13:0] ad = {1'b0, addr, 4'b0000};
    /* verilator lint_off UNUSEDSIGNAL */
    wire [17:0] doa, dob;
    /* verilator lint_on UNUSEDSIGNAL */
    assign q = doa[7:0];
    DP16KD #(
        .DATA_WIDTH_A(18), .DATA_WIDTH_B(18),
        .REGMODE_A("OUTREG"), .REGMODE_B("NOREG"),
        .RESETMODE("SYNC"), .ASYNC_RESET_RELEASE("SYNC"),
        .CSDECODE_A("0b000"), .CSDECODE_B("0b000"),
        .WRITEMODE_A("NORMAL"), .WRITEMODE_B("NORMAL"),
        .GSR("AUTO"),
        .INITVAL_00(initval(0)), .INITVAL_01(initval(1)), .INITVAL_02(initval(2)),
        .INITVAL_03(initval(3)), .INITVAL_04(initval(4)), .INITVAL_05(initval(5)),
        .INITVAL_06(initval(6)), .INITVAL_07(initval(7)), .INITVAL_08(initval(8)),
        .INITVAL_09(initval(9)), .INITVAL_0A(initval(10)), .INITVAL_0B(initval(11)),
        .INITVAL_0C(initval(12)), .INITVAL_0D(initval(13)), .INITVAL_0E(initval(14)),
        .INITVAL_0F(initval(15)), .INITVAL_10(initval(16)), .INITVAL_11(initval(17)),
        .INITVAL_12(initval(18)), .INITVAL_13(initval(19)), .INITVAL_14(initval(20)),
        .INITVAL_15(initval(21)), .INITVAL_16(initval(22)), .INITVAL_17(initval(23)),
        .INITVAL_18(initval(24)), .INITVAL_19(initval(25)), .INITVAL_1A(initval(26)),
        .INITVAL_1B(initval(27)), .INITVAL_1C(initval(28)), .INITVAL_1D(initval(29)),
        .INITVAL_1E(initval(30)), .INITVAL_1F(initval(31))
    ) rom (
        .CLKA(clk), .CEA(1'b1), .OCEA(1'b1), .WEA(1'b0), .RSTA(1'b0),
        .CSA0(1'b0), .CSA1(1'b0), .CSA2(1'b0),
        .ADA0(ad[0]), .ADA1(ad[1]), .ADA2(ad[2]), .ADA3(ad[3]), .ADA4(ad[4]),
        .ADA5(ad[5]), .ADA6(ad[6]), .ADA7(ad[7]), .ADA8(ad[8]), .ADA9(ad[9]),
        .ADA10(ad[10]), .ADA11(ad[11]), .ADA12(ad[12]), .ADA13(ad[13]),
        .DIA0(1'b0), .DIA1(1'b0), .DIA2(1'b0), .DIA3(1'b0), .DIA4(1'b0), .DIA5(1'b0),
        .DIA6(1'b0), .DIA7(1'b0), .DIA8(1'b0), .DIA9(1'b0), .DIA10(1'b0), .DIA11(1'b0),
        .DIA12(1'b0), .DIA13(1'b0), .DIA14(1'b0), .DIA15(1'b0), .DIA16(1'b0), .DIA17(1'b0),
        .DOA0(doa[0]), .DOA1(doa[1]), .DOA2(doa[2]), .DOA3(doa[3]), .DOA4(doa[4]),
        .DOA5(doa[5]), .DOA6(doa[6]), .DOA7(doa[7]), .DOA8(doa[8]), .DOA9(doa[9]),
        .DOA10(doa[10]), .DOA11(doa[11]), .DOA12(doa[12]), .DOA13(doa[13]),
        .DOA14(doa[14]), .DOA15(doa[15]), .DOA16(doa[16]), .DOA17(doa[17]),
        .CLKB(clk), .CEB(1'b0), .OCEB(1'b0), .WEB(1'b0), .RSTB(1'b0),
        .CSB0(1'b0), .CSB1(1'b0), .CSB2(1'b0),
        .ADB0(1'b0), .ADB1(1'b0), .ADB2(1'b0), .ADB3(1'b0), .ADB4(1'b0), .ADB5(1'b0),
        .ADB6(1'b0), .ADB7(1'b0), .ADB8(1'b0), .ADB9(1'b0), .ADB10(1'b0), .ADB11(1'b0),
        .ADB12(1'b0), .ADB13(1'b0),
        .DIB0(1'b0), .DIB1(1'b0), .DIB2(1'b0), .DIB3(1'b0), .DIB4(1'b0), .DIB5(1'b0),
        .DIB6(1'b0), .DIB7(1'b0), .DIB8(1'b0), .DIB9(1'b0), .DIB10(1'b0), .DIB11(1'b0),
        .DIB12(1'b0), .DIB13(1'b0), .DIB14(1'b0), .DIB15(1'b0), .DIB16(1'b0), .DIB17(1'b0),
        .DOB0(dob[0]), .DOB1(dob[1]), .DOB2(dob[2]), .DOB3(dob[3]), .DOB4(dob[4]),
        .DOB5(dob[5]), .DOB6(dob[6]), .DOB7(dob[7]), .DOB8(dob[8]), .DOB9(dob[9]),
        .DOB10(dob[10]), .DOB11(dob[11]), .DOB12(dob[12]), .DOB13(dob[13]),
        .DOB14(dob[14]), .DOB15(dob[15]), .DOB16(dob[16]), .DOB17(dob[17])
    );
`else
    // behavioural model of the same timing (simulation)
    reg [7:0] mem [0:511];
    reg [7:0] q1, q2;
    integer i;
    initial begin
        for (i = 0; i < 512; i = i + 1) mem[i] = word(i);
        q1 = 8'd0; q2 = 8'd0;
    end
    always @(posedge clk) begin
        q1 <= mem[addr];
        q2 <= q1;
    end
    assign q = q2;
`endif
endmodule
`undef WCCP_PROM_PRIM
`default_nettype wire
