// Board tops (fpga/rtl/fpga.v, boards/*/rtl/): both RGMII ports and the core. Included inside
// a top, after clk and rst: reads the top's RGMII receive data and control as rx0_d/rx0_ctl and
// rx1_d/rx1_ctl (the pins, or the pins through an input delay), drives the transmit pins
// eth*_txc/txd/tx_ctl and the SPI pins, and declares `active` (redirecting).
    wire [7:0] g0_rxd, g1_rxd, g0_txd, g1_txd;
    wire       g0_rx_dv, g0_rx_er, g1_rx_dv, g1_rx_er, g0_tx_en, g0_tx_er, g1_tx_en, g1_tx_er;
    // each receive FIFO's read side takes its own registered copy of the reset, like the
    // core's regions (timing: the reset flip-flop sits far from the PHYs' pins, and the reset
    // feeds the FIFO's level subtractor); they leave reset with the core's regions
    wire       rst_rx0, rst_rx1;
    wccp_rst_buf rb_rx0 (.clk(clk), .d(rst), .q(rst_rx0));
    wccp_rst_buf rb_rx1 (.clk(clk), .d(rst), .q(rst_rx1));
    wccp_rgmii_rx rx0 (.rgmii_rxc(eth0_rxc), .rgmii_rxd(rx0_d), .rgmii_rx_ctl(rx0_ctl),
                       .clk(clk), .rst(rst_rx0), .gmii_rxd(g0_rxd), .gmii_rx_dv(g0_rx_dv), .gmii_rx_er(g0_rx_er));
    wccp_rgmii_rx rx1 (.rgmii_rxc(eth1_rxc), .rgmii_rxd(rx1_d), .rgmii_rx_ctl(rx1_ctl),
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
