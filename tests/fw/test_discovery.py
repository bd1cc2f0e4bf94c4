"""Active discovery of cache locations: the model's packet out and ARP capture (fwdmodel D16),
locations that follow their cache to a new index (D7 carry-over), and wccp.discovery.

Runs under CPython (pytest) and MicroPython (tests/test_micropython.py).
"""
import struct

from fwtest import raises
from test_fwdmodel import (
    APP_MAC, CACHE2_IP, CACHE2_MAC, CACHE_IP, CACHE_MAC, ROUTER_ID, add_fcs, cache, eth,
    http, model, one, svc,
)

from wccp import arp as arpframe
from wccp import discovery
from wccp.discovery import Discovery
from wccp.fwdmodel import ForwardingModel

BCAST = b"\xff" * 6


def arp(op, sha, spa, tha, tpa):
    return struct.pack(">HHBBH", 1, 0x0800, 6, 4, op) + sha + struct.pack(">I", spa) + tha + struct.pack(">I", tpa)


def arp_reply(spa=CACHE_IP, mac=CACHE_MAC, dst=APP_MAC, vlan=None):
    """What Linux answers to an ARP probe (sender IP 0) for its address spa."""
    return eth(arp(2, mac, spa, dst, 0), dst=dst, src=mac, ethertype=0x0806, vlan=vlan)


def unknown_model(caches=None):
    return model(caches=caches or [cache()])


# --- the model: capture, packet out, learn, carry-over ------------------------------------

def test_arp_reply_to_appliance_is_captured_and_forwarded():
    m = unknown_model()
    f = arp_reply()
    assert m.arp_replies(0) == (0, [])
    assert m.decide(1, f).reason == "not_ipv4"
    assert m.arp_replies(0) == (0, [])            # decide() has no side effects
    assert m.process(1, f) == [(0, f)]            # forwarded unchanged
    assert m.arp_replies(0) == (1, [(CACHE_IP, CACHE_MAC, 1)])
    assert m.arp_replies(1) == (1, [])
    assert m.cache_location(0, 0) is None         # capturing alone never sets a location
    assert m.counters()["learnt"] == [0, 0]
    m.process(0, arp_reply(vlan=5))               # one 802.1Q tag
    assert m.arp_replies(1) == (2, [(CACHE_IP, CACHE_MAC, 0)])


def test_arp_capture_filters():
    m = unknown_model()
    m.process(1, arp_reply(dst=BCAST))                                          # not to us
    m.process(1, eth(arp(1, CACHE_MAC, CACHE_IP, APP_MAC, 0), dst=APP_MAC, src=CACHE_MAC,
                     ethertype=0x0806))                                         # a request
    bad = bytearray(arp_reply())
    bad[-1] ^= 1
    assert m.process(1, bytes(bad)) == []                                       # bad FCS
    body = bytearray(arp_reply()[:-4])
    body[16] = 0x86                                                             # ptype 0x86dd
    assert m.process(1, add_fcs(body)) == [(0, add_fcs(body))]
    assert m.arp_replies(0) == (0, [])


def test_arp_capture_ring_keeps_the_newest():
    m = unknown_model()
    for i in range(10):
        m.process(i & 1, arp_reply(spa=CACHE_IP + i))
    n, got = m.arp_replies(0)
    assert n == 10 and [g[0] - CACHE_IP for g in got] == [3, 4, 5, 6, 7, 8, 9]
    assert m.arp_replies(8) == (10, [(CACHE_IP + 8, CACHE_MAC, 0), (CACHE_IP + 9, CACHE_MAC, 1)])


def test_send_frame():
    m = unknown_model()
    probe = BCAST + APP_MAC + b"\x08\x06" + arp(1, APP_MAC, 0, b"\x00" * 6, CACHE_IP)
    assert len(probe) == 42
    m.send_frame(3, probe)
    exp = add_fcs(probe + b"\x00" * 18)
    assert m.take_sent() == [(0, exp), (1, exp)]
    assert m.take_sent() == []
    m.send_frame(2, b"\x01" * 64)
    assert m.take_sent() == [(1, add_fcs(b"\x01" * 64))]
    c = m.counters()
    assert c["tx_frames"] == [1, 2] and c["tx_bytes"] == [64, 132]
    raises(ValueError, m.send_frame, 0, probe)
    raises(ValueError, m.send_frame, 4, probe)
    raises(ValueError, m.send_frame, 1, b"\x00" * 13)
    raises(ValueError, m.send_frame, 1, b"\x00" * 65)


