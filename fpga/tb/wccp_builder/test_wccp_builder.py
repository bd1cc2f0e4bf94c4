"""wccp_builder: for every kind of action (copy, L2 rewrite, GRE encapsulation with and without
VLAN tag, GRE-return decapsulation, drop) the bytes streamed out equal what
wccp.fwdmodel.ForwardingModel produces for the same frame (before padding/FCS, which the MAC
adds); frames are read from a wrapping buffer, with random back-pressure, one request per
frame on the right egress port, and the buffer released exactly up to the frame's end."""
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
except ImportError:
    cocotb = None

from wccp.dataplane import FWD_GRE, FWD_L2, RET_GRE, RET_L2, SERVICE_DYNAMIC  # noqa: E402
from wccp.fwdmodel import ForwardingModel, ip_checksum  # noqa: E402

BUF_AW = 12
ROUTER_ID = 0x0A000001
APPL_MAC = bytes.fromhex("020000000001")
NH0 = bytes.fromhex("02ee000000a0")


def _test(f):
    return cocotb.test()(f) if cocotb is not None else f


class Scenario:
    """A configured ForwardingModel and a frame generator covering every action."""

    def __init__(self, seed):
        from wccp_frames import FrameGen, with_fcs
        self.with_fcs = with_fcs
        r = self.rng = random.Random(seed)
        self.caches = [0x0A010001 + i for i in range(5)]
        self.macs = [bytes([0x02, 0xCC, 0, 0, 0, i + 1]) for i in range(5)]
        self.ports = [i & 1 for i in range(5)]
        self.gen = FrameGen(r, ROUTER_ID, self.caches, self.macs, self.ports, APPL_MAC)
        m = self.model = ForwardingModel()
        m.configure(ROUTER_ID, APPL_MAC, 1500)
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

    def frame(self):
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
        return self.with_fcs(f)

    def action(self, port, frame):
        """(action dict, expected output without FCS or None) from the model's decision."""
        m = self.model
        d = m.decide(port, frame, now=0)
        outs = m.process(port, frame, now=0)
        flen = len(frame) - 4
        a = {"drop": 0, "port": 0, "flen": flen, "hlen": 0, "kind": 0, "dmac": 0, "smac": 0,
             "vlan": 0, "tci": 0, "tl": 0, "csum": 0, "rid": 0, "cip": 0, "rh": 0, "src_off": 0,
             "copy_len": flen, "what": d.action}
        if d.action == "drop":
            assert outs == []
            a["drop"] = 1
            return a, None
        assert len(outs) == 1 and outs[0][0] == d.out_port
        a["port"] = d.out_port
        exp = outs[0][1][:-4]
        t = m._live
        mac = int.from_bytes(APPL_MAC, "big")
        tagged = d.l3 == 18
        tci = struct.unpack(">H", frame[14:16])[0] if tagged else 0
        if d.action == "redirect_l2":
            loc = m.cache_location(d.slot, d.cache)
            a.update(hlen=12, kind=1, dmac=int.from_bytes(loc[0], "big"), smac=mac, src_off=12,
                     copy_len=flen - 12)
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
                     rh=rh, src_off=d.l3, copy_len=d.ip_len)
        elif d.action == "decap":
            nh = t.next_hop[d.out_port]
            a.update(hlen=18 if tagged else 14, kind=3,
                     dmac=int.from_bytes(nh if nh is not None else frame[0:6], "big"), smac=mac,
                     vlan=int(tagged), tci=tci, src_off=d.inner, copy_len=d.inner_len)
        else:
            assert d.action == "forward", d
        return a, exp


