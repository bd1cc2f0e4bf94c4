// Reset synchroniser: asserts the reset at once (asynchronously, so a PLL that loses lock or a
// pressed reset button stops the logic even without a running clock) and releases it only on
// a clock edge, after STAGES flip-flops, so every flip-flop the reset feeds leaves reset in the
// same cycle and none sees the release inside its recovery window.
// arst (active high): e.g. ~pll_locked | button. rst: the synchronised reset, high from
// configuration until STAGES rising edges of clk after arst has fallen.
`timescale 1ns / 1ps
`default_nettype none
module wccp_rst_sync #(
    parameter integer STAGES = 3            // >= 2: the first flip-flop may go metastable
) (
    input  wire clk,
    input  wire arst,
    output wire rst
);
    (* async_reg = "true" *) reg [STAGES-1:0] chain;
    initial chain = {STAGES{1'b1}};
    always @(posedge clk or posedge arst) begin
        if (arst)
            chain <= {STAGES{1'b1}};
        else
            chain <= {chain[STAGES-2:0], 1'b0};
    end
    assign rst = chain[STAGES-1];
endmodule
`default_nettype wire
