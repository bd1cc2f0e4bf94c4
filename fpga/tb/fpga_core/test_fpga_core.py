"""Top-level test of fpga_core: tables programmed through the register interface (and SPI),
randomised scapy traffic on both GMII ports, every output frame compared byte for byte
(FCS included) with wccp.fwdmodel.ForwardingModel's prediction."""
import os
import random

import pytest
import wccp_tb
from core_tb import (
    ROUTER_ID, TB, NullHw, NullModel, Scenario, fcs_frame, learn_caches, program, program_armed, random_frame,
)
from cocotbext.eth import GmiiFrame
from scapy.all import IP, TCP, Raw
from wccp import regmap as R
from wccp.dataplane import FWD_GRE, FWD_L2, RET_GRE, RET_L2
from wccp.fwdmodel import ForwardingModel
from wccp_tb import RisingEdge, Timer, cocotb, cocotb_test

SEED = int(os.environ.get("WCCP_SEED", "1"))
NFRAMES = int(os.environ.get("WCCP_FRAMES", "160"))


@cocotb_test
async def test_spi_registers(dut):
    """SPI: read ID/VERSION, write and read back shadow registers with auto-increment."""
    tb = TB(dut)
    await tb.reset()
    ident = await tb.spi.read(R.ID, 2)
    assert ident == [R.ID_VALUE, R.REGMAP_VERSION], [hex(x) for x in ident]
    await tb.spi.write(R.ROUTER_ID, [0x0A000002, 0x0000BEEF, 0x01020304, 1400])
    got = await tb.spi.read(R.ROUTER_ID, 4)
    assert got == [0x0A000002, 0x0000BEEF, 0x01020304, 1400], [hex(x) for x in got]
    assert await tb.bus.read(R.ROUTER_ID) == 0x0A000002
    await tb.spi.write(R.WDT_TIMEOUT, [123456])
    assert await tb.spi.read(R.WDT_TIMEOUT) == [123456]
    assert await tb.spi.read(R.ID, 3) == [R.ID_VALUE, R.REGMAP_VERSION, await tb.bus.read(R.CAPS)]
    st = await tb.spi.read(R.STATUS)
    assert st[0] & R.STATUS_WDT_EXPIRED and not st[0] & R.STATUS_ACTIVE


@cocotb_test
async def test_random_traffic(dut):
    """Random tables and traffic (incl. malformed frames) against the reference model."""
    from wccp_hw import Both
    rng = random.Random(SEED)
    tb = TB(dut)
    await tb.reset()
    model = ForwardingModel()
    both = Both(model, tb.hw)
    sc = Scenario(rng)
    groups = sc.tables()
    await program(both, groups, mtu=rng.choice([1500, 1500, 600]))
    await tb.hw.arm(1000)
    await tb.hw.heartbeat()
    model.arm(1000000)
    model.heartbeat(now=0)
    await learn_caches(tb, sc, model)
    for s in tb.src:
        s.ifg = 60          # keep the load below what one egress can absorb with GRE growth
    for _ in range(NFRAMES):
        port, f = random_frame(sc, rng)
        await tb.send(port, fcs_frame(f), model)
    await tb.collect()
    c = await tb.counters()
    mc = model.counters()
    for k in ("rx_frames", "rx_bytes", "tx_frames", "tx_bytes", "rx_runt", "rx_bad_fcs", "rx_oversize"):
        assert c[k] == mc[k], (k, c[k], mc[k])
    for k in ("not_redirectable", "from_cache", "unassigned", "cache_unknown", "gre_too_big", "gre_return",
              "redirect_l2", "redirect_gre", "gre_return_bad", "truncated"):
        assert sum(c[k]) == mc[k], (k, c[k], mc[k])
    assert c["slot_frames"] == mc["slot_frames"], (c["slot_frames"], mc["slot_frames"])
    assert c["slot_bytes"] == mc["slot_bytes"]
    assert sum(c["rx_overflow"]) == 0
    cf, cb, bh = await tb.table_counters([0, 1, 2])
    for s in (0, 1, 2):
        assert cf[s] == mc["cache_frames"][s], (s, cf[s], mc["cache_frames"][s])
        assert cb[s] == mc["cache_bytes"][s], (s, cb[s], mc["cache_bytes"][s])
        assert bh[s] == mc["bucket_hits"][s], (s, bh[s], mc["bucket_hits"][s])
    assert c["learnt"] == mc["learnt"], (c["learnt"], mc["learnt"])
    assert mc["redirect_gre"] > 0 and mc["redirect_l2"] > 0 and mc["gre_return"] > 0
    dut._log.info("model counters: %s", {k: v for k, v in mc.items() if not isinstance(v, list) or
                                        not isinstance(v[0], list)})


