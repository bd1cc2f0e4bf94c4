"""fpga_core at line rate, scored frame by frame against the reference model.

Both GMII inputs receive back-to-back frames (minimum inter-frame gap: 100 % line rate, which
the test checks on the frames' own times) at once, a constrained-random mix of everything the
datapath does (``core_tb.random_frame``): pass-through (non-IPv4, IPv4 matching no group or
unassigned, from a cache, not redirectable), L2 and GRE redirects, GRE return (decapsulated),
frames the model drops (bad FCS, runts, oversize, truncated datagrams, GRE return without an
inner packet), VLAN-tagged and untagged, 60 to 1500 bytes. Caches sit behind both ports, so
both inputs redirect to the same egress and each egress also carries the other input's
pass-through: the egresses are oversubscribed and the receive queues drop whole frames for
overflow. While the frames stream, every table is reprogrammed through the firmware's driver
on the register bus (services, forwarding and return methods, hash and mask assignments,
MTU, next hop; the same caches at the same indexes, so no location changes) and committed.

``scoreboard.Scoreboard`` then accounts for every input frame (delivered byte for byte,
dropped as the model drops it, or dropped for overflow while a queue was full), accepts for
each frame the old or the new tables and nothing else (how: scoreboard.py), and compares
every counter with the model's; ``scoreboard.Invariants`` watches the queues and the egress
MACs meanwhile.

The seed comes from WCCP_SEED (default 1; WCCP_SEED=random draws one); it is logged at the
start and is in every failure message. WCCP_LINE_FRAMES sets the frames per input port:
Verilator runs 4000 per port, Icarus (about 30 times slower on this core) 120, which still
takes the commit in mid-traffic and overflows the queues.
"""
import os
import random

import pytest
import wccp_tb
from cocotb.utils import get_sim_steps, get_sim_time
from cocotbext.eth import GmiiFrame
from core_tb import TB, NullHw, NullModel, Scenario, fcs_frame, learn_caches, program, random_frame
from scoreboard import Collector, Commit, Invariants, Predictor, Scoreboard, counter_diff, read_counters
from wccp import regmap as R
from wccp.dataplane import FWD_GRE, FWD_L2, RET_GRE, RET_L2
from wccp.fwdmodel import ForwardingModel
from wccp_hw import Both
from wccp_tb import Timer, cocotb_test


def seed_from_env():
    s = os.environ.get("WCCP_SEED", "1")
    if s == "random":
        return random.SystemRandom().randrange(1 << 31)
    return int(s)


def retable(sc, rng):
    """Tables for the commit during traffic: the same caches at the same indexes (a location
    stays what it was), everything else drawn again: the services' ports and priorities, each
    cache's forwarding and return method, the hash and mask assignments."""
    groups = []
    for slot, svc, caches, assign in sc.tables():
        svc = dict(svc, priority=rng.randrange(256))
        if svc["protocol"] == 6:
            svc["ports"] = rng.sample([80, 8080, 443, 3128], 2)
        caches = [dict(c, forward=rng.choice([FWD_L2, FWD_GRE]), ret=rng.choice([RET_L2, RET_GRE]))
                  for c in caches]
        groups.append((slot, svc, caches, assign))
    return groups


@cocotb_test
async def test_line_rate(dut):
    """Both ports at line rate, a table commit mid-traffic, every frame and counter scored."""
    seed = seed_from_env()
    nframes = int(os.environ.get("WCCP_LINE_FRAMES", "4000"))
    dut._log.info("line rate: WCCP_SEED=%d, %d frames per input port", seed, nframes)
    try:
        await line_rate(dut, seed, nframes)
    except Exception as e:
        if "WCCP_SEED=" in str(e):
            raise
        raise AssertionError("%s: %s\n(reproduce with WCCP_SEED=%d)" % (type(e).__name__, e, seed)) from e


