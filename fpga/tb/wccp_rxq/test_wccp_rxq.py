"""wccp_rxq: every byte goes to the buffer as it arrives; a frame's parse bundle is pushed at
its header point while the frame still arrives (early) when the buffer has not overflowed and
the queue has room, else at the end for a complete good frame; one status per bundle, in the
same order, at the frame's end (good / avail / bytes stored). Bad FCS / runt / oversize frames
and frames that overflow buffer or queue are dropped whole and counted (after an early push:
status good=0, flen 0, nothing left in the buffer); nothing stored is damaged, and reception
resumes as soon as space is released."""
import logging
import random
import struct

import pytest
import wccp_tb
from cocotbext.eth import GmiiFrame, GmiiSource
from wccp_frames import header_point, header_point_is_ip19
from wccp_tb import Clock, ReadOnly, RisingEdge, Timer, cocotb, cocotb_test

BUF_AW = 11          # 2 KiB buffer, 4-entry queue: overflow is reached quickly
QAW = 2
SIZE = 1 << BUF_AW
WAIT = 20000         # cycles a consumer waits for a bundle or status



def goes_early(f):
    """The parser's hdr_done (it parses the MAC's early stream, FCS included: at the header
    point before byte 60, else 4 bytes after it; in the cycle that byte is in the parser's
    input register, a cycle later for IPv4 byte 19) comes while the MAC's delayed stream still
    gives bytes and before its last byte: the bundle can go early. f: frame with FCS. The
    MAC's last byte (the frame's without its FCS) is in its delayed stream 2 cycles after the
    stream's last byte is in the parser's input register."""
    hp = header_point(f)
    lag = 1 if header_point_is_ip19(f) else 0
    return hp + lag <= len(f) - 1 if hp < 60 else hp + 4 <= len(f) - 1


def avail(f):
    body = f[:-4]
    l3 = 18 if body[12:14] == b"\x81\x00" else 14
    if body[l3 - 2:l3] != b"\x08\x00":
        return 1
    return int(len(body) - l3 >= struct.unpack_from(">H", body, l3 + 2)[0])


def raw_ip(rng, n, proto=6, vlan=None, ihl=5, tl=None):
    """An IPv4 frame of exactly n bytes without FCS (any IHL; options are random bytes)."""
    from wccp_frames import with_fcs
    l2 = bytes([0x02, 0, 0, 0, 0, 1, 0x02, 0x10] + [rng.randrange(256) for _ in range(4)])
    if vlan is not None:
        l2 += b"\x81\x00" + struct.pack(">H", vlan)
    l2 += b"\x08\x00"
    tl = n - len(l2) if tl is None else tl
    ip = bytes([0x40 | ihl, 0]) + struct.pack(">HHH", tl, rng.randrange(65536), 0x4000) + bytes([64, proto])
    ip += bytes(rng.randrange(256) for _ in range(10 + 4 * max(0, ihl - 5)))
    body = l2 + ip + bytes(rng.randrange(256) for _ in range(max(0, n - len(l2) - len(ip))))
    return with_fcs(body[:n])


