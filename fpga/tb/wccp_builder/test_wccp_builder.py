"""wccp_builder: for every kind of action (copy, L2 rewrite, GRE encapsulation with and without
VLAN tag, GRE-return decapsulation, drop) the bytes streamed out are act_hlen header bytes (as
wccp.fwdmodel.ForwardingModel builds them) ++ the input frame from act_src_off to its end
(padding and trailers included; GRE clipped to gre_max bytes: 1472 at MTU 1500, MTU - 28 above),
before padding/FCS, which the MAC
adds. Store-and-forward actions (act_cut = 0) and cut-through actions (act_cut = 1, length and
status on the fin channel, at random times down to the documented margin) with good and bad
fins: a bad fin known at the action's load skips the frame, a later one ends it with exactly
one m_abort byte. Frames are read from a wrapping buffer, with random back-pressure, one
request per frame on the right egress port, and the buffer released exactly up to each
frame's end."""
import random
import struct

import pytest
import wccp_tb
from wccp.dataplane import FWD_GRE, FWD_L2, RET_GRE, RET_L2, SERVICE_DYNAMIC
from wccp.fwdmodel import ForwardingModel, ip_checksum
from wccp_tb import Clock, ReadOnly, RisingEdge, Timer, cocotb

BUF_AW = 12
SIZE = 1 << BUF_AW
ROUTER_ID = 0x0A000001
APPL_MAC = bytes.fromhex("020000000001")
NH0 = bytes.fromhex("02ee000000a0")
GRE_MAX = 1472          # GRE: at most this many bytes copied from the input at MTU 1500


def gre_clip(mtu):
    """fpga_core's gre_max for an MTU: MTU - 28, never below 1472 nor above 1504."""
    return min(max(mtu - 28, GRE_MAX), 1504)
FIN_MARGIN = 4          # the builder's documented fin margin (bytes before the frame end)
FIN_LAT = 2             # a bad fin taken in cycle t marks the byte issued in t + 2 (or later)


def _test(f):
    """A cocotb test with its clock running."""
    async def t(dut):
        cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start())
        await f(dut)
    t.__name__ = f.__name__
    t.__qualname__ = f.__qualname__
    t.__doc__ = f.__doc__
    return cocotb.test()(t)


