// Round-robin arbiter of N requesters (2 or 3: the two builders, and the packet-out sender of
// wccp_probe): a grant is held while the owner keeps requesting (a source requests its egress
// port for exactly one frame); when it is released, the next requester after the last owner
// (in index order, cyclically) gets the next grant.
`timescale 1ns / 1ps
`default_nettype none
module wccp_arbiter #(
    parameter N = 2,
    parameter GW = (N > 2) ? 2 : 1
) (
    input  wire          clk,
    input  wire          rst,
    input  wire [N-1:0]  req,
    output reg           grant_valid,
    output reg  [GW-1:0] grant
);
    reg [GW-1:0] last;
    // the first requester after last, cyclically (the loop's last hit is the nearest one)
    reg [GW-1:0] pick;
    reg [GW:0]   idx;
    integer i;
    always @(*) begin
        pick = {GW{1'b0}};
        for (i = N; i >= 1; i = i - 1) begin
            idx = {1'b0, last} + i[GW:0];
            if (idx >= N[GW:0]) idx = idx - N[GW:0];
            if (req[idx[GW-1:0]]) pick = idx[GW-1:0];
        end
    end
    always @(posedge clk) begin
        if (rst) begin
            grant_valid <= 1'b0;
            grant <= {GW{1'b0}};
            last <= N[GW-1:0] - 1'b1;
        end else if (grant_valid) begin
            if (!req[grant]) begin
                grant_valid <= 1'b0;
                last <= grant;
            end
        end else if (req != {N{1'b0}}) begin
            grant_valid <= 1'b1;
            grant <= pick;
        end
    end
endmodule
`default_nettype wire
