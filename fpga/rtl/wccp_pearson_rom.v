// The RFC 3074 mixing table for wccp_decide's Pearson engine, in one block RAM: 512 x 8,
// words 0 .. 255 the table (hash = pearson_mix(hash ^ key byte)), words 256 .. 511 the
// identity (a step that leaves the hash as it is, for a key byte the hash skips). The word
// is on q 2 cycles after its address (wccp_bram: the RAM registers the address and its
// output register the data), so q comes from a flip-flop inside the RAM (about 1 ns
// clock-to-out) and the engine can feed q back into the next address through one LUT.
`timescale 1ns / 1ps
`default_nettype none
module wccp_pearson_rom (
    input  wire       clk,
    input  wire [8:0] addr,
    output wire [7:0] q
);
    `include "wccp_pearson.vh"

    function [4095:0] contents;
        input integer unused;
        integer a;
        begin
            contents = 4096'd0;
            for (a = 0; a < 512; a = a + 1)
                contents[a * 8 +: 8] = (a >= 256) ? a[7:0] : pearson_mix(a[7:0]);
        end
    endfunction

    /* verilator lint_off UNUSEDSIGNAL */
    wire [7:0] b_unused;
    /* verilator lint_on UNUSEDSIGNAL */
    wccp_bram #(.AW(9), .DW(8), .INIT(contents(0))) ram (
        .clk(clk), .a_we(1'b0), .a_addr(addr), .a_wdata(8'd0), .a_rdata(q),
        .b_addr(9'd0), .b_rdata(b_unused));
endmodule
`default_nettype wire
