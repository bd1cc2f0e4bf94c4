"""wccp_rst_sync: the reset is high from configuration, asserts at
once when arst rises (between clock edges, and with the clock stopped), stays high while arst
is high and falls exactly STAGES rising edges after arst falls, on a clock edge."""
import random

import pytest
import wccp_tb
from wccp_tb import Clock, ReadOnly, RisingEdge, Timer, cocotb, cocotb_test

ROOT = wccp_tb.ROOT


async def edges_until_release(dut):
    n = 0
    while True:
        await RisingEdge(dut.clk)
        n += 1
        await ReadOnly()
        if not int(dut.rst.value):
            return n
        assert n < 50, "never released"


@cocotb_test
async def test_release_after_stages_and_async_assert(dut):
    stages = int(dut.STAGES.value)
    dut.arst.value = 0
    await Timer(1, "ns")
    assert int(dut.rst.value) == 1, "in reset from configuration"
    cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start(start_high=False))
    assert await edges_until_release(dut) == stages
    rng = random.Random(3)
    for _ in range(20):
        for _ in range(rng.randrange(1, 12)):
            await RisingEdge(dut.clk)
        await Timer(rng.choice([1, 3, 5, 7]), "ns")      # anywhere between two edges
        dut.arst.value = 1
        await Timer(0.1, "ns")
        assert int(dut.rst.value) == 1, "asserted at once, not on the next edge"
        for _ in range(rng.randrange(0, 5)):             # held: stays in reset
            await RisingEdge(dut.clk)
            await ReadOnly()
            assert int(dut.rst.value) == 1
        await Timer(2, "ns")
        dut.arst.value = 0
        assert await edges_until_release(dut) == stages
    # a short arst pulse between two edges still restarts the count
    await RisingEdge(dut.clk)
    await Timer(2, "ns")
    dut.arst.value = 1
    await Timer(1, "ns")
    dut.arst.value = 0
    await Timer(0.1, "ns")
    assert int(dut.rst.value) == 1
    assert await edges_until_release(dut) == stages


@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_rst_sync(sim, stages):
    wccp_tb.run_sim(sim, "wccp_rst_sync", __file__, parameters={"STAGES": stages}, tag="s%d" % stages,
                    sources=[wccp_tb.RTL / "wccp_rst_sync.v"])
