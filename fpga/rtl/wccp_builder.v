// Frame builder (one per receive port): for each action, streams
//   header bytes (built from the action's fields, act_hlen bytes) ++ rx buffer [start+src_off, +copy_len)
// towards the egress port, one byte per cycle, then releases the frame's buffer space.
`timescale 1ns / 1ps
`default_nettype none
module wccp_builder #(
    parameter BUF_AW = 12
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              act_valid,
    output reg               act_ready,
    input  wire              act_drop,
    input  wire              act_port,
    input  wire [BUF_AW-1:0] act_start,
    input  wire [10:0]       act_flen,
    input  wire [5:0]        act_hlen,
    input  wire [1:0]        act_kind,
    input  wire [47:0]       act_dmac,
    input  wire [47:0]       act_smac,
    input  wire              act_vlan,
    input  wire [15:0]       act_tci,
    input  wire [15:0]       act_tl,
    input  wire [15:0]       act_csum,
    input  wire [31:0]       act_rid,
    input  wire [31:0]       act_cip,
    input  wire [31:0]       act_rh,
    input  wire [10:0]       act_src_off,
    input  wire [10:0]       act_copy_len,
    // rx buffer read port (1-cycle latency)
    output wire [BUF_AW-1:0] buf_raddr,
    input  wire [7:0]        buf_rdata,
    output reg  [BUF_AW-1:0] rel_ptr,      // everything before this is free
    // output towards the egress arbiter
    output reg  [1:0]        req,          // one-hot egress request
    output wire [7:0]        m_data,
    output wire              m_valid,
    output wire              m_last,
    input  wire              m_ready
);
    localparam DEPTH = 8;
    reg [8:0] fifo [0:DEPTH-1];     // {last, data}
    reg [2:0] wp, rp;
    reg [3:0] cnt;                  // bytes in FIFO

    reg        run;
    reg [11:0] k;
    // header fields of the current frame
    reg [47:0] h_dmac, h_smac;
    reg        h_vlan;
    reg [15:0] h_tci, h_tl, h_csum;
    reg [31:0] h_rid, h_cip, h_rh;
    // header byte hk (6-bit header index; timing: no arithmetic before the table)
    reg  [5:0]  hk;
    // untagged layout: byte i; tagged: bytes 12..15 are the tag, i >= 16 is untagged i - 4

    // header byte `idx` of the untagged / tagged layout
    function [7:0] hb;
        input       vl;
        input [5:0] idx;
        reg   [7:0] hb_n, hb_v;
        begin
        case (idx)
            6'd0: hb_n = h_dmac[47:40];
            6'd1: hb_n = h_dmac[39:32];
            6'd2: hb_n = h_dmac[31:24];
            6'd3: hb_n = h_dmac[23:16];
            6'd4: hb_n = h_dmac[15:8];
            6'd5: hb_n = h_dmac[7:0];
            6'd6: hb_n = h_smac[47:40];
            6'd7: hb_n = h_smac[39:32];
            6'd8: hb_n = h_smac[31:24];
            6'd9: hb_n = h_smac[23:16];
            6'd10: hb_n = h_smac[15:8];
            6'd11: hb_n = h_smac[7:0];
            6'd12: hb_n = 8'h08;
            6'd13: hb_n = 8'h00;
            6'd14: hb_n = 8'h45;
            6'd15: hb_n = 8'h00;
            6'd16: hb_n = h_tl[15:8];
            6'd17: hb_n = h_tl[7:0];
            6'd20: hb_n = 8'h40;
            6'd22: hb_n = 8'h40;
            6'd23: hb_n = 8'h2F;
            6'd24: hb_n = h_csum[15:8];
            6'd25: hb_n = h_csum[7:0];
            6'd26: hb_n = h_rid[31:24];
            6'd27: hb_n = h_rid[23:16];
            6'd28: hb_n = h_rid[15:8];
            6'd29: hb_n = h_rid[7:0];
            6'd30: hb_n = h_cip[31:24];
            6'd31: hb_n = h_cip[23:16];
            6'd32: hb_n = h_cip[15:8];
            6'd33: hb_n = h_cip[7:0];
            6'd36: hb_n = 8'h88;
            6'd37: hb_n = 8'h3E;
            6'd38: hb_n = h_rh[31:24];
            6'd39: hb_n = h_rh[23:16];
            6'd40: hb_n = h_rh[15:8];
            6'd41: hb_n = h_rh[7:0];
            default: hb_n = 8'h00;
            endcase
            case (idx)
            6'd0: hb_v = h_dmac[47:40];
            6'd1: hb_v = h_dmac[39:32];
            6'd2: hb_v = h_dmac[31:24];
            6'd3: hb_v = h_dmac[23:16];
            6'd4: hb_v = h_dmac[15:8];
            6'd5: hb_v = h_dmac[7:0];
            6'd6: hb_v = h_smac[47:40];
            6'd7: hb_v = h_smac[39:32];
            6'd8: hb_v = h_smac[31:24];
            6'd9: hb_v = h_smac[23:16];
            6'd10: hb_v = h_smac[15:8];
            6'd11: hb_v = h_smac[7:0];
            6'd12: hb_v = 8'h81;
            6'd13: hb_v = 8'h00;
            6'd14: hb_v = h_tci[15:8];
            6'd15: hb_v = h_tci[7:0];
            6'd16: hb_v = 8'h08;
            6'd17: hb_v = 8'h00;
            6'd18: hb_v = 8'h45;
            6'd19: hb_v = 8'h00;
            6'd20: hb_v = h_tl[15:8];
            6'd21: hb_v = h_tl[7:0];
            6'd24: hb_v = 8'h40;
            6'd26: hb_v = 8'h40;
            6'd27: hb_v = 8'h2F;
            6'd28: hb_v = h_csum[15:8];
            6'd29: hb_v = h_csum[7:0];
            6'd30: hb_v = h_rid[31:24];
            6'd31: hb_v = h_rid[23:16];
            6'd32: hb_v = h_rid[15:8];
            6'd33: hb_v = h_rid[7:0];
            6'd34: hb_v = h_cip[31:24];
            6'd35: hb_v = h_cip[23:16];
            6'd36: hb_v = h_cip[15:8];
            6'd37: hb_v = h_cip[7:0];
            6'd40: hb_v = 8'h88;
            6'd41: hb_v = 8'h3E;
            6'd42: hb_v = h_rh[31:24];
            6'd43: hb_v = h_rh[23:16];
            6'd44: hb_v = h_rh[15:8];
            6'd45: hb_v = h_rh[7:0];
            default: hb_v = 8'h00;
            endcase
        hb = vl ? hb_v : hb_n;
        end
    endfunction
    reg        in_hdr;          // next byte comes from the header
    reg [5:0]  hlast;           // hlen - 1
    reg [11:0] tlast;           // total - 1
    reg [BUF_AW-1:0] rd;            // next buffer address
    reg [BUF_AW-1:0] fend;          // end of frame in buffer

    // stage 1: header bytes of the 6 groups of 8 at hk[2:0] (then group hk[5:3] in stage 2)
    reg        s1_v, s1_hdr, s1_last;
    reg [2:0]  s1_g;
    reg [47:0] s1_grp;
    // stage 2: the byte that goes into the FIFO
    reg        s2_v, s2_last, s2_hdr;
    reg [7:0]  s2_hb;              // (the buffer's byte for stage 2 is in the block RAM's
                                   // output register: buf_rdata, 2 cycles after buf_raddr)
    // stage 3: both candidates registered again, chosen at the FIFO write
    reg        s3_v, s3_last, s3_hdr;
    reg [7:0]  s3_hb, s3_buf;
    // m_ready may come from a registered request (wccp_mac_tx through fpga_core): it can stay
    // high for two cycles after the last byte of a frame was popped. Nothing is popped then:
    // the next frame's first byte reaches the FIFO no earlier than 6 cycles after that pop
    // (accept, apply, issue, stages 1 to 3).
    wire pop  = m_valid && m_ready;
    // occ = cnt + s1_v + s2_v + s3_v, kept as its own counter (timing)
    reg  [3:0] occ;
    wire can_issue = run && (occ < DEPTH - 1);
    // accepted action, applied in the next cycle (ld)
    reg        ld, a_skip, a_port;
    reg        idle_r;
    reg [BUF_AW-1:0] a_start;
    reg [10:0] a_flen, a_src_off, a_copy;
    reg [5:0]  a_hlen;

    assign buf_raddr = rd;
    assign m_valid = (cnt != 4'd0);
    assign m_data  = fifo[rp][7:0];
    assign m_last  = fifo[rp][8];

    integer gi;
    always @(posedge clk) begin
        act_ready <= 1'b0;
        if (rst) begin
            wp <= 3'd0; rp <= 3'd0; cnt <= 4'd0; occ <= 4'd0; ld <= 1'b0;
            run <= 1'b0; s1_v <= 1'b0; s2_v <= 1'b0; s3_v <= 1'b0; req <= 2'b00;
            rel_ptr <= {BUF_AW{1'b0}};
            idle_r <= 1'b0;
            k <= 12'd0; tlast <= 12'd0; in_hdr <= 1'b0;
        end else begin
            // stage 2: write into FIFO
            if (s3_v) begin
                fifo[wp] <= {s3_last, s3_hdr ? s3_hb : s3_buf};
                wp <= wp + 3'd1;
            end
            cnt <= cnt + {3'd0, s3_v} - {3'd0, pop};
            s3_v <= s2_v;
            s3_last <= s2_last;
            s3_hdr <= s2_hdr;
            s3_hb <= s2_hb;
            s3_buf <= buf_rdata;
            occ <= occ + {3'd0, can_issue} - {3'd0, pop};
            if (pop) begin
                rp <= rp + 3'd1;
                if (m_last) begin
                    req <= 2'b00;
                    rel_ptr <= fend;
                end
            end
            // stage 1 -> 2
            s2_v <= s1_v;
            s2_last <= s1_last;
            s2_hdr <= s1_hdr;
            s2_hb <= s1_grp[s1_g*8 +: 8];
            // stage 0: issue
            s1_v <= 1'b0;
            if (can_issue) begin
                s1_v <= 1'b1;
                s1_last <= (k == tlast);
                s1_g <= hk[5:3];
                for (gi = 0; gi < 6; gi = gi + 1)
                    s1_grp[gi*8 +: 8] <= hb(h_vlan, {gi[2:0], hk[2:0]});
                if (in_hdr) begin
                    s1_hdr <= 1'b1;
                    hk <= hk + 6'd1;
                    if (hk == hlast) in_hdr <= 1'b0;
                end else begin
                    s1_hdr <= 1'b0;
                    rd <= rd + 1'b1;
                end
                k <= k + 12'd1;
                if (k == tlast) run <= 1'b0;
            end
            // accept a new action once the previous frame has been handed over completely;
            // the header fields are loaded now, the rest one cycle later from registers (timing)
            ld <= 1'b0;
            // idle: nothing running or in flight (registered: a builder that was idle in the
            // last cycle and accepted nothing then is still idle, nothing else starts work)
            idle_r <= !run && !ld && !act_ready && req == 2'b00 && !s1_v && !s2_v && !s3_v && cnt == 4'd0;
            if (idle_r && !ld && !act_ready && act_valid) begin
                act_ready <= 1'b1;
                ld <= 1'b1;
                a_skip <= act_drop || (act_copy_len == 11'd0 && act_hlen == 6'd0);
                a_start <= act_start;
                a_flen <= act_flen;
                a_src_off <= act_src_off;
                a_hlen <= act_hlen;
                a_copy <= act_copy_len;
                a_port <= act_port;
                h_dmac <= act_dmac;
                h_smac <= act_smac;
                h_vlan <= act_vlan && (act_kind == 2'd2 || act_kind == 2'd3);
                h_tci <= act_tci;
                h_tl <= act_tl;
                h_csum <= act_csum;
                h_rid <= act_rid;
                h_cip <= act_cip;
                h_rh <= act_rh;
            end
            if (ld) begin
                if (a_skip) begin
                    rel_ptr <= a_start + {{(BUF_AW-11){1'b0}}, a_flen};
                end else begin
                    run <= 1'b1;
                    k <= 12'd0;
                    tlast <= {6'd0, a_hlen} + {1'b0, a_copy} - 12'd1;
                    hk <= 6'd0;
                    hlast <= a_hlen - 6'd1;
                    in_hdr <= (a_hlen != 6'd0);
                    rd <= a_start + {{(BUF_AW-11){1'b0}}, a_src_off};
                    fend <= a_start + {{(BUF_AW-11){1'b0}}, a_flen};
                    req <= a_port ? 2'b10 : 2'b01;
                end
            end
        end
    end
endmodule
`default_nettype wire