class Scenario:
    """A configured ForwardingModel and a frame generator covering every action."""

    def __init__(self, seed, mtu=1500):
        from wccp_frames import FrameGen, with_fcs
        self.clip = gre_clip(mtu)
        self.with_fcs = with_fcs
        r = self.rng = random.Random(seed)
        self.caches = [0x0A010001 + i for i in range(5)]
        self.macs = [bytes([0x02, 0xCC, 0, 0, 0, i + 1]) for i in range(5)]
        self.ports = [i & 1 for i in range(5)]
        self.gen = FrameGen(r, ROUTER_ID, self.caches, self.macs, self.ports, APPL_MAC)
        m = self.model = ForwardingModel()
        m.configure(ROUTER_ID, APPL_MAC, mtu)
        m.set_next_hop(0, NH0)
        m.set_next_hop(1, None)
        c = self.caches

        def cent(i, fwd, ret):
            return {"address": c[i], "forward": fwd, "ret": ret}
        m.set_group(0, {"service_type": SERVICE_DYNAMIC, "service_id": 90, "priority": 200, "protocol": 6,
                        "service_flags": 0x2 | 0x10 | 0x400, "ports": [80, 8080]})
        m.set_caches(0, [cent(0, FWD_GRE, RET_GRE), cent(1, FWD_L2, RET_L2), cent(2, FWD_GRE, RET_GRE)])
        b0 = [(0x80 | r.randrange(3)) if r.random() < 0.3 else r.randrange(3) for _ in range(256)]
        m.set_hash(0, b0)
        m.set_group(1, {"service_type": 0, "service_id": 0, "priority": 100, "protocol": 0,
                        "service_flags": 0x1, "ports": []})
        m.set_caches(1, [cent(3, FWD_GRE, RET_GRE), cent(4, FWD_L2, RET_L2)])
        m.set_hash(1, [r.randrange(2) for _ in range(256)])
        m.commit()
        for s, idx in ((0, (0, 1, 2)), (1, (3, 4))):
            for i, ci in enumerate(idx):
                m.set_cache_location(s, i, self.macs[ci], self.ports[ci])
        m.commit()
        m.arm(0)
        m.heartbeat(now=0)

    def frame(self, trailer_p=0.3):
        """A frame with FCS (short ones zero padded to 60 bytes); some carry a trailer after
        the IP datagram."""
        r, g = self.rng, self.gen
        x = r.random()
        vlan = r.randrange(1, 4095) if r.random() < 0.3 else None
        if x < 0.35:
            f = g.ip_frame(proto=6, dport=r.choice([80, 8080]), vlan=vlan, plen=(0, 300))
        elif x < 0.55:
            f = g.ip_frame(proto=r.choice([17, 1, 47]), vlan=vlan, plen=(0, 120))
        elif x < 0.75:
            ci = r.randrange(5)
            f = g.gre_return(ci, vlan=vlan, redirect_header=r.random() < 0.7,
                             bad="short" if r.random() < 0.15 else None)
        elif x < 0.85:
            f = g.non_ip()
        elif x < 0.92:
            ci = r.randrange(5)
            f = g.ip_frame(src=self.caches[ci], l2src=self.macs[ci], vlan=vlan, plen=(0, 80))
        else:
            f = g.ip_frame(proto=6, dport=80, vlan=vlan, plen=(1300, 1458))
        if r.random() < trailer_p:
            top = 1514 + (4 if vlan else 0)
            f += bytes(r.randrange(256) for _ in range(r.randrange(1, 40)))
            f = f[:max(top, 0)]
        return self.with_fcs(f)

    def clip_frame(self):
        """A GRE-redirected frame of 1514 bytes (1518 tagged) carrying a small datagram: the
        copy (datagram + trailer) is clipped to gre_max bytes."""
        r, g = self.rng, self.gen
        for _ in range(200):
            vlan = r.randrange(1, 4095) if r.random() < 0.4 else None
            f = g.ip_frame(proto=6, dport=80, vlan=vlan, plen=(0, 400))
            f += bytes(r.randrange(256) for _ in range(1514 + (4 if vlan else 0) - len(f)))
            f = self.with_fcs(f)
            port = r.randrange(2)
            if self.model.decide(port, f, now=0).action == "redirect_gre":
                return port, f
        raise AssertionError("no GRE redirect found")

    def drop_frame(self):
        """A frame the model drops (a GRE return too short for its inner header)."""
        r = self.rng
        for _ in range(200):
            ci = r.randrange(5)
            f = self.with_fcs(self.gen.gre_return(ci, redirect_header=r.random() < 0.5, bad="short"))
            port = r.randrange(2)
            if self.model.decide(port, f, now=0).action == "drop":
                return port, f
        raise AssertionError("no drop found")

    def action(self, port, frame):
        """(action dict, expected output without FCS or None) from the model's decision."""
        m = self.model
        d = m.decide(port, frame, now=0)
        outs = m.process(port, frame, now=0)
        flen = len(frame) - 4
        a = {"drop": 0, "port": 0, "flen": flen, "hlen": 0, "kind": 0, "dmac": 0, "smac": 0,
             "vlan": 0, "tci": 0, "tl": 0, "csum": 0, "rid": 0, "cip": 0, "rh": 0, "src_off": 0,
             "what": d.action, "clip": self.clip}
        if d.action == "drop":
            assert outs == []
            a["drop"] = 1
            return a, None
        assert len(outs) == 1 and outs[0][0] == d.out_port
        a["port"] = d.out_port
        mo = outs[0][1][:-4]
        t = m._live
        mac = int.from_bytes(APPL_MAC, "big")
        tagged = d.l3 == 18
        tci = struct.unpack(">H", frame[14:16])[0] if tagged else 0
        old = flen                      # the model's copy length before M1/M2 (datagram only)
        if d.action == "redirect_l2":
            loc = m.cache_location(d.slot, d.cache)
            a.update(hlen=12, kind=1, dmac=int.from_bytes(loc[0], "big"), smac=mac, src_off=12)
            old = flen - 12
        elif d.action == "redirect_gre":
            loc = m.cache_location(d.slot, d.cache)
            sl = t.slots[d.slot]
            cip = sl.caches[d.cache][0]
            tl = d.ip_len + 28
            hdr = struct.pack(">BBHHHBBHII", 0x45, 0, tl, 0, 0x4000, 64, 47, 0, ROUTER_ID, cip)
            flags = (1 if sl.service["service_type"] == SERVICE_DYNAMIC else 0) | (2 if d.alt_used else 0)
            rh = flags << 24 | sl.service["service_id"] << 16 | \
                (d.alt_bucket if d.alt_used else 0) << 8 | (d.bucket or 0)
            a.update(hlen=46 if tagged else 42, kind=2, dmac=int.from_bytes(loc[0], "big"), smac=mac,
                     vlan=int(tagged), tci=tci, tl=tl, csum=ip_checksum(hdr), rid=ROUTER_ID, cip=cip,
                     rh=rh, src_off=d.l3)
            old = d.ip_len
        elif d.action == "decap":
            nh = t.next_hop[d.out_port]
            a.update(hlen=18 if tagged else 14, kind=3,
                     dmac=int.from_bytes(nh if nh is not None else frame[0:6], "big"), smac=mac,
                     vlan=int(tagged), tci=tci, src_off=d.inner)
            old = d.inner_len
        else:
            assert d.action == "forward", d
        exp = expected(a, mo[:a["hlen"]], frame)
        # the model agrees on the header and the datagram (M1/M2: and on the rest, once it has them)
        n = a["hlen"] + old
        assert exp[:n] == mo[:n], (d.action, exp[:n].hex(), mo[:n].hex())
        if len(mo) > max(60, n):
            assert mo == exp.ljust(60, b"\x00"), d.action
        return a, exp


