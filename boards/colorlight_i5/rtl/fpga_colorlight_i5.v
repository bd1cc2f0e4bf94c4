// Board top for the Colorlight i5 module (Lattice ECP5 LFE5U-25F-6BG381C) on its extension
// board: two Broadcom B50612D RGMII PHYs sharing one MDIO bus and one reset, PMOD-compatible
// headers wired straight to the FPGA (the MCU's SPI link is on header P3), on-board USB-JTAG.
// Pins: boards/colorlight_i5/wccp.lpf.
//
// Clock and reset: 25 MHz -> 125 MHz PLL. The reset is asserted while the PLL is not locked
// or the board's reset button is pressed, and released synchronously (wccp_rst_sync); the
// PHYs are held in reset for 2^16 cycles (0.5 ms) after that, the core until they leave it.
//
// RGMII receive timing: the PHYs send RXC edge-aligned with the data (the B50612D's receive
// clock delay is not enabled on this board), so the FPGA delays RXD and RX_CTL by 2 ns in the
// input cell (DELAYG, 80 taps of about 25 ps) before the IDDRX1F registers them on RXC.
// Transmit: TXC leaves edge-aligned with the data; the PHY's internal TX clock delay (its
// default) centres it.
//
// MDIO (wccp_phy_setup): 2^21 cycles (17 ms) after the PHYs leave reset both PHYs (addresses
// 0 and 1) are set to advertise 1000BASE-T full duplex only and auto-negotiation is
// restarted: the core speaks GMII at 1 Gb/s only, so a 10/100 link must not come up. Their
// identifiers are read back; if a PHY does not answer, the LED blinks instead
// of showing the redirection state.
`timescale 1ns / 1ps
`default_nettype none
module fpga_colorlight_i5 #(
    parameter [31:0] BUILD_ID = 32'd0,    // the build passes it (fpga/tools/synth.py)
    parameter integer PHY_WAIT_LOG2 = 21  // cycles after the PHY reset before the first MDIO frame
) (
    input  wire       clk25,
    input  wire       btn_n,
    output wire       led_n,
    output wire       phy_rst_n,
    output wire       phy_mdc,
    inout  wire       phy_mdio,
    input  wire       eth0_rxc,
    input  wire [3:0] eth0_rxd,
    input  wire       eth0_rx_ctl,
    output wire       eth0_txc,
    output wire [3:0] eth0_txd,
    output wire       eth0_tx_ctl,
    input  wire       eth1_rxc,
    input  wire [3:0] eth1_rxd,
    input  wire       eth1_rx_ctl,
    output wire       eth1_txc,
    output wire [3:0] eth1_txd,
    output wire       eth1_tx_ctl,
    input  wire       spi_sck,
    input  wire       spi_cs_n,
    input  wire       spi_mosi,
    output wire       spi_miso
);
    `include "wccp_board_pll.vh"

    // ---- reset: PLL lock and the button, synchronised; then the PHY reset pulse
    wire rst_sys;
    wccp_rst_sync #(.STAGES(3)) rsync (.clk(clk), .arst(!locked || !btn_n), .rst(rst_sys));
    reg [16:0] rst_cnt;
    reg        rst;
    initial begin
        rst_cnt = 17'd0;
        rst = 1'b1;
    end
    always @(posedge clk) begin
        if (rst_sys) begin
            rst_cnt <= 17'd0;
            rst <= 1'b1;
        end else if (!rst_cnt[16]) begin
            rst_cnt <= rst_cnt + 17'd1;
        end else begin
            rst <= 1'b0;
        end
    end
    assign phy_rst_n = rst_cnt[16];

    // ---- PHY configuration over MDIO (both PHYs share MDC and MDIO)
    wire md_o, md_oe, md_i, phy_missing;
    /* verilator lint_off PINCONNECTEMPTY */
    wccp_phy_setup #(.WAIT_LOG2(PHY_WAIT_LOG2), .HALF(32), .PHYS({5'd1, 5'd0})) phy_setup (
        .clk(clk), .rst(rst), .mdc(phy_mdc), .mdio_o(md_o), .mdio_oe(md_oe), .mdio_i(md_i),
        .done(), .phy_missing(phy_missing));
    /* verilator lint_on PINCONNECTEMPTY */
    // the MDIO pad as an ECP5 bidirectional buffer (T high = released)
    BB mdio_pad (.I(md_o), .T(!md_oe), .O(md_i), .B(phy_mdio));

    // ---- RGMII
    // receive data and control delayed 2 ns in the input cells (see the header)
    wire [3:0] rxd0_dly, rxd1_dly;
    wire       rxctl0_dly, rxctl1_dly;
    genvar i;
    generate
        for (i = 0; i < 4; i = i + 1) begin : g_dly
            DELAYG #(.DEL_MODE("USER_DEFINED"), .DEL_VALUE(80)) d0 (.A(eth0_rxd[i]), .Z(rxd0_dly[i]));
            DELAYG #(.DEL_MODE("USER_DEFINED"), .DEL_VALUE(80)) d1 (.A(eth1_rxd[i]), .Z(rxd1_dly[i]));
        end
    endgenerate
    DELAYG #(.DEL_MODE("USER_DEFINED"), .DEL_VALUE(80)) dc0 (.A(eth0_rx_ctl), .Z(rxctl0_dly));
    DELAYG #(.DEL_MODE("USER_DEFINED"), .DEL_VALUE(80)) dc1 (.A(eth1_rx_ctl), .Z(rxctl1_dly));

    wire [3:0] rx0_d = rxd0_dly, rx1_d = rxd1_dly;
    wire       rx0_ctl = rxctl0_dly, rx1_ctl = rxctl1_dly;
    `include "wccp_board_core.vh"

    // LED (active low): the redirection state, or a 4 Hz blink when a PHY did not answer on MDIO
    reg [24:0] blink;
    initial blink = 25'd0;
    always @(posedge clk) blink <= blink + 25'd1;
    assign led_n = ~(phy_missing ? blink[24] : active);
endmodule
`default_nettype wire
