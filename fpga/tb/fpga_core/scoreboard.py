"""Whole-core scoreboard for fpga_core at line rate (test_line_rate.py, bench_fpga_core.py).

Every input frame is predicted by wccp.fwdmodel.ForwardingModel under each table
configuration it may meet (``Predictor``: one model per configuration, each frame's output
frames and counter deltas), sent on its GMII port, and accounted for afterwards by
``Scoreboard.check``:

* delivered: its output frame (FCS included) appears on the model's egress, byte for byte,
  in the order of its input port's frames (outputs of one input port leave each egress in
  that port's order; the two input ports interleave freely);
* dropped by the model (rx checks, GRE return without inner packet, truncated redirect):
  nothing leaves, or a stomped copy (TX_ER on an inverted FCS: no receiver accepts it) when
  its output had started before its status was known (cut-through); a bad-FCS frame's
  stomped copy must be a prefix of what the frame would have produced with a good FCS;
* dropped for overflow (the receive buffer or the bundle queue was full): the receive
  queue's own event (``ev_drop`` overflow bit, in the cycle of the frame's ``ev_rx``) marks
  the frame; nothing of it may leave, the buffer or queue must really have been full during
  the frame (``Invariants``), and it counts as received and ``rx_overflow`` only.

Then every counter (port, decision, slot, per-cache, per-bucket and unknown-location
counters, read through the register bus) must equal the sum of the frames' model deltas,
the decision and slot counters per receive port.

Table commits during traffic. A commit switches the decision core's tables between two
decisions (wccp_regs holds the core, copies, and releases it), so each input port's frames
follow the old tables up to some frame and the new ones from there on. The scoreboard
accepts, per input port p, exactly the assignments "frames 0..k_p-1 old, k_p.. new" for
some k_p, and takes k_p only from what can be observed outside the core:

* a frame whose output started (SFD on the wire) before the COMMIT register write was
  decided with the old tables: k_p is past it;
* a frame whose first preamble byte entered after the commit had completed (STATUS
  COMMIT_BUSY read as clear) is decided with the new tables: k_p is at or before it;
* in between, every k_p for which every output frame of port p matches exactly, on both
  egresses, is a candidate; the counters must then equal the deltas of one pair of
  candidates (k_0, k_1). A frame whose old and new outputs are identical (pass-through)
  does not pin k_p, but its counter deltas (unassigned or no slot at all...) do.

A frame may so use "old" or "new" tables, never anything else, and a port never goes back
from new to old.
"""
import bisect
import collections
import copy

from core_tb import CLK_NS, STOMPABLE, classify_output
from wccp import regmap as R
from wccp.dataplane import MAX_CACHES, MAX_GROUPS, NUM_BUCKETS
from wccp.frame import fcs
from wccp.fwdmodel import ForwardingModel
from wccp_tb import ReadOnly, RisingEdge, cocotb
from cocotb.triggers import FallingEdge
from cocotb.utils import get_sim_time

MASK32 = 0xFFFFFFFF
RX_DROPS = ("rx_runt", "rx_bad_fcs", "rx_oversize")       # ev_drop bits 0..2


class ScoreboardError(AssertionError):
    pass


def flat_counters(c):
    """The model's counters() as {key: value} (non-zero values only): (name,) for totals,
    (name, i) for lists, (name, i, j) for lists of lists."""
    out = {}
    for k, v in c.items():
        if isinstance(v, list):
            for i, x in enumerate(v):
                if isinstance(x, list):
                    for j, y in enumerate(x):
                        if y:
                            out[(k, i, j)] = y
                elif x:
                    out[(k, i)] = x
        elif v:
            out[(k,)] = v
    return out


def frame_delta(before, after, port):
    """One frame's counter delta, keyed as the RTL's counters are read (``read_counters``):
    the decision counters and the slot counters per receive port."""
    d = {}
    for k, v in after.items():
        x = v - before.get(k, 0)
        if not x:
            continue
        if len(k) == 1:
            k = (k[0], port)                  # a decision counter, per receive port
        elif k[0] in ("slot_frames", "slot_bytes"):
            k = (k[0], k[1], port)
        d[k] = x
    return d