class TB:
    def __init__(self, dut, seed):
        from wccp_frames import FrameGen
        self.dut = dut
        self.rng = random.Random(seed)
        self.gen = FrameGen(self.rng, 0x0A000001, [0x0A010001], [b"\x02\xcc\0\0\0\1"], [0])
        cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start())
        self.src = GmiiSource(dut.gmii_rxd, dut.gmii_rx_er, dut.gmii_rx_dv, dut.clk, dut.rst)
        self.src.log.setLevel(logging.WARNING)
        dut.q_pop.value = 0
        dut.st_pop.value = 0
        dut.buf_raddr.value = 0
        dut.rel_ptr.value = 0
        self.rel = 0
        self.ev = {"rx": 0, "runt": 0, "bad_fcs": 0, "oversize": 0, "overflow": 0, "lens": []}
        self.cyc = 0
        self.hdr = []        # cycles of the parser's hdr_done
        self.push = []       # (cycle, early) of bundle pushes
        self.push_soon = []  # q_soon in each push's cycle
        self.soon_rise = []  # cycles q_soon rose
        self.spush = []      # cycles of status pushes
        self.sfd = []        # GMII: cycle of each frame's SFD
        self.end = []        # GMII: last cycle of each frame (rx_dv high)
        self.rlast = []      # the MAC's last byte (FCS removed) into parser and buffer
        self.pre = False
        cocotb.start_soon(self._mon())

    async def _mon(self):
        d = self.dut
        dv0 = 0
        soon0 = 0
        while True:
            await RisingEdge(d.clk)
            self.cyc += 1
            await ReadOnly()
            if int(d.ev_rx.value):
                self.ev["rx"] += 1
                self.ev["lens"].append(int(d.ev_rx_len.value))
            e = int(d.ev_drop.value)
            for i, k in enumerate(("runt", "bad_fcs", "oversize", "overflow")):
                self.ev[k] += e >> i & 1
            # cycle numbers: the values seen here are sampled by the DUT at the next edge
            if int(d.parser.hdr_done.value):
                self.hdr.append(self.cyc)
            soon = int(d.q_soon.value)
            if soon and not soon0:
                self.soon_rise.append(self.cyc)
            soon0 = soon
            if int(d.q_push.value):
                self.push.append((self.cyc, int(d.e_push.value)))
                self.push_soon.append(soon)
            if int(d.st_push.value):
                self.spush.append(self.cyc)
            if int(d.mac.m_valid.value) and int(d.mac.m_last.value):
                self.rlast.append(self.cyc)
            dv = int(d.gmii_rx_dv.value)
            if dv and d.gmii_rxd.value.is_resolvable and int(d.gmii_rxd.value) == 0xD5 and self.pre:
                self.sfd.append(self.cyc)
                self.pre = False
            if dv and not dv0:
                self.pre = True
            if dv0 and not dv:
                self.end.append(self.cyc - 1)
            dv0 = dv

    async def reset(self):
        self.dut.rst.value = 1
        for _ in range(4):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        for _ in range(4):
            await RisingEdge(self.dut.clk)

    async def send(self, frames, wait=True):
        for f in frames:
            await self.src.send(GmiiFrame.from_raw_payload(f))
        if wait:
            await self.drain()

    async def drain(self):
        while not (self.src.empty() and self.src.idle()):
            await RisingEdge(self.dut.clk)
        for _ in range(10):
            await RisingEdge(self.dut.clk)

    async def _wait(self, name):
        d = self.dut
        for _ in range(WAIT):
            await Timer(1, "ns")
            await ReadOnly()
            if int(getattr(d, name).value):
                return
            await RisingEdge(d.clk)
        raise AssertionError("no %s" % name)

    async def _pulse(self, name):
        await Timer(1, "ns")
        getattr(self.dut, name).value = 1
        await RisingEdge(self.dut.clk)
        await Timer(1, "ns")
        getattr(self.dut, name).value = 0

    async def take(self):
        """Pop the head bundle (waits for one)."""
        await self._wait("q_valid")
        d = self.dut
        b = {k: int(getattr(d, "q_" + k).value) for k in
             ("start", "dst_mac", "src_mac", "vlan", "tci", "is_ip", "ip_hdr_ok", "proto", "sip", "dip",
              "tcpudp", "totlen", "ihl", "l4w0")}
        await self._pulse("q_pop")
        return b

    async def status(self):
        """Pop the head status (waits for one)."""
        await self._wait("st_valid")
        d = self.dut
        s = {"good": int(d.st_good.value), "avail": int(d.st_avail.value), "flen": int(d.st_flen.value)}
        await self._pulse("st_pop")
        return s

    async def read(self, start, n):
        d = self.dut
        data = bytearray()
        for i in range(n + 1):
            await Timer(1, "ns")
            if i < n:
                d.buf_raddr.value = (start + i) % SIZE
            await RisingEdge(d.clk)
            if i >= 1:
                await Timer(1, "ns")                 # data 2 cycles after the address
                await ReadOnly()
                data.append(int(d.buf_rdata.value))
        return bytes(data)

    async def release(self, b, s):
        self.rel = (b["start"] + s["flen"]) % SIZE
        await Timer(1, "ns")
        self.dut.rel_ptr.value = self.rel
        await RisingEdge(self.dut.clk)

    async def consume(self, release=True):
        """The decision core, commit unit and builder: bundle, then its status; read a good frame's bytes;
        release start + flen."""
        b = await self.take()
        s = await self.status()
        data = await self.read(b["start"], s["flen"]) if s["good"] else b""
        if release:
            await self.release(b, s)
        return b, s, data

    async def queued(self):
        await Timer(1, "ns")
        await ReadOnly()
        return int(self.dut.q_valid.value), int(self.dut.st_valid.value)

    def check(self, b, s, data, frame, good=True):
        """Bundle + status + stored bytes vs the frame sent (with FCS)."""
        body = frame[:-4]
        assert s["good"] == int(good), (s, good)
        assert s["avail"] == avail(frame), s
        if good:
            assert data == body, "stored bytes differ:\n got %s\n exp %s" % (data.hex(), body.hex())
            assert s["flen"] == len(body)
        else:
            assert s["flen"] == 0
        assert b["dst_mac"] == int.from_bytes(body[0:6], "big")
        assert b["src_mac"] == int.from_bytes(body[6:12], "big")
        tagged = body[12:14] == b"\x81\x00"
        assert b["vlan"] == int(tagged)
        o = 18 if tagged else 14
        if tagged:
            assert b["tci"] == struct.unpack(">H", body[14:16])[0]
        if body[o - 2:o] == b"\x08\x00":
            assert b["is_ip"] == 1
            assert b["proto"] == body[o + 9]
            assert b["totlen"] == struct.unpack(">H", body[o + 2:o + 4])[0]
            assert b["sip"] == int.from_bytes(body[o + 12:o + 16], "big")
            assert b["dip"] == int.from_bytes(body[o + 16:o + 20], "big")
            ihl = (body[o] & 15) * 4
            assert b["ihl"] == ihl // 4
            tu = body[o + 9] in (6, 17)
            assert b["tcpudp"] == int(tu)
            assert b["ip_hdr_ok"] == int(body[o] >> 4 == 4 and ihl >= 20 and b["totlen"] >= ihl + 4 * tu and
                                         (body[o + 6] & 0x3F, body[o + 7]) == (0, 0))
            # L4 bytes past a good frame's end (in its FCS or beyond) are 0 in the bundle (a
            # runt's header may have been parsed from its FCS: it is dropped whatever it says)
            l4 = bytes(body[o + ihl + k] if o + ihl + k < len(body) else 0 for k in range(4))
            if (tu or body[o + 9] == 47) and ihl >= 20 and (good or o + ihl + 4 <= len(body)):
                # TCP / UDP: the ports (source, destination)
                assert b["l4w0"] == int.from_bytes(l4, "big"), (b, body.hex())
        else:
            assert b["is_ip"] == 0
            assert b["ip_hdr_ok"] == 0


