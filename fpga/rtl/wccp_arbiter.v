// Two-requester round-robin arbiter: a grant is held while the owner keeps requesting
// (a builder requests its egress port for exactly one frame).
`timescale 1ns / 1ps
`default_nettype none
module wccp_arbiter (
    input  wire       clk,
    input  wire       rst,
    input  wire [1:0] req,
    output reg        grant_valid,
    output reg        grant
);
    reg last;
    always @(posedge clk) begin
        if (rst) begin
            grant_valid <= 1'b0;
            grant <= 1'b0;
            last <= 1'b1;
        end else if (grant_valid) begin
            if (!req[grant]) begin
                grant_valid <= 1'b0;
                last <= grant;
            end
        end else if (req != 2'b00) begin
            grant_valid <= 1'b1;
            if (req[0] && req[1]) grant <= ~last;
            else grant <= req[1];
        end
    end
endmodule
`default_nettype wire
