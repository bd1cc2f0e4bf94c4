// Board tops (fpga/rtl/fpga.v, boards/*/rtl/): the 25 MHz -> 125 MHz core clock from the
// ECP5 PLL (EHXPLLL, CLKOP fed back). Included inside a top: declares clk and locked and
// reads the top's clk25 port.
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
