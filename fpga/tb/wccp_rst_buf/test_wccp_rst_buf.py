"""wccp_rst_buf: a reset copy is asserted from power-up until the first clock edge, then
follows its input exactly one cycle late."""
import random

import pytest
import wccp_tb
from wccp_tb import Clock, ReadOnly, RisingEdge, Timer, cocotb, cocotb_test


@cocotb_test
async def test_follows_one_cycle_late(dut):
    dut.d.value = 0
    await Timer(1, "ns")
    assert int(dut.q.value) == 1, "in reset before the first edge"
    rng = random.Random(7)
    cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start(start_high=False))
    prev = 0
    seen = set()
    for cyc in range(300):
        await RisingEdge(dut.clk)
        await ReadOnly()
        assert int(dut.q.value) == prev, cyc
        seen.add(prev)
        await Timer(1, "ns")
        prev = rng.random() < 0.3
        dut.d.value = int(prev)
    assert seen == {0, 1}


@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_rst_buf(sim):
    wccp_tb.run_sim(sim, "wccp_rst_buf", __file__, sources=[wccp_tb.RTL / "wccp_rst_buf.v"])
