// Board top for Colorlight 5A-75B class boards (Lattice ECP5 LFE5U-25F-6BG256C, two
// Broadcom B50612D RGMII PHYs): 25 MHz -> 125 MHz PLL, RGMII <-> GMII with ECP5 DDR
// primitives, SPI register interface for the MCU, status LED. Pins: boards/colorlight_5a75b/
// wccp.lpf (provisional).
`timescale 1ns / 1ps
`default_nettype none
module fpga #(
    parameter [31:0] BUILD_ID = 32'd0     // the build passes it (fpga/tools/synth.py --build-id)
) (
    input  wire       clk25,
    output wire       led_n,
    output wire       phy_rst_n,
    output wire       phy_mdc,
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

    // reset: asserted while the PLL is not locked, released synchronously (wccp_rst_sync:
    // LOCK is asynchronous to clk), then held ~1 ms more for the PHYs
    wire rst_sys;
    wccp_rst_sync #(.STAGES(3)) rsync (.clk(clk), .arst(!locked), .rst(rst_sys));
    reg [17:0] rst_cnt;
    reg        rst;
    initial begin
        rst_cnt = 18'd0;
        rst = 1'b1;
    end
    always @(posedge clk) begin
        if (rst_sys) begin
            rst_cnt <= 18'd0;
            rst <= 1'b1;
        end else if (!rst_cnt[17]) begin
            rst_cnt <= rst_cnt + 18'd1;
        end else begin
            rst <= 1'b0;
        end
    end
    assign phy_rst_n = rst_cnt[16] | rst_cnt[17];
    assign phy_mdc = 1'b0;

    // RGMII receive straight from the pins (see the board file for the PHYs' clock delay)
    wire [3:0] rx0_d = eth0_rxd, rx1_d = eth1_rxd;
    wire       rx0_ctl = eth0_rx_ctl, rx1_ctl = eth1_rx_ctl;
    `include "wccp_board_core.vh"
    assign led_n = ~active;
endmodule
`default_nettype wire