async def line_rate(dut, seed, nframes):
    rng = random.Random(seed)
    tb = TB(dut)
    tb.quiet()
    await tb.reset()
    sc = Scenario(rng)
    sc.ports[:] = [0, 1] + [rng.randrange(2) for _ in sc.ports[2:]]   # caches behind both ports
    rng.shuffle(sc.ports)
    t0, t1 = sc.tables(), retable(sc, rng)
    mtu1 = rng.choice([1500, 1000])
    hops1 = (bytes.fromhex("02ee000000a1"), bytes.fromhex("02ee000000b1"))
    # config 0 in the RTL and model 0, config 1 in model 1 (after the same learning)
    m0, m1 = ForwardingModel(), ForwardingModel()
    await program(Both(m0, tb.hw), t0)
    await program(Both(m1, NullHw()), t0)
    await tb.hw.arm(0)
    await tb.hw.heartbeat()
    for m in (m0, m1):
        m.arm(0)
        m.heartbeat(now=0)
    await learn_caches(tb, sc, m0, also=(m1,))
    await program(Both(m1, NullHw()), t1, mtu=mtu1, next_hops=hops1)

    # the traffic, predicted under both configurations
    pred = Predictor([m0, m1])
    while min(len(x) for x in pred.frames) < nframes:
        port, f = random_frame(sc, rng)
        if len(pred.frames[port]) < nframes:
            pred.add(port, fcs_frame(f))
    slots = sorted({g[0] for g in t0} | {3})       # the groups' slots and one left unused
    before = await read_counters(tb.bus, slots)
    inv = Invariants(dut, dut._log)
    col = Collector(tb.sink)
    sb = Scoreboard(pred, seed, dut._log)
    for p in range(2):
        for f in pred.frames[p]:
            # (the source sends a copy: the copy's times come back through tx_complete)
            tb.src[p].send_nowait(GmiiFrame.from_raw_payload(f.data, tx_complete=f.sent))

    # the commit: all of config 1 through the driver while ~40 % of the frames are through
    cm = sb.commit = Commit()

    def on_write(addr, word):
        if addr == R.COMMIT and cm.t_write is None:
            cm.t_write = get_sim_time()
    while tb.src[0].count() > nframes * 0.6:
        await Timer(1, "us")
    tb.hw.on_write = on_write
    await program(Both(NullModel(), tb.hw), t1, mtu=mtu1, next_hops=hops1)
    cm.t_done = get_sim_time()
    tb.hw.on_write = None
    assert cm.t_write is not None
    assert await tb.bus.read(R.COMMIT) == 2
    busy = [tb.src[p].count() for p in range(2)]
    assert min(busy) > 0, "the commit did not complete while both ports were receiving: %r left" % busy

    # until the inputs are through and nothing has come out for 20 us
    while not all(s.idle() for s in tb.src):
        await Timer(5, "us")
    idle = 0
    n = 0
    while idle < 20:
        await Timer(1, "us")
        m = len(col.outs[0]) + len(col.outs[1])
        idle = idle + 1 if m == n else 0
        n = m
    delta = counter_diff(await read_counters(tb.bus, slots), before)

    # offered load: every input frame followed its predecessor after exactly the 12-byte gap
    cyc = get_sim_steps(8, "ns")
    for p in range(2):
        gaps = {round((b.g.sim_time_start - a.g.sim_time_end) / cyc)
                for a, b in zip(pred.frames[p], pred.frames[p][1:], strict=False)}
        assert gaps == {13}, "input port %d: not back to back (gaps of %r cycles)" % (p, gaps)

    st = sb.check(col.take(), inv, delta)
    t_first = min(pred.frames[p][0].g.sim_time_start for p in range(2)) / get_sim_steps(1, "ns")
    # each egress' share of time busy with frames (preamble to FCS), first input to last output
    st["egress_busy"] = [round(inv.tx_busy[o] / (max(inv.tx_last) - t_first), 3) for o in range(2)]
    st["max_queue"] = inv.max_q
    dut._log.info("line rate (WCCP_SEED=%d): %s", seed, st)
    # the mix did what it is for (the rarer kinds in the long run only)
    kinds = ["redirect_gre", "redirect_l2", "gre_return", "forward", "unassigned", "rx_bad_fcs", "overflow"]
    if nframes >= 1000:
        kinds += ["rx_runt", "rx_oversize", "truncated", "gre_return_bad", "not_redirectable", "from_cache"]
    for kind in kinds:
        assert st["kinds"].get(kind, 0) > 0, "no %s frame in the mix: %r" % (kind, st["kinds"])
    assert all(st["frames_by_config"]), "the commit split no traffic: %r" % st
    assert all(all(d) for d in st["delivered"]), "an egress did not carry both inputs' frames: %r" % st


@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_fpga_core_line_rate(sim):
    frames = {"icarus": "120", "verilator": "4000"}[sim]
    wccp_tb.run_sim(sim, "fpga_core", __file__, parameters={"CLK_PER_US": 125},
                    extra_env={"WCCP_LINE_FRAMES": os.environ.get("WCCP_LINE_FRAMES", frames)})
