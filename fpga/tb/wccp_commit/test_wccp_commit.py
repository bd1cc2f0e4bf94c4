"""wccp_commit: one receive port's commit unit on its own, at its interfaces: the decision core's
take (with the queue head's fields), the port's status FIFO head, the core's learning targets
and its hand-off (the decision's registers valid for the one `ho` cycle, and changed at random
in every other cycle, as the core goes on with other frames), the builder's action and fin
handshakes and the learnt-location writer's acknowledges, all with random timing. Random
frames of every decision shape (copy, L2 rewrite, GRE, decapsulation, drop; each event flag)
with good, bad and truncated statuses that arrive long before the hand-off, close to it or
long after it, an idle or a busy builder, and 0 to 20 learning targets (more than the list
holds: the core then waits for room).

Checked for every frame, against the commit rules written out here (`expected`):
- the action: store-and-forward (the status came first or the builder was busy) carries the
  status: a bad frame is a drop of its bytes, a truncated IPv4 datagram is forwarded normally
  if the decision was plain forwarding, else dropped; otherwise the decision as handed over,
  with the frame's length. Cut-through (status not there, builder idle) is the decision with
  act_cut, act_go naming its egress in its first cycle (none for a drop), and the fin after
  the status (fin_good unless bad, or truncated and not plain forwarding). Fields that do not
  depend on the status are those of the take and of the hand-off cycle, whatever the inputs do
  later; a frame whose status was there well before the hand-off is never cut through, one
  whose status comes long after it with the builder idle always is;
- the status is popped once, after it was presented, and the events (cause bits, slot, cache
  and bucket events with their indices and the frame's bytes) come in the cycle after the pop,
  as the rules say for the status, whatever the core's registers do from the hand-off on;
- learning: a good and complete frame's targets are requested in order with the frame's
  source MAC, one at a time, at least 9 cycles apart, each with a learn event, all before the
  commit; a bad or truncated frame's are dropped; at most 16 targets are held before the
  status; l_pend is high while targets are held; targets for the other port are ignored;
- the unit is free exactly from its frame's last handshake to the next take."""
import random

import pytest
import wccp_tb
from wccp_tb import Clock, ReadOnly, RisingEdge, Timer, cocotb, cocotb_test

PORT = 1
CAUSE = {"ntr": 0, "fromc": 1, "unass": 2, "unkn": 3, "toobig": 4, "ret": 5, "l2": 6, "gre": 7, "learn": 8,
         "retbad": 9, "trunc": 10, "closed": 11}
PFLAGS = ("ntr", "fromc", "unass", "unkn", "toobig", "ret", "l2", "gre", "retbad", "slot", "cache", "bucket")
# the decision's fields (core registers) and their widths
DEC = {"drop": 1, "port": 1, "kind": 2, "hlen": 6, "src_off": 11, "dmac": 48, "csum": 16, "cip": 32, "rh": 32,
       "tl": 16, "slot_idx": 3, "cache_idx": 5, "bucket_idx": 8}
HEAD = {"start": 12, "src_mac": 48, "vlan": 1, "tci": 16, "is_ip": 1, "ip_hdr_ok": 1}
ACT = ("drop", "port", "start", "flen", "hlen", "kind", "dmac", "smac", "vlan", "tci", "tl", "csum", "rid", "cip",
       "rh", "src_off", "cut")
LIST = 16               # learning targets held before the status