def add_into(total, d):
    for k, v in d.items():
        x = total.get(k, 0) + v
        if x:
            total[k] = x
        else:
            total.pop(k, None)


async def read_counters(bus, slots=None):
    """The counters of fpga_core read over the register bus (the port counters and those of
    `slots`, default all), keyed as frame_delta keys the model's (non-zero values only)."""
    out = {}

    async def rd(key, addr):
        v = await bus.read(addr)
        if v:
            out[key] = v
    # the port counters: the model's per-port lists and totals (register offset CNT_<NAME>)
    names = [k for k, v in ForwardingModel().counters().items()
             if not (k.startswith("slot_") or (isinstance(v, list) and isinstance(v[0], list)))]
    for p in range(2):
        for k in names:
            await rd((k, p), R.PORTCNT_BASE + p * R.PORTCNT_STRIDE + getattr(R, "CNT_" + k.upper()))
    for s in range(MAX_GROUPS) if slots is None else slots:
        for p in range(2):
            await rd(("slot_frames", s, p), R.SLOTCNT_BASE + s * R.SLOTCNT_STRIDE + R.CNT_SLOT_FRAMES + 2 * p)
            await rd(("slot_bytes", s, p), R.SLOTCNT_BASE + s * R.SLOTCNT_STRIDE + R.CNT_SLOT_BYTES + 2 * p)
        for i in range(MAX_CACHES):
            b = R.CACHECNT_BASE + s * R.CACHECNT_STRIDE
            await rd(("cache_frames", s, i), b + R.CNT_CACHE_FRAMES + R.CNT_CACHE_FRAMES_STRIDE * i)
            await rd(("cache_bytes", s, i), b + R.CNT_CACHE_BYTES + R.CNT_CACHE_BYTES_STRIDE * i)
            await rd(("cache_unknown_frames", s, i), R.UNKCNT_BASE + s * R.UNKCNT_STRIDE + i)
        for b in range(NUM_BUCKETS):
            await rd(("bucket_hits", s, b), R.BUCKETCNT_BASE + s * R.BUCKETCNT_STRIDE + b)
    return out


def counter_diff(after, before):
    d = {}
    for k in set(after) | set(before):
        x = (after.get(k, 0) - before.get(k, 0)) & MASK32
        if x:
            d[k] = x
    return d


class Frame:
    """One input frame: its port, index on the port, bytes (FCS included), the model's
    outputs and counter delta under each configuration, and what the RTL said about it."""
    __slots__ = ("port", "idx", "data", "outs", "deltas", "reasons", "g", "ovf")

    def __init__(self, port, idx, data):
        self.port = port
        self.idx = idx
        self.data = data
        self.outs = []          # per configuration: [(egress, bytes)]
        self.deltas = []        # per configuration: counter delta
        self.reasons = []       # per configuration: the model's drop reason or None
        self.g = None           # the GmiiFrame sent (its sim times)
        self.ovf = False        # the receive queue dropped it for overflow

    def sent(self, g):
        """tx_complete of the GmiiFrame that carried it (its sim times)."""
        self.g = g

    def ovf_delta(self):
        n = len(self.data)
        return {("rx_frames", self.port): 1, ("rx_bytes", self.port): n, ("rx_overflow", self.port): 1}

    def describe(self, cfg=None):
        cs = range(len(self.outs)) if cfg is None else [cfg]
        parts = ["in port %d frame %d (%d bytes, %s)" % (self.port, self.idx, len(self.data),
                                                         "overflow" if self.ovf else "rx ok")]
        for c in cs:
            parts.append("  config %d: %s -> %s" % (c, self.reasons[c] or "delivered",
                                                    [(o, len(d)) for o, d in self.outs[c]]))
        parts.append("  input %s" % self.data.hex())
        return "\n".join(parts)


