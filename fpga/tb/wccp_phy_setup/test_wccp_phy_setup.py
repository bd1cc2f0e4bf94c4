"""wccp_phy_setup (boards/colorlight_i5/rtl): after its wait, the exact clause-22 frames that set
both PHYs to 1000BASE-T full duplex only and restart auto-negotiation, then the identifier
reads; phy_missing when a PHY does not answer; nothing on the bus before the wait or after the
sequence. Frames are checked bit by bit with the clause-22 PHY model of wccp_mdio's test."""
import pathlib
import sys

import pytest
import wccp_tb
from wccp_tb import Clock, ReadOnly, RisingEdge, cocotb, cocotb_test

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "wccp_mdio"))
from test_wccp_mdio import Phy, check_frame  # noqa: E402  (the PHY model, shared)

ROOT = wccp_tb.ROOT
WAIT_LOG2 = 6
EXPECTED = [(False, 0, 9, 0x0200), (False, 0, 4, 0x0001), (False, 0, 0, 0x1340),
            (False, 1, 9, 0x0200), (False, 1, 4, 0x0001), (False, 1, 0, 0x1340),
            (True, 0, 2, None), (True, 1, 2, None)]


async def run_sequence(dut, phy_addrs, regs):
    dut.rst.value = 1
    dut.mdio_i.value = 1
    cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start())
    for _ in range(3):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    phy = Phy(_Pins(dut), phy_addrs, regs)
    cocotb.start_soon(phy.run())
    first = None
    for cyc in range(200000):
        await RisingEdge(dut.clk)
        await ReadOnly()
        if first is None and int(dut.mdio_oe.value):
            first = cyc
        if int(dut.done.value):
            break
    assert int(dut.done.value), "sequence finished"
    assert first is not None and first >= 2 ** WAIT_LOG2, ("no frame before the wait", first)
    for _ in range(3000):
        await RisingEdge(dut.clk)
    return phy


class _Pins:
    """The set-up block's pins under the names the PHY model uses (busy: a frame is on)."""

    def __init__(self, dut):
        self.mdc, self.mdio_o, self.mdio_oe, self.mdio_i, self.clk = (
            dut.mdc, dut.mdio_o, dut.mdio_oe, dut.mdio_i, dut.clk)
        self.busy = dut.mdio.busy


@cocotb_test
async def test_sets_both_phys_to_1000_full(dut):
    regs = {2: 0x0362}
    phy = await run_sequence(dut, {0, 1}, regs)
    assert len(phy.frames) == len(EXPECTED), len(phy.frames)
    for (rd, a, r, d), bits in zip(EXPECTED, phy.frames, strict=True):
        check_frame(bits, rd, a, r, regs[r] if rd else d)
    assert not phy.violations, phy.violations[:5]
    assert int(dut.phy_missing.value) == 0
    assert not phy.bits, "no frame after the sequence"


@cocotb_test
async def test_missing_phy_flagged(dut):
    phy = await run_sequence(dut, {0}, {2: 0x0362})       # the PHY at address 1 does not answer
    assert len(phy.frames) == len(EXPECTED)
    assert int(dut.phy_missing.value) == 1


@cocotb_test
async def test_identifier_all_ones_is_missing(dut):
    phy = await run_sequence(dut, {0, 1}, {2: 0xffff})
    assert len(phy.frames) == len(EXPECTED)
    assert int(dut.phy_missing.value) == 1


@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_phy_setup(sim):
    rtl = ROOT / "boards" / "colorlight_i5" / "rtl"
    wccp_tb.run_sim(sim, "wccp_phy_setup", __file__, parameters={"WAIT_LOG2": WAIT_LOG2, "HALF": 4},
                    sources=[rtl / "wccp_phy_setup.v", rtl / "wccp_mdio.v"])