def good_frames(tb, n, plen=(0, 200)):
    from wccp_frames import with_fcs
    out = []
    for _ in range(n):
        vlan = tb.rng.randrange(1, 4095) if tb.rng.random() < 0.3 else None
        out.append(with_fcs(tb.gen.ip_frame(proto=tb.rng.choice([6, 17]), vlan=vlan, plen=plen)))
    return out


@cocotb_test
async def test_good_and_bad(dut):
    """Good frames stored and parsed; bad ones dropped, counted, leaving no trace (their
    bundle, pushed early, gets a good=0 status with nothing to release)."""
    from wccp_frames import with_fcs
    tb = TB(dut, 1)
    await tb.reset()
    g = tb.gen
    total = 0
    for rnd in range(6):
        good = good_frames(tb, 3, (0, 300))
        bad_fcs = bytearray(good[0])
        bad_fcs[20] ^= 0x40
        runt = with_fcs(g.ip_frame(proto=6)[:40], pad=False)
        over = with_fcs(g.ip_frame(proto=6, plen=(1480, 1500)) + b"\x00" * 40)
        seq = [(good[0], True), (bytes(bad_fcs), False), (good[1], True), (runt, False), (over, False),
               (good[2], True)]
        total += len(seq)
        # bad frames whose bundle went early take queue slots too (4 entries): two halves
        for half in (seq[:3], seq[3:]):
            await tb.send([f for f, _ in half])
            for f, ok in half:
                if ok or goes_early(f):
                    b, s, data = await tb.consume()
                    tb.check(b, s, data, f, good=ok)
        assert await tb.queued() == (0, 0), rnd
        assert tb.ev["rx"] == total
        assert (tb.ev["bad_fcs"], tb.ev["runt"], tb.ev["oversize"], tb.ev["overflow"]) == \
            (rnd + 1, rnd + 1, rnd + 1, 0), tb.ev
    # every frame reported with its length (FCS included), in order
    assert tb.ev["lens"][-len(seq):] == [len(f) for f, _ in seq], (tb.ev["lens"][-6:], [len(f) for f, _ in seq])


