"""wccp_rxq: good frames are stored whole (buffer bytes and parse bundle match the frame);
bad FCS / runt / oversize frames are dropped and counted; when the bundle queue or the frame
buffer is full, a frame is dropped whole and counted as overflow, nothing stored so far is
damaged, and reception resumes as soon as space is released."""
import pathlib
import random
import struct
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import wccp_tb  # noqa: E402

try:
    import cocotb
    from cocotb.clock import Clock
    from cocotb.triggers import ReadOnly, RisingEdge, Timer
    from cocotbext.eth import GmiiFrame, GmiiSource
except ImportError:
    cocotb = None

BUF_AW = 11          # 2 KiB buffer, 4-entry queue: overflow is reached quickly
QAW = 2
SIZE = 1 << BUF_AW


def _test(f):
    return cocotb.test()(f) if cocotb is not None else f


class TB:
    def __init__(self, dut, seed):
        from wccp_frames import FrameGen
        self.dut = dut
        self.rng = random.Random(seed)
        self.gen = FrameGen(self.rng, 0x0A000001, [0x0A010001], [b"\x02\xcc\0\0\0\1"], [0])
        cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start())
        self.src = GmiiSource(dut.gmii_rxd, dut.gmii_rx_er, dut.gmii_rx_dv, dut.clk, dut.rst)
        dut.q_pop.value = 0
        dut.buf_raddr.value = 0
        dut.rel_ptr.value = 0
        self.rel = 0
        self.ev = {"rx": 0, "runt": 0, "bad_fcs": 0, "oversize": 0, "overflow": 0, "lens": []}
        cocotb.start_soon(self._mon())

    async def _mon(self):
        d = self.dut
        while True:
            await RisingEdge(d.clk)
            await ReadOnly()
            if int(d.ev_rx.value):
                self.ev["rx"] += 1
                self.ev["lens"].append(int(d.ev_rx_len.value))
            e = int(d.ev_drop.value)
            for i, k in enumerate(("runt", "bad_fcs", "oversize", "overflow")):
                self.ev[k] += e >> i & 1

    async def reset(self):
        self.dut.rst.value = 1
        for _ in range(4):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        for _ in range(4):
            await RisingEdge(self.dut.clk)

    async def send(self, frames):
        for f in frames:
            await self.src.send(GmiiFrame.from_raw_payload(f))
        while not (self.src.empty() and self.src.idle()):
            await RisingEdge(self.dut.clk)
        for _ in range(10):
            await RisingEdge(self.dut.clk)

    async def pop(self, release=True):
        """Take the head bundle, read its bytes from the buffer, optionally release them."""
        d = self.dut
        await Timer(1, "ns")
        await ReadOnly()
        assert int(d.q_valid.value) == 1, "queue empty"
        b = {k: int(getattr(d, "q_" + k).value) for k in
             ("start", "flen", "dst_mac", "src_mac", "vlan", "tci", "is_ip", "proto", "sip", "dip",
              "sport", "dport", "totlen")}
        await RisingEdge(d.clk)
        data = bytearray()
        for i in range(b["flen"]):
            await Timer(1, "ns")
            d.buf_raddr.value = (b["start"] + i) % SIZE
            await RisingEdge(d.clk)
            await RisingEdge(d.clk)       # data 2 cycles after the address
            await ReadOnly()
            data.append(int(d.buf_rdata.value))
        await Timer(1, "ns")
        d.q_pop.value = 1
        await RisingEdge(d.clk)
        await Timer(1, "ns")
        d.q_pop.value = 0
        if release:
            await self.release(b)
        return b, bytes(data)

    async def release(self, b):
        self.rel = (b["start"] + b["flen"]) % SIZE
        await Timer(1, "ns")
        self.dut.rel_ptr.value = self.rel
        await RisingEdge(self.dut.clk)

    async def queued(self):
        await Timer(1, "ns")
        await ReadOnly()
        return int(self.dut.q_valid.value)

    def check(self, b, data, frame):
        """Bundle + stored bytes vs the frame sent (with FCS)."""
        body = frame[:-4]
        assert data == body, "stored bytes differ:\n got %s\n exp %s" % (data.hex(), body.hex())
        assert b["flen"] == len(body)
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
            if body[o + 9] in (6, 17):
                assert (b["sport"], b["dport"]) == struct.unpack(">HH", body[o + ihl:o + ihl + 4])
        else:
            assert b["is_ip"] == 0


