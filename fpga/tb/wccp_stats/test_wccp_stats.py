"""wccp_stats: per-port and per-slot counters ({bytes, frames} words) under simultaneous
events on every input (within what the MACs and commit units can produce, incl. runt
floods and decision bursts): every counter ends equal to the model; reads
during traffic lag by a bounded time (< 2 us) and never run ahead."""
import random

import pytest
import wccp_tb
from wccp_tb import Clock, ReadOnly, RisingEdge, Timer, cocotb, cocotb_test

SWEEP = 192             # bound on how far a counter lags its events (cycles)
NWORDS = 52             # words in use: ports 0..31, slots 32..47, cause 10 (truncated) 48..49, cause 11 (closed_drop) 50..51


def cause_word(p, k):
    """Counter word of port p's cause bit k (wccp_stats header)."""
    return 48 + p if k == 10 else 50 + p if k == 11 else p * 16 + 6 + k



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

    async def run(self, cycles, p_ev=0.15, reads=True, flood=False, burst=False):
        """Random events on every input at once, within the input contract of wccp_stats
        (what the MACs and commit units can produce): per port a receive event at most
        every 3 cycles (runt fragments) and frames of n bytes at least n + 2 cycles apart,
        transmit events >= 84 cycles apart, decisions >= 9 cycles apart each raising up to
        three event cycles (learn, slot match, cause; several in one cycle too), at most 16 decisions queued behind a
        pause (the receive queue). flood: runt fragments every 3 cycles on both ports.
        burst: decisions pause, 16+ frames queue up, then all are decided back to back."""
        d, r = self.dut, self.rng
        pend = []
        nreads = 0
        # per-port pacing state, kept across calls (cycle numbers are absolute)
        if not hasattr(self, "pace"):
            self.pace = ([0, 0], [0, 0], [0, 0], [0, 0], [dict(), dict()])
        rx_next, tx_next, dec_next, tokens, sched = self.pace   # sched: cycle -> (causes, slot, bytes)
        hold_until = self.cyc + cycles * 2 // 3 if burst else 0
        for _ in range(cycles):
            await RisingEdge(d.clk)
            await ReadOnly()
            self.cyc += 1
            if int(d.rvalid.value):
                assert pend, "rvalid without a read"
                _, w, hi, t_rd = pend.pop(0)
                # four cycles, five when the read met the write of the same word
                assert self.cyc - t_rd in (4, 5), self.cyc - t_rd
                self.late = getattr(self, "late", 0) + (self.cyc - t_rd == 5)
                v = int(d.rdata.value)
                # value at read time, at most one sweep (+ pipeline) old
                ok = [h[2 if hi else 1] & 0xFFFFFFFF for h in self.hist[w]
                      if t_rd - SWEEP - 8 <= h[0] <= t_rd] + \
                    [h[2 if hi else 1] & 0xFFFFFFFF for h in self.hist[w] if h[0] < t_rd - SWEEP - 8][-1:]
                assert v in ok, (w, hi, v, ok[-3:])
                nreads += 1
            else:
                assert not pend or self.cyc - pend[0][3] < 6, "no rvalid 5 cycles after rd"
            await Timer(1, "ns")
            c = self.cyc
            rx = tx = slot = 0
            rxl = txl = sidx = byt = 0
            drop = cause = 0
            for p in (0, 1):
                # receive
                if c >= rx_next[p] and (flood or r.random() < p_ev):
                    if flood or r.random() < (0.1 if burst else 0.4):
                        n = r.randrange(1, 2) if flood else r.randrange(1, 64)
                        rx_next[p] = c + max(3, n + 2)
                        kind = 0
                    else:
                        n = r.randrange(64, 80 if burst else 160) if burst or r.random() < 0.97 else r.randrange(1523, 4096)
                        rx_next[p] = c + n + 2
                        kind = 2 if n > 1522 else r.choice([None, None, None, 1, 3])
                        if kind is None and tokens[p] < 16:
                            tokens[p] += 1
                    rx |= 1 << p
                    rxl |= n << (12 * p)
                    self._count(p * 16, n)
                    if kind is not None:
                        drop |= 1 << (4 * p + kind)
                        self._count(p * 16 + 2 + kind, 0)
                # decisions: one per queued frame, >= 9 cycles apart
                if tokens[p] and c >= dec_next[p] and c >= hold_until and (burst or r.random() < 0.5):
                    self.peak = max(getattr(self, "peak", 0), tokens[p])
                    tokens[p] -= 1
                    dec_next[p] = c + 9
                    n = r.randrange(64, 1523)
                    s = r.randrange(8) if burst or r.random() < 0.7 else None
                    k = r.choice([k for k in range(12) if k != 8]) if burst or r.random() < 0.9 else None
                    if burst:                       # worst case: three records, three operations
                        ev = [(c, 8, None, 0), (c + 1, None, s, n), (c + 2 + r.randrange(6), k, None, 0)]
                    else:
                        ev = [(c + 1, k, s, n)] if (s is not None and k is not None and r.random() < 0.5) else \
                            ([(c + 1, None, s, n)] if s is not None else []) + \
                            ([(c + 1 + r.randrange(1, 7), k, None, 0)] if k is not None else [])
                        if r.random() < 0.3:          # learn: alone or with another event
                            ev.append((r.choice([c] + [e[0] for e in ev]), 8, None, 0))
                    for t, k, s, n in ev:
                        ks, ss, nn = sched[p].get(t, ((), None, 0))
                        sched[p][t] = (ks + ((k,) if k is not None and k not in ks else ()), s if s is not None else ss,
                                       n if s is not None else nn)
                ev = sched[p].pop(c, None)
                if ev is not None:
                    ks, s, n = ev
                    for k in ks:
                        cause |= 1 << (12 * p + k)
                        self._count(cause_word(p, k), 0)
                    if s is not None:
                        slot |= 1 << p
                        sidx |= s << (3 * p)
                        byt |= n << (12 * p)
                        self._count(32 + 2 * s + p, n)
                # transmit
                if c >= tx_next[p] and (burst or r.random() < p_ev):
                    n = r.randrange(64, 300) if r.random() < 0.9 else r.randrange(300, 1523)
                    tx_next[p] = c + max(84, n + 20)
                    tx |= 1 << p
                    txl |= n << (12 * p)
                    self._count(p * 16 + 1, n)
            d.ev_rx.value, d.ev_rx_len.value, d.ev_drop.value = rx, rxl, drop
            d.ev_tx.value, d.ev_tx_len.value, d.ev_cause.value = tx, txl, cause
            d.ev_slot.value, d.ev_slot_idx.value, d.ev_bytes.value = slot, sidx, byt
            d.rd.value = 0
            if reads and not pend and r.random() < 0.1:
                w = r.choice([r.randrange(32), 32 + r.randrange(16), 48 + r.randrange(4)])
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
        for _ in range(4):
            await RisingEdge(d.clk)
            await ReadOnly()
            if int(d.rvalid.value):
                v = int(d.rdata.value)
                await RisingEdge(d.clk)
                return v
        raise AssertionError("no rvalid")


