"""wccp_spi_slave: SPI mode-0 write/read transactions (docs/regmap.md), address
auto-increment, incomplete words discarded, MISO valid at every SCLK rising edge at the
documented maximum SCLK (clk/5 = 25 MHz) for several clock phase offsets."""
import pathlib
import random
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import wccp_tb  # noqa: E402

try:
    import cocotb
    from cocotb.clock import Clock
    from cocotb.triggers import ReadOnly, RisingEdge, Timer
    from wccp_hw import SpiMaster
except ImportError:
    cocotb = None


def _test(f):
    return cocotb.test()(f) if cocotb is not None else f


class TB:
    """Register-bus model behind the slave: rdata one cycle after reg_rd (like wccp_regs)."""

    def __init__(self, dut, hp=20):
        self.dut = dut
        cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start())
        self.mem = {}
        self.writes = []
        self.reads = []
        dut.reg_rdata.value = 0
        dut.reg_rvalid.value = 0
        self.spi = SpiMaster(dut, half_period_ns=hp)
        cocotb.start_soon(self._bus())

    def value(self, a):
        return self.mem.get(a, (a * 0x9E3779B1 + 0x1234567) & 0xFFFFFFFF)

    async def _bus(self):
        d = self.dut
        pend = None
        while True:
            await RisingEdge(d.clk)
            await ReadOnly()
            wr, rd = int(d.reg_wr.value), int(d.reg_rd.value)
            a = int(d.reg_addr.value)
            if wr:
                w = int(d.reg_wdata.value)
                self.writes.append((a, w))
            if rd:
                self.reads.append(a)
            await Timer(1, "ns")
            if pend is not None:
                d.reg_rdata.value = self.value(pend)
                d.reg_rvalid.value = 1
            else:
                d.reg_rvalid.value = 0
            if wr:
                self.mem[a] = w
            pend = a if rd else None

    async def reset(self):
        self.dut.rst.value = 1
        for _ in range(4):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        for _ in range(2):
            await RisingEdge(self.dut.clk)


async def _transactions(tb, seed, phase_ps):
    rng = random.Random(seed)
    # phase of the SPI edges relative to the core clock
    await RisingEdge(tb.dut.clk)
    if phase_ps:
        await Timer(phase_ps, "ps")
    # single-word and multi-word writes, auto-increment
    for addr, n in ((0x000003, 1), (0x001234, 5), (0xFFFFFE, 3), (0x00A000, 2)):
        words = [rng.getrandbits(32) for _ in range(n)]
        tb.writes.clear()
        await tb.spi.write(addr, words)
        exp = [((addr + i) & 0xFFFFFF, w) for i, w in enumerate(words)]
        assert tb.writes == exp, (hex(addr), tb.writes, exp)
    # reads: the dummy byte, then big-endian words from consecutive addresses
    nw = len(tb.writes)
    for addr, n in ((0x001234, 5), (0x000777, 1), (0x0ABCDE, 4)):
        tb.reads.clear()
        got = await tb.spi.read(addr, n)
        exp = [tb.value(addr + i) for i in range(n)]
        assert got == exp, (hex(addr), [hex(x) for x in got], [hex(x) for x in exp])
        # consecutive addresses are fetched; the slave prefetches up to two words past the end
        # (harmless: no register has a read side effect)
        assert tb.reads[:n] == [addr + i for i in range(n)], (tb.reads, hex(addr))
        assert tb.reads == [addr + i for i in range(len(tb.reads))] and len(tb.reads) <= n + 2, tb.reads
    assert len(tb.writes) == nw, "a read transaction wrote a register"
    return tb


# core clock 8 ns; 8 phase offsets of the SPI edges against the core clock cover one period
PHASES_PS = [i * 1000 + 370 for i in range(8)]


@_test
async def test_sclk_20mhz(dut):
    """20 MHz SCLK (half period 25 ns): every transaction correct for every clock phase."""
    tb = TB(dut, 25)
    await tb.reset()
    for i, ph in enumerate(PHASES_PS):
        await _transactions(tb, i, ph)


# docs/regmap.md allows SCLK up to clk/5 = 25 MHz: the slave shifts MISO on the (detected)
# rising edge right after sampling MOSI, so each bit is on the pin a full SCLK period ahead.
@_test
async def test_sclk_25mhz_documented_max(dut):
    """25 MHz SCLK (documented maximum, half period 20 ns), every clock phase."""
    tb = TB(dut, 20)
    await tb.reset()
    for i, ph in enumerate(PHASES_PS):
        await _transactions(tb, i, ph)


@_test
async def test_slow_sclk(dut):
    tb = TB(dut, 67)
    await tb.reset()
    await _transactions(tb, 9, 0)


@_test
async def test_incomplete_and_abort(dut):
    tb = TB(dut, 20)
    await tb.reset()
    d = dut
    # write with 1 full word + 3 bytes: only the full word is written
    d.spi_cs_n.value = 0
    await Timer(20, "ns")
    await tb.spi._xfer(bytes([0x02, 0x00, 0x10, 0x00]) + bytes.fromhex("A1B2C3D4") + b"\x11\x22\x33")
    await Timer(20, "ns")
    d.spi_cs_n.value = 1
    await Timer(200, "ns")
    assert tb.writes == [(0x001000, 0xA1B2C3D4)], tb.writes
    # the next transaction is framed afresh (no leftover bytes / bit count)
    await tb.spi.write(0x000200, [0xCAFEBABE])
    assert tb.writes[-1] == (0x000200, 0xCAFEBABE), tb.writes
    # CS raised in the middle of a byte: nothing is written, next transaction is clean
    n = len(tb.writes)
    d.spi_cs_n.value = 0
    await Timer(20, "ns")
    await tb.spi._xfer(bytes([0x02, 0x00, 0x00]))
    for i in range(5):
        d.spi_mosi.value = i & 1
        await Timer(20, "ns")
        d.spi_sck.value = 1
        await Timer(20, "ns")
        d.spi_sck.value = 0
    d.spi_cs_n.value = 1
    await Timer(200, "ns")
    assert len(tb.writes) == n
    got = await tb.spi.read(0x000200, 2)
    assert got == [0xCAFEBABE, tb.value(0x201)], [hex(x) for x in got]
    assert len(tb.writes) == n
    # unknown command: no bus access at all
    rd0 = len(tb.reads)
    d.spi_cs_n.value = 0
    await Timer(20, "ns")
    await tb.spi._xfer(bytes([0x55, 0, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8]))
    d.spi_cs_n.value = 1
    await Timer(200, "ns")
    assert len(tb.writes) == n and len(tb.reads) == rd0


@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_spi_slave(sim):
    wccp_tb.run_sim(sim, "wccp_spi_slave", __file__, sources=[wccp_tb.RTL / "wccp_spi_slave.v"])
