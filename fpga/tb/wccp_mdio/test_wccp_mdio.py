"""wccp_mdio (boards/colorlight_i5/rtl): every MDIO frame checked bit by bit against IEEE 802.3
clause 22 (22.2.4.5): 32 preamble ones, ST 01, OP 01 write / 10 read, PHY address and register
address MSB first, turnaround 10 driven by the master on a write, Z then 0 from the PHY on a
read, 16 data bits MSB first; MDC no faster than 2.5 MHz with high and low times >= 160 ns,
MDIO stable 10 ns either side of every rising MDC edge (22.3.4), the master never driving while
the PHY does, and the read data / missing-PHY flag the master reports."""
import random

import pytest
import wccp_tb
from wccp_tb import Clock, ReadOnly, RisingEdge, Timer, cocotb, cocotb_test

ROOT = wccp_tb.ROOT
PERIOD_NS = 8           # 125 MHz


class Phy:
    """A clause-22 PHY on the pins: records the bit each rising MDC edge sees (as the PHY
    samples it) and answers reads of its registers."""

    def __init__(self, dut, addr, regs, present=True):
        """addr: the PHY address, or a set of them (several PHYs with the same registers)."""
        self.addr = {addr} if isinstance(addr, int) else set(addr)
        self.dut, self.regs, self.present = dut, regs, present
        self.bits = []          # (value, master drives?) per rising MDC edge of the current frame
        self.frames = []
        self.drive = None       # the PHY's output: None (released), 0 or 1
        self.edges = []         # time of each rising edge (ns)
        self.last_change = -1e9
        self.violations = []

    def resolve(self):
        oe, o = int(self.dut.mdio_oe.value), int(self.dut.mdio_o.value)
        if oe and self.drive is not None:
            self.violations.append("bus contention at %.0f ns" % cocotb.utils.get_sim_time("ns"))
        if oe:
            return o
        return 1 if self.drive is None else self.drive     # board pull-up

    async def run(self):
        cocotb.start_soon(self._pins())
        while True:
            await RisingEdge(self.dut.mdc)
            now = cocotb.utils.get_sim_time("ns")
            oe = int(self.dut.mdio_oe.value)
            if oe and now - self.last_change < 10:
                self.violations.append("setup < 10 ns at %.0f ns" % now)
            self.edges.append(now)
            self.bits.append((self.resolve(), oe))
            self._answer()
            await Timer(10, "ns")
            if oe and self.last_change > now:
                self.violations.append("hold < 10 ns at %.0f ns" % now)

    async def _pins(self):
        """The master's outputs change only on clock edges: after each one, note when the
        master changed MDIO, put the resolved bus on mdio_i and close a frame when the
        master goes idle."""
        prev = None
        while True:
            await RisingEdge(self.dut.clk)
            await ReadOnly()
            oe, o = int(self.dut.mdio_oe.value), int(self.dut.mdio_o.value)
            cur = (oe, o if oe else None)
            if cur != prev:
                self.last_change = cocotb.utils.get_sim_time("ns")
                prev = cur
            idle = not int(self.dut.busy.value)
            await Timer(1, "ns")
            self.dut.mdio_i.value = self.resolve()
            if idle and self.bits:
                self.frames.append(self.bits)
                self.bits = []

    def _answer(self):
        """After rising edge n the PHY sets MDIO for bit n + 1 (clause 22: 0..300 ns after MDC)."""
        n = len(self.bits) - 1
        b = [x[0] for x in self.bits]
        self.drive = None
        if n < 45 or not self.present:
            return
        st_op = b[32:36]
        phy = int("".join(map(str, b[36:41])), 2)
        if st_op != [0, 1, 1, 0] or phy not in self.addr:
            return
        reg = int("".join(map(str, b[41:46])), 2)
        val = self.regs.get(reg, 0)
        if n == 46:
            self.drive = 0                              # second turnaround bit
        elif 47 <= n <= 62:
            self.drive = (val >> (15 - (n - 47))) & 1   # data, MSB first


def field(bits, a, b):
    return int("".join(str(x[0]) for x in bits[a:b]), 2)


def check_frame(bits, rd, phy, reg, data):
    """One frame as the PHY saw it, against clause 22."""
    assert len(bits) == 64, len(bits)
    assert all(v == 1 and oe for v, oe in bits[:32]), "preamble: 32 ones driven by the master"
    assert [v for v, _ in bits[32:34]] == [0, 1], "ST"
    assert [v for v, _ in bits[34:36]] == ([1, 0] if rd else [0, 1]), "OP"
    assert all(oe for _, oe in bits[:46]), "the master drives ST, OP and both addresses"
    assert field(bits, 36, 41) == phy and field(bits, 41, 46) == reg
    if rd:
        assert [oe for _, oe in bits[46:]] == [0] * 18, "read: the master releases MDIO from TA on"
        assert bits[47][0] == 0 or data is None, "the PHY drives the second TA bit low"
    else:
        assert [v for v, _ in bits[46:48]] == [1, 0] and bits[46][1] and bits[47][1], "write TA = 10"
        assert all(oe for _, oe in bits[48:])
        assert field(bits, 48, 64) == data, "write data MSB first"