def good_frames(tb, n, plen=(0, 200)):
    from wccp_frames import with_fcs
    out = []
    for _ in range(n):
        vlan = tb.rng.randrange(1, 4095) if tb.rng.random() < 0.3 else None
        out.append(with_fcs(tb.gen.ip_frame(proto=tb.rng.choice([6, 17]), vlan=vlan, plen=plen)))
    return out


@_test
async def test_good_and_bad(dut):
    """Good frames stored and parsed; bad ones dropped, counted, leaving no trace."""
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
        seq = [good[0], bytes(bad_fcs), good[1], runt, over, good[2]]
        await tb.send(seq)
        total += len(seq)
        for f in good:
            b, data = await tb.pop()
            tb.check(b, data, f)
        assert await tb.queued() == 0, rnd
        assert tb.ev["rx"] == total
        assert (tb.ev["bad_fcs"], tb.ev["runt"], tb.ev["oversize"], tb.ev["overflow"]) == \
            (rnd + 1, rnd + 1, rnd + 1, 0), tb.ev
    # every frame reported with its length (FCS included), in order
    assert tb.ev["lens"][-len(seq):] == [len(f) for f in seq], (tb.ev["lens"][-6:], [len(f) for f in seq])


@_test
async def test_queue_overflow(dut):
    """No pops: the 5th frame finds the 4-entry queue full and is dropped whole."""
    tb = TB(dut, 2)
    await tb.reset()
    for rnd in range(3):
        frames = good_frames(tb, 6, (0, 60))
        await tb.send(frames)
        assert tb.ev["overflow"] == 2 * (rnd + 1), tb.ev
        for f in frames[:4]:
            b, data = await tb.pop()
            tb.check(b, data, f)
        assert await tb.queued() == 0
    # room again: accepted
    f = good_frames(tb, 1)[0]
    await tb.send([f])
    b, data = await tb.pop()
    tb.check(b, data, f)
    assert tb.ev["overflow"] == 6 and tb.ev["rx"] == 19


@_test
async def test_buffer_overflow(dut):
    """Frames kept but not released fill the buffer: the frame that does not fit is dropped
    whole (and counted), the stored frames stay intact, reception resumes after release."""
    tb = TB(dut, 3)
    await tb.reset()
    for _ in range(3):
        ov0 = tb.ev["overflow"]
        big = good_frames(tb, 2, (700, 760))         # ~ 800 bytes each: 2 fit in 2 KiB
        third = good_frames(tb, 1, (700, 760))[0]    # does not fit
        small = good_frames(tb, 1, (0, 10))[0]       # fits in what is left
        await tb.send(big + [third, small])
        assert tb.ev["overflow"] == ov0 + 1, tb.ev
        got = []
        for _ in range(3):
            got.append(await tb.pop(release=False))
        assert await tb.queued() == 0
        for (b, data), f in zip(got, big + [small], strict=True):
            tb.check(b, data, f)
        # the frames are still intact in the buffer after the overflow; release them all
        await tb.release(got[-1][0])
        # after release the big frame is accepted again
        await tb.send([third])
        b, data = await tb.pop()
        tb.check(b, data, third)
        assert tb.ev["overflow"] == ov0 + 1


@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_rxq(sim):
    wccp_tb.run_sim(sim, "wccp_rxq", __file__,
                    sources=[wccp_tb.RTL / "wccp_rxq.v", wccp_tb.RTL / "wccp_bram.v", wccp_tb.RTL / "wccp_mac_rx.v",
                             wccp_tb.RTL / "wccp_parser.v"],
                    parameters={"BUF_AW": BUF_AW, "QAW": QAW})