async def _check_all(tb):
    for _ in range(2 * SWEEP + 10):
        await RisingEdge(tb.dut.clk)
    for w in range(NWORDS):
        assert await tb.read(w, 0) == tb.f[w], (w, tb.f[w])
        assert await tb.read(w, 1) == tb.b[w] & 0xFFFFFFFF, (w, tb.b[w])


@cocotb_test
async def test_counters(dut):
    """Random event storm on every input at once; reads during traffic; every counter exact."""
    tb = TB(dut, 1)
    await tb.reset()
    # events from the first cycle after reset (the RAM is being cleared) are kept
    n = await tb.run(6000, p_ev=0.3)
    assert n > 100
    assert tb.late > 0, "no read met a write of the same word"
    await _check_all(tb)
    assert await tb.read(60, 0) == 0
    assert sum(tb.f[32:48]) > 10 and sum(tb.f[6:16] + tb.f[22:32]) > 10 and tb.f[2] + tb.f[18] > 10 and tb.f[1] > 5
    assert tb.f[48] > 0 and tb.f[49] > 0 and tb.f[50] + tb.f[51] > 0, tb.f[48:52]


@cocotb_test
async def test_runt_flood(dut):
    """Runt fragments every 3 cycles on both ports from the first cycle after reset, plus
    transmit traffic: no receive or runt increment is lost."""
    tb = TB(dut, 2)
    await tb.reset()
    await tb.run(3000, flood=True, reads=True)
    await _check_all(tb)
    assert tb.f[0] >= 990 and tb.f[16] >= 990 and tb.f[2] == tb.f[0]


@cocotb_test
async def test_burst(dut):
    """Worst-case burst: decisions pause while frames queue (16 per port), then every queued
    frame is decided back to back (three event cycles each), with runt/drop/transmit traffic."""
    tb = TB(dut, 3)
    await tb.reset()
    for i in range(3):
        await tb.run(3000, p_ev=0.5, burst=True, reads=(i == 1))
    await _check_all(tb)
    assert tb.peak == 16 and sum(tb.f[6:16]) + sum(tb.f[22:32]) > 40 and tb.f[48] + tb.f[49] > 4


@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_stats(sim):
    wccp_tb.run_sim(sim, "wccp_stats", __file__, sources=[wccp_tb.RTL / "wccp_stats.v", wccp_tb.RTL / "wccp_bram.v"])
