"""Throughput and latency measurements on fpga_core (run by bench/bench_fpga.py; not a test).

Throughput: back-to-back minimum-size frames on both ports at once (100 % line rate in) for
each path; every output frame and counter is scored against the reference model by the
line-rate scoreboard (scoreboard.py: contents byte for byte, order, drops counted as the
model or as overflow, the queue and egress invariants), so a figure is only written for a run
whose frames were all right. Latency: one frame at a time, input SFD to output SFD.

Writes a JSON result file to $WCCP_BENCH_OUT."""
import json
import os
import pathlib
import random

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge, Timer
from cocotbext.eth import GmiiFrame
from core_tb import APPL_MAC, CLK_NS, ROUTER_ID, TB, program
from scoreboard import Collector, Invariants, Predictor, Scoreboard, counter_diff, read_counters
from wccp.dataplane import FWD_GRE, FWD_L2, RET_GRE
from wccp.fwdmodel import ForwardingModel
from wccp_frames import FrameGen, with_fcs
from wccp_hw import Both, HwDriver

N = int(os.environ.get("WCCP_BENCH_FRAMES", "300"))
SLOTS = (0, 1)


async def setup(tb, model, fwd):
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
    await program(Both(model, tb.hw), groups)
    await tb.hw.arm(0)
    await tb.hw.heartbeat()
    model.arm(0)
    model.heartbeat(now=0)
    return FrameGen(random.Random(1), ROUTER_ID, caches, macs, [1, 0], APPL_MAC)


async def blast(tb, inv, col, model, frames_per_port, gen_frame):
    """Offer back-to-back frames on both ports, score them; return per-egress output figures
    and the scoreboard's summary (what the frames did, overflow drops per port and what was
    full then)."""
    col.take()                      # (the latency runs' frames)
    inv.take_rx()
    pred = Predictor([model])
    for i in range(frames_per_port):
        for p in range(2):
            pred.add(p, gen_frame(p, i))
    before = await read_counters(tb.bus, SLOTS)
    for p in range(2):
        for f in pred.frames[p]:
            tb.src[p].send_nowait(GmiiFrame.from_raw_payload(f.data, tx_complete=f.sent))
    while not all(s.idle() for s in tb.src):
        await Timer(1, "us")
    idle, n = 0, 0
    while idle < 10:                # until nothing has come out for 10 us
        await Timer(1, "us")
        m = len(col.outs[0]) + len(col.outs[1])
        idle = idle + 1 if m == n else 0
        n = m
    delta = counter_diff(await read_counters(tb.bus, SLOTS), before)
    outs = col.take()
    st = Scoreboard(pred, None, tb.dut._log).check(outs, inv, delta)
    scored = {"kinds": st["kinds"], "overflow": st["overflow"], "overflow_full": st.get("overflow_full", {})}
    res = []
    for o in range(2):
        times = [x.sfd for x in outs[o]]
        gaps = [(b - a) / 1000 / CLK_NS for a, b in zip(times, times[1:], strict=False)]
        res.append({"frames_out": len(outs[o]), "min_sfd_gap_cycles": min(gaps) if gaps else None,
                    "max_sfd_gap_cycles": max(gaps) if gaps else None,
                    "out_len": len(outs[o][0].data) if outs[o] else None})
    return res, scored


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
    tb = TB(dut)
    tb.quiet()
    inv = Invariants(dut, dut._log)
    col = Collector(tb.sink)
    for name, fwd in (("l2", FWD_L2), ("gre", FWD_GRE)):
        await tb.reset()
        tb.hw = HwDriver(tb.bus)        # the driver's view of the registers starts again too
        model = ForwardingModel()
        gen = await setup(tb, model, fwd)
        size = 64
        # pass-through: UDP (no slot matches)
        if name == "l2":
            res, st = await blast(tb, inv, col, model, N, lambda p, i, gen=gen: with_fcs(
                gen.ip_frame(proto=17, sport=i, dport=53, plen=(18, 18))[:60]))
            results["passthrough_64"] = res
            results["passthrough_64_scored"] = st
        res, st = await blast(tb, inv, col, model, N,
                              lambda p, i, gen=gen, size=size: pkt(gen, p, size, 80 if p == 0 else 81))
        results["%s_64" % name] = res
        results["%s_64_overflow_drops" % name] = st["overflow"]
        results["%s_64_scored" % name] = st
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


async def latency_mon(dut, tb, gen, size, dport, proto=6, port=0):
    """Cycles from the input frame's SFD to the output frame's SFD (GMII level)."""
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