def expected(a, hdr, frame, flen=None):
    """The builder's output: header ++ frame[src_off : flen] (GRE: at most a["clip"] bytes)."""
    flen = len(frame) - 4 if flen is None else flen
    body = frame[a["src_off"]:flen]
    if a["kind"] == 2:
        body = body[:a["clip"]]
    return bytes(hdr) + bytes(body)


def make_items(sc, n, cut_p, rng, bad_p=0.3, clip=0, modes=None):
    """Items: dict(a=action, exp=expected output (None: drop), fr=frame, cut, good, fflen
    (fin_flen), mode (fin timing), w (None: written when offered), offer (earliest cycle))."""
    items = []
    drops = 2 if n >= 20 else 0
    while len(items) < n:
        if clip and rng.random() < clip / max(1, n - len(items)):
            port, fr = sc.clip_frame()
            clip -= 1
        elif drops and rng.random() < drops / max(1, n - len(items)):
            port, fr = sc.drop_frame()
            drops -= 1
        else:
            port, fr = rng.randrange(2), sc.frame()
        a, exp = sc.action(port, fr)
        it = dict(a=a, exp=exp, fr=fr, cut=int(rng.random() < cut_p), good=1, fflen=a["flen"],
                  mode=None, w=None, offer=0)
        if it["cut"]:
            q = rng.random()
            if q < bad_p * 0.6:
                it.update(good=0, fflen=0)                      # bad status
            elif q < bad_p and a["src_off"] > 0:
                it.update(fflen=rng.randrange(a["src_off"] + 1))   # fin_flen <= src_off: bad
            it["mode"] = rng.choice(modes) if modes else _rand_mode(rng, a)
        items.append(it)
    return items


