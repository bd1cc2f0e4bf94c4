"""fpga_core's testbench helpers, shared by its tests (test_fpga_core.py, test_probe.py,
test_line_rate.py) and its bench (bench_fpga_core.py): the TB (clock, GMII sources and sinks,
register bus, SPI, the firmware's driver), a scenario (caches, tables, random traffic), table
programming into the model and the RTL at once, and the counters read back in the model's
terms."""
import os

from cocotbext.eth import GmiiFrame, GmiiSink, GmiiSource
from wccp import regmap as R
from wccp.dataplane import FWD_GRE, FWD_L2, RET_GRE, RET_L2
from wccp_tb import Clock, RisingEdge, Timer, cocotb

CLK_NS = 8


class TB:
    def __init__(self, dut):
        from wccp_hw import HwDriver, RegBus, SpiMaster
        self.dut = dut
        self.bus = RegBus(dut)
        self.spi = SpiMaster(dut)
        self.hw = HwDriver(self.bus)      # the firmware's driver, its writes on the register bus
        cocotb.start_soon(Clock(dut.clk, CLK_NS, unit="ns").start())
        self.src = [GmiiSource(dut.gmii0_rxd, dut.gmii0_rx_er, dut.gmii0_rx_dv, dut.clk, dut.rst),
                    GmiiSource(dut.gmii1_rxd, dut.gmii1_rx_er, dut.gmii1_rx_dv, dut.clk, dut.rst)]
        self.sink = [GmiiSink(dut.gmii0_txd, dut.gmii0_tx_er, dut.gmii0_tx_en, dut.clk, dut.rst),
                     GmiiSink(dut.gmii1_txd, dut.gmii1_tx_er, dut.gmii1_tx_en, dut.clk, dut.rst)]
        self.expected = [[[], []], [[], []]]     # [out_port][src_port] -> list of frames
        self.nexp = [0, 0]
        self.got = [[], []]
        self.alt_hits = {}
        # cut-through: frames whose output had started when their status said bad come out
        # stomped (TX_ER on the FCS, FCS inverted); only frames the model drops may
        self.stomped = [0, 0]
        self.may_stomp = 0
        self.stomped_total = [0, 0]

    def take(self, o, f):
        """An output frame: a stomped one is checked and counted, any other kept for the
        comparison."""
        data, stomped = classify_output(o, f)
        if stomped:
            self.stomped[o] += 1
            self.stomped_total[o] += 1
            return
        self.got[o].append(data)

    def quiet(self):
        """The GMII sources and sinks log no line per frame (long runs)."""
        import logging
        for x in self.src + self.sink:
            x.log.setLevel(logging.WARNING)

    async def reset(self):
        self.dut.rst.value = 1
        for _ in range(10):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        for _ in range(5):
            await RisingEdge(self.dut.clk)

    async def send(self, port, frame, model=None, now=0, alternatives=None):
        """Send a frame (with FCS) on port; record the model's expected outputs."""
        if model is not None:
            if model.decide(port, frame, now=now).reason in STOMPABLE:
                self.may_stomp += 1
            outs = model.process(port, frame, now=now)
            if os.environ.get("WCCP_DEBUG"):
                cocotb.log.info("send p%d %s -> %s", port, frame.hex(), [(o, d.hex()) for o, d in outs])
            for o, data in outs:
                self.expected[o][port].append(data if alternatives is None else alternatives(port, frame, data))
                self.nexp[o] += 1
        await self.src[port].send(GmiiFrame.from_raw_payload(frame))

    async def collect(self, timeout_us=2000):
        """Wait for all expected frames, then check nothing else arrives; compare."""
        waited = 0
        while True:
            for o in range(2):
                while not self.sink[o].empty():
                    self.take(o, self.sink[o].recv_nowait())
            if all(len(self.got[o]) >= self.nexp[o] for o in range(2)) and \
                    all(self.src[p].empty() and self.src[p].idle() for p in range(2)):
                break
            await Timer(2, "us")
            waited += 2
            assert waited < timeout_us, "timeout: got %r of %r frames" % ([len(g) for g in self.got], self.nexp)
        await Timer(20, "us")
        for o in range(2):
            while not self.sink[o].empty():
                self.take(o, self.sink[o].recv_nowait())
        assert sum(self.stomped) <= self.may_stomp, "%r stomped frames, %d the model drops" % (
            self.stomped, self.may_stomp)
        for o in range(2):
            assert len(self.got[o]) == self.nexp[o], "port %d: %d frames, expected %d" % (
                o, len(self.got[o]), self.nexp[o])
            queues = [list(q) for q in self.expected[o]]
            last_alt = [0, 0]
            for n, f in enumerate(self.got[o]):
                ok = False
                for sp, q in enumerate(queues):
                    k = _match(q[0], f) if q else None
                    if k is not None:
                        q.pop(0)
                        ok = True
                        # alternatives: once a source port's frames follow the new tables,
                        # none may follow the old ones again
                        assert k >= last_alt[sp], "port %d: frame %d went back to old tables" % (o, n)
                        last_alt[sp] = k
                        self.alt_hits[k] = self.alt_hits.get(k, 0) + 1
                        break
                if not ok:
                    heads = [q[0].hex() if q and isinstance(q[0], bytes) else repr(q[0] if q else None)
                             for q in queues]
                    raise AssertionError("port %d frame %d unexpected:\n got %s\n heads %s" % (
                        o, n, f.hex(), heads))
        self.expected = [[[], []], [[], []]]
        self.nexp = [0, 0]
        self.got = [[], []]
        self.stomped = [0, 0]
        self.may_stomp = 0

    async def counters(self):
        c = {}
        names = ["rx_frames", "rx_bytes", "tx_frames", "tx_bytes", "rx_runt", "rx_bad_fcs",
                 "rx_oversize", "rx_overflow", "not_redirectable", "from_cache", "unassigned",
                 "cache_unknown", "gre_too_big", "gre_return", "redirect_l2", "redirect_gre",
                 "learnt", "gre_return_bad", "truncated"]
        for i, n in enumerate(names):
            c[n] = [await self.bus.read(R.PORTCNT_BASE + p * R.PORTCNT_STRIDE + i) for p in range(2)]
        c["slot_frames"] = []
        c["slot_bytes"] = []
        for s in range(8):
            b = R.SLOTCNT_BASE + s * R.SLOTCNT_STRIDE
            c["slot_frames"].append(sum([await self.bus.read(b + 2 * p) for p in range(2)]))
            c["slot_bytes"].append(sum([await self.bus.read(b + 2 * p + 1) for p in range(2)]))
        return c

    async def table_counters(self, slots):
        cf, cb, bh = {}, {}, {}
        for s in slots:
            b = R.CACHECNT_BASE + s * R.CACHECNT_STRIDE
            cf[s] = [await self.bus.read(b + 2 * i) for i in range(R.MAX_CACHES)]
            cb[s] = [await self.bus.read(b + 2 * i + 1) for i in range(R.MAX_CACHES)]
            b = R.BUCKETCNT_BASE + s * R.BUCKETCNT_STRIDE
            bh[s] = [await self.bus.read(b + i) for i in range(R.NUM_BUCKETS)]
        return cf, cb, bh