class Frame:
    def __init__(self, r, k):
        self.k = k
        self.head = {f: r.getrandbits(w) for f, w in HEAD.items()}
        self.head["is_ip"] = int(r.random() < 0.8)
        self.head["ip_hdr_ok"] = int(self.head["is_ip"] and r.random() < 0.8)
        self.dec = {f: r.getrandbits(w) for f, w in DEC.items()}
        self.dec["drop"] = int(r.random() < 0.15)
        self.dec["kind"] = r.choice([0, 0, 1, 2, 3])
        self.flags = {f: int(r.random() < 0.3) for f in PFLAGS}
        self.cfg = {"appl_mac": r.getrandbits(48), "router_id": r.getrandbits(32)}
        x = r.random()
        good = x > 0.15
        self.st = {"good": int(good), "avail": int(r.random() < 0.75), "flen": r.randrange(2048)}
        self.targets = [r.randrange(256) for _ in range(r.choice([0, 0, 0, 1, 3, 16, 20]))]
        # when the status reaches the FIFO head: "early" (well before the hand-off), "near",
        # "late" (long after it); whether the builder is idle around the hand-off
        self.mode = r.choice(["early", "near", "late", "late"])
        self.idle = r.random() < 0.7


def expected(f):
    """(action fields, fin or None, events, learns) of frame f as the commit rules say; the
    action's form (cut-through or not) is the one observed (f.cut)."""
    d, st, hd, fl = f.dec, f.st, f.head, f.flags
    good, avail = st["good"], st["avail"]
    s_ok = good and (avail or not (hd["is_ip"] and hd["ip_hdr_ok"]))
    s_nr = good and not (avail and hd["ip_hdr_ok"])
    redir = d["drop"] or d["kind"] != 0
    act = {"start": hd["start"], "vlan": hd["vlan"], "tci": hd["tci"], "dmac": d["dmac"], "csum": d["csum"],
           "cip": d["cip"], "rh": d["rh"], "tl": d["tl"], "smac": f.cfg["appl_mac"], "rid": f.cfg["router_id"]}
    use_d = f.cut or s_ok
    act.update(port=d["port"] if use_d else PORT ^ 1, kind=d["kind"] if use_d else 0,
               hlen=d["hlen"] if use_d else 0, src_off=d["src_off"] if use_d else 0, cut=int(f.cut))
    if f.cut:
        act.update(drop=d["drop"], flen=0)
        fin = (int(good and not (s_nr and redir)), st["flen"])
    else:
        act.update(drop=int((not good) or (s_ok and d["drop"]) or (s_nr and redir)), flen=st["flen"])
        fin = None
    c = set()
    if fl["ntr"] and s_nr and not redir:
        c.add("ntr")
    if s_nr and redir:
        c.add("trunc")
    if s_ok:
        for k in ("fromc", "unkn", "toobig", "ret", "l2", "gre", "retbad"):
            if fl[k]:
                c.add(k)
        if fl["unass"]:
            c.add("closed" if d["drop"] else "unass")
    nb = st["flen"] + 4
    closed = fl["unass"] and d["drop"]
    ev = {"cause": sorted(CAUSE[x] for x in c),
          "slot": [(d["slot_idx"], nb)] if s_ok and fl["slot"] and not closed else [],
          "cache": [(d["slot_idx"], d["cache_idx"], nb)] if s_ok and fl["cache"] else [],
          "bucket": [(d["slot_idx"], d["bucket_idx"])] if s_ok and fl["bucket"] and not closed else []}
    learns = [(t, hd["src_mac"]) for t in f.targets] if s_ok else []
    return act, fin, ev, learns


