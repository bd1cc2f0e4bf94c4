// RGMII <-> GMII for ECP5 (board top only; not part of the simulated core).
// Receive: IDDRX1F on the PHY's RX clock, then an elastic FIFO into the core clock that
// starts forwarding a frame only when a few bytes are buffered (both clocks are 125 MHz
// +-100 ppm, so a 1522-byte frame drifts by less than one byte and never underruns).
// Transmit: ODDRX1F on the core clock; the forwarded TX clock relies on the PHY's internal
// TX delay (provisional: board-specific skew handling).
`timescale 1ns / 1ps
`default_nettype none
module wccp_rgmii_tx (
    input  wire       clk,
    input  wire [7:0] gmii_txd,
    input  wire       gmii_tx_en,
    input  wire       gmii_tx_er,
    output wire       rgmii_txc,
    output wire [3:0] rgmii_txd,
    output wire       rgmii_tx_ctl
);
    genvar i;
    generate
        for (i = 0; i < 4; i = i + 1) begin : g_d
            ODDRX1F oddr (.D0(gmii_txd[i]), .D1(gmii_txd[i + 4]), .SCLK(clk), .RST(1'b0), .Q(rgmii_txd[i]));
        end
    endgenerate
    ODDRX1F oddr_ctl (.D0(gmii_tx_en), .D1(gmii_tx_en ^ gmii_tx_er), .SCLK(clk), .RST(1'b0), .Q(rgmii_tx_ctl));
    ODDRX1F oddr_clk (.D0(1'b1), .D1(1'b0), .SCLK(clk), .RST(1'b0), .Q(rgmii_txc));
endmodule
`default_nettype wire
