// RGMII <-> GMII for ECP5 (board top only; not part of the simulated core).
// Receive: IDDRX1F on the PHY's RX clock, then an elastic FIFO into the core clock that
// starts forwarding a frame only when a few bytes are buffered (both clocks are 125 MHz
// +-100 ppm, so a 1522-byte frame drifts by less than one byte and never underruns).
// Transmit: ODDRX1F on the core clock; the forwarded TX clock relies on the PHY's internal
// TX delay (provisional: board-specific skew handling).
`timescale 1ns / 1ps
`default_nettype none
module wccp_rgmii_rx (
    input  wire       rgmii_rxc,
    input  wire [3:0] rgmii_rxd,
    input  wire       rgmii_rx_ctl,
    input  wire       clk,
    input  wire       rst,
    output reg  [7:0] gmii_rxd,
    output reg        gmii_rx_dv,
    output reg        gmii_rx_er
);
    wire [3:0] d_r, d_f;
    wire       c_r, c_f;
    genvar i;
    generate
        for (i = 0; i < 4; i = i + 1) begin : g_d
            IDDRX1F iddr (.D(rgmii_rxd[i]), .SCLK(rgmii_rxc), .RST(1'b0), .Q0(d_r[i]), .Q1(d_f[i]));
        end
    endgenerate
    IDDRX1F iddr_ctl (.D(rgmii_rx_ctl), .SCLK(rgmii_rxc), .RST(1'b0), .Q0(c_r), .Q1(c_f));

    // write side (rx clock): data bytes while DV, plus one end marker when DV falls
    reg [9:0] mem [0:15];          // {end, er, data}
    reg [4:0] wp, wp_gray;
    reg       dv_d;
    always @(posedge rgmii_rxc) begin
        dv_d <= c_r;
        if (c_r) begin
            mem[wp[3:0]] <= {1'b0, c_r ^ c_f, d_f, d_r};
            wp <= wp + 5'd1;
        end else if (dv_d) begin
            mem[wp[3:0]] <= {1'b1, 9'd0};
            wp <= wp + 5'd1;
        end
        wp_gray <= (wp >> 1) ^ wp;
    end
    initial begin
        wp = 5'd0;
        wp_gray = 5'd0;
        dv_d = 1'b0;
    end

    // read side (core clock)
    reg [4:0] wg1, wg2, rp;
    reg       in_frame;
    reg [4:0] wbin;
    integer k;
    always @(*) begin
        wbin[4] = wg2[4];
        for (k = 3; k >= 0; k = k - 1) wbin[k] = wbin[k + 1] ^ wg2[k];
    end
    // the decoded write pointer is registered once more (timing): one more cycle of latency
    reg  [4:0] wbin_r;
    wire [4:0] level = wbin_r - rp;
    wire [9:0] head = mem[rp[3:0]];
    always @(posedge clk) begin
        wg1 <= wp_gray;
        wg2 <= wg1;
        wbin_r <= wbin;
        gmii_rx_dv <= 1'b0;
        gmii_rx_er <= 1'b0;
        if (rst) begin
            // the write side (RX clock) is not reset: empty the FIFO by catching up with
            // the synchronised write pointer (held while rst is asserted)
            rp <= wbin_r;
            in_frame <= 1'b0;
        end else if (level != 5'd0 && (in_frame || level >= 5'd4 || head[9])) begin
            rp <= rp + 5'd1;
            if (head[9]) begin
                in_frame <= 1'b0;
            end else begin
                in_frame <= 1'b1;
                gmii_rx_dv <= 1'b1;
                gmii_rx_er <= head[8];
                gmii_rxd <= head[7:0];
            end
        end else if (in_frame) begin
            gmii_rx_dv <= 1'b1;          // (cannot happen within +-100 ppm) flag as error
            gmii_rx_er <= 1'b1;
        end
    end
endmodule

`default_nettype wire