@cocotb_test
async def test_atomic_commit(dut):
    """Reprogram every table while traffic flows: each frame sees either the old or the new tables."""
    from wccp_hw import Both
    rng = random.Random(SEED + 7)
    tb = TB(dut)
    await tb.reset()
    sc = Scenario(rng)
    sc.ports = [1] * len(sc.ports)     # both caches behind port 1: A and B use the same egress
    c = sc.caches

    def tables(v):
        bk = [(i + v) % 2 for i in range(256)]
        return [(0, {"service_type": 1, "service_id": 90 + v, "priority": 1, "protocol": 6,
                     "service_flags": 0x2 if v == 0 else 0x1, "ports": []},
                 [{"address": c[0], "forward": FWD_GRE if v == 0 else FWD_L2, "ret": RET_GRE},
                  {"address": c[1], "forward": FWD_L2 if v == 0 else FWD_GRE, "ret": RET_GRE}],
                 ("hash", bk))]
    model_a = ForwardingModel()
    model_b = ForwardingModel()
    both = Both(model_a, tb.hw)
    await program(both, tables(0))
    await program(Both(model_b, NullHw()), tables(1))
    for m in (model_a, model_b):
        m.arm(1000000)
        m.heartbeat(now=0)
    await tb.hw.arm(1000)
    await tb.hw.heartbeat()
    # learn cache locations in both models and the hardware
    for ci in range(2):
        f = fcs_frame(sc.gen.ip_frame(proto=17, src=c[ci], l2src=sc.macs[ci], dst=ROUTER_ID))
        model_b.process(sc.ports[ci], f, now=0)
        await tb.send(sc.ports[ci], f, model_a)
    await tb.collect()

    def alternatives(port, frame, data_a):
        outs_b = model_b.process(port, frame, now=0)
        return (data_a,) + tuple(d for _, d in outs_b)

    # while frames stream, switch to tables B (rewriting slot 0 entirely) and commit
    async def reprogram():
        await Timer(3, "us")
        hw_only = Both(NullModel(), tb.hw)
        await program(hw_only, tables(1))

    tb.alt_hits = {}
    task = cocotb.start_soon(reprogram())
    for _ in range(60):
        port = rng.randrange(2)
        f = fcs_frame(sc.gen.ip_frame(proto=6, plen=(0, 60)))
        await tb.send(port, f, model_a, alternatives=alternatives)
    await task
    await tb.collect()
    dut._log.info("frames with old/new tables: %s", tb.alt_hits)
    assert tb.alt_hits.get(0, 0) > 0 and tb.alt_hits.get(1, 0) > 0, tb.alt_hits
    # the hardware must have switched: a frame now follows B only
    f = fcs_frame(sc.gen.ip_frame(proto=6, plen=(0, 60)))
    outs = model_b.process(0, f, now=0)
    await tb.src[0].send(GmiiFrame.from_raw_payload(f))
    for o, data in outs:
        tb.expected[o][0].append(data)
        tb.nexp[o] += 1
    await tb.collect()
    assert await tb.bus.read(R.COMMIT) == 2


@cocotb_test
async def test_watchdog(dut):
    """Heartbeat stops -> fail-open within the timeout; heartbeat re-arms redirection."""
    from wccp_hw import Both
    rng = random.Random(SEED + 3)
    tb = TB(dut)
    await tb.reset()
    model = ForwardingModel()
    sc = Scenario(rng)
    c = sc.caches
    groups = [(0, {"service_type": 1, "service_id": 77, "priority": 1, "protocol": 6,
                   "service_flags": 0x2, "ports": []},
               [{"address": c[0], "forward": FWD_GRE, "ret": RET_GRE}], ("hash", [0] * 256))]
    await program(Both(model, tb.hw), groups)
    timeout_ms = 1        # the driver's unit (WDT_TIMEOUT counts microseconds)
    await tb.hw.arm(timeout_ms)
    model.arm(timeout_ms)
    # never heartbeaten: fail-open (learning still happens)
    f = fcs_frame(sc.gen.ip_frame(proto=17, src=c[0], l2src=sc.macs[0], dst=ROUTER_ID))
    await tb.send(sc.ports[0], f, model, now=0)
    for _ in range(4):
        await tb.send(rng.randrange(2), fcs_frame(sc.gen.ip_frame(proto=6)), model, now=0)
    await tb.collect()
    assert model.counters()["redirect_gre"] == 0
    # heartbeat: redirected
    await tb.hw.heartbeat()
    model.heartbeat(now=100)
    assert await tb.bus.read(R.STATUS) & R.STATUS_ACTIVE
    for _ in range(4):
        await tb.send(rng.randrange(2), fcs_frame(sc.gen.ip_frame(proto=6)), model, now=100)
    await tb.collect()
    assert model.counters()["redirect_gre"] == 4
    # heartbeat stops: fail-open within the timeout
    await Timer(timeout_ms * 1000 + 5, "us")
    st = await tb.bus.read(R.STATUS)
    assert st & R.STATUS_WDT_EXPIRED and not st & R.STATUS_ACTIVE, hex(st)
    for _ in range(4):
        await tb.send(rng.randrange(2), fcs_frame(sc.gen.ip_frame(proto=6)), model, now=100 + timeout_ms + 10)
    await tb.collect()
    assert model.counters()["redirect_gre"] == 4
    # re-arm
    await tb.hw.heartbeat()
    model.heartbeat(now=1000)
    for _ in range(4):
        await tb.send(rng.randrange(2), fcs_frame(sc.gen.ip_frame(proto=6)), model, now=1000)
    await tb.collect()
    assert model.counters()["redirect_gre"] == 8


