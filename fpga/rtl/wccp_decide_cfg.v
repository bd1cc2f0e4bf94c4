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
    output reg  [55:0]  cnt,         // scan entries minus one: slot 0, then slots 7 .. 1
    output reg  [15:0]  mtu_r,
    output reg  [19:0]  rid_sum,     // the constant part of the GRE outer checksum
    output reg  [7:0]   hsel,        // the slot's assignment is hash
    output reg  [7:0]   msel,        // the slot's assignment is mask, with mask sets
    output reg  [31:0]  hkf,         // slot*4: the slot's primary hash key flags
    output reg  [7:0]   psel,        // the slot hashes with the Pearson hash (GROUP_FLAGS_PEARSON)
    output reg  [7:0]   acl,         // the slot has a redirect-list (NUM_ACL != 0)
    output reg  [31:0]  nacl         // slot*4: NUM_ACL, values above 8 as 8
);
    // entries of a slot that take part in the scan, minus one, 7 bits: min(n, 32) - 1, all
    // ones (bit 6 set) for none
    function [6:0] nm1;
        input [5:0] n;
        nm1 = n[5] ? 7'd31 : ({1'b0, n} - 7'd1);
    endfunction
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
        cnt <= {nm1(grp_ctrl[16 +: 6]),
                nm1(grp_ctrl[7*32+16 +: 6]), nm1(grp_ctrl[6*32+16 +: 6]),
                nm1(grp_ctrl[5*32+16 +: 6]), nm1(grp_ctrl[4*32+16 +: 6]),
                nm1(grp_ctrl[3*32+16 +: 6]), nm1(grp_ctrl[2*32+16 +: 6]),
                nm1(grp_ctrl[1*32+16 +: 6])};
        mtu_r <= mtu;
        rid_add <= {1'b0, router_id[31:16]} + {1'b0, router_id[15:0]};
        rid_sum <= 20'h0C52F + {3'd0, rid_add};
    end
endmodule
`default_nettype wire

