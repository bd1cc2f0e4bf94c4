// GMII transmit MAC: preamble + SFD, payload (zero padded to 60 bytes), FCS, 12-byte IFG.
// Source interface (all registered, so the source may sit across the die):
//   s_start  a frame is waiting (starts the preamble when idle)
//   s_ready  registered request: for every cycle s_ready is high the source delivers the
//            next byte of the frame exactly 2 cycles later on s_data/s_valid/s_last, and
//            delivers nothing after the frame's last byte (s_ready then falls; the source
//            may start another frame only after it has seen s_ready low).
// A missing byte (s_valid low while a byte is due) ends the frame with gmii_tx_er.
// s_abort, sampled with the byte that has s_last, aborts (stomps) the frame: it is sent with
// its padding as usual, then its FCS inverted (~crc, which no receiver accepts) with
// gmii_tx_er high on those 4 bytes (GMII transmit error propagation); frame_done / frame_len
// are not pulsed for it, frame_aborted is (in the cycle frame_done would be).
`timescale 1ns / 1ps
`default_nettype none
module wccp_mac_tx #(
    parameter IFG = 12
) (
    input  wire       clk,
    input  wire       rst,
    input  wire [7:0] s_data,
    input  wire       s_valid,
    input  wire       s_last,
    input  wire       s_abort,         // with s_last: stomp this frame's FCS
    input  wire       s_start,
    output reg        s_ready,
    output reg  [7:0] gmii_txd,
    output reg        gmii_tx_en,
    output reg        gmii_tx_er,
    output reg        frame_done,      // pulse per transmitted frame
    output reg [11:0] frame_len,       // with frame_done: bytes incl. FCS
    output reg        frame_aborted    // pulse per aborted (stomped) frame
);
`include "wccp_crc32.vh"

    // one-hot state
    reg        st_idle, st_pre, st_data, st_pad, st_fcs, st_ifg;
    // cnt: preamble 0..6; FCS 0..3, then on through the IFG (4..IFG+3); held at 0 otherwise
    localparam CW = $clog2(IFG + 4);
    localparam [CW-1:0] C_RDY = 2, C_IND = 4, C_SFD = 6, C_FCS = 3, C_IFG = IFG + 3;
    reg [CW-1:0] cnt;
    reg [11:0] len;
    reg        len_lt59, len_59;     // len < 59, len == 59 (kept with len)
    reg [31:0] crc;
    // two input stages: the byte due at s_data is registered (a_), then its CRC term is formed
    // (d_) before it goes out and into the CRC (s_ready is raised two cycles earlier to make up
    // for them, so the wire timing is unchanged)
    reg        in_d;                 // a byte is due at s_data in this cycle
    reg [7:0]  a_d, d_r;
    reg        a_v, a_er, a_end;     // a_d was due / was missing (tx_er) / ends the frame
    reg        d_er, d_end;
    reg        a_ab, d_ab;           // the byte ending the frame carried s_abort
    reg        ab;                   // the frame in progress is aborted (set at its last byte)
    reg [31:0] d_t;                  // d_r's term of the CRC update (0 when no byte was due)
    // CRC update terms of the two nibbles of a byte, each its own LUT level
    // (each term bit is an XOR of at most four bits: one LUT). No (* keep *) on these
    // wires: several of their bits are the same function, and yosys then joins unrelated
    // nets into one with two drivers, which nextpnr refuses (seen on the Colorlight i5 top)
    wire [31:0] t_lo;
    assign t_lo = crc32_byte(32'd0, {4'd0, a_d[3:0]});
    wire [31:0] t_hi;
    assign t_hi = crc32_byte(32'd0, {a_d[7:4], 4'd0});
    wire [31:0] c_lo;
    assign c_lo = crc32_byte(32'd0, {4'd0, crc[3:0]});
    wire [31:0] c_hi;
    assign c_hi = crc32_byte(32'd0, {crc[7:4], 4'd0});

    always @(posedge clk) begin
        a_d <= s_data;
        a_v <= in_d;
        a_er <= in_d && !s_valid;
        a_end <= in_d && (s_last || !s_valid);
        a_ab <= in_d && s_valid && s_last && s_abort;
        d_r <= a_d;
        d_er <= a_er;
        d_end <= a_end;
        d_ab <= a_ab;
        d_t <= a_v ? t_lo ^ t_hi : 32'd0;
        // CRC over registers only (the update is linear: crc32_byte(c, d) =
        // (c >> 8) ^ crc32_byte(0, c[7:0]) ^ crc32_byte(0, d))
        if (st_pre) crc <= 32'hFFFFFFFF;
        else if (st_fcs) crc <= {8'hFF, crc[31:8]};
        else crc <= {8'd0, crc[31:8]} ^ c_lo ^ c_hi ^ d_t;
        if (st_idle || st_data || st_pad) cnt <= {CW{1'b0}};
        else cnt <= cnt + 1'b1;
        frame_len <= len + 12'd4;           // (len holds from the FCS until the next preamble)
        if (st_pre) begin
            len <= 12'd0;
            len_lt59 <= 1'b1;
            len_59 <= 1'b0;
        end else if (st_data || st_pad) begin
            len <= len + 12'd1;
            len_lt59 <= (len < 12'd58);
            len_59 <= (len == 12'd58);
        end
    end

    always @(posedge clk) begin
        frame_done <= 1'b0;
        frame_aborted <= 1'b0;
        if (rst) begin
            ab <= 1'b0;
            {st_pre, st_data, st_pad, st_fcs, st_ifg} <= 5'd0;
            st_idle <= 1'b1;
            gmii_txd <= 8'd0;
            gmii_tx_en <= 1'b0;
            gmii_tx_er <= 1'b0;
            s_ready <= 1'b0;
            in_d <= 1'b0;
        end else begin
            gmii_tx_en <= (st_idle && s_start) || st_pre || st_data || st_pad || st_fcs;
            gmii_tx_er <= (st_data && d_er) || (st_fcs && ab);
            if (st_data) gmii_txd <= d_r;
            else if (st_fcs) gmii_txd <= ab ? crc[7:0] : ~crc[7:0];
            else if (st_pre && cnt == C_SFD) gmii_txd <= 8'hD5;
            else if (st_pre || (st_idle && s_start)) gmii_txd <= 8'h55;
            else gmii_txd <= 8'd0;
            // source requests: the first byte is due in preamble cycle 5
            if (st_pre && cnt == C_RDY) s_ready <= 1'b1;
            if (st_pre && cnt == C_IND) in_d <= 1'b1;
            if (in_d && (s_last || !s_valid)) begin
                in_d <= 1'b0;
                s_ready <= 1'b0;
            end
            if (st_idle && s_start) begin
                st_idle <= 1'b0;
                st_pre <= 1'b1;
            end
            if (st_pre && cnt == C_SFD) begin
                st_pre <= 1'b0;
                st_data <= 1'b1;
            end
            if (st_pre) ab <= 1'b0;
            if (st_data && d_end) begin
                ab <= d_ab;
                st_data <= 1'b0;
                st_pad <= len_lt59;
                st_fcs <= !len_lt59;
            end
            if (st_pad && len_59) begin
                st_pad <= 1'b0;
                st_fcs <= 1'b1;
            end
            if (st_fcs && cnt == C_FCS) begin
                st_fcs <= 1'b0;
                st_ifg <= 1'b1;
                frame_done <= !ab;
                frame_aborted <= ab;
            end
            if (st_ifg && cnt == C_IFG) begin
                st_ifg <= 1'b0;
                st_idle <= 1'b1;
            end
        end
    end
endmodule
`default_nettype wire