@cocotb_test
async def test_overflow(dut):
    """Both ports blast minimum-size frames that are GRE-redirected to one egress: the
    excess is dropped as whole frames and counted; every frame that leaves is exact."""
    rng = random.Random(SEED + 11)
    tb = TB(dut)
    await tb.reset()
    model = ForwardingModel()
    sc = Scenario(rng)
    c = sc.caches
    groups = [(0, {"service_type": 1, "service_id": 60, "priority": 1, "protocol": 6,
                   "service_flags": 0x2, "ports": []},
               [{"address": c[0], "forward": FWD_GRE, "ret": RET_GRE, "mac": sc.macs[0], "port": 1}],
               ("hash", [0] * 256))]
    await program_armed(tb, model, groups)
    n = 120
    exp = [[], []]
    for i in range(n):
        for p in range(2):
            f = fcs_frame(sc.gen.ip_frame(proto=6, sport=1000 + i, plen=(0, 0)))
            outs = model.process(p, f, now=0)
            assert outs and outs[0][0] == 1
            exp[p].append(outs[0][1])
            await tb.src[p].send(GmiiFrame.from_raw_payload(f))
    while not all(s.empty() and s.idle() for s in tb.src):
        await Timer(2, "us")
    got, idle = [], 0
    while idle < 20:
        await Timer(1, "us")
        idle += 1
        while not tb.sink[1].empty():
            got.append(bytes(tb.sink[1].recv_nowait().get_payload(strip_fcs=False)))
            idle = 0
    assert tb.sink[0].empty()
    # every output frame is one of the expected frames, in order per source port
    pos = [0, 0]
    for f in got:
        for p in range(2):
            try:
                k = exp[p].index(f, pos[p])
            except ValueError:
                continue
            pos[p] = k + 1
            break
        else:
            raise AssertionError("corrupted or unexpected frame %s" % f.hex())
    c = await tb.counters()
    dropped = sum(c["rx_overflow"])
    assert dropped > 0, "expected overflow drops"
    assert len(got) + dropped == 2 * n, (len(got), dropped)
    assert sum(c["redirect_gre"]) == len(got), c


class EdgeLog:
    """Cycle numbers of the GMII frame edges: rx_dv rising/falling, tx_en rising, per port."""

    def __init__(self, dut):
        self.dut = dut
        self.rx_start, self.rx_end, self.tx_start = [[], []], [[], []], [[], []]
        cocotb.start_soon(self._run())

    async def _run(self):
        d = self.dut
        sig = [(d.gmii0_rx_dv, d.gmii0_tx_en), (d.gmii1_rx_dv, d.gmii1_tx_en)]
        prev = [[0, 0], [0, 0]]
        cyc = 0
        while True:
            await RisingEdge(d.clk)
            cyc += 1
            for p in range(2):
                dv, en = int(sig[p][0].value), int(sig[p][1].value)
                if dv and not prev[p][0]:
                    self.rx_start[p].append(cyc)
                if not dv and prev[p][0]:
                    self.rx_end[p].append(cyc)
                if en and not prev[p][1]:
                    self.tx_start[p].append(cyc)
                prev[p] = [dv, en]


