"""wccp_rgmii_tx: GMII bytes leave as RGMII nibbles (low nibble while TXC high, high nibble
while low), TX_CTL = TX_EN on the high phase and TX_EN ^ TX_ER on the low phase, TXC is the
core clock. Uses fpga/tb/ecp5_sim.v for the ODDRX1F primitive."""
import random

import pytest
import wccp_tb
from wccp_tb import Clock, FallingEdge, RisingEdge, Timer, cocotb, cocotb_test


@cocotb_test
async def test_ddr_encoding(dut):
    rng = random.Random(1)
    cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start())
    dut.gmii_tx_en.value = 0
    dut.gmii_tx_er.value = 0
    dut.gmii_txd.value = 0
    sent = [(0, 0, 0)] * 4 + [(1, rng.randrange(2) if rng.random() < 0.1 else 0, rng.randrange(256))
                              for _ in range(300)] + [(0, 0, 0)] * 8
    got = []

    async def sample():
        while True:
            await RisingEdge(dut.clk)
            await Timer(2, "ns")
            hi_phase = (int(dut.rgmii_txc.value), int(dut.rgmii_txd.value), int(dut.rgmii_tx_ctl.value))
            await FallingEdge(dut.clk)
            await Timer(2, "ns")
            lo_phase = (int(dut.rgmii_txc.value), int(dut.rgmii_txd.value), int(dut.rgmii_tx_ctl.value))
            assert hi_phase[0] == 1 and lo_phase[0] == 0, "TXC must follow the core clock"
            got.append((hi_phase[2], hi_phase[2] ^ lo_phase[2], hi_phase[1] | lo_phase[1] << 4))

    await RisingEdge(dut.clk)
    cocotb.start_soon(sample())
    for en, er, d in sent:
        await Timer(1, "ns")
        dut.gmii_tx_en.value, dut.gmii_tx_er.value, dut.gmii_txd.value = en, er, d
        await RisingEdge(dut.clk)
    for _ in range(4):
        await RisingEdge(dut.clk)
    # fixed latency: find where the burst starts and compare cycle by cycle
    first = next(i for i, g in enumerate(got) if g[0])
    body = [s for s in sent if s[0]]
    assert got[first:first + len(body)] == body
    assert not any(g[0] for g in got[first + len(body):])
    assert first <= 4 + 3, first


@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_rgmii_tx(sim):
    wccp_tb.run_sim(sim, "wccp_rgmii_tx", __file__,
                    sources=[wccp_tb.RTL / "wccp_rgmii_tx.v", wccp_tb.TB / "ecp5_sim.v"])
