// One registered copy of the core reset for one region of the design. The reset comes from a
// single flip-flop at the board top and fans out to thousands of flip-flops; a copy per region
// makes the long trip one flip-flop-to-flip-flop hop and keeps each copy's fan-out local.
// keep_hierarchy stops yosys from merging the identical copies back into one flip-flop.
// Every copy delays the reset by the same one cycle, so all regions leave reset together.
`timescale 1ns / 1ps
`default_nettype none
(* keep_hierarchy *)
module wccp_rst_buf (
    input  wire clk,
    input  wire d,
    output reg  q
);
    initial q = 1'b1;            // in reset from configuration until the first clock edges
    always @(posedge clk) q <= d;
endmodule
`default_nettype wire