async def command(dut, rd, phy, reg, wdata=0):
    while int(dut.busy.value):
        await RisingEdge(dut.clk)
    dut.rd.value, dut.phy.value, dut.regad.value, dut.wdata.value = int(rd), phy, reg, wdata
    dut.start.value = 1
    await RisingEdge(dut.clk)
    dut.start.value = 0
    while True:
        await RisingEdge(dut.clk)
        await ReadOnly()
        if int(dut.done.value):
            r = int(dut.rdata.value), int(dut.rd_err.value)
            await RisingEdge(dut.clk)
            return r


async def setup(dut, phy_addr=1, regs=None, present=True):
    dut.start.value = 0
    dut.rst.value = 1
    dut.mdio_i.value = 1
    cocotb.start_soon(Clock(dut.clk, PERIOD_NS, unit="ns").start())
    for _ in range(4):
        await RisingEdge(dut.clk)
    assert int(dut.mdio_oe.value) == 0 and int(dut.mdc.value) == 0, "idle: MDIO released, MDC low"
    dut.rst.value = 0
    p = Phy(dut, phy_addr, regs or {}, present)
    cocotb.start_soon(p.run())
    return p


@cocotb_test
async def test_write_and_read_frames(dut):
    rng = random.Random(25)
    regs = {r: rng.randrange(1, 0xffff) for r in range(32)}
    phy = await setup(dut, 1, regs)
    cmds = [(False, 1, 9, 0x0200), (False, 0, 4, 0x0001), (True, 1, 2, None), (False, 31, 31, 0xffff),
            (False, 1, 0, 0x0000), (True, 1, 0x1f, None), (True, 1, 0, None)]
    cmds += [(rng.random() < 0.5, rng.choice([1, rng.randrange(32)]), rng.randrange(32), rng.randrange(65536))
             for _ in range(8)]
    results = []
    for rd, a, r, d in cmds:
        results.append(await command(dut, rd, a, r, 0 if rd else d))
    await Timer(1, "us")
    assert len(phy.frames) == len(cmds), (len(phy.frames), len(cmds))
    for (rd, a, r, d), bits, (rdata, err) in zip(cmds, phy.frames, results, strict=True):
        present = rd and a == 1
        check_frame(bits, rd, a, r, regs[r] if present else (None if rd else d))
        if rd:
            assert err == (0 if present else 1), (a, r, err)
            if present:
                assert rdata == regs[r], (hex(rdata), hex(regs[r]))
                assert field(bits, 48, 64) == regs[r]
    assert not phy.violations, phy.violations[:5]
    # MDC: one period per bit, >= 400 ns (2.5 MHz), within a frame
    gaps = [b - a for a, b in zip(phy.edges, phy.edges[1:], strict=False)]
    assert min(gaps) >= 400, min(gaps)
    assert int(dut.mdio_oe.value) == 0, "released after the frame"


@cocotb_test
async def test_mdc_phases(dut):
    await setup(dut, 1, {})
    highs, lows = [], []
    cocotb.start_soon(command(dut, False, 3, 5, 0xa5a5))
    await RisingEdge(dut.mdc)
    for _ in range(20):
        t0 = cocotb.utils.get_sim_time("ns")
        await wccp_tb.FallingEdge(dut.mdc)
        t1 = cocotb.utils.get_sim_time("ns")
        await RisingEdge(dut.mdc)
        t2 = cocotb.utils.get_sim_time("ns")
        highs.append(t1 - t0)
        lows.append(t2 - t1)
    assert min(highs) >= 160 and min(lows) >= 160, (min(highs), min(lows))
    assert set(highs) == {32 * PERIOD_NS} and set(lows) == {32 * PERIOD_NS}


@cocotb_test
async def test_reset_aborts_a_frame(dut):
    await setup(dut, 1, {})
    cocotb.start_soon(command(dut, False, 1, 4, 0x1234))
    for _ in range(500):
        await RisingEdge(dut.clk)
    assert int(dut.busy.value) == 1
    dut.rst.value = 1
    await RisingEdge(dut.clk)
    await RisingEdge(dut.clk)
    await ReadOnly()
    assert int(dut.busy.value) == 0 and int(dut.mdio_oe.value) == 0 and int(dut.mdc.value) == 0


@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_mdio(sim):
    wccp_tb.run_sim(sim, "wccp_mdio", __file__,
                    sources=[ROOT / "boards" / "colorlight_i5" / "rtl" / "wccp_mdio.v"])