class TB:
    def __init__(self, dut, seed):
        self.d = dut
        self.r = random.Random(seed)
        self.cycle = 0
        cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start())
        for s in ("take", "st_valid", "l_valid", "ho", "lr_ack", "act_ready", "out_idle", "fin_ready"):
            getattr(dut, s).value = 0
        self.scramble()

    def scramble(self):
        """The core's registers and the configuration outside the hand-off: anything."""
        d, r = self.d, self.r
        for f, w in DEC.items():
            getattr(d, "d_" + f).value = r.getrandbits(w)
        for f in PFLAGS:
            getattr(d, "p_" + f).value = r.getrandbits(1)
        d.appl_mac.value = r.getrandbits(48)
        d.router_id.value = r.getrandbits(32)
        for f, w in HEAD.items():
            getattr(d, "q_" + f).value = r.getrandbits(w)
        d.l_idx.value = r.getrandbits(8)
        d.l_port.value = r.getrandbits(1)
        d.st_good.value = r.getrandbits(1)
        d.st_avail.value = r.getrandbits(1)
        d.st_flen.value = r.getrandbits(11)

    def offer(self, ready, p, item, taken):
        """Drive a handshake's ready (high with probability p); an item offered (not None or
        False) is taken with it, else returned as pending."""
        rdy = self.r.random() < p
        ready.value = int(rdy)
        if item and rdy:
            taken.append(item)
            return None
        return item or None

    async def reset(self):
        self.d.rst.value = 1
        for _ in range(3):
            await RisingEdge(self.d.clk)
        self.d.rst.value = 0
        await RisingEdge(self.d.clk)

    async def run(self, frames):
        """Play the core, the status FIFO, the builder and the learnt-location writer for
        frames, one after the other as the unit frees; record what the unit does."""
        d, r = self.d, self.r
        n = len(frames)
        for f in frames:
            f.acts, f.fins, f.learns, f.pops, f.ev = [], [], [], [], {"cause": [], "slot": [], "cache": [],
                                                                        "bucket": []}
            f.lr_cycles = []
        k = 0                   # the frame being played
        phase = "wait_free"
        t_take = t_ho = t_st = None
        pushed = 0
        pend_act = pend_fin = pend_lr = None
        act_first = True
        st_shown = None         # cycle the status was first presented
        popped = None           # (cycle, frame) of the last status pop
        stall = 0
        while k < n:
            await RisingEdge(d.clk)
            await ReadOnly()
            self.cycle += 1
            c = self.cycle
            f = frames[k]
            free = int(d.free.value)
            # ---- observe ----
            av = int(d.act_valid.value)
            if av:
                a = {x: int(getattr(d, "act_" + x).value) for x in ACT}
                if pend_act is not None:
                    assert a == pend_act, "action changed while offered:\n %r\n %r" % (pend_act, a)
                go = int(d.act_go.value)
                if act_first:
                    want = (1 << a["port"]) if a["cut"] and not a["drop"] else 0
                    assert go == want, "frame %d: act_go %d with %r" % (k, go, a)
                    assert t_ho is not None and c > t_ho, "frame %d: action before the hand-off" % k
                    if not a["cut"]:
                        assert st_shown is not None and st_shown < c, "frame %d: action before its status" % k
                    act_first = False
                else:
                    assert go == 0, "act_go after the action's first cycle"
            else:
                assert int(d.act_go.value) == 0, "act_go without an action"
            fv = int(d.fin_valid.value)
            if fv:
                fq = (int(d.fin_good.value), int(d.fin_flen.value))
                assert f.acts and f.acts[0]["cut"], "frame %d: fin without a cut-through action" % k
                assert st_shown is not None and st_shown < c, "frame %d: fin before its status" % k
                if pend_fin is not None:
                    assert fq == pend_fin, "fin changed while offered"
            lv = int(d.lr_valid.value)
            if lv:
                lq = (int(d.lr_idx.value), int(d.lr_mac.value))
                if pend_lr is not None:
                    assert lq == pend_lr, "learning request changed before its acknowledge"
                assert st_shown is not None and st_shown < c, "frame %d: learning before its status" % k
            if int(d.st_pop.value):
                assert int(d.st_valid.value), "frame %d: pop without a status" % k
                assert not f.pops, "frame %d: status popped twice" % k
                assert not lv and f.learns == [(t, f.head["src_mac"]) for t in expected_learns(f)], \
                    "frame %d: commit before its learning" % k
            if int(d.ev_cause.value) >> CAUSE["learn"] & 1:
                f.ev["learns"] = f.ev.get("learns", 0) + 1
            self.decision_events(c, popped)
            if int(d.st_pop.value):
                f.pops.append(c)
                popped = (c, f)
            lpend = int(d.l_pend.value)
            if pushed > len(f.learns) and not (f.pops or (st_shown is not None and not ok_status(f))):
                assert lpend, "frame %d: targets held, l_pend low" % k
            if f.pops:
                assert not lpend, "frame %d: l_pend after the commit" % k
            # the unit is free exactly between a frame's last handshake and the next take
            assert free == (phase == "wait_free"), "frame %d: free %d in phase %s" % (k, free, phase)
            await Timer(1, "ns")
            # ---- drive ----
            take = ho = 0
            self.scramble()
            if phase == "wait_free":
                if free and r.random() < 0.7:
                    for x, v in f.head.items():
                        getattr(d, "q_" + x).value = v
                    take = 1
                    t_take = c
                    phase = "targets"
                    st_shown = None
                    pushed = 0
                    act_first = True
                    # when the status reaches the FIFO head (relative to the hand-off, which
                    # is planned after the targets)
                    f.ho_gap = r.randrange(2, 30)
            elif phase == "targets":
                if pushed == len(f.targets):
                    phase = "before_ho"
                    f.t_ready = c + f.ho_gap
            elif phase == "before_ho":
                if c >= f.t_ready:
                    for x in DEC:
                        getattr(d, "d_" + x).value = f.dec[x]
                    for x in PFLAGS:
                        getattr(d, "p_" + x).value = f.flags[x]
                    d.appl_mac.value = f.cfg["appl_mac"]
                    d.router_id.value = f.cfg["router_id"]
                    ho = 1
                    t_ho = c
                    phase = "after_ho"
            # the status: early (from the take on), near (a few cycles around the hand-off),
            # late (long after it)
            if t_take is not None and t_st is None and phase != "wait_free":
                if phase == "targets" and pushed - len(f.learns) >= LIST - 1:
                    t_st = c + r.randrange(1, 40)       # the list is full: the frame ends meanwhile
                    f.mode = "full"
                elif f.mode == "early":
                    t_st = t_take + 1
                elif f.mode == "near" and phase in ("before_ho", "after_ho"):
                    t_st = (f.t_ready if phase == "before_ho" else c) + r.randrange(-3, 4)
                elif f.mode == "late" and phase == "after_ho":
                    t_st = c + r.randrange(20, 60)
            show = t_st is not None and c >= t_st and not f.pops
            if show:
                if st_shown is None:
                    st_shown = c
                for x, v in f.st.items():
                    getattr(d, "st_" + x).value = v
            d.st_valid.value = int(show)
            d.take.value = take
            d.ho.value = ho
            # learning targets: l_valid held until taken (l_room), now and then one for the
            # other port (ignored); targets pushed in the cycle l_room is seen high
            if phase == "targets" and pushed < len(f.targets):
                if int(d.l_room.value) and r.random() < 0.8:
                    d.l_valid.value = 1
                    d.l_port.value = PORT
                    d.l_idx.value = f.targets[pushed]
                    pushed += 1
                    if st_shown is None or ok_status(f):
                        assert pushed - len(f.learns) <= LIST, "frame %d: more than %d targets held" % (k, LIST)
                else:
                    d.l_valid.value = int(r.random() < 0.3)
                    d.l_port.value = PORT ^ 1
            else:
                d.l_valid.value = int(r.random() < 0.2)
                d.l_port.value = PORT ^ 1
            # builder and learnt-location writer: each handshake taken at random; what is
            # offered and not taken must stay as it is (pend_*)
            pend_act = self.offer(d.act_ready, 0.7, av and a, f.acts)
            pend_fin = self.offer(d.fin_ready, 0.6, fv and fq, f.fins)
            n_lr = len(f.learns)
            pend_lr = self.offer(d.lr_ack, 0.6, lv and lq, f.learns)
            if len(f.learns) > n_lr:
                f.lr_cycles.append(c)
            # idle builder: around the hand-off as the frame's mode says, else at random
            d.out_idle.value = int(f.idle if phase in ("before_ho", "after_ho") else r.random() < 0.5)
            # the frame is done when its action (and its fin) were taken and its status popped
            done = f.pops and f.acts and (not f.acts[0]["cut"] or f.fins)
            if done and phase == "after_ho":
                k += 1
                phase = "wait_free"
                t_take = t_ho = t_st = st_shown = None
                pushed = 0
            stall += 1
            assert stall < 200000, "stalled at frame %d (%s)" % (k, phase)
        # the last frame's events
        await RisingEdge(d.clk)
        await ReadOnly()
        self.cycle += 1
        self.decision_events(self.cycle, popped)

    def decision_events(self, c, popped):
        """Record cycle c's decision events (all but learn events) for the frame whose status
        was popped in the cycle before (popped: (cycle, frame) of the last pop; the next frame
        may have been taken meanwhile)."""
        d = self.d
        cause = int(d.ev_cause.value) & ~(1 << CAUSE["learn"])
        if cause or int(d.ev_slot.value) or int(d.ev_cache.value) or int(d.ev_bucket.value):
            assert popped is not None and popped[0] == c - 1, "cycle %d: events not after a status pop" % c
            fe = popped[1]
            fe.ev["cause"] += [b for b in range(12) if cause >> b & 1]
            si, nb = int(d.ev_slot_idx.value), int(d.ev_bytes.value)
            if int(d.ev_slot.value):
                fe.ev["slot"].append((si, nb))
            if int(d.ev_cache.value):
                fe.ev["cache"].append((si, int(d.ev_cache_idx.value), nb))
            if int(d.ev_bucket.value):
                fe.ev["bucket"].append((si, int(d.ev_bucket_idx.value)))


