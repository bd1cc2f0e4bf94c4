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
    wire clk, locked;
    (* FREQUENCY_PIN_CLKI = "25", FREQUENCY_PIN_CLKOP = "125", ICP_CURRENT = "12", LPF_RESISTOR = "8",
       MFG_ENABLE_FILTEROPAMP = "1", MFG_GMCREF_SEL = "2" *)
    EHXPLLL #(
        .PLLRST_ENA("DISABLED"), .INTFB_WAKE("DISABLED"), .STDBY_ENABLE("DISABLED"),
        .DPHASE_SOURCE("DISABLED"), .OUTDIVIDER_MUXA("DIVA"), .OUTDIVIDER_MUXB("DIVB"),
        .OUTDIVIDER_MUXC("DIVC"), .OUTDIVIDER_MUXD("DIVD"),
        .CLKI_DIV(1), .CLKOP_ENABLE("ENABLED"), .CLKOP_DIV(5), .CLKOP_CPHASE(2), .CLKOP_FPHASE(0),
        .FEEDBK_PATH("CLKOP"), .CLKFB_DIV(5)
    ) pll (
        .RST(1'b0), .STDBY(1'b0), .CLKI(clk25), .CLKOP(clk), .CLKFB(clk),
        .PHASESEL0(1'b0), .PHASESEL1(1'b0), .PHASEDIR(1'b1), .PHASESTEP(1'b1),
        .PHASELOADREG(1'b1), .PLLWAKESYNC(1'b0), .ENCLKOP(1'b0), .LOCK(locked)
    );

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

    wire [7:0] g0_rxd, g1_rxd, g0_txd, g1_txd;
    wire       g0_rx_dv, g0_rx_er, g1_rx_dv, g1_rx_er, g0_tx_en, g0_tx_er, g1_tx_en, g1_tx_er;
    // each receive FIFO's read side takes its own registered copy of the reset, like the
    // core's regions (timing: the reset flip-flop sits far from the PHYs' pins, and the reset
    // feeds the FIFO's level subtractor); they leave reset with the core's regions
    wire       rst_rx0, rst_rx1;
    wccp_rst_buf rb_rx0 (.clk(clk), .d(rst), .q(rst_rx0));
    wccp_rst_buf rb_rx1 (.clk(clk), .d(rst), .q(rst_rx1));
    wccp_rgmii_rx rx0 (.rgmii_rxc(eth0_rxc), .rgmii_rxd(eth0_rxd), .rgmii_rx_ctl(eth0_rx_ctl),
                       .clk(clk), .rst(rst_rx0), .gmii_rxd(g0_rxd), .gmii_rx_dv(g0_rx_dv), .gmii_rx_er(g0_rx_er));
    wccp_rgmii_rx rx1 (.rgmii_rxc(eth1_rxc), .rgmii_rxd(eth1_rxd), .rgmii_rx_ctl(eth1_rx_ctl),
                       .clk(clk), .rst(rst_rx1), .gmii_rxd(g1_rxd), .gmii_rx_dv(g1_rx_dv), .gmii_rx_er(g1_rx_er));
    wccp_rgmii_tx tx0 (.clk(clk), .gmii_txd(g0_txd), .gmii_tx_en(g0_tx_en), .gmii_tx_er(g0_tx_er),
                       .rgmii_txc(eth0_txc), .rgmii_txd(eth0_txd), .rgmii_tx_ctl(eth0_tx_ctl));
    wccp_rgmii_tx tx1 (.clk(clk), .gmii_txd(g1_txd), .gmii_tx_en(g1_tx_en), .gmii_tx_er(g1_tx_er),
                       .rgmii_txc(eth1_txc), .rgmii_txd(eth1_txd), .rgmii_tx_ctl(eth1_tx_ctl));

    wire active;
    /* verilator lint_off PINCONNECTEMPTY */
    fpga_core #(.BUILD_ID(BUILD_ID)) core (
        .clk(clk), .rst(rst),
        .gmii0_rxd(g0_rxd), .gmii0_rx_dv(g0_rx_dv), .gmii0_rx_er(g0_rx_er),
        .gmii0_txd(g0_txd), .gmii0_tx_en(g0_tx_en), .gmii0_tx_er(g0_tx_er),
        .gmii1_rxd(g1_rxd), .gmii1_rx_dv(g1_rx_dv), .gmii1_rx_er(g1_rx_er),
        .gmii1_txd(g1_txd), .gmii1_tx_en(g1_tx_en), .gmii1_tx_er(g1_tx_er),
        .spi_sck(spi_sck), .spi_cs_n(spi_cs_n), .spi_mosi(spi_mosi), .spi_miso(spi_miso),
        .dbg_reg_addr(24'd0), .dbg_reg_wr(1'b0), .dbg_reg_wdata(32'd0), .dbg_reg_rd(1'b0),
        .dbg_reg_rdata(), .dbg_reg_rvalid(), .redirect_active(active));
    /* verilator lint_on PINCONNECTEMPTY */
    assign led_n = ~active;
endmodule
`default_nettype wire