def _rand_mode(rng, a):
    x = rng.random()
    if x < 0.15:
        return ("before",)
    if x < 0.35:
        return ("acc", rng.randrange(0, 6))                 # around the load (accept = 0)
    if x < 0.5:
        return ("acc", 6 + rng.randrange(max(1, a["hlen"] + 2)))     # during the header
    if x < 0.75:
        return ("dist", rng.randrange(FIN_MARGIN, max(FIN_MARGIN + 1, a["flen"] - a["src_off"])))
    return ("dist", FIN_MARGIN + rng.randrange(3))          # at the margin


def is_bad(it):
    return it["cut"] and (not it["good"] or it["fflen"] <= it["a"]["src_off"])


class TB:
    def __init__(self, dut, seed, ready_p, clip=GRE_MAX):
        self.dut = dut
        dut.gre_max.value = clip
        self.rng = random.Random(seed)
        self.ready_p = ready_p
        self.mem = bytearray(SIZE)
        for s in ("act_valid", "act_drop", "act_port", "act_start", "act_flen", "act_hlen", "act_kind",
                  "act_dmac", "act_smac", "act_vlan", "act_tci", "act_tl", "act_csum", "act_rid",
                  "act_cip", "act_rh", "act_src_off", "buf_rdata", "m_ready",
                  "act_cut", "fin_valid", "fin_good", "fin_flen"):
            getattr(dut, s).value = 0

    def _drive(self, it, start):
        d, a = self.dut, it["a"]
        d.act_drop.value = a["drop"]
        d.act_port.value = a["port"]
        d.act_start.value = start
        # cut-through: act_flen is not final (must not matter)
        d.act_flen.value = self.rng.randrange(2048) if it["cut"] else a["flen"]
        d.act_hlen.value = a["hlen"]
        d.act_kind.value = a["kind"]
        d.act_dmac.value = a["dmac"]
        d.act_smac.value = a["smac"]
        d.act_vlan.value = a["vlan"]
        d.act_tci.value = a["tci"]
        d.act_tl.value = a["tl"]
        d.act_csum.value = a["csum"]
        d.act_rid.value = a["rid"]
        d.act_cip.value = a["cip"]
        d.act_rh.value = a["rh"]
        d.act_src_off.value = a["src_off"]
        d.act_cut.value = it["cut"]

    async def run(self, items, start0, max_cyc=300000):
        """Runs the items; frames are stored one after the other (FCS included) from start0.
        Returns a dict of observations (checked by check())."""
        d = self.dut
        await RisingEdge(d.clk)
        await Timer(1, "ns")
        d.act_valid.value = 0
        d.fin_valid.value = 0
        d.rst.value = 1
        for _ in range(3):
            await RisingEdge(d.clk)
        d.rst.value = 0
        starts, p = [], start0
        for it in items:
            starts.append(p)
            p = (p + len(it["fr"])) % SIZE
        wr_at = {}                  # address -> cycle its byte was written
        writes = {}                 # cycle -> [(addr, byte)]
        for i, it in enumerate(items):
            if it["w"] is not None:
                for k, b in enumerate(it["fr"]):
                    writes.setdefault(it["w"] + k, []).append(((starts[i] + k) % SIZE, b))
        cuts = [i for i, it in enumerate(items) if it["cut"]]
        outs, cur, cur_req = [], bytearray(), set()
        rels, last_rel = [], None
        nxt, offered = 0, False
        fj, fin_on = 0, False       # next fin (index into cuts), driven
        acc = {}                    # item -> accept cycle
        take = {}                   # item -> (cycle its fin was taken, buf_raddr then)
        issues = {}                 # item -> cycles a byte of it was issued
        viol = []                   # buffer bytes issued before they were written
        pipe = [0, 0]
        cyc, idle = 0, 0
        n_acc = 0
        while True:
            await RisingEdge(d.clk)
            await ReadOnly()
            cyc += 1
            rdata = pipe[0]
            v = d.buf_raddr.value
            ra = int(v) if v.is_resolvable else 0
            pipe = [pipe[1], self.mem[ra]]
            # the item in progress (accepted last; a fast start issues its first byte in the
            # cycle act_ready shows its accept)
            cur_i = n_acc - 1 + int(offered and int(d.act_ready.value) == 1)
            if int(d.can_issue.value):
                issues.setdefault(cur_i, []).append(cyc)
                if not int(d.in_hdr.value):
                    w = wr_at.get(ra)
                    if w is not None and w >= cyc:
                        viol.append((cur_i, cyc, ra, w))
            for a_, b in writes.pop(cyc, []):
                self.mem[a_] = b
                wr_at[a_] = cyc
            mv = int(d.m_valid.value)
            md, ml, mab = (int(d.m_data.value), int(d.m_last.value), int(d.m_abort.value)) if mv else (0, 0, 0)
            ar, frdy, req = int(d.act_ready.value), int(d.fin_ready.value), int(d.req.value)
            rel = int(d.rel_ptr.value)
            if rel != last_rel:
                rels.append(rel)
                last_rel = rel
            await Timer(1, "ns")
            d.buf_rdata.value = rdata
            if offered and ar:
                acc[nxt] = cyc - 1
                n_acc += 1
                nxt += 1
                offered = False
            if not offered and nxt < len(items) and cyc >= items[nxt]["offer"]:
                it = items[nxt]
                if it["w"] is None:
                    for k, b in enumerate(it["fr"]):
                        self.mem[(starts[nxt] + k) % SIZE] = b
                        wr_at[(starts[nxt] + k) % SIZE] = -1
                self._drive(it, starts[nxt])
                offered = True
            d.act_valid.value = int(offered)
            # fins, in order, one per cut item
            if fj < len(cuts):
                i = cuts[fj]
                it = items[i]
                m = it["mode"]
                if not fin_on:
                    a = it["a"]
                    dist = (starts[i] + a["flen"] - ra) % SIZE
                    inflight = i in acc and i == n_acc - 1
                    if m[0] == "before":
                        fin_on = True
                    elif m[0] == "cyc":
                        fin_on = cyc >= m[1]
                    elif inflight and m[0] == "acc":
                        fin_on = cyc >= acc[i] + m[1]
                    elif inflight and m[0] == "dist":
                        fin_on = dist <= m[1] or cyc >= acc[i] + a["hlen"] + a["clip"] + 40
                    if inflight and a["drop"]:
                        fin_on = fin_on or cyc >= acc[i] + 3
                    # always in time: at the margin (a clipped GRE frame parks before its end)
                    if inflight and not a["drop"] and m[0] not in ("cyc", "dist") and (
                            dist <= FIN_MARGIN or cyc >= acc[i] + a["hlen"] + a["clip"] + 40):
                        fin_on = True
                if fin_on and frdy:
                    take[i] = (cyc, ra)
                    d.fin_valid.value = 1
                    d.fin_good.value = it["good"]
                    d.fin_flen.value = it["fflen"]
                    fj += 1
                    fin_on = False
                else:
                    d.fin_valid.value = int(fin_on)
                    d.fin_good.value = it["good"]
                    d.fin_flen.value = it["fflen"]
            else:
                d.fin_valid.value = 0
            rdy = 1 if self.rng.random() < self.ready_p else 0
            d.m_ready.value = rdy
            if mv and rdy:
                cur.append(md)
                cur_req.add(req)
                if ml:
                    outs.append((bytes(cur), mab, cur_req, cur_i))
                    cur, cur_req = bytearray(), set()
                elif mab:
                    outs.append((bytes(cur), "abort without last", cur_req, cur_i))
            idle = 0 if (mv or offered or fin_on or int(d.can_issue.value)) else idle + 1
            if idle > 300 or cyc > max_cyc or (nxt == len(items) and fj == len(cuts) and idle > 40):
                break
        for _ in range(20):
            await RisingEdge(d.clk)
        await ReadOnly()
        if int(d.rel_ptr.value) != last_rel:
            rels.append(int(d.rel_ptr.value))
        quiet = int(d.m_valid.value) == 0 and int(d.req.value) == 0 and int(d.run.value) == 0
        await Timer(1, "ns")
        return dict(outs=outs, rels=rels, starts=starts, acc=acc, take=take, issues=issues, viol=viol,
                    done=(nxt == len(items) and fj == len(cuts)), idle=idle,
                    end_quiet=quiet)


