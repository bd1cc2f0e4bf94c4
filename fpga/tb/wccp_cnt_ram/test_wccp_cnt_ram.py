"""wccp_cnt_ram: frame/byte counters incremented by two ports' commit units at once and read by the host
(reads first): no lost or double increments, reads see a value between the counts before
and after the read, RAM cleared after reset (reads wait for the clear)."""
import random

import pytest
import wccp_tb
from wccp_tb import Clock, ReadOnly, RisingEdge, Timer, cocotb, cocotb_test

AW = 4



class TB:
    def __init__(self, dut, seed):
        self.dut = dut
        self.rng = random.Random(seed)
        cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start())
        for s in ("ev0", "ev0_idx", "ev0_bytes", "ev1", "ev1_idx", "ev1_bytes", "rd", "rd_idx", "rd_hi"):
            getattr(dut, s).value = 0
        self.frames = [0] * (1 << AW)
        self.bytes = [0] * (1 << AW)

    async def reset(self):
        self.dut.rst.value = 1
        for _ in range(3):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0

    async def run(self, cycles, ev_gap=16, rd_gap=40, traffic=True):
        """Random traffic and host reads; every read is checked against the model."""
        d, r = self.dut, self.rng
        next_ev = [r.randrange(ev_gap), r.randrange(ev_gap)]
        next_rd = r.randrange(rd_gap)
        pend = None          # (idx, hi, lo_bound, issue cycle)
        nreads = 0
        for cyc in range(cycles):
            await RisingEdge(d.clk)
            await ReadOnly()
            if int(d.rvalid.value):
                assert pend is not None, "rvalid without a read"
                idx, hi, lo_bound, t0 = pend
                v = int(d.rdata.value)
                cur = (self.bytes[idx] if hi else self.frames[idx]) & 0xFFFFFFFF
                assert lo_bound <= v <= cur, (cyc, idx, hi, lo_bound, v, cur)
                assert cyc - t0 <= 12 + (1 << AW) + 4, "read took %d cycles" % (cyc - t0)
                pend = None
                nreads += 1
            await Timer(1, "ns")
            d.ev0.value = d.ev1.value = d.rd.value = 0
            if traffic:
                for e in (0, 1):
                    if cyc >= next_ev[e]:
                        idx = r.randrange(1 << AW) if r.random() < 0.7 else 3
                        b = r.randrange(60, 4096)
                        getattr(d, "ev%d" % e).value = 1
                        getattr(d, "ev%d_idx" % e).value = idx
                        getattr(d, "ev%d_bytes" % e).value = b
                        self.frames[idx] += 1
                        self.bytes[idx] += b
                        next_ev[e] = cyc + r.randrange(ev_gap, 3 * ev_gap)
            if pend is None and cyc >= next_rd:
                idx = r.randrange(1 << AW) if r.random() < 0.7 else 3
                hi = r.randrange(2)
                d.rd.value = 1
                d.rd_idx.value = idx
                d.rd_hi.value = hi
                # events issued up to now may still be pending: only a lower bound
                lo = (self.bytes[idx] if hi else self.frames[idx]) - (2 * 4095 if hi else 2)
                pend = (idx, hi, max(lo, 0), cyc)
                next_rd = cyc + r.randrange(rd_gap, 3 * rd_gap)
        return nreads

    async def read(self, idx, hi):
        d = self.dut
        await Timer(1, "ns")
        d.rd.value, d.rd_idx.value, d.rd_hi.value = 1, idx, hi
        await RisingEdge(d.clk)
        await Timer(1, "ns")
        d.rd.value = 0
        for _ in range((1 << AW) + 20):
            await RisingEdge(d.clk)
            await ReadOnly()
            if int(d.rvalid.value):
                v = int(d.rdata.value)
                await Timer(1, "ns")
                return v
        raise AssertionError("no rvalid")


@cocotb_test
async def test_reset_clear(dut):
    tb = TB(dut, 1)
    await tb.reset()
    # a read right after reset waits for the clear and returns 0 (memory had random content)
    assert await tb.read(5, 0) == 0
    assert await tb.read((1 << AW) - 1, 1) == 0


@cocotb_test
async def test_concurrent(dut):
    tb = TB(dut, 2)
    await tb.reset()
    for _ in range((1 << AW) + 4):        # let the post-reset clear finish
        await RisingEdge(dut.clk)
    n = await tb.run(3000)
    assert n > 30
    await tb.run(30, traffic=False)
    for i in range(1 << AW):
        assert await tb.read(i, 0) == tb.frames[i], (i, tb.frames[i])
        assert await tb.read(i, 1) == tb.bytes[i] & 0xFFFFFFFF, i
    # both ports hitting the same counter in the same cycle
    d = dut
    for _ in range(50):
        await Timer(1, "ns")
        d.ev0.value = d.ev1.value = 1
        d.ev0_idx.value = d.ev1_idx.value = 7
        d.ev0_bytes.value, d.ev1_bytes.value = 100, 1000
        tb.frames[7] += 2
        tb.bytes[7] += 1100
        await RisingEdge(d.clk)
        await Timer(1, "ns")
        d.ev0.value = d.ev1.value = 0
        for _ in range(10):
            await RisingEdge(d.clk)
    assert await tb.read(7, 0) == tb.frames[7]
    assert await tb.read(7, 1) == tb.bytes[7]


# events arriving while the RAM is cleared after reset (2**AW cycles: 16 us for the 2048-word
# bucket counters) are queued per port: no count is lost.
@cocotb_test
async def test_events_during_clear(dut):
    tb = TB(dut, 3)
    await tb.reset()
    d = dut
    for idx in (2, 9):               # two events from port 0 during the clear
        await Timer(1, "ns")
        d.ev0.value, d.ev0_idx.value, d.ev0_bytes.value = 1, idx, 64
        await RisingEdge(d.clk)
        await Timer(1, "ns")
        d.ev0.value = 0
        await RisingEdge(d.clk)
    assert (await tb.read(2, 0), await tb.read(9, 0)) == (1, 1)


@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_cnt_ram(sim):
    wccp_tb.run_sim(sim, "wccp_cnt_ram", __file__, sources=[wccp_tb.RTL / "wccp_cnt_ram.v", wccp_tb.RTL / "wccp_bram.v"],
                    parameters={"AW": AW, "BYTES": 1})
