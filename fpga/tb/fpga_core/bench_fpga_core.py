"""Throughput and latency measurements on fpga_core (run by bench/bench_fpga.py; not a test).

Writes a JSON result file to $WCCP_BENCH_OUT."""
import json
import os
import pathlib

import cocotb
from cocotb.triggers import Timer
from cocotbext.eth import GmiiFrame
from core_tb import APPL_MAC, ROUTER_ID, TB, program
from wccp import regmap as R
from wccp.dataplane import FWD_GRE, FWD_L2, RET_GRE
from wccp.fwdmodel import ForwardingModel
from wccp_frames import FrameGen, with_fcs

CLK_NS = 8
N = int(os.environ.get("WCCP_BENCH_FRAMES", "300"))


class _Null:
    def __getattr__(self, name):
        def f(*a, **k):
            return None
        return f


async def setup(tb, fwd):
    import random

    from wccp_hw import Both
    caches = [0x0A010001, 0x0A010002]
    macs = [b"\x02\xcc\x00\x00\x00\x01", b"\x02\xcc\x00\x00\x00\x02"]
    groups = [
        (0, {"service_type": 1, "service_id": 90, "priority": 2, "protocol": 6, "service_flags": 0x12,
             "ports": [80]}, [{"address": caches[0], "forward": fwd, "ret": RET_GRE,
                               "mac": macs[0], "port": 1}], ("hash", [0] * 256)),
        (1, {"service_type": 1, "service_id": 91, "priority": 1, "protocol": 6, "service_flags": 0x12,
             "ports": [81]}, [{"address": caches[1], "forward": fwd, "ret": RET_GRE,
                               "mac": macs[1], "port": 0}], ("hash", [0] * 256)),
    ]
    await program(Both(_Null(), tb.hw), groups)
    await tb.hw.arm(0)
    await tb.hw.heartbeat()
    return FrameGen(random.Random(1), ROUTER_ID, caches, macs, [1, 0], APPL_MAC)


async def blast(tb, frames_per_port, gen_frame):
    """Offer back-to-back frames on both ports; return per-port output stats."""
    if os.environ.get("WCCP_BENCH_DEBUG"):
        from cocotb.triggers import ReadOnly, RisingEdge
        dut = tb.dut
        tb.dbg = {"drop": 0, "keep": 0, "full": 0, "qfull": 0}

        async def mon():
            while True:
                await RisingEdge(dut.clk)
                await ReadOnly()
                q = dut.port[0].rxq
                if int(q.ev_drop.value):
                    tb.dbg["drop"] += 1
                if int(q.keep.value):
                    tb.dbg["keep"] += 1
                if int(q.r_last.value) and int(q.full.value):
                    tb.dbg["full"] += 1
                if int(q.r_last.value) and int(q.q_full.value):
                    tb.dbg["qfull"] += 1
        cocotb.start_soon(mon())
    tb.sink[0].clear()
    tb.sink[1].clear()
    sent = [[], []]
    for i in range(frames_per_port):
        for p in range(2):
            f = gen_frame(p, i)
            sent[p].append(f)
            await tb.src[p].send(GmiiFrame.from_raw_payload(f))
    while not all(s.empty() and s.idle() for s in tb.src):
        await Timer(1, "us")
    got_all = [[], []]
    idle = 0
    while idle < 10:          # until nothing has come out for 10 us
        await Timer(1, "us")
        idle += 1
        for o in range(2):
            while not tb.sink[o].empty():
                got_all[o].append(tb.sink[o].recv_nowait())
                idle = 0
    res = []
    for o in range(2):
        got = got_all[o]
        times = [g.sim_time_sfd for g in got]
        gaps = [(b - a) / 1000 / CLK_NS for a, b in zip(times, times[1:], strict=False)]
        res.append({"frames_out": len(got), "min_sfd_gap_cycles": min(gaps) if gaps else None,
                    "max_sfd_gap_cycles": max(gaps) if gaps else None,
                    "out_len": len(got[0].get_payload(strip_fcs=False)) if got else None})
    return sent, res


def pkt(gen, p, size, dport):
    f = gen.ip_frame(proto=6, dport=dport, sport=1000 + p, plen=(0, 0), vlan=None)
    f = f[:size - 4] if len(f) > size - 4 else f + b"\x00" * (size - 4 - len(f))
    b = bytearray(f)
    tl = size - 4 - 14
    b[16:18] = tl.to_bytes(2, "big")
    b[24:26] = b"\x00\x00"
    return with_fcs(bytes(b))