def check(items, res):
    """Returns a list of errors; each item's classification goes into it["res"]."""
    err = []
    if not res["done"]:
        err.append("stuck: %d accepted, %d fins" % (len(res["acc"]), len(res["take"])))
    if not res["end_quiet"]:
        err.append("not quiet at the end")
    if res["viol"]:
        err.append("%d buffer bytes read before written, first %s" % (len(res["viol"]), res["viol"][0]))
    outs = list(res["outs"])
    ends = []
    for i, it in enumerate(items):
        a = it["a"]
        ends.append((res["starts"][i] + (it["fflen"] if it["cut"] else a["flen"])) % SIZE)
        bad = is_bad(it)
        skip = a["drop"] or (bad and i in res["take"] and res["take"][i][0] <= res["acc"].get(i, -1))
        it["res"] = "skip" if skip else "abort" if bad else "sent"
        if skip:
            if outs and outs[0][3] == i:
                err.append("item %d (%s, %s): output although skipped" % (i, a["what"], it["mode"]))
                outs.pop(0)
            continue
        if not outs:
            err.append("item %d: no output" % i)
            break
        data, ab, reqs, oi = outs.pop(0)
        tag = "item %d (%s cut=%d mode=%s)" % (i, a["what"], it["cut"], it["mode"])
        if oi != i:
            err.append("%s: output belongs to item %d" % (tag, oi))
        if reqs != {1 << a["port"]}:
            err.append("%s: req %s" % (tag, reqs))
        if bad:
            full = it["exp"]
            t = res["take"][i][0]
            n_ok = sum(1 for c in res["issues"].get(i, []) if c < t + FIN_LAT)
            if ab != 1:
                err.append("%s: bad fin, no abort" % tag)
            elif len(data) != n_ok + 1 or data != full[:len(data)]:
                err.append("%s: abort after %d bytes, expected %d, prefix ok %s" % (
                    tag, len(data), n_ok + 1, data == full[:len(data)]))
        else:
            if ab:
                err.append("%s: aborted" % tag)
            if data != it["exp"]:
                err.append("%s: output %d bytes, expected %d, first difference at %s" % (
                    tag, len(data), len(it["exp"]), next((k for k, (x, y) in enumerate(zip(data, it["exp"], strict=False))
                                                          if x != y), None)))
    if outs:
        err.append("%d extra outputs" % len(outs))
    dd = [0]
    for e in ends:
        if e != dd[-1]:
            dd.append(e)
    if res["rels"] != dd:
        err.append("releases %s expected %s" % (res["rels"][:8], dd[:8]))
    return err