class TB:
    def __init__(self, dut, seed, ready_p):
        self.dut = dut
        self.rng = random.Random(seed)
        self.ready_p = ready_p
        self.mem = bytearray(1 << BUF_AW)
        cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start())
        for s in ("act_valid", "act_drop", "act_port", "act_start", "act_flen", "act_hlen", "act_kind",
                  "act_dmac", "act_smac", "act_vlan", "act_tci", "act_tl", "act_csum", "act_rid",
                  "act_cip", "act_rh", "act_src_off", "act_copy_len", "buf_rdata", "m_ready"):
            getattr(dut, s).value = 0

    def _drive(self, a, start):
        d = self.dut
        d.act_drop.value = a["drop"]
        d.act_port.value = a["port"]
        d.act_start.value = start
        d.act_flen.value = a["flen"]
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
        d.act_copy_len.value = a["copy_len"]

    async def run(self, items, start0):
        """items: [(action, expected, frame)]; frames are stored back to back from start0."""
        d = self.dut
        d.rst.value = 1
        for _ in range(3):
            await RisingEdge(d.clk)
        d.rst.value = 0
        size = 1 << BUF_AW
        starts = []
        p = start0
        for _, _, fr in items:
            starts.append(p)
            p = (p + len(fr) - 4) % size
        outs, cur = [], bytearray()
        reqs = []               # req seen while a frame was being sent
        rels = []
        nxt = 0                 # next action to offer
        offered = False
        last_rel = None
        idle = 0
        raddrs = [0, 0]           # the addresses of the last two cycles
        while len(outs) < sum(1 for it in items if it[1] is not None) or nxt < len(items):
            await RisingEdge(d.clk)
            await ReadOnly()
            # block RAM with output register: the address of a cycle is answered 2 edges later
            rdata = self.mem[raddrs[0]]
            v = d.buf_raddr.value
            raddrs = [raddrs[1], int(v) if v.is_resolvable else 0]
            mv = int(d.m_valid.value)
            md, ml = (int(d.m_data.value), int(d.m_last.value)) if mv else (0, 0)
            ar, req, rel = int(d.act_ready.value), int(d.req.value), int(d.rel_ptr.value)
            if rel != last_rel:
                rels.append(rel)
                last_rel = rel
            await Timer(1, "ns")
            d.buf_rdata.value = rdata
            if offered and ar:
                nxt += 1
                offered = False
            if not offered and nxt < len(items):
                # store the frame now (the buffer is reused: older frames are released by then)
                for i, b in enumerate(items[nxt][2][:-4]):
                    self.mem[(starts[nxt] + i) % size] = b
                self._drive(items[nxt][0], starts[nxt])
                offered = True
            d.act_valid.value = 1 if offered else 0
            rdy = 1 if self.rng.random() < self.ready_p else 0
            d.m_ready.value = rdy
            if mv and rdy:
                cur.append(md)
                reqs.append(req)
                if ml:
                    outs.append((bytes(cur), set(reqs)))
                    cur, reqs = bytearray(), []
            idle = 0 if (mv or offered) else idle + 1
            assert idle < 200, "builder stalled: %d of %d actions, %d frames out" % (nxt, len(items), len(outs))
        for _ in range(20):
            await RisingEdge(d.clk)
        await ReadOnly()
        if int(d.rel_ptr.value) != last_rel:
            rels.append(int(d.rel_ptr.value))
        assert int(d.m_valid.value) == 0 and int(d.req.value) == 0
        assert int(d.rel_ptr.value) == p, (int(d.rel_ptr.value), p)
        return outs, rels, starts


async def _run(dut, seed, n, ready_p, start0):
    sc = Scenario(seed)
    items = []
    while len(items) < n:
        port = sc.rng.randrange(2)
        fr = sc.frame()
        a, exp = sc.action(port, fr)
        items.append((a, exp, fr))
    kinds = {it[0]["what"] for it in items}
    assert kinds >= {"forward", "redirect_l2", "redirect_gre", "decap", "drop"}, kinds
    assert any(it[0]["what"] == "redirect_gre" and it[0]["vlan"] for it in items)
    tb = TB(dut, seed, ready_p)
    outs, rels, starts = await tb.run(items, start0)
    sent = [it for it in items if it[1] is not None]
    assert len(outs) == len(sent), (len(outs), len(sent))
    for i, ((data, reqs), (a, exp, _)) in enumerate(zip(outs, sent, strict=True)):
        # the MAC pads to 60 bytes with zeros and appends the FCS
        assert data.ljust(60, b"\x00") == exp, "%d %s:\n got %s\n exp %s" % (i, a["what"], data.hex(), exp.hex())
        assert len(data) == a["hlen"] + a["copy_len"]
        assert reqs == {1 << a["port"]}, (i, reqs, a["port"])
    # the buffer is released frame by frame, in order, up to each frame's end
    size = 1 << BUF_AW
    ends = [(s + it[0]["flen"]) % size for s, it in zip(starts, items, strict=True)]
    assert rels == [0] + ends, (rels[:8], ends[:8])


@_test
async def test_actions_full_speed(dut):
    await _run(dut, 1, 60, 1.0, 0)


@_test
async def test_actions_backpressure_wrap(dut):
    # start near the end of the buffer: frames wrap around address 0
    await _run(dut, 2, 60, 0.45, (1 << BUF_AW) - 700)


@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_builder(sim):
    wccp_tb.run_sim(sim, "wccp_builder", __file__, sources=[wccp_tb.RTL / "wccp_builder.v"],
                    parameters={"BUF_AW": BUF_AW})