@cocotb.test()
async def bench(dut):
    results = {}
    for name, fwd in (("l2", FWD_L2), ("gre", FWD_GRE)):
        tb = TB(dut)
        await tb.reset()
        gen = await setup(tb, fwd)
        size = 64
        # pass-through: UDP (no slot matches)
        if name == "l2":
            sent, res = await blast(tb, N, lambda p, i, gen=gen: with_fcs(gen.ip_frame(proto=17, sport=i, dport=53,
                                                                            plen=(18, 18))[:60]))
            results["passthrough_64"] = res
        sent, res = await blast(tb, N, lambda p, i, gen=gen, size=size: pkt(gen, p, size, 80 if p == 0 else 81))
        results["%s_64" % name] = res
        ov = [await tb.bus.read(R.PORTCNT_BASE + p * R.PORTCNT_STRIDE + 7) for p in range(2)]
        results["%s_64_overflow_drops" % name] = ov
        if os.environ.get("WCCP_BENCH_DEBUG"):
            dut._log.info("DBG mon %s", tb.dbg)
            for p in range(2):
                pp = dut.port[p]
                dut._log.info("DBG p%d qw=%s qr=%s wp=%s fstart=%s rel=%s state=%s bstate run=%s req=%s cnt=%s k=%s total=%s",
                              p, pp.rxq.qw.value, pp.rxq.qr.value, pp.rxq.wp.value, pp.rxq.fstart.value,
                              pp.builder.rel_ptr.value, pp.decide.state.value, pp.builder.run.value,
                              pp.builder.req.value, pp.builder.cnt.value, pp.builder.k.value, pp.builder.total.value)
        results["%s_counters" % name] = [[await tb.bus.read(R.PORTCNT_BASE + p * R.PORTCNT_STRIDE + i)
                                          for i in range(18)] for p in range(2)]
        # latency, no contention: measure with the source's SFD time from a monitor
        lat = {}
        for sz in (64, 512, 1518):
            lat[sz] = await latency_mon(dut, tb, gen, sz, 80)
        results["%s_latency_cycles" % name] = lat
        if name == "l2":
            lat = {}
            for sz in (64, 512, 1518):
                lat[sz] = await latency_mon(dut, tb, gen, sz, 53, proto=17)
            results["passthrough_latency_cycles"] = lat
    out = os.environ.get("WCCP_BENCH_OUT")
    if out:
        pathlib.Path(out).write_text(json.dumps(results, indent=2))
    dut._log.info("bench: %s", json.dumps(results))
    _ = ForwardingModel


async def latency_mon(dut, tb, gen, size, dport, proto=6, port=0):
    """Cycles from the input frame's SFD to the output frame's SFD (GMII level)."""
    from cocotb.triggers import ReadOnly, RisingEdge
    tb.sink[0].clear()
    tb.sink[1].clear()
    if proto == 6:
        f = pkt(gen, port, size, dport)
    else:
        f = with_fcs(gen.ip_frame(proto=17, dport=dport, plen=(0, 0)))
        f = f[:-4]
        f = f + b"\x00" * (size - 4 - len(f))
        b = bytearray(f)
        b[16:18] = (size - 4 - 14).to_bytes(2, "big")
        b[38:40] = (size - 4 - 34).to_bytes(2, "big")
        b[40:42] = b"\x00\x00"
        f = with_fcs(bytes(b))
    rxd = dut.gmii0_rxd if port == 0 else dut.gmii1_rxd
    rxdv = dut.gmii0_rx_dv if port == 0 else dut.gmii1_rx_dv
    await tb.src[port].send(GmiiFrame.from_raw_payload(f))
    cyc = 0
    t_in = None
    while True:
        await RisingEdge(dut.clk)
        await ReadOnly()
        cyc += 1
        if t_in is None and int(rxdv.value) and int(rxd.value) == 0xD5:
            t_in = cyc
        for txen, txd in ((dut.gmii0_tx_en, dut.gmii0_txd), (dut.gmii1_tx_en, dut.gmii1_txd)):
            if t_in is not None and int(txen.value) and int(txd.value) == 0xD5:
                await Timer(20, "us")
                return cyc - t_in
        if cyc > 20000:
            raise AssertionError("no output")