@cocotb_test
async def test_early_and_late(dut):
    """Which frames push their bundle early (at the header point, while the frame arrives)
    and which at the end; the cycle of hdr_done and of the push; statuses in order with
    good/avail/flen; GRE, VLAN, options, non-IPv4, truncated datagrams, frames whose header
    point is in their last bytes. q_soon (the hint that a bundle is on its way) is high from
    the frame's first bytes to its push, low once it is pushed."""
    from wccp_frames import with_fcs
    tb = TB(dut, 5)
    await tb.reset()
    rng = tb.rng
    g = tb.gen
    # IPv4 TCP, IHL 5, untagged: the latency from the header byte (offset 37 after the SFD)
    f = raw_ip(rng, 300)
    k0 = len(tb.push)
    await tb.send([f])
    hdr, sfd = tb.hdr[-1], tb.sfd[-1]
    lat = hdr - (sfd + 1 + 37)
    cyc, early = tb.push[k0]
    assert early and cyc == hdr, (tb.push[k0:], hdr)
    assert cyc < tb.end[-1] - 250
    dut._log.info("hdr_done %d cycles after header byte 37 (after the SFD) is on gmii_rxd; the bundle is "
                  "pushed in that cycle (q_valid in the next); the frame's last FCS byte is on gmii_rxd "
                  "%d cycles after the push", lat, tb.end[-1] - cyc)
    b, s, data = await tb.consume()
    tb.check(b, s, data, f)
    frames = []
    for _ in range(4):
        frames += good_frames(tb, 2, (0, 100))
        frames.append(with_fcs(g.gre_return(0, vlan=rng.choice([None, 7]))))
        frames.append(with_fcs(g.non_ip()))
        frames.append(g.malformed("truncated"))                        # avail 0
        frames.append(raw_ip(rng, rng.randrange(60, 200), vlan=rng.choice([None, 5]), ihl=rng.randrange(6, 16),
                             proto=rng.choice([6, 17, 47])))
    # header point in the last 3 bytes or beyond: IHL 11 TCP (point at byte 61), IHL 15 (77)
    for n in (62, 63, 64, 65, 70, 77, 78, 80, 81):
        frames.append(raw_ip(rng, n, ihl=11 if n < 70 else 15))
    frames.append(raw_ip(rng, 60, vlan=9, ihl=15, proto=47))
    rng.shuffle(frames)
    for f in frames:
        k0, h0, s0 = len(tb.push), len(tb.hdr), len(tb.spush)
        await tb.send([f])
        assert len(tb.hdr) == h0 + 1, "hdr_done not exactly once"
        assert len(tb.push) == k0 + 1 and len(tb.spush) == s0 + 1
        cyc, early = tb.push[k0]
        assert early == goes_early(f), (early, header_point(f), len(f))
        assert tb.push_soon[k0] and tb.sfd[-1] < tb.soon_rise[-1] <= tb.sfd[-1] + 8 and tb.soon_rise[-1] < cyc, \
            (tb.push_soon[k0], tb.sfd[-1], tb.soon_rise[-1], cyc)
        assert not int(dut.q_soon.value)
        # hdr_done before the cycle of the last byte: pushed in that cycle; else at done
        if early:
            assert cyc == tb.hdr[-1] and tb.hdr[-1] < tb.rlast[-1]
        else:
            assert cyc == tb.spush[-1] == tb.rlast[-1] + 1 and tb.hdr[-1] >= tb.rlast[-1]
        b, s, data = await tb.consume()
        tb.check(b, s, data, f)
    assert tb.ev["rx"] == len(frames) + 1 and tb.ev["overflow"] == 0