async def _run(dut, seed, n, ready_p, start0, cut_p=0.0, clip=2, bad_p=0.3, modes=None, mtu=1500):
    sc = Scenario(seed, mtu)
    rng = random.Random(seed + 1000)
    items = make_items(sc, n, cut_p, rng, bad_p=bad_p, clip=clip, modes=modes)
    tb = TB(dut, seed, ready_p, sc.clip)
    res = await tb.run(items, start0)
    err = check(items, res)
    assert not err, "\n".join(err[:10])
    return items, res


def _cover(items):
    whats = {it["a"]["what"] for it in items}
    assert whats >= {"forward", "redirect_l2", "redirect_gre", "decap", "drop"}, whats
    assert any(it["a"]["what"] == "redirect_gre" and it["a"]["vlan"] for it in items)
    # output beyond the IP datagram (padding / trailer) and the GRE clip
    assert any(it["a"]["kind"] == 2 and len(it["fr"]) - 4 - it["a"]["src_off"] > it["a"]["clip"]
               and it["exp"] is not None for it in items)


@_test
async def test_actions_full_speed(dut):
    items, _ = await _run(dut, 1, 80, 1.0, 0)
    _cover(items)


@_test
async def test_actions_backpressure_wrap(dut):
    # start near the end of the buffer: frames wrap around address 0
    items, _ = await _run(dut, 2, 70, 0.45, SIZE - 700)
    _cover(items)


