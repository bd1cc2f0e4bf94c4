"""Active discovery through the register map: the FPGA driver (wccp.fpga) programming the
register-level model (wccp.fwdmodel_regs.ModelRegisterFile, which keeps locations per index like
the FPGA): PKTOUT sends, the ARPCAP ring, learn() by address, and the driver's carry-over of
a location when its cache changes index. The same sequences drive the RTL in
fpga/tb/fpga_core/test_probe.py.
"""
from test_discovery import BCAST, arp, arp_reply, probe_for  # noqa: E402
from test_fwdmodel import (  # noqa: E402
    APP_MAC, CACHE2_IP, CACHE2_MAC, CACHE_IP, CACHE_MAC, ROUTER_ID, add_fcs, eth, http, svc,
)

from wccp import regmap as R  # noqa: E402
from wccp.dataplane import ARPCAP_ENTRIES, PKTOUT_MAX_LEN  # noqa: E402
from wccp.discovery import POLL_MS, Discovery  # noqa: E402
from wccp.fpga import FpgaDataPlane  # noqa: E402
from wccp.fwdmodel import ForwardingModel
from wccp.fwdmodel_regs import ModelRegisterFile  # noqa: E402
from wccp.transport import LoopbackTransport  # noqa: E402


def rig():
    regs = ModelRegisterFile(ForwardingModel(clock=lambda: 0))
    dp = FpgaDataPlane(LoopbackTransport(regs))
    dp.configure(ROUTER_ID, APP_MAC)
    dp.set_group(0, svc())
    dp.arm(0)
    dp.heartbeat()
    return regs, regs.model, dp


def caches(*addrs):
    return [{"address": a, "forward": 1, "ret": 1, "mac": None} for a in addrs]


def test_constants_agree_with_the_register_map():
    assert PKTOUT_MAX_LEN == R.PKTOUT_MAX_LEN == 4 * R.PKTOUT_DATA_COUNT
    assert ARPCAP_ENTRIES == R.ARPCAP_ENTRIES == R.ARPCAP_SIP_COUNT


def test_send_frame_through_pktout():
    regs, m, dp = rig()
    probe = BCAST + APP_MAC + b"\x08\x06" + arp(1, APP_MAC, 0, b"\x00" * 6, CACHE_IP)
    dp.send_frame(3, probe)
    assert m.take_sent() == [(0, probe_for(CACHE_IP)), (1, probe_for(CACHE_IP))]
    assert regs.read_word(R.PKTOUT_CTRL) >> R.PKTOUT_SENT_SHIFT == 2
    dp.send_frame(2, bytes(range(61)))                       # not a multiple of 4
    assert m.take_sent() == [(1, add_fcs(bytes(range(61))))]
    # a LEN or port mask the hardware ignores
    for v in (13, 65, 0x7F, 60 | (0 << R.PKTOUT_PORTS_SHIFT)):
        regs.write_word(R.PKTOUT_CTRL, v)
    assert m.take_sent() == []


def test_arp_replies_through_arpcap():
    regs, m, dp = rig()
    dp.commit()
    assert dp.arp_replies(0) == (0, [])
    m.process(1, arp_reply())
    assert dp.arp_replies(0) == (1, [(CACHE_IP, CACHE_MAC, 1)])
    for i in range(9):
        m.process(0, arp_reply(spa=CACHE_IP + i))
    n, got = dp.arp_replies(1)
    assert n == 10 and got == [(CACHE_IP + i, CACHE_MAC, 0) for i in range(2, 9)]
    assert dp.arp_replies(10) == (10, [])


def test_learn_and_carry_over_by_the_driver():
    regs, m, dp = rig()
    dp.set_caches(0, caches(CACHE_IP, CACHE2_IP))
    dp.set_hash(0, bytes([0, 1] * 128))
    dp.commit()
    f = eth(http())
    assert m.process(0, f) == [(1, f)] and m.decide(0, f).reason == "cache_unknown"
    c = dp.counters()
    assert c["cache_unknown"] == 1 and c["cache_unknown_frames"] == m.counters()["cache_unknown_frames"]
    assert sum(c["cache_unknown_frames"][0]) == 1
    dp.learn(CACHE_IP, CACHE_MAC, 1)
    dp.learn(CACHE2_IP, CACHE2_MAC, 1)
    assert dp.cache_location(0, 0) is None       # CACHE_MAC reads 0 (docs/regmap.md)
    assert m.cache_location(0, 0) == (CACHE_MAC, 1) and m.cache_location(0, 1) == (CACHE2_MAC, 1)
    # CACHE_IP dies: the survivor moves from index 1 to index 0
    dp.set_caches(0, caches(CACHE2_IP))
    dp.set_hash(0, bytes(256))
    assert m.cache_location(0, 0) is None        # cleared before the commit (old cache)
    dp.commit()
    assert m.cache_location(0, 0) == (CACHE2_MAC, 1)
    out = m.process(0, f)
    assert len(out) == 1 and out[0][0] == 1 and out[0][1][0:6] == CACHE2_MAC
    # an address that left every slot is forgotten: no stale location when it comes back
    dp.set_caches(0, caches(CACHE_IP))
    dp.commit()
    assert m.cache_location(0, 0) is None


def test_discovery_over_the_driver_finds_a_silent_cache():
    regs, m, dp = rig()
    dp.set_caches(0, caches(CACHE_IP))
    dp.set_hash(0, bytes(256))
    dp.commit()
    d = Discovery(dp, APP_MAC)
    d.run(0, {CACHE_IP})
    assert [p for p, _f in m.take_sent()] == [0, 1]
    m.process(1, arp_reply())
    d.run(POLL_MS, {CACHE_IP})
    assert m.decide(0, eth(http())).reason == "redirect_gre"
    assert regs.read_word(R.ARPCAP_COUNT) == 1
