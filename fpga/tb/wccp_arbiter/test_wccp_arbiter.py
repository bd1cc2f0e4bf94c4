"""wccp_arbiter: a grant is held for the owner's whole frame (no interleaving), strict
round-robin when several requesters wait (fairness, bounded waiting), no grant without a request.
Built with N = 2 and N = 3 requesters (the egress arbiters: two builders and the packet-out
sender); the testbench reads N from the environment (ARB_N)."""
import os
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


def _test(f):
    return cocotb.test()(f) if cocotb is not None else f


N = int(os.environ.get("ARB_N", "2"))


class TB:
    """N requesters behaving like builders: raise req, wait for the grant, send a frame of
    `n` cycles while granted, drop req (for at least one cycle), repeat."""

    def __init__(self, dut, seed, gap=(1, 4), flen=(1, 20), clock=True):
        self.dut = dut
        self.rng = random.Random(seed)
        self.gap = gap
        self.flen = flen
        if clock:
            cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start())
        dut.req.value = 0
        self.req = [0] * N
        self.waiting_since = [None] * N
        self.frames = []          # (requester, start cycle, end cycle)
        self.max_wait = [0] * N
        self.errors = []

    async def run(self, cycles, stop_after=None):
        d = self.dut
        d.rst.value = 1
        for _ in range(3):
            await RisingEdge(d.clk)
        d.rst.value = 0
        left = [0] * N         # cycles of frame left while granted
        idle = [0] * N         # cycles before requesting again
        sent = [0] * N
        owner = None           # requester currently transmitting
        prev = None            # (grant_valid, grant, req) seen at the previous edge
        for cyc in range(cycles):
            await RisingEdge(d.clk)
            await ReadOnly()
            gv, g = int(d.grant_valid.value), int(d.grant.value)
            # inputs change 1 ns after an edge: self.req is what the arbiter saw at this edge,
            # prev its grant state before the edge
            r = self.req
            if prev is not None and prev[0]:
                if r[prev[1]] and not (gv and g == prev[1]):
                    self.errors.append((cyc, "grant moved while the owner requested"))
                if not r[prev[1]] and gv:
                    self.errors.append((cyc, "grant kept after the owner released"))
            elif gv and not r[g]:
                self.errors.append((cyc, "grant without request", g))
            elif not gv and any(r) and prev is not None:
                self.errors.append((cyc, "request not granted while idle"))
            prev = (gv, g)
            nreq = list(self.req)
            for i in range(N):
                if self.req[i] and left[i] == 0 and gv and g == i and owner is None:
                    left[i] = self.rng.randint(*self.flen)
                    owner = i
                    self.frames.append([i, cyc, None])
                    self.max_wait[i] = max(self.max_wait[i], cyc - self.waiting_since[i])
                if left[i]:
                    if not (gv and g == i):
                        self.errors.append((cyc, "lost grant mid-frame", i))
                    if owner != i:
                        self.errors.append((cyc, "two frames interleaved"))
                    left[i] -= 1
                    if left[i] == 0:
                        nreq[i] = 0
                        owner = None
                        sent[i] += 1
                        self.frames[-1][2] = cyc
                        idle[i] = self.rng.randint(*self.gap)
                elif not self.req[i]:
                    if idle[i]:
                        idle[i] -= 1
                    elif stop_after is None or sent[i] < stop_after[i]:
                        nreq[i] = 1
                        self.waiting_since[i] = cyc + 1
            await Timer(1, "ns")
            self.req = nreq
            d.req.value = sum(b << i for i, b in enumerate(nreq))
        return sent


@_test
async def test_saturated_round_robin(dut):
    """All always requesting again right away: grants go round strictly in index order."""
    tb = TB(dut, 1, gap=(0, 0))
    sent = await tb.run(3000)
    assert tb.errors == [], tb.errors[:5]
    who = [f[0] for f in tb.frames]
    assert len(who) > 100
    assert all(b == (a + 1) % N for a, b in zip(who, who[1:], strict=False)), who[:40]
    assert max(sent) - min(sent) <= 1, sent
    # bounded wait: at most the others' longest frames plus a few cycles of turnaround each
    assert max(tb.max_wait) <= (N - 1) * (20 + 4), tb.max_wait


@_test
async def test_random_traffic(dut):
    for seed in range(4):
        tb = TB(dut, 10 + seed, gap=(0, 6), flen=(1, 30), clock=seed == 0)
        sent = await tb.run(2000)
        assert tb.errors == [], (seed, tb.errors[:5])
        assert min(sent) > 20, sent
        assert max(tb.max_wait) <= (N - 1) * (30 + 4), tb.max_wait
        # frames never overlap
        fr = [f for f in tb.frames if f[2] is not None]
        for a, b in zip(fr, fr[1:], strict=False):
            assert b[1] > a[2], (a, b)


@_test
async def test_single_requester(dut):
    """Only requester 1 active: it gets every grant, with one turnaround cycle at most."""
    tb = TB(dut, 5, gap=(0, 2), flen=(1, 5))
    sent = await tb.run(600, stop_after=[10 ** 9 if i == 1 else 0 for i in range(N)])
    assert tb.errors == [] and sent[1] > 50 and sum(sent) == sent[1], (tb.errors[:3], sent)
    assert tb.max_wait[1] <= 2, tb.max_wait


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_arbiter(sim, n):
    wccp_tb.run_sim(sim, "wccp_arbiter", __file__, sources=[wccp_tb.RTL / "wccp_arbiter.v"],
                    parameters={"N": n}, extra_env={"ARB_N": str(n)}, tag="n%d" % n)
