"""wccp_stats: per-port and per-slot counters ({bytes, frames} words) under simultaneous
events on every input: after the sweeper catches up every counter equals the model; reads
during traffic lag by less than one sweep (< 1 us) and never run ahead."""
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
except ImportError:
    cocotb = None

SWEEP = 48 * 4          # cycles to fold every accumulator once


def _test(f):
    return cocotb.test()(f) if cocotb is not None else f


class TB:
    def __init__(self, dut, seed):
        self.dut = dut
        self.rng = random.Random(seed)
        cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start())
        for s in ("ev_rx", "ev_rx_len", "ev_drop", "ev_tx", "ev_tx_len", "ev_cause", "ev_slot",
                  "ev_slot_idx", "ev_bytes", "rd", "rd_word", "rd_hi"):
            getattr(dut, s).value = 0
        self.f = [0] * 64
        self.b = [0] * 64
        self.hist = [[(0, 0, 0)] for _ in range(64)]     # (cycle, frames, bytes)
        self.cyc = 0

    async def reset(self):
        self.dut.rst.value = 1
        for _ in range(3):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0

    def _count(self, w, nbytes):
        self.f[w] += 1
        self.b[w] += nbytes
        self.hist[w].append((self.cyc, self.f[w], self.b[w]))

    async def run(self, cycles, p_ev=0.15, reads=True):
        d, r = self.dut, self.rng
        pend = []
        nreads = 0
        for _ in range(cycles):
            await RisingEdge(d.clk)
            await ReadOnly()
            self.cyc += 1
            if pend and self.cyc == pend[0][0]:
                _, w, hi, t_rd = pend.pop(0)
                assert int(d.rvalid.value) == 1, "no rvalid 2 cycles after rd"
                v = int(d.rdata.value)
                # value at read time, at most one sweep (+ pipeline) old
                ok = [h[2 if hi else 1] & 0xFFFFFFFF for h in self.hist[w]
                      if t_rd - SWEEP - 8 <= h[0] <= t_rd] + \
                    [h[2 if hi else 1] & 0xFFFFFFFF for h in self.hist[w] if h[0] < t_rd - SWEEP - 8][-1:]
                assert v in ok, (w, hi, v, ok[-3:])
                nreads += 1
            else:
                assert int(d.rvalid.value) == 0
            await Timer(1, "ns")
            rx = tx = slot = 0
            rxl = txl = sidx = byt = 0
            drop = cause = 0
            for p in (0, 1):
                if r.random() < p_ev:
                    n = r.randrange(64, 1523)
                    rx |= 1 << p
                    rxl |= n << (12 * p)
                    self._count(p * 16, n)
                    if r.random() < 0.3:
                        k = r.randrange(4)
                        drop |= 1 << (4 * p + k)
                        self._count(p * 16 + 2 + k, 0)
                    if r.random() < 0.8:
                        k = r.randrange(10)
                        cause |= 1 << (11 * p + k)
                        self._count(p * 16 + 6 + k, 0)
                    if r.random() < 0.6:
                        s = r.randrange(8)
                        slot |= 1 << p
                        sidx |= s << (3 * p)
                        byt |= n << (12 * p)
                        self._count(32 + 2 * s + p, n)
                if r.random() < p_ev:
                    n = r.randrange(64, 1523)
                    tx |= 1 << p
                    txl |= n << (12 * p)
                    self._count(p * 16 + 1, n)
            d.ev_rx.value, d.ev_rx_len.value, d.ev_drop.value = rx, rxl, drop
            d.ev_tx.value, d.ev_tx_len.value, d.ev_cause.value = tx, txl, cause
            d.ev_slot.value, d.ev_slot_idx.value, d.ev_bytes.value = slot, sidx, byt
            d.rd.value = 0
            if reads and not pend and r.random() < 0.1:
                w = r.choice([r.randrange(32), 32 + r.randrange(16)])
                hi = r.randrange(2)
                d.rd.value, d.rd_word.value, d.rd_hi.value = 1, w, hi
                pend.append((self.cyc + 2, w, hi, self.cyc))
        await RisingEdge(d.clk)          # the last cycle's events are sampled here
        await Timer(1, "ns")
        for s in ("ev_rx", "ev_tx", "ev_drop", "ev_cause", "ev_slot", "rd"):
            getattr(d, s).value = 0
        return nreads

    async def read(self, w, hi):
        d = self.dut
        await Timer(1, "ns")
        d.rd.value, d.rd_word.value, d.rd_hi.value = 1, w, hi
        await RisingEdge(d.clk)
        await Timer(1, "ns")
        d.rd.value = 0
        await RisingEdge(d.clk)
        await ReadOnly()
        assert int(d.rvalid.value) == 1
        v = int(d.rdata.value)
        await RisingEdge(d.clk)
        return v


@_test
async def test_counters(dut):
    tb = TB(dut, 1)
    await tb.reset()
    # events from the first cycle after reset (the RAM is being cleared) are kept
    n = await tb.run(4000)
    assert n > 100
    for _ in range(2 * SWEEP + 10):
        await RisingEdge(dut.clk)
    for w in list(range(32)) + list(range(32, 48)):
        assert await tb.read(w, 0) == tb.f[w], (w, tb.f[w])
        assert await tb.read(w, 1) == tb.b[w] & 0xFFFFFFFF, (w, tb.b[w])
    assert await tb.read(60, 0) == 0


@_test
async def test_burst(dut):
    """Every counter incremented every cycle for a while (accumulators must not overflow
    before the sweeper folds them: 8-bit frames / 16-bit bytes per word per sweep)."""
    tb = TB(dut, 2)
    await tb.reset()
    await tb.run(400, p_ev=1.0, reads=False)
    for _ in range(2 * SWEEP + 10):
        await RisingEdge(dut.clk)
    for w in (0, 1, 16, 17, 32, 47):
        assert await tb.read(w, 0) == tb.f[w], (w, tb.f[w])


@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_stats(sim):
    wccp_tb.run_sim(sim, "wccp_stats", __file__, sources=[wccp_tb.RTL / "wccp_stats.v"])