def classify_output(o, f):
    """(bytes with FCS, stomped) of a frame a GmiiSink received on egress o. A stomped frame
    has TX_ER on exactly its last 4 bytes (the FCS) and a bad FCS; TX_ER anywhere else
    fails."""
    data = bytes(f.get_payload(strip_fcs=False))
    if f.error is not None and any(f.error):
        err = list(f.error)
        assert all(err[-4:]) and not any(err[:-4]), "egress %d: tx_er outside a stomped frame's FCS: %r" % (
            o, err)
        assert not f.check_fcs(), "egress %d: stomped frame with a good FCS" % o
        return data, True
    return data, False


def _match(exp, got):
    """Index of the alternative `got` equals (0 for a plain expected frame), or None."""
    if isinstance(exp, (list, tuple)):
        for i, e in enumerate(exp):
            if e == got:
                return i
        return None
    return 0 if exp == got else None


# ------------------------------------------------------------------ scenario

ROUTER_ID = 0x0A000001
APPL_MAC = bytes.fromhex("020000000001")
# model drop reasons that cut-through may turn into a stomped output frame
STOMPABLE = ("rx_runt", "rx_bad_fcs", "rx_oversize", "truncated")


class Scenario:
    def __init__(self, rng):
        from wccp_frames import FrameGen
        self.rng = rng
        self.caches = [0x0A010001 + i for i in range(5)]
        self.macs = [bytes([0x02, 0xCC, 0, 0, 0, i + 1]) for i in range(5)]
        self.ports = [rng.randrange(2) for _ in range(5)]
        self.gen = FrameGen(rng, ROUTER_ID, self.caches, self.macs, self.ports, APPL_MAC)

    def tables(self):
        r = self.rng
        c = self.caches

        def cent(i, fwd, ret):
            return {"address": c[i], "forward": fwd, "ret": ret}
        groups = []
        # slot 0: TCP 80/8080 dst ports, hash dst-ip with alternate on src port, GRE + L2 caches
        b0 = []
        for _ in range(256):
            x = r.random()
            b0.append(0xFF if x < 0.1 else (0x80 | r.randrange(3)) if x < 0.3 else r.randrange(4))
        groups.append((0, {"service_type": 1, "service_id": 90, "priority": 200, "protocol": 6,
                           "service_flags": 0x2 | 0x10 | 0x400, "ports": [80, 8080]},
                       [cent(0, FWD_GRE, RET_GRE), cent(1, FWD_L2, RET_L2), cent(2, FWD_GRE, RET_GRE)],
                       ("hash", b0)))
        # slot 1: UDP any port, mask assignment on src/dst ip and dst port
        sets = []
        for _ in range(r.randrange(1, 4)):
            m = (r.choice([0, 0x1, 0x100]), r.choice([0x1741, 0x7, 0x30]), 0, r.choice([0, 0x1, 0x3]))
            while sum(bin(x).count("1") for x in m) > 7:      # D9: at most 7 mask bits a set
                m = (r.choice([0, 0x1, 0x100]), r.choice([0x1741, 0x7, 0x30]), 0, r.choice([0, 0x1, 0x3]))
            vals = []
            for _ in range(r.randrange(1, 40)):
                vals.append((r.randrange(1 << 32) & m[0], r.randrange(1 << 32) & m[1], 0,
                             r.randrange(1 << 16) & m[3], r.randrange(4)))
            sets.append({"masks": m, "values": vals})
        groups.append((1, {"service_type": 1, "service_id": 91, "priority": 150, "protocol": 17,
                           "service_flags": 0x1, "ports": []},
                       [cent(3, FWD_GRE, RET_GRE), cent(4, FWD_L2, RET_L2), cent(0, FWD_GRE, RET_GRE)],
                       ("mask", sets)))
        # slot 2: any protocol, source-port list (ignored for protocol 0), hash on src ip ^ dst port
        b2 = [r.randrange(3) if r.random() < 0.8 else 0xFF for _ in range(256)]
        groups.append((2, {"service_type": 1, "service_id": 92, "priority": 100, "protocol": 0,
                           "service_flags": 0x1 | 0x8 | 0x10 | 0x20, "ports": [80]},
                       [cent(4, FWD_GRE, RET_L2), cent(2, FWD_L2, RET_GRE), cent(1, FWD_GRE, RET_GRE)],
                       ("hash", b2)))
        return groups