def _cut_cover(items):
    res = {(it["a"]["kind"], it["res"]) for it in items if it["cut"]}
    for k in range(4):
        assert (k, "sent") in res, (k, res)
    for r in ("skip", "abort"):
        assert any(it["res"] == r and it["cut"] and not it["a"]["drop"] for it in items), r
    assert any(it["a"]["drop"] and it["cut"] for it in items)
    modes = {it["mode"][0] for it in items if it["cut"] and not is_bad(it)}
    assert modes >= {"before", "acc", "dist"}, modes


@_test
async def test_cut_full_speed(dut):
    items, _ = await _run(dut, 11, 90, 1.0, 0, cut_p=1.0, clip=3)
    _cut_cover(items)


@_test
async def test_cut_backpressure_wrap(dut):
    items, _ = await _run(dut, 12, 90, 0.5, SIZE - 900, cut_p=1.0, clip=3)
    _cut_cover(items)


@_test
async def test_mixed_cut_and_store(dut):
    """Cut and store-and-forward actions interleaved (fins for the cut ones only, possibly
    taken while a store-and-forward frame is sent)."""
    items, _ = await _run(dut, 13, 90, 0.7, 100, cut_p=0.5, clip=2)
    assert any(it["cut"] for it in items) and any(not it["cut"] for it in items)


@_test
async def test_cut_fin_timing(dut):
    """Every fin timing for every kind: before the action, each cycle around the load, during
    the header, during the copy, exactly at the margin; good and bad."""
    modes = [("before",)] + [("acc", k) for k in range(0, 10)] + [("acc", 20), ("acc", 40)] + \
        [("dist", FIN_MARGIN), ("dist", FIN_MARGIN + 1), ("dist", 30)]
    for ready_p, seed in ((1.0, 31), (0.6, 32)):
        items, _ = await _run(dut, seed, 120, ready_p, 0, cut_p=1.0, clip=2, bad_p=0.4, modes=modes)
        _cut_cover(items)


@_test
async def test_cut_gre_clip(dut):
    """Clipped GRE frames (1514/1518 bytes, small datagram) cut-through, good and bad, with
    the fin before the clip or long after it (the clip's last byte waits for the fin)."""
    sc = Scenario(51)
    rng = random.Random(51)
    items = []
    for k in range(8):
        port, fr = sc.clip_frame()
        a, exp = sc.action(port, fr)
        good = k % 3 != 2
        items.append(dict(a=a, exp=exp, fr=fr, cut=1, good=int(good), fflen=a["flen"] if good else 0,
                          w=None, offer=0, mode=rng.choice([("acc", 1700), ("acc", 1900), ("acc", 300),
                                                            ("before",)])))
    for ready_p in (1.0, 0.7):
        tb = TB(dut, 51, ready_p)
        res = await tb.run(items, 3000)
        err = check(items, res)
        assert not err, "\n".join(err[:10])
        parked = [i for i, it in enumerate(items) if not is_bad(it) and res["take"][i][0] > sorted(res["issues"][i])[-2] + 5]
        dut._log.info("clip: ready %.1f, %d frames waited for the fin at the clip", ready_p, len(parked))
        if ready_p == 1.0:
            assert parked
    assert {it["res"] for it in items} == {"sent", "abort", "skip"}, [it["res"] for it in items]