def test_arp_probe_layout():
    """wccp.arp's probe and offsets: what discovery sends is an RFC 5227 probe."""
    f = arpframe.arp_probe(APP_MAC)
    assert bytes(f) == BCAST + APP_MAC + b"\x08\x06" + arp(1, APP_MAC, 0, b"\x00" * 6, 0)
    for ip in (CACHE_IP, 0xFEDCBA98, 0):
        arpframe.put_ipv4(f, arpframe.ARP_TPA, ip)
        assert bytes(f) == BCAST + APP_MAC + b"\x08\x06" + arp(1, APP_MAC, 0, b"\x00" * 6, ip)
    assert f[arpframe.ETH_DST:arpframe.ETH_SRC] == BCAST and f[arpframe.ETH_SRC:arpframe.ETH_TYPE] == APP_MAC
    assert f[arpframe.ARP_SHA:arpframe.ARP_SPA] == APP_MAC and f[arpframe.ARP_SPA:arpframe.ARP_THA] == bytes(4)
    assert f[arpframe.ARP_THA:arpframe.ARP_TPA] == bytes(6) and len(f) == arpframe.ARP_FRAME_LEN == arpframe.ARP_TPA + 4


def test_learn_sets_every_entry_of_the_address_at_once():
    m = unknown_model()
    m.set_group(3, svc(sid=91))
    m.set_caches(3, [cache(CACHE2_IP), cache()])
    m.set_hash(3, [1] * 256)
    m.commit()
    assert m.decide(0, eth(http())).reason == "cache_unknown"
    m.learn(CACHE_IP, CACHE_MAC, 1)
    assert m.cache_location(0, 0) == (CACHE_MAC, 1) and m.cache_location(3, 1) == (CACHE_MAC, 1)
    assert m.cache_location(3, 0) is None
    d = m.decide(0, eth(http()))
    assert d.reason == "redirect_gre" and d.out_port == 1
    raises(ValueError, m.learn, CACHE_IP, None, 1)
    raises(ValueError, m.learn, CACHE_IP, CACHE_MAC, 2)


def test_location_follows_the_cache_to_a_new_index():
    m = model(caches=[cache(mac=CACHE_MAC, port=1), cache(CACHE2_IP, mac=CACHE2_MAC, port=0)],
              buckets=[0, 1] * 128)
    # the cache at index 0 dies: the survivor becomes index 0 and gets every bucket
    m.set_caches(0, [cache(CACHE2_IP)])
    m.set_hash(0, [0] * 256)
    m.commit()
    assert m.cache_location(0, 0) == (CACHE2_MAC, 0)
    out = one(m.process(1, eth(http())))
    assert out[0] == 0 and out[1][0:6] == CACHE2_MAC
    # a register-level FPGA keeps locations per index: its driver carries them (wccp.fpga)
    m = model(caches=[cache(mac=CACHE_MAC, port=1), cache(CACHE2_IP, mac=CACHE2_MAC, port=0)])
    m.carry_locations = False
    m.set_caches(0, [cache(CACHE2_IP)])
    m.commit()
    assert m.cache_location(0, 0) is None


# --- wccp.discovery against the model -----------------------------------------------------

def probe_for(addr):
    return add_fcs(BCAST + APP_MAC + b"\x08\x06" + arp(1, APP_MAC, 0, b"\x00" * 6, addr) + b"\x00" * 18)


