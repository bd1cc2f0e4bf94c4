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
    // FIFO fill (0..7) as a thermometer code: c_th[i] = more than i bytes (timing)
    reg [DEPTH-2:0] c_th;

    // ---- the offered action, loaded in every idle cycle (ld_en = idle_r, and no accept in the
    // cycle before): the accepted action's fields are loaded with the accept and stay until
    // the frame is handed over (no enable from the accept condition; timing) ----
    reg              ld_en;
    reg              a_drop, a_port, a_vl;
    reg              a_h0, a_h1, a_c0, a_c1;    // header length 0 / 1, copy length 0 / 1
    wire             a_skip = a_drop || (a_h0 && a_c0);
    reg [BUF_AW-1:0] a_rd, a_end;           // first buffer byte, end of frame in buffer
    reg [10:0]       a_copy;
    reg [5:0]        a_hlen;
    reg [47:0]       h_dmac, h_smac;
    reg [15:0]       h_tci, h_tl, h_csum;
    reg [31:0]       h_rid, h_cip, h_rh;
    // header bytes 0..47 (byte i at hdr[8i +: 8]) of the untagged layout, with the VLAN tag at
    // 42..45: a tagged header is sent as bytes 0..11, 42..45, 12.. (the byte index sequence, not
    // the table, knows the tag)
    wire [383:0] hdr;
    assign hdr = {8'h00, 8'h00, h_tci[7:0], h_tci[15:8], 8'h00, 8'h81,
                  h_rh[7:0], h_rh[15:8], h_rh[23:16], h_rh[31:24], 8'h3E, 8'h88,
                  8'h00, 8'h00, h_cip[7:0], h_cip[15:8], h_cip[23:16], h_cip[31:24],
                  h_rid[7:0], h_rid[15:8], h_rid[23:16], h_rid[31:24], h_csum[7:0], h_csum[15:8],
                  8'h2F, 8'h40, 8'h00, 8'h40, 8'h00, 8'h00,
                  h_tl[7:0], h_tl[15:8], 8'h00, 8'h45, 8'h00, 8'h08,
                  h_smac[7:0], h_smac[15:8], h_smac[23:16], h_smac[31:24], h_smac[39:32], h_smac[47:40],
                  h_dmac[7:0], h_dmac[15:8], h_dmac[23:16], h_dmac[31:24], h_dmac[39:32], h_dmac[47:40]};

    // ---- issue ----
    reg              run;
    reg              in_hdr;        // the next byte comes from the header
    reg [5:0]        hk, hk_nx;     // header byte index, and the one after it
    reg              j_tag, j_back; // hk_nx is 11 in a tagged header / 45
    reg [5:0]        hcnt;          // header bytes left, incl. hk
    reg              h_last;        // hcnt == 1
    reg [11:0]       tcnt;          // bytes left, incl. the next one
    reg              t_last;        // tcnt == 1
    reg [BUF_AW-1:0] rd;            // next buffer address

    // the header byte hk is picked in three registered 4:1 steps (timing):
    // stage 1: byte hk[1:0] of each of the 12 quads, stage 2: quad hk[3:2] of each third,
    // stage 3: third hk[5:4]; the buffer's byte for stage 3 is in the block RAM's output
    // register (buf_rdata, 2 cycles after buf_raddr) and is registered once more
    reg        s1_v, s1_hdr, s1_last;
    reg [3:0]  s1_sel;
    reg [95:0] s1_q;
    reg        s2_v, s2_last, s2_hdr;
    reg [1:0]  s2_sel;
    reg [23:0] s2_t;
    // stage 3: both candidates, chosen at the FIFO write
    reg        s3_v, s3_last, s3_hdr;
    reg [7:0]  s3_hb, s3_buf;
    // m_ready may come from a registered request (wccp_mac_tx through fpga_core): it can stay
    // high for two cycles after the last byte of a frame was popped. Nothing is popped then:
    // the next frame's first byte reaches the FIFO no earlier than 6 cycles after that pop
    // (accept, apply, issue, stages 1 to 3).
    wire pop  = m_valid && m_ready;
    // accepted action, applied in the next cycle (ld)
    reg        ld;
    // occ = FIFO fill + s1_v + s2_v + s3_v (0..7), kept as its own thermometer code (timing)
    reg  [DEPTH-2:0] o_th;
    // can_issue = run && occ < 7, registered from the next values of both (timing: it enables
    // the issue registers)
    reg              can_issue;
    wire             run_n = (ld && !a_skip) || (run && !(can_issue && t_last));
    wire [DEPTH-2:0] o_th_n = (can_issue && !pop) ? {o_th[DEPTH-3:0], 1'b1} :
                              (pop && !can_issue) ? {1'b0, o_th[DEPTH-2:1]} : o_th;
    reg        idle_r;
    reg        skip_rel;        // release a skipped frame (the cycle after ld)
    wire       accept = idle_r && !ld && !act_ready && act_valid;

    assign buf_raddr = rd;
    assign m_valid = c_th[0];
    assign m_data  = fifo[rp][7:0];
    assign m_last  = fifo[rp][8];

    integer gi;
    always @(posedge clk) begin
        // no reset: loaded before use
        if (ld_en) begin
            a_drop <= act_drop;
            a_port <= act_port;
            a_vl <= act_vlan && (act_kind == 2'd2 || act_kind == 2'd3);
            a_h0 <= (act_hlen == 6'd0);
            a_h1 <= (act_hlen == 6'd1);
            a_c0 <= (act_copy_len == 11'd0);
            a_c1 <= (act_copy_len == 11'd1);
            a_rd <= act_start + {{(BUF_AW-11){1'b0}}, act_src_off};
            a_end <= act_start + {{(BUF_AW-11){1'b0}}, act_flen};
            a_copy <= act_copy_len;
            a_hlen <= act_hlen;
            h_dmac <= act_dmac;
            h_smac <= act_smac;
            h_tci <= act_tci;
            h_tl <= act_tl;
            h_csum <= act_csum;
            h_rid <= act_rid;
            h_cip <= act_cip;
            h_rh <= act_rh;
        end
        // stage 3 -> FIFO
        if (s3_v) fifo[wp] <= {s3_last, s3_hdr ? s3_hb : s3_buf};
        s3_last <= s2_last;
        s3_hdr <= s2_hdr;
        s3_hb <= s2_t[s2_sel*8 +: 8];
        s3_buf <= buf_rdata;
        // stage 1 -> 2
        s2_last <= s1_last;
        s2_hdr <= s1_hdr;
        s2_sel <= s1_sel[3:2];
        for (gi = 0; gi < 3; gi = gi + 1)
            s2_t[gi*8 +: 8] <= s1_q[{gi[1:0], s1_sel[1:0]}*8 +: 8];
        // stage 0 -> 1: no enable (valid is s1_v; hk only moves when a byte is issued)
        s1_last <= t_last;
        s1_hdr <= in_hdr;
        s1_sel <= hk[5:2];
        for (gi = 0; gi < 12; gi = gi + 1)
            s1_q[gi*8 +: 8] <= hdr[{gi[3:0], hk[1:0]}*8 +: 8];
        if (can_issue) begin
            if (in_hdr) begin
                hk <= hk_nx;
                hk_nx <= j_tag ? 6'd42 : j_back ? 6'd12 : hk_nx + 6'd1;
                j_tag <= a_vl && hk_nx == 6'd10;
                j_back <= (hk_nx == 6'd44);
                hcnt <= hcnt - 6'd1;
                h_last <= (hcnt == 6'd2);
                if (h_last) in_hdr <= 1'b0;
            end else begin
                rd <= rd + 1'b1;
            end
            tcnt <= tcnt - 12'd1;
            t_last <= (tcnt == 12'd2);
        end
        if (ld) begin
            tcnt <= {6'd0, a_hlen} + {1'b0, a_copy};
            t_last <= (a_h0 && a_c1) || (a_h1 && a_c0);
            hk <= 6'd0;
            hk_nx <= 6'd1;
            j_tag <= 1'b0;
            j_back <= 1'b0;
            hcnt <= a_hlen;
            h_last <= a_h1;
            in_hdr <= !a_h0;
            rd <= a_rd;
        end
    end

    always @(posedge clk) begin
        act_ready <= 1'b0;
        ld <= 1'b0;
        if (rst) begin
            wp <= 3'd0; rp <= 3'd0; c_th <= {(DEPTH-1){1'b0}}; o_th <= {(DEPTH-1){1'b0}};
            run <= 1'b0; can_issue <= 1'b0; s1_v <= 1'b0; s2_v <= 1'b0; s3_v <= 1'b0; req <= 2'b00;
            rel_ptr <= {BUF_AW{1'b0}};
            idle_r <= 1'b0;
            ld_en <= 1'b0;
            skip_rel <= 1'b0;
        end else begin
            if (s3_v) wp <= wp + 3'd1;
            if (s3_v && !pop) c_th <= {c_th[DEPTH-3:0], 1'b1};
            if (pop && !s3_v) c_th <= {1'b0, c_th[DEPTH-2:1]};
            o_th <= o_th_n;
            run <= run_n;
            can_issue <= run_n && !o_th_n[DEPTH-2];
            s3_v <= s2_v;
            s2_v <= s1_v;
            s1_v <= can_issue;
            if (pop) rp <= rp + 3'd1;
            if (pop && m_last) req <= 2'b00;
            // the frame's buffer space is free once its last byte is popped (or it is skipped)
            if ((pop && m_last) || skip_rel) rel_ptr <= a_end;
            skip_rel <= ld && a_skip;
            // accept a new action once the previous frame has been handed over completely;
            // its fields are in the a_/h_ registers already (loaded while idle), the rest is
            // applied one cycle later (ld)
            // idle: nothing running or in flight (registered: a builder that was idle in the
            // last cycle and accepted nothing then is still idle, nothing else starts work)
            idle_r <= !run && !ld && !act_ready && req == 2'b00 && !s1_v && !s2_v && !s3_v && !c_th[0];
            // ld_en in the next cycle = idle_r && !ld && !act_ready then
            ld_en <= !run && !ld && !act_ready && req == 2'b00 && !s1_v && !s2_v && !s3_v && !c_th[0] &&
                     !accept;
            if (accept) begin
                act_ready <= 1'b1;
                ld <= 1'b1;
            end
            if (ld && !a_skip) req <= a_port ? 2'b10 : 2'b01;
        end
    end
endmodule
`default_nettype wire