@_test
async def test_gre_clip_follows_the_mtu(dut):
    """A cache side with a larger MTU: at 1528 and 1532 full-size datagrams (1500 bytes, and
    1504 in an untagged 1518-byte frame) are copied whole behind the GRE header, cut-through
    and store-and-forward, and a trailer is clipped at MTU - 28."""
    for mtu, seed in ((1528, 61), (1532, 62)):
        sc = Scenario(seed, mtu)
        r = random.Random(seed)
        items = []
        while len(items) < 24:
            first = len(items) < 2              # the longest datagram the MTU takes (1504: untagged)
            vlan = r.randrange(1, 4095) if r.random() < 0.4 and not first else None
            top = sc.clip - 40                  # TCP payload of a clip-long datagram
            f = sc.gen.ip_frame(proto=6, dport=80, vlan=vlan, plen=(top, top) if first else (1400, 1464))
            if r.random() < 0.3 and not first:
                f = sc.clip_frame()[1][:-4]
            f = sc.with_fcs(f[:1518])          # the longest frame a port receives
            port = r.randrange(2)
            if sc.model.decide(port, f, now=0).action != "redirect_gre":
                continue
            a, exp = sc.action(port, f)
            items.append(dict(a=a, exp=exp, fr=f, cut=r.randrange(2), good=1, fflen=a["flen"], w=None,
                              offer=0, mode=r.choice([("before",), ("acc", 3), ("dist", FIN_MARGIN + 2)])))
        longest = max(len(it["exp"]) - it["a"]["hlen"] for it in items)
        assert longest == sc.clip > GRE_MAX, (longest, sc.clip)
        for ready_p in (1.0, 0.6):
            tb = TB(dut, seed, ready_p, sc.clip)
            res = await tb.run(items, 500)
            err = check(items, res)
            assert not err, "\n".join(err[:10])


@_test
async def test_cut_margin(dut):
    """The fin margin: a fin taken when the next read address is FIN_MARGIN bytes before the
    frame end ends every frame right; one byte later the builder reads past the end."""
    found = {}
    for dist in (FIN_MARGIN - 1, FIN_MARGIN):
        sc = Scenario(41)
        rng = random.Random(41)
        items = make_items(sc, 12, 1.0, rng, bad_p=0.0, modes=[("dist", dist)])
        tb = TB(dut, 41, 1.0)
        res = await tb.run(items, 0, max_cyc=60000)
        err = check(items, res)
        found[dist] = err
        dut._log.info("FIN_MARGIN distance %d: %d errors %s", dist, len(err), err[:2])
    assert not found[FIN_MARGIN], found[FIN_MARGIN][:5]
    assert found[FIN_MARGIN - 1], "the margin is not tight"


@_test
async def test_cut_written_while_read(dut):
    """Reading while written, as in fpga_core: frame i is written one byte per cycle (FCS
    included) from cycle W_i, its action is offered LAG cycles after its header point (the
    byte the decision needs) was written and its fin comes 2 cycles after its last (FCS) byte
    was written. No byte may be read before it is written, every output is right, and the
    fin comes with at least the margin (logged: the smallest distance seen)."""
    from wccp_frames import header_point
    for lag in (0, 4, 16):
        sc = Scenario(21)
        rng = random.Random(121)
        items = make_items(sc, 40, 1.0, rng, bad_p=0.2, clip=2)
        w = 20
        for it in items:
            it.update(w=w, offer=w + header_point(it["fr"][:-4]) + 1 + lag, mode=("cyc", w + len(it["fr"]) + 1))
            w += len(it["fr"]) + 20             # line rate: preamble + IFG between frames
        tb = TB(dut, 21, 1.0)
        res = await tb.run(items, 0, max_cyc=w + 20000)
        err = check(items, res)
        dists = [(res["starts"][i] + it["a"]["flen"] - res["take"][i][1]) % SIZE
                 for i, it in enumerate(items) if not it["a"]["drop"] and res["take"][i][0] > res["acc"][i] + 4]
        dut._log.info("LAG %d: %d errors %s; fin distance from the end: min %s", lag, len(err), err[:2], min(dists))
        assert not err, "\n".join(err[:10])
        assert min(dists) >= FIN_MARGIN


@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_builder(sim):
    wccp_tb.run_sim(sim, "wccp_builder", __file__, sources=[wccp_tb.RTL / "wccp_builder.v"],
                    parameters={"BUF_AW": BUF_AW})
