`timescale 1ns / 1ps
`default_nettype none
// Registers of the decision core (wccp_decide) that depend on the configuration only
// (keep_hierarchy: kept together, next to their readers); the configuration is stable while
// a frame is decided.
(* keep_hierarchy *)
module wccp_decide_cfg (
    input  wire         clk,
    input  wire [255:0] grp_ctrl,
    input  wire [255:0] grp_svc,
    input  wire [255:0] grp_flags,
    input  wire [15:0]  mtu,
    input  wire [31:0]  router_id,
    output reg  [63:0]  svp,         // slot*8: the slot's protocol
    output reg  [7:0]   pr0,         // the slot's protocol is 0 (any)
    output reg  [7:0]   needp,       // the slot matches ports (TCP or UDP, ports defined)
    output reg  [15:0]  mtu_r,
    output reg  [19:0]  rid_sum,     // the constant part of the GRE outer checksum
    output reg  [7:0]   hsel,        // the slot's assignment is hash
    output reg  [7:0]   msel,        // the slot's assignment is mask, with mask sets
    output reg  [31:0]  hkf,         // slot*4: the slot's primary hash key flags
    output reg  [7:0]   psel,        // the slot hashes with the Pearson hash (GROUP_FLAGS_PEARSON)
    output reg  [7:0]   acl,         // the slot has a redirect-list (NUM_ACL != 0)
    output reg  [31:0]  nacl         // slot*4: NUM_ACL, values above 8 as 8
);
    reg [16:0] rid_add;
    integer s;
    always @(posedge clk) begin
        for (s = 0; s < 8; s = s + 1) begin
            svp[s*8 +: 8] <= grp_svc[s*32+24 +: 8];
            pr0[s] <= (svp[s*8 +: 8] == 8'd0);
            needp[s] <= (svp[s*8 +: 8] == 8'd6 || svp[s*8 +: 8] == 8'd17) && grp_flags[s*32 + 4];
            hsel[s] <= (grp_ctrl[s*32+1 +: 2] == 2'd1);
            msel[s] <= (grp_ctrl[s*32+1 +: 2] == 2'd2) && (grp_ctrl[s*32+8 +: 3] != 3'd0);
            hkf[s*4 +: 4] <= grp_flags[s*32 +: 4];
            psel[s] <= grp_flags[s*32 + 16];
            acl[s] <= grp_ctrl[s*32+24 +: 4] != 4'd0;
            nacl[s*4 +: 4] <= grp_ctrl[s*32+27] ? 4'd8 : grp_ctrl[s*32+24 +: 4];
        end
        mtu_r <= mtu;
        rid_add <= {1'b0, router_id[31:16]} + {1'b0, router_id[15:0]};
        rid_sum <= 20'h0C52F + {3'd0, rid_add};
    end
endmodule
`default_nettype wire

