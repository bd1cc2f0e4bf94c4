// GMII transmit MAC: preamble + SFD, payload (zero padded to 60 bytes), FCS, 12-byte IFG.
// Source interface (all registered, so the source may sit across the die):
//   s_start  a frame is waiting (starts the preamble when idle)
//   s_ready  registered request: for every cycle s_ready is high the source delivers the
//            next byte of the frame exactly 2 cycles later on s_data/s_valid/s_last, and
//            delivers nothing after the frame's last byte (s_ready then falls; the source
//            may start another frame only after it has seen s_ready low).
// A missing byte (s_valid low while a byte is due) ends the frame with gmii_tx_er.
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
    input  wire       s_start,
    output reg        s_ready,
    output reg  [7:0] gmii_txd,
    output reg        gmii_tx_en,
    output reg        gmii_tx_er,
    output reg        frame_done,      // pulse per transmitted frame
    output reg [11:0] frame_len        // with frame_done: bytes incl. FCS
);
`include "wccp_crc32.vh"

    localparam S_IDLE = 3'd0, S_PRE = 3'd1, S_DATA = 3'd2, S_PAD = 3'd3, S_FCS = 3'd4, S_IFG = 3'd5;
    reg [2:0]  state;
    reg [3:0]  cnt;
    reg [11:0] len;
    reg [31:0] crc;

    always @(posedge clk) begin
        frame_done <= 1'b0;
        if (rst) begin
            state <= S_IDLE;
            gmii_txd <= 8'd0;
            gmii_tx_en <= 1'b0;
            gmii_tx_er <= 1'b0;
            cnt <= 4'd0;
            len <= 12'd0;
            crc <= 32'hFFFFFFFF;
            frame_len <= 12'd0;
            s_ready <= 1'b0;
        end else begin
            gmii_tx_er <= 1'b0;
            case (state)
            S_IDLE: begin
                gmii_tx_en <= 1'b0;
                gmii_txd <= 8'd0;
                if (s_start) begin
                    state <= S_PRE;
                    cnt <= 4'd0;
                    gmii_tx_en <= 1'b1;
                    gmii_txd <= 8'h55;
                end
            end
            S_PRE: begin
                gmii_tx_en <= 1'b1;
                cnt <= cnt + 4'd1;
                if (cnt == 4'd4) s_ready <= 1'b1;    // first byte due in the first S_DATA cycle
                if (cnt == 4'd6) begin
                    gmii_txd <= 8'hD5;
                    state <= S_DATA;
                    len <= 12'd0;
                    crc <= 32'hFFFFFFFF;
                end else begin
                    gmii_txd <= 8'h55;
                end
            end
            S_DATA: begin
                gmii_tx_en <= 1'b1;
                gmii_txd <= s_data;
                crc <= crc32_byte(crc, s_data);
                len <= len + 12'd1;
                if (!s_valid) gmii_tx_er <= 1'b1;
                if (s_last || !s_valid) begin
                    s_ready <= 1'b0;
                    state <= (len < 12'd59) ? S_PAD : S_FCS;
                    cnt <= 4'd0;
                end
            end
            S_PAD: begin
                gmii_tx_en <= 1'b1;
                gmii_txd <= 8'd0;
                crc <= crc32_byte(crc, 8'd0);
                len <= len + 12'd1;
                if (len == 12'd59) begin
                    state <= S_FCS;
                    cnt <= 4'd0;
                end
            end
            S_FCS: begin
                gmii_tx_en <= 1'b1;
                gmii_txd <= ~crc[7:0];
                crc <= {8'hFF, crc[31:8]};
                cnt <= cnt + 4'd1;
                if (cnt == 4'd3) begin
                    state <= S_IFG;
                    cnt <= 4'd0;
                    frame_done <= 1'b1;
                    frame_len <= len + 12'd4;
                end
            end
            S_IFG: begin
                gmii_tx_en <= 1'b0;
                gmii_txd <= 8'd0;
                cnt <= cnt + 4'd1;
                if (cnt == IFG - 1) state <= S_IDLE;
            end
            default: state <= S_IDLE;
            endcase
        end
    end
endmodule
`default_nettype wire
