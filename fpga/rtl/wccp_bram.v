// Block RAM with registered outputs: port A reads and writes, port B reads; read data is
// valid 2 cycles after the address (the address is registered by the RAM, the data by the
// RAM's output register). A write on port A leaves port A's read data unchanged (the
// block RAM's NORMAL write mode). INIT gives the initial contents (a ROM: wccp_pearson_rom).
// Port B reading the word that port A writes in the same
// cycle gets undefined data (X in simulation): callers avoid or resolve that collision.
//
// Synthesis (yosys defines SYNTHESIS; simulation can define WCCP_ECP5_BRAM) instantiates
// ECP5 DP16KD tiles with REGMODE="OUTREG": yosys' own memory mapping never uses the
// output register, and the 5.8 ns clock-to-out of an unregistered DP16KD plus the route to
// the first flip-flop alone broke the 125 MHz core clock. With the register the clock-to-out
// is about 1 ns. Widths: 1024 x 18 (AW <= 10), 2048 x 9 (11), 4096 x 4 (12); several tiles
// side by side for wider words. Pins follow yosys' brams_map_16kd.v: the word address sits
// in AD[13:4] / AD[13:3] / AD[13:2], and in x18 mode AD[1:0] are the two byte-write enables.
// fpga/tb/ecp5_sim.v models DP16KD; fpga/tb/wccp_bram checks that model against yosys'
// own DP16KD mapping and this wrapper against the behavioural branch below.
`timescale 1ns / 1ps
`default_nettype none
`ifdef SYNTHESIS
`define WCCP_BRAM_PRIM
`endif
`ifdef WCCP_ECP5_BRAM
`define WCCP_BRAM_PRIM
`endif
module wccp_bram #(
    parameter AW = 8,            // 2 .. 12
    parameter DW = 8,
    // initial contents, word w at bits w * DW; only AW <= 10 may have non-zero ones
    parameter [(1 << AW) * DW - 1:0] INIT = 0
) (
    input  wire          clk,
    input  wire          a_we,
    input  wire [AW-1:0] a_addr,
    input  wire [DW-1:0] a_wdata,
    output wire [DW-1:0] a_rdata,
    input  wire [AW-1:0] b_addr,
    output wire [DW-1:0] b_rdata
);
`ifdef WCCP_BRAM_PRIM
    localparam W  = (AW <= 10) ? 18 : (AW == 11) ? 9 : 4;
    localparam SH = (AW <= 10) ? 4 : (AW == 11) ? 3 : 2;
    localparam NT = (DW + W - 1) / W;
    wire [13:0] a14 = {{(14 - AW){1'b0}}, a_addr};
    wire [13:0] b14 = {{(14 - AW){1'b0}}, b_addr};
    // x18: both byte enables on for port A's writes (port B never writes)
    wire [13:0] ada = (a14 << SH) | ((W == 18) ? 14'd3 : 14'd0);
    wire [13:0] adb = b14 << SH;
    // INITVAL_k of tile t: the x18 words 16k .. 16k + 15, word i at bits 20 * i (18 of each
    // 20), its bit j the word's bit t * 18 + j (the layout of yosys' own mapping)
    function [319:0] initval;
        input integer t;
        input integer k;
        integer i, b;
        begin
            initval = 320'd0;
            for (i = 0; i < 16; i = i + 1)
                for (b = 0; b < 18; b = b + 1)
                    if (k * 16 + i < (1 << AW) && t * 18 + b < DW)
                        initval[i * 20 + b] = INIT[(k * 16 + i) * DW + t * 18 + b];
        end
    endfunction
    genvar t, j;
    generate
        if (AW < 2 || AW > 12) begin : g_bad_aw
            // no tile shape for this depth: fail elaboration instead of aliasing addresses
            wccp_bram_aw_must_be_2_to_12 unsupported ();
        end
        if (AW > 10 && |INIT) begin : g_bad_init
            // initial contents are written for the x18 tiles only
            wccp_bram_init_needs_aw_10_or_less unsupported ();
        end
        for (t = 0; t < NT; t = t + 1) begin : g_tile
            wire [17:0] di;
            /* verilator lint_off UNUSEDSIGNAL */
            wire [17:0] doa, dob;       // bits above the tile width (and the word) are unused
            /* verilator lint_on UNUSEDSIGNAL */
            for (j = 0; j < 18; j = j + 1) begin : g_bit
                if (j < W && t * W + j < DW) begin : g_used
                    assign di[j] = a_wdata[t * W + j];
                    assign a_rdata[t * W + j] = doa[j];
                    assign b_rdata[t * W + j] = dob[j];
                end else begin : g_pad
                    assign di[j] = 1'b0;
                end
            end
            DP16KD #(
                .DATA_WIDTH_A(W), .DATA_WIDTH_B(W),
                .REGMODE_A("OUTREG"), .REGMODE_B("OUTREG"),
                .RESETMODE("SYNC"), .ASYNC_RESET_RELEASE("SYNC"),
                .CSDECODE_A("0b000"), .CSDECODE_B("0b000"),
                .WRITEMODE_A("NORMAL"), .WRITEMODE_B("NORMAL"),
                .GSR("AUTO"),
                .INITVAL_00(initval(t, 0)), .INITVAL_01(initval(t, 1)), .INITVAL_02(initval(t, 2)), .INITVAL_03(initval(t, 3)),
                .INITVAL_04(initval(t, 4)), .INITVAL_05(initval(t, 5)), .INITVAL_06(initval(t, 6)), .INITVAL_07(initval(t, 7)),
                .INITVAL_08(initval(t, 8)), .INITVAL_09(initval(t, 9)), .INITVAL_0A(initval(t, 10)), .INITVAL_0B(initval(t, 11)),
                .INITVAL_0C(initval(t, 12)), .INITVAL_0D(initval(t, 13)), .INITVAL_0E(initval(t, 14)), .INITVAL_0F(initval(t, 15)),
                .INITVAL_10(initval(t, 16)), .INITVAL_11(initval(t, 17)), .INITVAL_12(initval(t, 18)), .INITVAL_13(initval(t, 19)),
                .INITVAL_14(initval(t, 20)), .INITVAL_15(initval(t, 21)), .INITVAL_16(initval(t, 22)), .INITVAL_17(initval(t, 23)),
                .INITVAL_18(initval(t, 24)), .INITVAL_19(initval(t, 25)), .INITVAL_1A(initval(t, 26)), .INITVAL_1B(initval(t, 27)),
                .INITVAL_1C(initval(t, 28)), .INITVAL_1D(initval(t, 29)), .INITVAL_1E(initval(t, 30)), .INITVAL_1F(initval(t, 31)),
                .INITVAL_20(initval(t, 32)), .INITVAL_21(initval(t, 33)), .INITVAL_22(initval(t, 34)), .INITVAL_23(initval(t, 35)),
                .INITVAL_24(initval(t, 36)), .INITVAL_25(initval(t, 37)), .INITVAL_26(initval(t, 38)), .INITVAL_27(initval(t, 39)),
                .INITVAL_28(initval(t, 40)), .INITVAL_29(initval(t, 41)), .INITVAL_2A(initval(t, 42)), .INITVAL_2B(initval(t, 43)),
                .INITVAL_2C(initval(t, 44)), .INITVAL_2D(initval(t, 45)), .INITVAL_2E(initval(t, 46)), .INITVAL_2F(initval(t, 47)),
                .INITVAL_30(initval(t, 48)), .INITVAL_31(initval(t, 49)), .INITVAL_32(initval(t, 50)), .INITVAL_33(initval(t, 51)),
                .INITVAL_34(initval(t, 52)), .INITVAL_35(initval(t, 53)), .INITVAL_36(initval(t, 54)), .INITVAL_37(initval(t, 55)),
                .INITVAL_38(initval(t, 56)), .INITVAL_39(initval(t, 57)), .INITVAL_3A(initval(t, 58)), .INITVAL_3B(initval(t, 59)),
                .INITVAL_3C(initval(t, 60)), .INITVAL_3D(initval(t, 61)), .INITVAL_3E(initval(t, 62)), .INITVAL_3F(initval(t, 63))
            ) ram (
                .CLKA(clk), .CEA(1'b1), .OCEA(1'b1), .WEA(a_we), .RSTA(1'b0),
                .CSA0(1'b0), .CSA1(1'b0), .CSA2(1'b0),
                .ADA0(ada[0]), .ADA1(ada[1]), .ADA2(ada[2]), .ADA3(ada[3]), .ADA4(ada[4]),
                .ADA5(ada[5]), .ADA6(ada[6]), .ADA7(ada[7]), .ADA8(ada[8]), .ADA9(ada[9]),
                .ADA10(ada[10]), .ADA11(ada[11]), .ADA12(ada[12]), .ADA13(ada[13]),
                .DIA0(di[0]), .DIA1(di[1]), .DIA2(di[2]), .DIA3(di[3]), .DIA4(di[4]), .DIA5(di[5]),
                .DIA6(di[6]), .DIA7(di[7]), .DIA8(di[8]), .DIA9(di[9]), .DIA10(di[10]),
                .DIA11(di[11]), .DIA12(di[12]), .DIA13(di[13]), .DIA14(di[14]), .DIA15(di[15]),
                .DIA16(di[16]), .DIA17(di[17]),
                .DOA0(doa[0]), .DOA1(doa[1]), .DOA2(doa[2]), .DOA3(doa[3]), .DOA4(doa[4]),
                .DOA5(doa[5]), .DOA6(doa[6]), .DOA7(doa[7]), .DOA8(doa[8]), .DOA9(doa[9]),
                .DOA10(doa[10]), .DOA11(doa[11]), .DOA12(doa[12]), .DOA13(doa[13]),
                .DOA14(doa[14]), .DOA15(doa[15]), .DOA16(doa[16]), .DOA17(doa[17]),
                .CLKB(clk), .CEB(1'b1), .OCEB(1'b1), .WEB(1'b0), .RSTB(1'b0),
                .CSB0(1'b0), .CSB1(1'b0), .CSB2(1'b0),
                .ADB0(adb[0]), .ADB1(adb[1]), .ADB2(adb[2]), .ADB3(adb[3]), .ADB4(adb[4]),
                .ADB5(adb[5]), .ADB6(adb[6]), .ADB7(adb[7]), .ADB8(adb[8]), .ADB9(adb[9]),
                .ADB10(adb[10]), .ADB11(adb[11]), .ADB12(adb[12]), .ADB13(adb[13]),
                .DIB0(1'b0), .DIB1(1'b0), .DIB2(1'b0), .DIB3(1'b0), .DIB4(1'b0), .DIB5(1'b0),
                .DIB6(1'b0), .DIB7(1'b0), .DIB8(1'b0), .DIB9(1'b0), .DIB10(1'b0), .DIB11(1'b0),
                .DIB12(1'b0), .DIB13(1'b0), .DIB14(1'b0), .DIB15(1'b0), .DIB16(1'b0), .DIB17(1'b0),
                .DOB0(dob[0]), .DOB1(dob[1]), .DOB2(dob[2]), .DOB3(dob[3]), .DOB4(dob[4]),
                .DOB5(dob[5]), .DOB6(dob[6]), .DOB7(dob[7]), .DOB8(dob[8]), .DOB9(dob[9]),
                .DOB10(dob[10]), .DOB11(dob[11]), .DOB12(dob[12]), .DOB13(dob[13]),
                .DOB14(dob[14]), .DOB15(dob[15]), .DOB16(dob[16]), .DOB17(dob[17])
            );
        end
    endgenerate
`else
    // behavioural model of the same timing (simulation)
    reg [DW-1:0] mem [0:(1 << AW) - 1];
    reg [DW-1:0] aq, aq2, bq, bq2;
    integer i;
    initial begin
        for (i = 0; i < (1 << AW); i = i + 1) mem[i] = INIT[i * DW +: DW];
        aq = {DW{1'b0}}; aq2 = {DW{1'b0}}; bq = {DW{1'b0}}; bq2 = {DW{1'b0}};
    end
    always @(posedge clk) begin
        if (a_we) mem[a_addr] <= a_wdata;
        else aq <= mem[a_addr];
        bq <= (a_we && a_addr == b_addr) ? {DW{1'bx}} : mem[b_addr];
        aq2 <= aq;
        bq2 <= bq;
    end
    assign a_rdata = aq2;
    assign b_rdata = bq2;
`endif
endmodule
`undef WCCP_BRAM_PRIM
`default_nettype wire