@cocotb_test
async def test_queue_overflow(dut):
    """No pops: the 5th frame finds the 4-entry queue full and is dropped whole."""
    tb = TB(dut, 2)
    await tb.reset()
    for rnd in range(3):
        frames = good_frames(tb, 6, (0, 60))
        await tb.send(frames)
        assert tb.ev["overflow"] == 2 * (rnd + 1), tb.ev
        for f in frames[:4]:
            b, s, data = await tb.consume()
            tb.check(b, s, data, f)
        assert await tb.queued() == (0, 0)
    # room again: accepted
    f = good_frames(tb, 1)[0]
    await tb.send([f])
    b, s, data = await tb.consume()
    tb.check(b, s, data, f)
    assert tb.ev["overflow"] == 6 and tb.ev["rx"] == 19
    # the queue is full at the header point but has room at the end: pushed at the end
    frames = good_frames(tb, 4, (0, 60))
    await tb.send(frames)
    big = good_frames(tb, 1, (900, 900))[0]
    k0, h0 = len(tb.push), len(tb.hdr)
    await tb.send([big], wait=False)
    while len(tb.hdr) == h0:
        await RisingEdge(dut.clk)
    b, s, data = await tb.consume()                # one frees a slot while big arrives
    tb.check(b, s, data, frames[0])
    await tb.drain()
    assert tb.push[k0:] == [(tb.spush[-1], 0)] and tb.spush[-1] > tb.end[-1]
    for f in frames[1:] + [big]:
        b, s, data = await tb.consume()
        tb.check(b, s, data, f)
    assert tb.ev["overflow"] == 6
    # the status queue holds more than the bundle queue: four bundles queued, a fifth
    # taken (its status not yet), a sixth frame arrives
    frames = good_frames(tb, 5, (0, 60))
    await tb.send(frames[:4])
    b0 = await tb.take()
    await tb.send(frames[4:])
    assert (int(dut.q_used.value), int(dut.s_used.value)) == (4, 5)
    s0 = await tb.status()
    tb.check(b0, s0, await tb.read(b0["start"], s0["flen"]), frames[0])
    await tb.release(b0, s0)
    for f in frames[1:]:
        b, s, data = await tb.consume()
        tb.check(b, s, data, f)
    assert await tb.queued() == (0, 0)
    assert tb.ev["overflow"] == 6


@cocotb_test
async def test_buffer_overflow(dut):
    """Frames kept but not released fill the buffer: the frame that does not fit is dropped
    whole (and counted), the stored frames stay intact, reception resumes after release. A
    frame that overflows after its early push gets a good=0 status and leaves no bytes; one
    that overflows before its header point gets no bundle."""
    tb = TB(dut, 3)
    await tb.reset()
    for _ in range(3):
        ov0 = tb.ev["overflow"]
        big = good_frames(tb, 2, (700, 760))         # ~ 800 bytes each: 2 fit in 2 KiB
        third = good_frames(tb, 1, (700, 760))[0]    # does not fit (its bundle goes early)
        small = good_frames(tb, 1, (0, 10))[0]       # fits in what is left
        k0 = len(tb.push)
        await tb.send(big + [third, small])
        assert tb.ev["overflow"] == ov0 + 1, tb.ev
        assert [e for _, e in tb.push[k0:]] == [1, 1, 1, 1]
        got = []
        for _ in range(4):
            got.append(await tb.consume(release=False))
        assert await tb.queued() == (0, 0)
        for (b, s, data), f, ok in zip(got, big + [third, small], (True, True, False, True), strict=True):
            tb.check(b, s, data, f, good=ok)
        assert got[2][0]["start"] == got[3][0]["start"]   # the dropped frame left nothing
        # the frames are still intact in the buffer after the overflow; release them all
        await tb.release(got[-1][0], got[-1][1])
        # after release the big frame is accepted again
        await tb.send([third])
        b, s, data = await tb.consume()
        tb.check(b, s, data, third)
        assert tb.ev["overflow"] == ov0 + 1
    # 16 bytes left below the full mark: the next frame overflows before its header point,
    # so no bundle and no status; the frames before it are intact
    ov0, k0, s0 = tb.ev["overflow"], len(tb.push), len(tb.spush)
    a = raw_ip(tb.rng, 1000)
    c = raw_ip(tb.rng, SIZE - 4 - 20 - 1000 + 4)
    x = raw_ip(tb.rng, 200)
    await tb.send([a, c, x])
    assert tb.ev["overflow"] == ov0 + 1
    assert len(tb.push) == k0 + 2 and len(tb.spush) == s0 + 2
    for f in (a, c):
        b, s, data = await tb.consume()
        tb.check(b, s, data, f)
    await tb.send([x])
    b, s, data = await tb.consume()
    tb.check(b, s, data, x)
    assert await tb.queued() == (0, 0)