class Predictor:
    """The model's prediction of every frame, under each configuration (a ForwardingModel
    each, already programmed; their locations must not change from frame to frame, which the
    scenario ensures: caches are learnt before and send from their own MAC and port)."""

    def __init__(self, models):
        self.models = models
        self.last = [flat_counters(m.counters()) for m in models]
        self.frames = [[], []]

    def add(self, port, data):
        f = Frame(port, len(self.frames[port]), bytes(data))
        for c, m in enumerate(self.models):
            outs = m.process(port, f.data, now=0)
            after = flat_counters(m.counters())
            d = frame_delta(self.last[c], after, port)
            self.last[c] = after
            if any(k[0] == "learnt" for k in d):
                raise ScoreboardError("port %d frame %d teaches a cache location: the frames' predictions "
                                      "would depend on their order\n%s" % (port, f.idx, f.data.hex()))
            f.outs.append([(o, bytes(x)) for o, x in outs])
            f.deltas.append(d)
            reason = None
            if not outs:
                reason = next((k[0] for k in d if k[0] in STOMPABLE + ("gre_return_bad", "unassigned")), "drop")
            f.reasons.append(reason)
        self.frames[port].append(f)
        return f


class Invariants:
    """Cheap simulation assertions on fpga_core's queues and outputs, event driven (no
    per-cycle coroutine). A violation is recorded with its time and reported by check()
    (and logged at once):

    * per receive queue: the bundle queue never holds more than its 16 entries and the status
      queue never more than 17 (16 queued bundles' statuses + the one being consumed), so
      neither overflows or underflows (a wrap shows as a count beyond them);
    * the frame buffer: a kept frame is whole in it when it ends (the writer never ran over
      unreleased bytes), and the builder never releases bytes that were not written;
    * an overflow drop happens only when the buffer (``full``) or the bundle queue was full
      during the frame;
    * per egress MAC: no byte is ever missing mid-frame (``a_er``: the builder let the MAC
      run dry, which would end the frame with TX_ER); at the GMII pins every frame is
      followed by at least the 12-byte inter-frame gap.

    Also records every receive event (ev_rx, ev_drop, length) per port, in order."""

    def __init__(self, dut, log=None):
        self.dut = dut
        self.log = log
        self.errors = []
        self.rx_events = [[], []]           # per port: (time, ev_drop bits, length)
        # when the buffer / the bundle queue of each port was full: [[start, end or None], ...]
        self.full = [[], []]
        self.qfull = [[], []]
        self.max_q = [0, 0]
        self.max_s = [0, 0]
        self.tx_busy = [0, 0]               # ns with tx_en high
        self.tx_last = [0, 0]               # ns: the end of the last frame out
        self.nbuf = 1 << len(dut.port[0].rxq.wp)
        for g in range(2):
            q = dut.port[g].rxq
            cocotb.start_soon(self._rx(g, q))
            cocotb.start_soon(self._queue(g, q.q_used, 16, "bundle queue", True))
            cocotb.start_soon(self._queue(g, q.s_used, 17, "status queue", False))
            cocotb.start_soon(self._level(q.full, self.full[g], lambda v: v != 0))
            cocotb.start_soon(self._level(q.q_used, self.qfull[g], lambda v: v >= 16))
            cocotb.start_soon(self._release(g, q))
            cocotb.start_soon(self._underrun(g, dut.egress[g].mac_tx.a_er))
            cocotb.start_soon(self._ifg(g, getattr(dut, "gmii%d_tx_en" % g)))

    def take_rx(self):
        """The receive events recorded so far (per port), forgotten here."""
        ev = self.rx_events
        self.rx_events = [[], []]
        return ev

    def _err(self, msg):
        msg = "%d ns: %s" % (get_sim_time("ns"), msg)
        self.errors.append(msg)
        if self.log is not None:
            self.log.error("invariant: %s", msg)

    async def _rx(self, g, q):
        while True:
            await RisingEdge(q.ev_rx)
            await ReadOnly()
            if not int(q.ev_rx.value):
                continue
            drop = int(q.ev_drop.value)
            n = int(q.ev_rx_len.value)
            now = get_sim_time()
            self.rx_events[g].append((now, drop, n))
            wp, fs, rel = int(q.wp.value), int(q.fstart.value), int(q.rel_ptr.value)
            m = self.nbuf - 1
            if not drop:
                kept = (wp - fs) & m
                if kept != n - 4:
                    self._err("port %d: frame of %d bytes kept as %d buffer bytes" % (g, n, kept))
                if ((wp - rel) & m) < kept:
                    self._err("port %d: a kept frame (%d bytes) overlaps released space: wp %d rel_ptr %d" % (
                        g, kept, wp, rel))

    async def _queue(self, g, sig, limit, name, is_bundle):
        while True:
            await sig.value_change
            v = int(sig.value)
            if is_bundle:
                self.max_q[g] = max(self.max_q[g], v)
            else:
                self.max_s[g] = max(self.max_s[g], v)
            if v > limit:
                self._err("port %d: %s holds %d entries (at most %d)" % (g, name, v, limit))

    @staticmethod
    async def _level(sig, spans, cond):
        on = False
        while True:
            await sig.value_change
            v = cond(int(sig.value))
            if v and not on:
                spans.append([get_sim_time(), None])
            elif on and not v:
                spans[-1][1] = get_sim_time()
            on = v

    def full_during(self, g, t0, t1):
        """What was full at some time in [t0, t1] on port g: "buffer", "queue" (the bundle
        queue), or None."""
        for name, spans in (("buffer", self.full[g]), ("queue", self.qfull[g])):
            i = bisect.bisect_right(spans, t1, key=lambda sp: sp[0])
            if i and (spans[i - 1][1] is None or spans[i - 1][1] >= t0):
                return name
        return None

    async def _release(self, g, q):
        m = self.nbuf - 1
        rel = int(q.rel_ptr.value)
        while True:
            await q.rel_ptr.value_change
            await ReadOnly()
            new, wp = int(q.rel_ptr.value), int(q.wp.value)
            if ((new - rel) & m) > ((wp - rel) & m):
                self._err("port %d: builder released to %d beyond the write pointer %d (from %d)" % (
                    g, new, wp, rel))
            rel = new

    async def _underrun(self, g, sig):
        while True:
            await RisingEdge(sig)
            self._err("egress %d: a byte was missing mid-frame (MAC underrun)" % g)

    async def _ifg(self, g, sig):
        fell = None
        while True:
            await RisingEdge(sig)
            t = get_sim_time("ns")
            if fell is not None and t - fell < 12 * CLK_NS:
                self._err("egress %d: inter-frame gap of %d ns" % (g, t - fell))
            await FallingEdge(sig)
            fell = get_sim_time("ns")
            self.tx_busy[g] += fell - t
            self.tx_last[g] = fell