def test_discovery_probes_and_learns():
    m = unknown_model()
    d = Discovery(m, APP_MAC)
    assert d.next_ms(0) is None
    d.run(1000, {CACHE_IP})
    assert m.take_sent() == [(0, probe_for(CACHE_IP)), (1, probe_for(CACHE_IP))]
    assert d.next_ms(1000) == discovery.POLL_MS
    assert m.decide(0, eth(http())).reason == "cache_unknown"
    assert one(m.process(0, eth(http()))) == (1, eth(http()))      # to the origin, counted
    c = m.counters()
    assert c["cache_unknown"] == 1 and c["cache_unknown_frames"][0][:2] == [1, 0]
    # the cache answers on port 1, as Linux does (unicast to the probe's sender MAC)
    m.process(1, arp_reply())
    d.run(1000 + discovery.POLL_MS, {CACHE_IP})
    assert d.next_ms(1000 + discovery.POLL_MS) is None
    assert d.location(CACHE_IP) == (CACHE_MAC, 1)
    out = one(m.process(0, eth(http())))
    assert out[0] == 1 and out[1][0:6] == CACHE_MAC
    assert d.counters["probes"] == 1 and d.counters["learnt"] == 1
    # found: no probe until the refresh, then one; a reply from elsewhere moves it
    d.run(1000 + discovery.REFRESH_MS - 1, {CACHE_IP})
    assert m.take_sent() == []
    d.run(1020 + discovery.REFRESH_MS, {CACHE_IP})
    assert len(m.take_sent()) == 2
    m.process(0, arp_reply(mac=CACHE2_MAC))
    d.run(1040 + discovery.REFRESH_MS, {CACHE_IP})
    assert d.location(CACHE_IP) == (CACHE2_MAC, 0) and d.counters["moved"] == 1
    assert m.cache_location(0, 0) == (CACHE2_MAC, 0)


def test_discovery_ignores_replies_from_non_caches_and_backs_off():
    m = unknown_model()
    d = Discovery(m, APP_MAC)
    m.process(1, arp_reply(spa=CACHE2_IP, mac=CACHE2_MAC))     # not a usable cache
    sent = []
    for t in range(0, 20001, 10):
        d.run(t, {CACHE_IP})
        if m.take_sent():
            sent.append(t)
    assert d.location(CACHE2_IP) is None and m.cache_location(0, 0) is None
    assert d.counters["replies"] == 1 and d.counters["learnt"] == 0
    assert sent == [0, 250, 750, 1750, 3750, 7750, 15750]
    assert d.status()["unanswered"] == [CACHE_IP]
    d.run(20010, set())                 # no longer a target: forgotten
    assert d.status()["unanswered"] == []


def test_discovery_counts_only_solicited_replies():
    m = unknown_model()
    d = Discovery(m, APP_MAC)
    m.process(1, arp_reply())                   # before any probe (e.g. an old capture)
    d.run(0, {CACHE_IP})                        # ignored; the probe goes out
    assert d.counters["unsolicited"] == 1 and d.location(CACHE_IP) is None
    m.process(1, arp_reply(mac=CACHE2_MAC))     # answered in time: found
    d.run(discovery.POLL_MS, {CACHE_IP})
    assert d.location(CACHE_IP) == (CACHE2_MAC, 1)
    # long after the last probe: a reply claiming the cache elsewhere moves nothing
    m.process(0, arp_reply())
    d.run(discovery.REPLY_WINDOW_MS + 100, {CACHE_IP})
    assert d.location(CACHE_IP) == (CACHE2_MAC, 1) and m.cache_location(0, 0) == (CACHE2_MAC, 1)
    assert d.counters["unsolicited"] == 2 and d.counters["moved"] == 0


def test_discovery_without_packet_out_is_disabled():
    class Plain(ForwardingModel):
        def send_frame(self, ports, frame):
            raise NotImplementedError
    m = Plain()
    m.configure(ROUTER_ID, APP_MAC)
    d = Discovery(m, APP_MAC)
    d.run(0, {CACHE_IP})
    assert not d.enabled and d.next_ms(0) is None


def test_discovery_survives_a_failing_data_plane():
    m = unknown_model()

    def boom(ports, frame):
        raise OSError("spi")
    m.send_frame = boom
    d = Discovery(m, APP_MAC)
    d.run(0, {CACHE_IP})
    assert d.enabled and d.counters["errors"] == 1