NEXT_HOPS = (bytes.fromhex("02ee000000a0"), None)


async def program(both, groups, mtu=1500, next_hops=NEXT_HOPS):
    await both.configure(ROUTER_ID, APPL_MAC, mtu)
    await both.set_next_hop(0, next_hops[0])
    await both.set_next_hop(1, next_hops[1])
    for slot, svc, caches, (kind, a) in groups:
        await both.set_group(slot, svc)
        await both.set_caches(slot, caches)
        if kind == "hash":
            await both.set_hash(slot, a)
        else:
            await both.set_mask(slot, a)
    await both.commit()


async def program_armed(tb, model, groups):
    """Program groups into the model and the RTL, redirection armed without a watchdog timeout."""
    from wccp_hw import Both
    await program(Both(model, tb.hw), groups)
    await tb.hw.arm(0)
    await tb.hw.heartbeat()
    model.arm(0)
    model.heartbeat(now=0)


def random_frame(sc, r):
    g = sc.gen
    x = r.random()
    vlan = r.randrange(1, 4095) if r.random() < 0.15 else None
    if x < 0.40:
        return r.randrange(2), g.ip_frame(proto=6, vlan=vlan, plen=(0, 120))
    if x < 0.60:
        return r.randrange(2), g.ip_frame(proto=17, vlan=vlan, plen=(0, 120))
    if x < 0.68:
        return r.randrange(2), g.ip_frame(vlan=vlan, plen=(0, 120))
    if x < 0.74:
        ci = r.randrange(5)
        return sc.ports[ci], g.gre_return(ci, vlan=vlan, redirect_header=r.random() < 0.8,
                                          bad="short" if r.random() < 0.1 else None)
    if x < 0.78:
        ci = r.randrange(5)      # from a cache: its IP and MAC, on its port
        return sc.ports[ci], g.ip_frame(src=sc.caches[ci], l2src=sc.macs[ci], vlan=vlan, plen=(0, 80))
    if x < 0.82:
        ci = r.randrange(5)      # L2 return: cache MAC, any IP, on its port
        return sc.ports[ci], g.ip_frame(proto=6, dport=80, l2src=sc.macs[ci], plen=(0, 80))
    if x < 0.86:
        return r.randrange(2), g.non_ip()
    if x < 0.88:
        return r.randrange(2), g.ip_frame(proto=6, dport=80, plen=(1300, 1460))
    from wccp_frames import MALFORMED
    return r.randrange(2), ("raw", g.malformed(r.choice(MALFORMED)))


def fcs_frame(f):
    from wccp_frames import with_fcs
    if isinstance(f, tuple):
        return f[1]
    return with_fcs(f)


async def learn_caches(tb, sc, model, also=()):
    """Every cache sends a frame from its own address and MAC on its port: the RTL and
    `model` learn its location (and so does each model in `also`). One frame at a time: a
    frame may be redirected to a cache learnt by the frame before it, which the model
    processes first (frames on the two ports at once would race)."""
    for ci in range(len(sc.caches)):
        f = fcs_frame(sc.gen.ip_frame(proto=17, src=sc.caches[ci], l2src=sc.macs[ci], dst=ROUTER_ID))
        for m in also:
            m.process(sc.ports[ci], f, now=0)
        await tb.send(sc.ports[ci], f, model)
        await tb.collect()


class NullModel:
    def __getattr__(self, name):
        def sync(*a, **k):
            return None
        return sync


class NullHw:
    def __getattr__(self, name):
        async def call(*a, **k):
            return None
        return call