# an output frame: its egress, its number there, bytes (FCS included), SFD time, stomped or not
Output = collections.namedtuple("Output", "egress n data sfd stomped")


class Collector:
    """Takes every frame off both GMII sinks as it completes, in order per egress."""

    def __init__(self, sinks):
        self.sinks = sinks
        self.outs = [[], []]
        for o in range(2):
            cocotb.start_soon(self._run(o))

    async def _run(self, o):
        s = self.sinks[o]
        while True:
            f = await s.recv()
            data, st = classify_output(o, f)
            self.outs[o].append(Output(o, len(self.outs[o]), data, f.sim_time_sfd, st))

    def take(self):
        """The output frames collected so far (per egress), forgotten here."""
        outs = self.outs
        self.outs = [[], []]
        return outs


class Commit:
    """Times of one table commit during traffic (sim steps): when the COMMIT register write
    went out on the bus, and when STATUS said the commit had completed."""

    def __init__(self):
        self.t_write = None
        self.t_done = None


class Scoreboard:
    def __init__(self, predictor, seed, log=None):
        self.pred = predictor
        self.seed = seed
        self.log = log
        self.commit = None          # Commit, when the tables change during traffic (config 0 -> 1)
        self.k = None               # the (k_0, k_1) pairs the counters accepted
        self.stats = {}

    def fail(self, msg):
        if self.seed is not None:
            msg += "\n(reproduce with WCCP_SEED=%s)" % self.seed
        raise ScoreboardError(msg)

    # -- per input port: which configuration each frame used --

    def _k_range(self, p, by_port_out):
        """Candidate switch points k (frames < k old, >= k new) of input port p, from timing."""
        frames = self.pred.frames[p]
        n = len(frames)
        if self.commit is None:
            return 0, 0, [n]
        cm = self.commit
        hi = next((f.idx for f in frames if f.g.sim_time_start >= cm.t_done), n)
        lo = 0
        for o in range(2):
            for out, cands in by_port_out[o][p]:
                if out.sfd < cm.t_write:
                    lo = max(lo, max(f.idx for f, _ in cands) + 1)
        if lo > hi:
            self.fail("input port %d: an output before the commit write belongs to frame %d, after the "
                      "commit completed (frame %d on)" % (p, lo - 1, hi))
        return lo, hi, list(range(lo, hi + 1))

    def _expected(self, p, o, k):
        """Port p's expected outputs on egress o (frames < k under config 0, else config 1)."""
        exp = []
        for f in self.pred.frames[p]:
            if f.ovf:
                continue
            c = 0 if f.idx < k or len(f.outs) == 1 else 1
            for e, d in f.outs[c]:
                if e == o:
                    exp.append((f, c, d))
        return exp

    def _match(self, p, got, k):
        """None when port p's outputs equal the expectation under switch point k, else a
        description of the first difference."""
        for o in range(2):
            exp = self._expected(p, o, k)
            g = got[o][p]
            for n in range(max(len(exp), len(g))):
                e = exp[n] if n < len(exp) else None
                x = g[n] if n < len(g) else None
                if e is not None and x is not None and e[2] == x[0].data:
                    continue
                lines = ["egress %d, output %d of input port %d (switch point %d):" % (o, n, p, k)]
                if x is None:
                    lines.append("  missing: expected %s" % e[0].describe(e[1]))
                    lines.append("  expected output %s" % e[2].hex())
                else:
                    lines.append("  got  %s (egress frame %d, SFD at %d ns)" % (
                        x[0].data.hex(), x[0].n, x[0].sfd // 1000))
                    if e is None:
                        lines.append("  expected nothing more from this port")
                    else:
                        lines.append("  want %s" % e[2].hex())
                        lines.append("  for %s" % e[0].describe())
                    cands = ", ".join("port %d frame %d config %d" % (f.port, f.idx, c) for f, c in x[1])
                    lines.append("  the output is %s" % (("the prediction of " + cands) if cands else
                                                         "no frame's prediction"))
                return "\n".join(lines)
        return None

    def check(self, outs, invariants, rtl_delta):
        """Score the frames: `outs` the output frames (Collector.take()), `invariants` the
        Invariants watching the core (its receive events are taken), `rtl_delta` the RTL's
        counters' change over the traffic (counter_diff of two read_counters)."""
        frames = self.pred.frames
        ncfg = len(self.pred.models)
        rx_events = invariants.take_rx()
        # the receive events, one per input frame and in order: overflow marks, rx drops
        for p in range(2):
            ev = rx_events[p]
            if len(ev) != len(frames[p]):
                self.fail("input port %d: %d frames sent, %d receive events" % (p, len(frames[p]), len(ev)))
            for f, (t, drop, n) in zip(frames[p], ev, strict=True):
                want = sum(1 << b for b, r in enumerate(RX_DROPS) if r in [f.reasons[0]])
                if n != len(f.data) & 0xFFF:
                    self.fail("input port %d frame %d: received as %d bytes, sent %d" % (p, f.idx, n, len(f.data)))
                if drop & 7 != want:
                    self.fail("input port %d frame %d: receive drop bits %s, model %s\n%s" % (
                        p, f.idx, bin(drop), f.reasons[0], f.describe()))
                if drop & 8:
                    f.ovf = True
                    why = invariants.full_during(p, f.g.sim_time_start, t)
                    self.stats.setdefault("overflow_full", {})
                    self.stats["overflow_full"][why] = self.stats["overflow_full"].get(why, 0) + 1
                    if why is None:
                        self.fail("input port %d frame %d: overflow drop while neither the buffer nor the "
                                  "bundle queue was full\n%s" % (p, f.idx, f.describe()))
        if invariants.errors:
            self.fail("invariants violated:\n  " + "\n  ".join(invariants.errors[:20]))
        # attribute every good output to the frames whose prediction it is
        index = {}
        for p in range(2):
            for f in frames[p]:
                for c in range(ncfg):
                    for o, d in f.outs[c]:
                        lst = index.setdefault((o, d), [])
                        if not lst or lst[-1][0] is not f:
                            lst.append((f, c))
        got = [[[], []], [[], []]]        # [egress][input port] -> [(Output, candidates)]
        stomped = [[], []]
        for o in range(2):
            for out in outs[o]:
                if out.stomped:
                    stomped[o].append(out)
                    continue
                cands = index.get((o, out.data), [])
                ports = {f.port for f, _ in cands}
                if not cands:
                    self.fail("egress %d frame %d (SFD at %d ns) is no input frame's prediction:\n  got  %s\n%s" % (
                        o, out.n, out.sfd // 1000, out.data.hex(), self._nearest(index, o, out.data)))
                if len(ports) > 1:
                    self.fail("egress %d frame %d is the prediction of frames of both input ports" % (o, out.n))
                got[o][cands[0][0].port].append((out, cands))
        # per input port: the switch points under which every output matches
        ks = []
        for p in range(2):
            lo, hi, cand = self._k_range(p, got)
            ok = [k for k in cand if self._match(p, got, k) is None]
            if not ok:
                best = cand[0] if self.commit is None else self._closest(p, got, cand)
                self.fail("input port %d: outputs differ from the model%s\n%s" % (
                    p, "" if self.commit is None else
                    " under every switch point %d..%d between old and new tables" % (lo, hi),
                    self._match(p, got, best)))
            ks.append(ok)
            if self.commit is not None:
                self.stats.setdefault("window", []).append((lo, hi))
        self._check_stomped(stomped, ks)
        # counters: the deltas of one pair of switch points
        sums = []
        for p in range(2):
            per_k = {}
            for k in ks[p]:
                t = {}
                for f in frames[p]:
                    c = 0 if f.idx < k or ncfg == 1 else 1
                    add_into(t, f.ovf_delta() if f.ovf else f.deltas[c])
                per_k[k] = t
            sums.append(per_k)
        accepted = []
        for k0, t0 in sums[0].items():
            for k1, t1 in sums[1].items():
                t = dict(t0)
                add_into(t, t1)
                if t == rtl_delta:
                    accepted.append((k0, k1))
        if not accepted:
            k0, k1 = ks[0][0], ks[1][0]
            t = dict(sums[0][k0])
            add_into(t, sums[1][k1])
            diff = ["%s: RTL %d, model %d" % (k, rtl_delta.get(k, 0), t.get(k, 0))
                    for k in sorted(set(t) | set(rtl_delta), key=repr) if t.get(k, 0) != rtl_delta.get(k, 0)]
            self.fail("counters differ from the model (switch points %r, %r; showing %d of %d):\n  %s" % (
                ks[0], ks[1], min(30, len(diff)), len(diff), "\n  ".join(diff[:30])))
        self.k = accepted
        self._stats(got, stomped, accepted[0])
        return self.stats

    @staticmethod
    def _nearest(index, o, data):
        """The prediction for egress o most like data, byte by byte (for the report)."""
        def alike(d):
            return sum(a == b for a, b in zip(d, data, strict=False)) - abs(len(d) - len(data))
        best = max((k for k in index if k[0] == o), key=lambda k: alike(k[1]), default=None)
        if best is None:
            return "  (no prediction for this egress)"
        f, c = index[best][0]
        diff = [i for i, (a, b) in enumerate(zip(best[1], data, strict=False)) if a != b]
        return "  most alike prediction (bytes %s differ%s):\n  want %s\n  for %s" % (
            diff[:16], ", lengths %d / %d" % (len(best[1]), len(data)) if len(best[1]) != len(data) else "",
            best[1].hex(), f.describe(c))

    def _closest(self, p, got, cand):
        """The candidate switch point whose first difference comes latest (for the report)."""
        def first_bad(k):
            for o in range(2):
                exp = self._expected(p, o, k)
                g = got[o][p]
                for n in range(max(len(exp), len(g))):
                    if n >= len(exp) or n >= len(g) or exp[n][2] != g[n][0].data:
                        return n
            return 1 << 30
        return max(cand, key=first_bad)

    def _check_stomped(self, stomped, ks):
        """Every stomped output is the copy of a distinct input frame that the model drops for
        a reason cut-through may meet (STOMPABLE), and it carries that frame's bytes: a
        bad-FCS frame's copy is a prefix (then zero padding) of the output the same frame
        with a good FCS has in the model; a runt's, an oversize or a truncated frame's copy
        (no model output to compare) carries, after its Ethernet header (and the GRE
        encapsulation, if any), at least 8 bytes of that input frame, or is a pass-through
        copy of its first bytes. A copy cut off too early to carry 8 input bytes after the
        longest header (18 + 28) only counts against the frames left."""
        ncfg = len(self.pred.models)
        pool = []
        for p in range(2):
            for f in self.pred.frames[p]:
                if f.ovf:
                    continue
                rs = {f.reasons[0 if f.idx < k or ncfg == 1 else 1] for k in ks[p]} & set(STOMPABLE)
                if rs:
                    pool.append((f, rs))
        would = {}

        def would_be(f):
            """The model's outputs of f with a good FCS, under each configuration it may use."""
            if (f.port, f.idx) not in would:
                good = f.data[:-4] + fcs(f.data[:-4])
                would[(f.port, f.idx)] = [x for m in self.pred.models
                                          for x in copy.deepcopy(m).process(f.port, good, now=0)]
            return would[(f.port, f.idx)]

        def prefix_of(body, w):
            j = 0
            while j < min(len(w), len(body)) and w[j] == body[j]:
                j += 1
            return j > 0 and (j == len(body) or (len(body) == 60 and not any(body[j:])))

        def carries(body, data):
            b = body.rstrip(b"\0")
            return any(len(b) - h >= 8 and b[h:] in data for h in (14, 18, 14 + 28, 18 + 28)) or \
                (len(b) >= 7 and data.startswith(b))

        used = set()
        short = 0
        for o in range(2):
            for out in stomped[o]:
                body = out.data[:-4]
                hit = None
                for f, rs in pool:
                    if (f.port, f.idx) in used:
                        continue
                    if "rx_bad_fcs" in rs and any(e == o and prefix_of(body, w[:-4]) for e, w in would_be(f)):
                        hit = f
                    elif rs - {"rx_bad_fcs"} and carries(body, f.data):
                        hit = f
                    if hit is not None:
                        break
                if hit is not None:
                    used.add((hit.port, hit.idx))
                elif len(body.rstrip(b"\0")) < 18 + 28 + 8:
                    short += 1
                else:
                    self.fail("egress %d frame %d is stomped and no frame the model drops explains it:\n  %s" % (
                        o, out.n, out.data.hex()))
        if short > len(pool) - len(used):
            self.fail("%d short stomped output frames, only %d frames the model drops left to explain them" % (
                short, len(pool) - len(used)))
        self.stats["stomped"] = [len(s) for s in stomped]
        self.stats["stomped_short"] = short

    def _stats(self, got, stomped, k):
        frames = self.pred.frames
        st = self.stats
        st["frames_in"] = [len(frames[p]) for p in range(2)]
        st["overflow"] = [sum(f.ovf for f in frames[p]) for p in range(2)]
        st["delivered"] = [[len(got[o][p]) for p in range(2)] for o in range(2)]
        kinds = {}
        cfg_used = [0, 0]
        for p in range(2):
            for f in frames[p]:
                c = 0 if f.idx < k[p] or len(f.outs) == 1 else 1
                if f.ovf:
                    kind = "overflow"
                else:
                    cfg_used[c] += 1
                    keys = [x[0] for x in f.deltas[c]]
                    kind = next((r for r in ("redirect_gre", "redirect_l2", "gre_return", "gre_return_bad",
                                             "truncated", "rx_runt", "rx_bad_fcs", "rx_oversize",
                                             "from_cache", "unassigned", "cache_unknown", "gre_too_big",
                                             "not_redirectable") if r in keys),
                                "forward" if f.outs[c] else "drop")
                kinds[kind] = kinds.get(kind, 0) + 1
        st["kinds"] = kinds
        st["frames_by_config"] = cfg_used[:len(self.pred.models)]
        if self.commit is not None:
            st["switch_points"] = self.k        # every (k_0, k_1) the outputs and counters accept
