// Frame builder (one per receive port): for each action, streams
//   header bytes (act_hdr, MSB first, act_hlen bytes) ++ rx buffer [start+src_off, +copy_len)
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
    input  wire [367:0]      act_hdr,
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
    reg [11:0] k, total;
    reg [5:0]  hlen;
    reg [367:0] hdr;
    reg [BUF_AW-1:0] rd;            // next buffer address
    reg [BUF_AW-1:0] fend;          // end of frame in buffer

    // stage 1 (data lands in FIFO)
    reg        s1_v, s1_hdr, s1_last;
    reg [7:0]  s1_hbyte;

    wire pop  = m_valid && m_ready;
    wire can_issue = run && (k < total) && ({1'b0, cnt} + {4'd0, s1_v} < DEPTH - 1);

    assign buf_raddr = rd;
    assign m_valid = (cnt != 4'd0);
    assign m_data  = fifo[rp][7:0];
    assign m_last  = fifo[rp][8];

    always @(posedge clk) begin
        act_ready <= 1'b0;
        if (rst) begin
            wp <= 3'd0; rp <= 3'd0; cnt <= 4'd0;
            run <= 1'b0; s1_v <= 1'b0; req <= 2'b00;
            rel_ptr <= {BUF_AW{1'b0}};
            k <= 12'd0; total <= 12'd0;
        end else begin
            // stage 1: write into FIFO
            if (s1_v) begin
                fifo[wp] <= {s1_last, s1_hdr ? s1_hbyte : buf_rdata};
                wp <= wp + 3'd1;
            end
            cnt <= cnt + {3'd0, s1_v} - {3'd0, pop};
            if (pop) begin
                rp <= rp + 3'd1;
                if (m_last) begin
                    req <= 2'b00;
                    rel_ptr <= fend;
                end
            end
            // stage 0: issue
            s1_v <= 1'b0;
            if (can_issue) begin
                s1_v <= 1'b1;
                s1_last <= (k == total - 12'd1);
                if (k < {6'd0, hlen}) begin
                    s1_hdr <= 1'b1;
                    s1_hbyte <= hdr[367:360];
                    hdr <= {hdr[359:0], 8'd0};
                end else begin
                    s1_hdr <= 1'b0;
                    rd <= rd + 1'b1;
                end
                k <= k + 12'd1;
                if (k == total - 12'd1) run <= 1'b0;
            end
            // accept a new action once the previous frame has been handed over completely
            if (!run && !act_ready && act_valid && req == 2'b00 && !s1_v && cnt == 4'd0) begin
                act_ready <= 1'b1;
                if (act_drop || (act_copy_len == 11'd0 && act_hlen == 6'd0)) begin
                    rel_ptr <= act_start + {{(BUF_AW-11){1'b0}}, act_flen};
                end else begin
                    run <= 1'b1;
                    k <= 12'd0;
                    total <= {6'd0, act_hlen} + {1'b0, act_copy_len};
                    hlen <= act_hlen;
                    hdr <= act_hdr;
                    rd <= act_start + {{(BUF_AW-11){1'b0}}, act_src_off};
                    fend <= act_start + {{(BUF_AW-11){1'b0}}, act_flen};
                    req <= act_port ? 2'b10 : 2'b01;
                end
            end
        end
    end
endmodule
`default_nettype wire