@cocotb_test
async def test_cut_through(dut):
    """Cut-through on every path: one long frame at a time, its output frame starts on the
    wire before its input frame has ended (pass-through, L2 rewrite, GRE, decapsulation),
    byte for byte as the model says. A bad frame whose output has started is stomped (TX_ER
    and a bad FCS: the next hop drops it), counted as a bad receive and not as a transmit; a
    truncated datagram decided for a redirect is stomped and counted `truncated`; one decided
    for plain forwarding is forwarded whole."""
    from wccp_frames import with_fcs
    rng = random.Random(SEED + 13)
    tb = TB(dut)
    await tb.reset()
    log = EdgeLog(dut)
    model = ForwardingModel()
    sc = Scenario(rng)
    c = sc.caches
    groups = [(0, {"service_type": 1, "service_id": 61, "priority": 2, "protocol": 6,
                   "service_flags": 0x12, "ports": [80]},
               [{"address": c[0], "forward": FWD_GRE, "ret": RET_GRE, "mac": sc.macs[0], "port": 1}],
               ("hash", [0] * 256)),
              (1, {"service_type": 1, "service_id": 62, "priority": 1, "protocol": 17,
                   "service_flags": 0x2, "ports": []},
               [{"address": c[1], "forward": FWD_L2, "ret": RET_L2, "mac": sc.macs[1], "port": 1}],
               ("hash", [0] * 256))]
    await program_armed(tb, model, groups)
    g = sc.gen
    inner = bytes(IP(src="8.8.1.1", dst="192.168.1.9") / TCP(sport=80, dport=4000, flags="A") / Raw(bytes(900)))
    paths = [("pass-through", 0, g.ip_frame(proto=6, dport=443, plen=(1000, 1000))),
             ("L2", 0, g.ip_frame(proto=17, plen=(1000, 1000))),
             ("GRE", 0, g.ip_frame(proto=6, dport=80, plen=(1000, 1000))),
             ("decap", 1, g.gre_return(0, inner=inner))]
    c0 = await tb.counters()
    for name, port, f in paths:
        n0 = [len(log.tx_start[o]) for o in range(2)]
        e0 = len(log.rx_end[port])
        await tb.send(port, with_fcs(f), model)
        await tb.collect()
        out = [o for o in range(2) if len(log.tx_start[o]) > n0[o]]
        assert len(out) == 1, (name, out)
        t_out, t_end = log.tx_start[out[0]][n0[out[0]]], log.rx_end[port][e0]
        assert t_out < t_end, "%s: output started in cycle %d, after the input ended (%d)" % (name, t_out, t_end)
        dut._log.info("%s: output frame started %d cycles before the input frame ended", name, t_end - t_out)
    # bad FCS (the last payload byte flipped) on every path: stomped
    for name, port, f in paths:
        bad = bytearray(with_fcs(f))
        bad[-5] ^= 0x40
        s0 = sum(tb.stomped_total)
        await tb.send(port, bytes(bad), model)
        await tb.collect()
        assert sum(tb.stomped_total) == s0 + 1, (name, tb.stomped_total)
    # truncated datagrams: total length 200 beyond the frame
    def trunc(f):
        b = bytearray(f)
        tl = (b[16] << 8 | b[17]) + 200
        b[16:18] = bytes([tl >> 8, tl & 255])
        b[24:26] = b"\x00\x00"
        ck = 0
        for i in range(14, 34, 2):
            ck += b[i] << 8 | b[i + 1]
        ck = (ck & 0xFFFF) + (ck >> 16)
        ck = ~((ck & 0xFFFF) + (ck >> 16)) & 0xFFFF
        b[24:26] = bytes([ck >> 8, ck & 255])
        return with_fcs(bytes(b))
    for name, port, f in paths[:3]:
        s0 = sum(tb.stomped_total)
        await tb.send(port, trunc(f), model)
        await tb.collect()
        assert sum(tb.stomped_total) == s0 + (name != "pass-through"), (name, tb.stomped_total)
    c1 = await tb.counters()
    d = {k: [c1[k][p] - c0[k][p] for p in range(2)] for k in ("rx_bad_fcs", "truncated", "not_redirectable",
                                                             "tx_frames", "redirect_l2", "redirect_gre",
                                                             "gre_return")}
    assert d["rx_bad_fcs"] == [3, 1], d
    assert d["truncated"] == [2, 0] and d["not_redirectable"] == [1, 0], d
    assert sum(d["tx_frames"]) == 5, d          # 4 paths + the truncated pass-through
    assert d["redirect_l2"] == [1, 0] and d["redirect_gre"] == [1, 0] and d["gre_return"] == [0, 1], d
    mc = model.counters()
    assert mc["truncated"] == 2 and mc["rx_bad_fcs"] == [3, 1], mc


@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_fpga_core(sim):
    wccp_tb.run_sim(sim, "fpga_core", __file__, parameters={"CLK_PER_US": 125},
                    testcase=os.environ.get("WCCP_TESTCASE") or None)


def test_fpga_core_ecp5_bram():
    """The same tests with every block RAM built from DP16KD tiles with output registers, as
    synthesis builds them (wccp_bram's ECP5 branch on the model in fpga/tb/ecp5_sim.v), on
    Verilator (fast enough for the whole set)."""
    wccp_tb.run_sim("verilator", "fpga_core", __file__, parameters={"CLK_PER_US": 125},
                    sources=wccp_tb.rtl_sources() + [wccp_tb.TB / "ecp5_sim.v"],
                    defines={"WCCP_ECP5_BRAM": 1}, tag="ecp5-bram",
                    testcase=os.environ.get("WCCP_TESTCASE") or None)
