"""wccp_bank_ram: shadow writes invisible until the bank flips; copy-back after a flip."""
import pathlib
import random
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import wccp_tb  # noqa: E402

try:
    import cocotb
    from cocotb.clock import Clock
    from cocotb.triggers import ReadOnly, RisingEdge
except ImportError:
    cocotb = None


def _test(f):
    return cocotb.test()(f) if cocotb is not None else f


@_test
async def test_banks(dut):
    cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start())
    d = dut
    d.rst.value = 1
    d.live.value = 0
    d.wr_en.value = 0
    d.copy_start.value = 0
    d.rd_addr.value = 0
    for _ in range(3):
        await RisingEdge(d.clk)
    d.rst.value = 0
    n = 1 << 6

    async def read(a):
        d.rd_addr.value = a
        for _ in range(4):          # three read register stages
            await RisingEdge(d.clk)
        return int(d.rd_data.value)

    async def write(a, v):
        d.wr_addr.value = a
        d.wr_data.value = v
        d.wr_en.value = 1
        await RisingEdge(d.clk)
        d.wr_en.value = 0

    async def flip_and_copy(live):
        d.live.value = live
        d.copy_start.value = 1
        await RisingEdge(d.clk)
        d.copy_start.value = 0
        await RisingEdge(d.clk)
        await ReadOnly()
        assert int(d.copy_busy.value) == 1
        while True:
            await RisingEdge(d.clk)
            await ReadOnly()
            if not int(d.copy_busy.value):
                break
        await RisingEdge(d.clk)

    rng = random.Random(2)
    a = [rng.randrange(1 << 32) for _ in range(n)]
    for i in range(n):
        await write(i, a[i])
    for i in range(0, n, 7):
        assert await read(i) == 0          # still the live (old) bank
    await flip_and_copy(1)
    for i in range(n):
        assert await read(i) == a[i]
    # partial update after the copy-back: untouched entries keep the live contents
    await write(5, 0x12345678)
    assert await read(5) == a[5]
    await flip_and_copy(0)
    a[5] = 0x12345678
    for i in range(n):
        assert await read(i) == a[i], i


@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_bank_ram(sim):
    wccp_tb.run_sim(sim, "wccp_bank_ram", __file__, sources=[wccp_tb.RTL / "wccp_bank_ram.v", wccp_tb.RTL / "wccp_bram.v"],
                    parameters={"AW": 6, "DW": 32})