def ok_status(f):
    """The frame's status says good and complete."""
    st, hd = f.st, f.head
    return bool(st["good"] and (st["avail"] or not (hd["is_ip"] and hd["ip_hdr_ok"])))


def expected_learns(f):
    return f.targets if ok_status(f) else []


def check(frames):
    seen = {"cut": 0, "sf": 0, "drop": 0, "learn": 0, "trunc": 0}
    for f in frames:
        assert len(f.acts) == 1, (f.k, f.acts)
        a = f.acts[0]
        f.cut = bool(a["cut"])
        act, fin, ev, learns = expected(f)
        what = "frame %d (mode %s, idle %s, status %r, decision %r, flags %r, %d targets)" % (
            f.k, f.mode, f.idle, f.st, f.dec, f.flags, len(f.targets))
        assert a == act, "%s\n action %r\n expected %r" % (what, a, act)
        assert f.fins == ([fin] if fin else []), "%s\n fins %r, expected %r" % (what, f.fins, fin)
        got_ev = {x: sorted(f.ev[x]) for x in ("cause", "slot", "cache", "bucket")}
        assert got_ev == ev, "%s\n events %r\n expected %r" % (what, got_ev, ev)
        assert f.learns == learns, "%s\n learns %r\n expected %r" % (what, f.learns, learns)
        assert f.ev.get("learns", 0) == len(learns), what
        assert all(b - a >= 9 for a, b in zip(f.lr_cycles, f.lr_cycles[1:], strict=False)), f.lr_cycles
        if f.mode == "early":
            assert not f.cut, "%s: cut through although its status was there" % what
        if f.mode == "late" and f.idle:
            assert f.cut, "%s: not cut through although the builder was idle and the status late" % what
        seen["cut" if f.cut else "sf"] += 1
        seen["drop"] += a["drop"]
        seen["learn"] += bool(learns)
        seen["trunc"] += CAUSE["trunc"] in ev["cause"]
    return seen


@cocotb_test
async def test_random(dut):
    tb = TB(dut, 1)
    await tb.reset()
    r = random.Random(11)
    frames = [Frame(r, k) for k in range(400)]
    await tb.run(frames)
    seen = check(frames)
    dut._log.info("commit unit: %s", seen)
    assert min(seen.values()) >= 10, seen


@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_commit(sim):
    wccp_tb.run_sim(sim, "wccp_commit", __file__, sources=[wccp_tb.RTL / "wccp_commit.v"],
                    parameters={"PORT": PORT})