@cocotb_test
async def test_stream(dut):
    """A consumer running alongside reception (random delays between bundle, status, read
    and release) and a stream of good, bad-FCS and runt frames of random sizes, some with the
    header point in their last bytes: every bundle/status belongs to the next frame not
    dropped, in order; good statuses carry the exact bytes; every good frame is either
    delivered or counted as an overflow; bad frames never show good."""
    from wccp_frames import with_fcs
    tb = TB(dut, 9)
    await tb.reset()
    rng = tb.rng
    sent = []           # (frame, good)
    for _ in range(160):
        r = rng.random()
        if r < 0.6:
            f = raw_ip(rng, rng.choice([rng.randrange(60, 130), rng.randrange(400, 1500)]), proto=rng.choice([6, 17, 47]),
                       vlan=rng.choice([None, 3]), ihl=rng.choice([5, 5, 5, 6, 11, 15]))
            sent.append((f, True))
        elif r < 0.8:
            f = bytearray(raw_ip(rng, rng.randrange(60, 400)))
            f[rng.randrange(len(f))] ^= 1 << rng.randrange(8)
            sent.append((bytes(f), False))
        elif r < 0.9:
            sent.append((with_fcs(raw_ip(rng, 300)[:rng.randrange(20, 59)], pad=False), False))
        else:
            sent.append((with_fcs(tb.gen.non_ip()), True))
    got = []
    stop = []

    async def consumer():
        while not stop:
            await Timer(1, "ns")
            await ReadOnly()
            if not int(dut.q_valid.value):
                await RisingEdge(dut.clk)
                continue
            b = await tb.take()
            for _ in range(rng.randrange(0, 60) if rng.random() < 0.9 else rng.randrange(300, 1500)):
                await RisingEdge(dut.clk)
            s = await tb.status()
            data = await tb.read(b["start"], s["flen"]) if s["good"] else b""
            for _ in range(rng.randrange(0, 30)):
                await RisingEdge(dut.clk)
            await tb.release(b, s)
            got.append((b, s, data))

    cocotb.start_soon(consumer())
    await tb.send([f for f, _ in sent])
    for _ in range(20000):
        await RisingEdge(dut.clk)
        if not int(dut.q_valid.value) and not int(dut.st_valid.value) and len(got) == len(tb.push):
            break
    stop.append(1)
    assert len(got) == len(tb.push) == len(tb.spush)
    k = 0
    delivered = ovf_early = 0
    for b, s, data in got:
        while int.from_bytes(sent[k][0][6:12], "big") != b["src_mac"]:
            k += 1
        f, ok = sent[k]
        tb.check(b, s, data, f, good=bool(s["good"]))
        assert ok or not s["good"], "bad frame delivered as good"
        delivered += s["good"]
        ovf_early += ok and not s["good"]
        k += 1
    ngood = sum(ok for _, ok in sent)
    assert delivered + tb.ev["overflow"] == ngood, (delivered, tb.ev, ngood)
    assert tb.ev["rx"] == len(sent)
    assert tb.ev["bad_fcs"] + tb.ev["runt"] == len(sent) - ngood
    dut._log.info("%d frames: %d delivered, %d overflow drops (%d after an early push), %d bundles (%d early)",
                  len(sent), delivered, tb.ev["overflow"], ovf_early, len(tb.push), sum(e for _, e in tb.push))
    assert ovf_early > 0 and tb.ev["overflow"] > ovf_early


@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_rxq(sim):
    wccp_tb.run_sim(sim, "wccp_rxq", __file__,
                    sources=[wccp_tb.RTL / "wccp_rxq.v", wccp_tb.RTL / "wccp_bram.v", wccp_tb.RTL / "wccp_mac_rx.v",
                             wccp_tb.RTL / "wccp_parser.v"],
                    parameters={"BUF_AW": BUF_AW, "QAW": QAW})
