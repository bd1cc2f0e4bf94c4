"""wccp_rgmii_rx: RGMII (DDR nibbles on the PHY's RX clock) to GMII in the core clock: frames
come out byte-exact, back to back, with RX_ER kept, for RX clocks 250 ppm faster and slower
than the core clock. Uses fpga/tb/ecp5_sim.v for the IDDRX1F primitive."""
import random

import pytest
import wccp_tb
from cocotbext.eth import GmiiSink
from wccp_tb import Clock, FallingEdge, RisingEdge, Timer, cocotb, cocotb_test


async def _rgmii_send(dut, frames, ifg=12):
    """frames: [(payload, er_index or None)]; preamble + SFD added."""
    d = dut
    for payload, er_at in frames:
        data = b"\x55" * 7 + b"\xd5" + payload
        for i, b in enumerate(data):
            er = 1 if er_at is not None and i == er_at + 8 else 0
            await FallingEdge(d.rgmii_rxc)
            await Timer(2, "ns")                  # centre-aligned (RGMII-ID)
            d.rgmii_rxd.value = b & 15
            d.rgmii_rx_ctl.value = 1
            await RisingEdge(d.rgmii_rxc)
            await Timer(2, "ns")
            d.rgmii_rxd.value = b >> 4
            d.rgmii_rx_ctl.value = 1 ^ er
        for _ in range(ifg):
            await FallingEdge(d.rgmii_rxc)
            await Timer(2, "ns")
            d.rgmii_rx_ctl.value = 0
            d.rgmii_rxd.value = 0
            await RisingEdge(d.rgmii_rxc)
            await Timer(2, "ns")
            d.rgmii_rx_ctl.value = 0


class TB:
    def __init__(self, dut):
        self.dut = dut
        cocotb.start_soon(Clock(dut.clk, 8000, unit="ps").start())
        self.rxc = None
        dut.rgmii_rxd.value = 0
        dut.rgmii_rx_ctl.value = 0
        dut.rst.value = 1
        dut.gmii_rxd.value = 0     # (not reset in the RTL: X until the first byte; GmiiSink reads it)
        self.sink = GmiiSink(dut.gmii_rxd, dut.gmii_rx_er, dut.gmii_rx_dv, dut.clk, dut.rst)

    def rx_clock(self, ps):
        if self.rxc is not None:
            self.rxc.cancel()
        self.rxc = cocotb.start_soon(Clock(self.dut.rgmii_rxc, ps, unit="ps").start(start_high=False))

    async def reset(self):
        self.dut.rst.value = 1
        for _ in range(5):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        for _ in range(5):
            await RisingEdge(self.dut.clk)

    async def traffic(self, seed):
        rng = random.Random(seed)
        frames = []
        for n in (60, 64, 1522, 100, 1522, 61, 300):
            payload = bytes(rng.randrange(256) for _ in range(n))
            frames.append((payload, rng.randrange(n) if rng.random() < 0.3 else None))
        await _rgmii_send(self.dut, frames)
        for _ in range(50):
            await RisingEdge(self.dut.clk)
        got = []
        while not self.sink.empty():
            got.append(self.sink.recv_nowait())
        assert len(got) == len(frames), ([len(f.data) for f in got], [len(p) for p, _ in frames])
        for (payload, er_at), f in zip(frames, got, strict=True):
            assert bytes(f.get_payload(strip_fcs=False)) == payload
            pre = len(f.data) - len(payload)          # preamble/SFD bytes kept in f.data
            errs = [i - pre for i, e in enumerate(f.error or []) if e]
            assert errs == ([] if er_at is None else [er_at]), (errs, er_at)


@cocotb_test
async def test_rx_ppm(dut):
    """RX clock 250 ppm slower, then 250 ppm faster than the core clock."""
    tb = TB(dut)
    tb.rx_clock(8002)
    await tb.reset()
    await tb.traffic(1)
    tb.rx_clock(7998)
    await tb.traffic(2)


# a core reset (rst, e.g. PLL lock lost) empties the FIFO (the read pointer catches up with the
# write pointer of the RX clock domain): no stale entries come out as a garbage frame.
@cocotb_test
async def test_reset_after_traffic(dut):
    tb = TB(dut)
    tb.rx_clock(8000)
    await tb.reset()
    for _ in range(100):           # (a previous test's traffic may already show the bug here)
        await RisingEdge(dut.clk)
    while not tb.sink.empty():
        tb.sink.recv_nowait()
    await tb.traffic(3)
    await tb.reset()
    for _ in range(100):
        await RisingEdge(dut.clk)
    assert tb.sink.empty() and tb.sink.idle(), "frame output after reset with no RGMII input"


@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_rgmii_rx(sim):
    wccp_tb.run_sim(sim, "wccp_rgmii_rx", __file__,
                    sources=[wccp_tb.RTL / "wccp_rgmii_rx.v", wccp_tb.TB / "ecp5_sim.v"])
