"""Reference forwarding model (wccp.fwdmodel): every rule of the datapath spec.

Runs under CPython (pytest) and MicroPython (tests/test_micropython.py). Frames are built
by hand here (no scapy on MicroPython); expected outputs are assembled independently of
the model's builders.
"""
import struct

from fwtest import raises

from wccp import frame
from wccp.codec import ip2int as ip
from wccp.dataplane import (
    FWD_GRE, FWD_L2, RET_GRE, RET_L2, SF_DST_IP_ALT_HASH, SF_DST_IP_HASH, SF_DST_PORT_HASH,
    SF_PORTS_DEFINED, SF_PORTS_SOURCE, SF_SRC_IP_HASH, SF_SRC_PORT_ALT_HASH, SF_SRC_PORT_HASH,
)
from wccp.fwdmodel import ForwardingModel

# --- frame construction -----------------------------------------------------------------

APP_MAC = b"\x02\x00\x00\x00\x00\x01"
CLIENT_MAC = b"\x02\x00\x00\x00\x00\xc1"
GW_MAC = b"\x02\x00\x00\x00\x00\x9a"
CACHE_MAC = b"\x02\x00\x00\x00\x00\xca"
CACHE2_MAC = b"\x02\x00\x00\x00\x00\xcb"
NH_MAC = b"\x02\x00\x00\x00\x00\x77"


ROUTER_ID = ip("10.0.0.1")
CACHE_IP = ip("10.0.0.50")
CACHE2_IP = ip("10.0.0.51")
CLIENT_IP = ip("192.168.1.10")
SERVER_IP = ip("203.0.113.7")


def csum(data):
    if len(data) % 2:
        data = data + b"\x00"
    words = struct.unpack(">%dH" % (len(data) // 2), data)
    s = sum(words)
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return 0xFFFF - s


def crc32_bitwise(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0xEDB88320 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def add_fcs(body):
    return bytes(body) + struct.pack("<I", crc32_bitwise(body))


def ipv4(src, dst, proto, payload, options=b"", flags_frag=0, tot_len=None, ihl=None, version=4, ident=0x1234, ttl=64):
    if ihl is None:
        ihl = 5 + len(options) // 4
    if tot_len is None:
        tot_len = 20 + len(options) + len(payload)
    h = bytearray(struct.pack(">BBHHHBBHII", (version << 4) | ihl, 0, tot_len, ident, flags_frag, ttl, proto, 0, src, dst))
    h += options
    struct.pack_into(">H", h, 10, csum(bytes(h)))
    return bytes(h) + payload


def tcp(sport, dport, payload=b""):
    return struct.pack(">HHIIBBHHH", sport, dport, 1, 0, 0x50, 0x02, 8192, 0, 0) + payload


def udp(sport, dport, payload=b""):
    return struct.pack(">HHHH", sport, dport, 8 + len(payload), 0) + payload


def eth(payload, dst=GW_MAC, src=CLIENT_MAC, ethertype=0x0800, vlan=None, pad=True):
    body = dst + src
    if vlan is not None:
        body += struct.pack(">HH", 0x8100, vlan)
    body += struct.pack(">H", ethertype) + payload
    if pad and len(body) < 60:
        body += b"\x00" * (60 - len(body))
    return add_fcs(body)


def http(src=CLIENT_IP, dst=SERVER_IP, sport=40000, dport=80, payload=b"GET / HTTP/1.1\r\n", **kw):
    return ipv4(src, dst, 6, tcp(sport, dport, payload), **kw)


def fold(k):
    return (k ^ (k >> 8) ^ (k >> 16) ^ (k >> 24)) & 0xFF


def svc(sid=90, stype=1, proto=6, flags=SF_DST_IP_HASH | SF_PORTS_DEFINED, ports=(80,)):
    return {"service_type": stype, "service_id": sid, "priority": 100, "protocol": proto,
            "service_flags": flags, "ports": list(ports)}


def cache(addr=CACHE_IP, fwd=FWD_GRE, ret=RET_GRE, mac=None, port=None):
    d = {"address": addr, "forward": fwd, "ret": ret, "mac": mac}
    if port is not None:
        d["port"] = port
    return d


def model(caches=None, service=None, buckets=None, mask=None, slot=0, armed=True, mtu=1500):
    """A committed, armed model with one group in slot; caches' locations set to port 1."""
    now = [0]
    m = ForwardingModel(clock=lambda: now[0])
    m.now = now
    m.configure(ROUTER_ID, APP_MAC, mtu)
    m.set_group(slot, service or svc())
    if caches is None:
        caches = [cache(mac=CACHE_MAC, port=1)]
    m.set_caches(slot, caches)
    if mask is not None:
        m.set_mask(slot, mask)
    else:
        m.set_hash(slot, buckets if buckets is not None else [0] * 256)
    m.commit()
    if armed:
        m.arm(1000)
        m.heartbeat()
    return m


def one(outs):
    assert len(outs) == 1, outs
    return outs[0]


def expected_gre(inner, cache_ip=CACHE_IP, cache_mac=CACHE_MAC, flags=0x01, sid=90, alt=0, prim=0, vlan=None,
                 trailer=b""):
    """The GRE output for datagram inner; trailer: the input's bytes after the datagram up to
    its FCS (padding, a trailer), copied behind it (D14)."""
    outer = bytearray(struct.pack(">BBHHHBBHII", 0x45, 0, len(inner) + 28, 0, 0x4000, 64, 47, 0, ROUTER_ID, cache_ip))
    struct.pack_into(">H", outer, 10, csum(bytes(outer)))
    payload = bytes(outer) + b"\x00\x00\x88\x3e" + bytes([flags, sid, alt, prim]) + inner + trailer
    return eth(payload, dst=cache_mac, src=APP_MAC, vlan=vlan)


def padding_of(f, l3=14):
    """The bytes of frame f (with FCS) after its IPv4 datagram, up to the FCS."""
    tl = (f[l3 + 2] << 8) | f[l3 + 3]
    return f[l3 + tl:len(f) - 4]


# --- CRC / helpers ----------------------------------------------------------------------

def test_crc32_implementations_agree():
    assert frame.crc32_py(b"123456789") == 0xCBF43926
    assert frame.crc32(b"123456789") == 0xCBF43926
    data = bytes(range(256)) * 3
    for n in (0, 1, 7, 60, 300, 768):
        assert frame.crc32_py(data[:n]) == crc32_bitwise(data[:n]) == frame.crc32(data[:n])
    f = eth(http())
    assert frame.fcs_ok(f)
    assert not frame.fcs_ok(f[:-1] + bytes([f[-1] ^ 1]))


def test_ip_checksum_and_fold():
    h = ipv4(CLIENT_IP, SERVER_IP, 6, b"")[:20]
    assert frame.ip_checksum(h) == 0          # a correct header sums to zero
    assert frame.fold(0x01020304) == 0x01 ^ 0x02 ^ 0x03 ^ 0x04
    assert frame.fold(ip("203.0.113.7")) == 203 ^ 0 ^ 113 ^ 7


# --- normal forwarding and rx checks ----------------------------------------------------

def test_unconfigured_forwards_bit_exact_both_directions():
    m = ForwardingModel()
    for p in (0, 1):
        for f in (eth(http()), eth(b"\x00" * 46, ethertype=0x0806), eth(http(payload=b"x" * 1000))):
            assert m.process(p, f) == [(p ^ 1, f)]
    c = m.counters()
    assert c["rx_frames"] == [3, 3] and c["tx_frames"] == [3, 3]
    assert c["rx_bytes"] == c["tx_bytes"]


def test_four_ports_pair_up():
    m = ForwardingModel(num_ports=4)
    f = eth(http())
    assert m.process(2, f) == [(3, f)]
    assert m.process(3, f) == [(2, f)]
    raises(ValueError, m.process, 4, f)
    raises(ValueError, ForwardingModel, 3)


def test_runt_dropped_and_counted():
    m = model()
    body = (GW_MAC + CLIENT_MAC + b"\x08\x00" + http())[:59]
    f = add_fcs(body)                      # 63 bytes, valid FCS
    assert len(f) == 63
    assert m.process(0, f) == []
    assert m.process(1, b"") == []
    assert m.process(1, b"\x01\x02\x03") == []
    c = m.counters()
    assert c["rx_runt"] == [1, 2]
    assert c["tx_frames"] == [0, 0] and c["rx_frames"] == [1, 2]       # rx counts dropped frames too
    f64 = eth(http())
    assert len(f64) >= 64
    assert m.decide(0, f64).action != "drop"


def test_bad_fcs_dropped_and_counted():
    m = model()
    f = bytearray(eth(http()))
    f[20] ^= 0x40
    assert m.process(0, bytes(f)) == []
    d = m.decide(0, bytes(f))
    assert d.action == "drop" and d.reason == "rx_bad_fcs"
    assert m.counters()["rx_bad_fcs"] == [1, 0]


def test_oversize_dropped_untagged_and_tagged_limit_1522():
    m = ForwardingModel()
    ok = eth(ipv4(CLIENT_IP, SERVER_IP, 17, b"\x00" * (1522 - 18 - 20)))
    assert len(ok) == 1522
    assert m.process(0, ok) == [(1, ok)]
    okv = eth(ipv4(CLIENT_IP, SERVER_IP, 17, b"\x00" * (1522 - 22 - 20)), vlan=5)
    assert len(okv) == 1522
    assert m.process(0, okv) == [(1, okv)]
    big = eth(ipv4(CLIENT_IP, SERVER_IP, 17, b"\x00" * (1523 - 18 - 20)))
    assert m.process(0, big) == []
    bigv = eth(ipv4(CLIENT_IP, SERVER_IP, 17, b"\x00" * (1523 - 22 - 20)), vlan=5)
    assert m.process(1, bigv) == []
    assert m.counters()["rx_oversize"] == [1, 1]
    # precedence: oversize with a bad FCS counts as bad FCS (decision D1)
    assert m.decide(0, big[:-1] + bytes([big[-1] ^ 0xFF])).reason == "rx_bad_fcs"


# --- parsing: what is never redirected --------------------------------------------------

def test_non_ip_forwarded_not_counted():
    m = model()
    for et in (0x0806, 0x86DD, 0x88CC):
        f = eth(http(), ethertype=et)
        assert m.process(0, f) == [(1, f)]
    # double tag: inner ethertype is 0x8100 again -> not IPv4
    f = eth(struct.pack(">HH", 0x8100, 7) + b"\x08\x00" + http(), ethertype=0x8100, vlan=3)
    assert m.process(0, f) == [(1, f)]
    c = m.counters()
    assert c["not_redirectable"] == 0 and c["redirect_gre"] == 0


def _not_redirectable(m, f):
    before = m.counters()["not_redirectable"]
    assert m.process(0, f) == [(1, f)]
    assert m.counters()["not_redirectable"] == before + 1


def test_ihl_below_5_and_bad_version():
    m = model()
    _not_redirectable(m, eth(http(ihl=4)))
    _not_redirectable(m, eth(http(ihl=0)))
    _not_redirectable(m, eth(http(version=6)))
    assert m.counters()["redirect_gre"] == 0


def test_fragments_not_redirected_but_df_is():
    m = model()
    _not_redirectable(m, eth(http(flags_frag=0x2000)))       # MF
    _not_redirectable(m, eth(http(flags_frag=0x0001)))       # offset 8
    _not_redirectable(m, eth(http(flags_frag=0x1FFF)))
    d = m.decide(0, eth(http(flags_frag=0x4000)))            # DF only
    assert d.action == "redirect_gre"
    d = m.decide(0, eth(http(flags_frag=0x8000)))            # reserved bit ignored
    assert d.action == "redirect_gre"


def test_invalid_ip_lengths_and_ports():
    m = model()
    # total length shorter than IHL*4
    _not_redirectable(m, eth(http(tot_len=19)))
    # TCP header cut: only 2 bytes of ports inside total length, padding follows
    short = ipv4(CLIENT_IP, SERVER_IP, 6, b"\x9c\x40", tot_len=22)
    _not_redirectable(m, eth(short))
    assert m.counters()["redirect_gre"] == 0 and m.counters()["truncated"] == 0


def test_tcp_ports_exactly_present_and_padding_not_part_of_the_datagram():
    # 24-byte IP packet: header + the 4 port bytes only; Ethernet padding behind it (copied
    # into the GRE output behind the datagram, outside the outer total length)
    m = model()
    pkt = ipv4(CLIENT_IP, SERVER_IP, 6, struct.pack(">HH", 40000, 80))
    f = eth(pkt)
    d = m.decide(0, f)
    assert d.action == "redirect_gre"
    out = one(m.process(0, f))[1]
    assert out == expected_gre(pkt, prim=fold(SERVER_IP), trailer=b"\x00" * 22)


def test_ip_options_skipped():
    m = model(service=svc(flags=SF_SRC_PORT_HASH | SF_DST_PORT_HASH | SF_PORTS_DEFINED))
    opts = b"\x94\x04\x00\x00" + b"\x01\x01\x01\x00"         # router alert, NOPs, EOL
    pkt = http(sport=0x1234, dport=80, options=opts)
    d = m.decide(0, eth(pkt))
    assert d.action == "redirect_gre" and d.bucket == fold(0x1234 ^ 80)
    out = one(m.process(0, eth(pkt)))[1]
    assert out == expected_gre(pkt, prim=fold(0x1234 ^ 80))
    # with options, a port 81 (not listed) must not match even though offset 20 holds other bytes
    pkt = http(dport=81, options=b"\x00\x50\x00\x50")
    assert m.decide(0, eth(pkt)).reason == "no_match"


def test_vlan_tag_kept_in_every_output():
    pkt = http()
    m = model()
    f = eth(pkt, vlan=0x2064)
    assert one(m.process(0, f)) == (1, expected_gre(pkt, prim=fold(SERVER_IP), vlan=0x2064))
    m2 = model(caches=[cache(fwd=FWD_L2, ret=RET_L2, mac=CACHE_MAC, port=0)])
    out = one(m2.process(1, f))
    body = bytearray(f[:-4])
    body[0:6] = CACHE_MAC
    body[6:12] = APP_MAC
    assert out == (0, add_fcs(bytes(body)))
    m.disarm()
    assert m.process(0, f) == [(1, f)]


# --- classification ---------------------------------------------------------------------

def test_slot_priority_first_match_decides():
    m = ForwardingModel(clock=lambda: 0)
    m.configure(ROUTER_ID, APP_MAC)
    m.set_group(0, svc(sid=91, ports=(80, 8080)))
    m.set_caches(0, [cache(mac=CACHE_MAC, port=1)])
    m.set_hash(0, [0xFF] * 256)                         # all unassigned
    m.set_group(1, svc(sid=92, proto=0, flags=SF_DST_IP_HASH))
    m.set_caches(1, [cache(CACHE2_IP, mac=CACHE2_MAC, port=1)])
    m.set_hash(1, [0] * 256)
    m.commit()
    m.arm()
    m.heartbeat()
    d = m.decide(0, eth(http()))
    assert d.slot == 0 and d.reason == "unassigned"      # slot 1 not consulted
    d = m.decide(0, eth(http(dport=443)))
    assert d.slot == 1 and d.action == "redirect_gre" and d.cache == 0
    d = m.decide(0, eth(ipv4(CLIENT_IP, SERVER_IP, 1, b"\x08\x00\x00\x00" * 4)))
    assert d.slot == 1                                   # protocol 0 matches ICMP
    out = one(m.process(0, eth(http(dport=443))))
    assert out[1][14 + 20 + 4 + 1] == 92                 # service id in the redirect header
    # slots 2..7 are reachable too; disabled slot 0 no longer matches
    m.clear_group(0)
    m.set_group(7, svc(sid=97, proto=17, flags=SF_SRC_IP_HASH))
    m.set_caches(7, [cache(mac=CACHE_MAC, port=0)])
    m.set_hash(7, [0] * 256)
    m.commit()
    assert m.decide(0, eth(http())).slot == 1
    assert m.decide(0, eth(ipv4(CLIENT_IP, SERVER_IP, 17, udp(5, 53)))).slot == 1
    m.clear_group(1)
    m.commit()
    assert m.decide(0, eth(ipv4(CLIENT_IP, SERVER_IP, 17, udp(5, 53)))).slot == 7
    assert m.decide(0, eth(http())).reason == "no_match"


def test_port_matching_dst_src_and_protocol():
    m = model(service=svc(ports=(80, 3128, 0, 0, 0, 0, 0, 0)))
    assert m.decide(0, eth(http(dport=3128))).action == "redirect_gre"
    assert m.decide(0, eth(http(dport=81))).reason == "no_match"
    assert m.decide(0, eth(http(dport=0))).reason == "no_match"        # 0 = unused entry
    assert m.decide(0, eth(ipv4(CLIENT_IP, SERVER_IP, 17, udp(1, 80)))).reason == "no_match"
    # ports as source ports (return traffic of a server farm)
    m2 = model(service=svc(flags=SF_SRC_IP_HASH | SF_PORTS_DEFINED | SF_PORTS_SOURCE))
    assert m2.decide(0, eth(http(sport=80, dport=40000))).action == "redirect_gre"
    assert m2.decide(0, eth(http(sport=40000, dport=80))).reason == "no_match"
    # without PORTS_DEFINED every port matches
    m3 = model(service=svc(flags=SF_DST_IP_HASH, ports=(80,)))
    assert m3.decide(0, eth(http(dport=12345))).action == "redirect_gre"
    # PORTS_DEFINED with an empty list matches nothing
    m4 = model(service=svc(ports=()))
    assert m4.decide(0, eth(http())).reason == "no_match"
    # UDP service
    m5 = model(service=svc(proto=17, ports=(53,)))
    assert m5.decide(0, eth(ipv4(CLIENT_IP, SERVER_IP, 17, udp(999, 53)))).action == "redirect_gre"
    assert m5.decide(0, eth(http(dport=53))).reason == "no_match"


def test_protocol_zero_ignores_port_list_other_protocols_use_ports_zero():
    m = model(service=svc(proto=0, flags=SF_DST_PORT_HASH | SF_SRC_PORT_HASH | SF_PORTS_DEFINED, ports=(80,)))
    d = m.decide(0, eth(http(sport=7, dport=9999)))
    assert d.action == "redirect_gre" and d.bucket == fold(7 ^ 9999)
    d = m.decide(0, eth(ipv4(CLIENT_IP, SERVER_IP, 50, b"\x12\x34\x56\x78" * 4)))   # ESP: ports 0
    assert d.action == "redirect_gre" and d.bucket == 0


def test_standard_web_cache_service():
    m = model(service={"service_type": 0, "service_id": 0})
    pkt = http()
    d = m.decide(0, eth(pkt))
    assert d.action == "redirect_gre" and d.bucket == fold(SERVER_IP)
    assert m.decide(0, eth(http(dport=443))).reason == "no_match"
    out = one(m.process(0, eth(pkt)))[1]
    assert out == expected_gre(pkt, flags=0x00, sid=0, prim=fold(SERVER_IP))


# --- hash assignment --------------------------------------------------------------------

def test_hash_primary_bucket_selects_cache():
    caches = [cache(CACHE_IP, mac=CACHE_MAC, port=1), cache(CACHE2_IP, mac=CACHE2_MAC, port=0)]
    flags = SF_SRC_IP_HASH | SF_DST_IP_HASH | SF_SRC_PORT_HASH | SF_DST_PORT_HASH | SF_PORTS_DEFINED
    b = fold(CLIENT_IP ^ SERVER_IP ^ 40000 ^ 80)
    buckets = [0] * 256
    buckets[b] = 1
    m = model(caches=caches, service=svc(flags=flags), buckets=buckets)
    pkt = http()
    d = m.decide(0, eth(pkt))
    assert (d.action, d.cache, d.bucket, d.alt_used, d.out_port) == ("redirect_gre", 1, b, False, 0)
    out = one(m.process(0, eth(pkt)))
    assert out == (0, expected_gre(pkt, CACHE2_IP, CACHE2_MAC, prim=b))
    c = m.counters()
    assert c["bucket_hits"][0][b] == 1 and c["cache_frames"][0][1] == 1
    assert c["redirect_gre"] == 1 and c["slot_frames"][0] == 1


def test_hash_unassigned_and_index_beyond_caches():
    b = fold(SERVER_IP)
    buckets = [0] * 256
    buckets[b] = 0xFF
    m = model(buckets=buckets)
    f = eth(http())
    assert m.process(0, f) == [(1, f)]
    assert m.counters()["unassigned"] == 1
    assert m.counters()["bucket_hits"][0][b] == 1
    buckets[b] = 5                    # only one cache
    m = model(buckets=buckets)
    assert m.process(0, f) == [(1, f)]
    assert m.decide(0, f).reason == "unassigned"
    buckets[b] = 0x7F
    m = model(buckets=buckets)
    assert m.decide(0, f).reason == "unassigned"


def test_hash_alternate_bucket():
    caches = [cache(CACHE_IP, mac=CACHE_MAC, port=1), cache(CACHE2_IP, mac=CACHE2_MAC, port=1)]
    flags = SF_DST_IP_HASH | SF_PORTS_DEFINED | SF_SRC_PORT_ALT_HASH | SF_DST_IP_ALT_HASH
    pb = fold(SERVER_IP)
    ab = fold(SERVER_IP ^ 40000)
    assert pb != ab
    buckets = [0xFF] * 256
    buckets[pb] = 0x80
    buckets[ab] = 0x81                # its own 0x80 is ignored -> cache 1
    m = model(caches=caches, service=svc(flags=flags), buckets=buckets)
    pkt = http()
    d = m.decide(0, eth(pkt))
    assert (d.action, d.cache, d.bucket, d.alt_bucket, d.alt_used) == ("redirect_gre", 1, pb, ab, True)
    out = one(m.process(0, eth(pkt)))[1]
    assert out == expected_gre(pkt, CACHE2_IP, CACHE2_MAC, flags=0x03, alt=ab, prim=pb)
    # standard service type: D flag clear, A flag still set
    m2 = model(caches=caches, service=svc(stype=0, sid=5, flags=flags), buckets=buckets)
    out = one(m2.process(0, eth(pkt)))[1]
    assert out == expected_gre(pkt, CACHE2_IP, CACHE2_MAC, flags=0x02, sid=5, alt=ab, prim=pb)
    # alternate entry unassigned
    buckets[ab] = 0xFF
    m = model(caches=caches, service=svc(flags=flags), buckets=buckets)
    d = m.decide(0, eth(pkt))
    assert d.reason == "unassigned" and d.alt_bucket == ab
    # alternate flags all zero: alt key 0 -> bucket 0
    buckets = [0xFF] * 256
    buckets[pb] = 0x80
    buckets[0] = 0
    m = model(caches=caches, service=svc(flags=SF_DST_IP_HASH | SF_PORTS_DEFINED), buckets=buckets)
    d = m.decide(0, eth(pkt))
    assert d.action == "redirect_gre" and d.cache == 0 and d.alt_bucket == 0


def test_alt_flag_dst_ip_only_equals_primary_bucket():
    flags = SF_DST_IP_HASH | SF_DST_IP_ALT_HASH
    pb = fold(SERVER_IP)
    buckets = [0xFF] * 256
    buckets[pb] = 0x80                # alt lookup lands on the same entry: its 0x80 is ignored
    m = model(service=svc(flags=flags), buckets=buckets)
    d = m.decide(0, eth(http()))
    assert d.action == "redirect_gre" and d.cache == 0 and d.alt_bucket == pb


# --- mask assignment --------------------------------------------------------------------

def test_mask_first_match_wins_across_sets_and_values():
    caches = [cache(CACHE_IP, mac=CACHE_MAC, port=1), cache(CACHE2_IP, mac=CACHE2_MAC, port=1),
              cache(ip("10.0.0.52"), mac=CACHE_MAC, port=0)]
    sets = [
        {"masks": (0, 0x0000007F, 0, 0), "values": [(0, 0x01, 0, 0, 2), (0, 0x07, 0, 0, 1), (0, 0x07, 0, 0, 0)]},
        {"masks": (0, 0, 0, 0x0050), "values": [(0, 0, 0, 0x10, 1), (0, 0, 0, 0x50, 0)]},
    ]
    m = model(caches=caches, mask=sets)
    pkt = http()                      # dst .7 -> set 0, second value
    d = m.decide(0, eth(pkt))
    assert (d.action, d.cache, d.bucket, d.alt_bucket) == ("redirect_gre", 1, None, None)
    out = one(m.process(0, eth(pkt)))[1]
    assert out == expected_gre(pkt, CACHE2_IP, CACHE2_MAC, prim=0, alt=0)
    assert m.decide(0, eth(http(dst=ip("1.2.3.1")))).cache == 2
    assert m.decide(0, eth(http(dst=ip("1.2.3.9")))).cache == 0              # set 1
    # non-matching everywhere -> unassigned
    m2 = model(caches=caches, mask=sets[:1])
    f = eth(http(dst=ip("1.2.3.9")))
    assert m2.process(0, f) == [(1, f)] and m2.counters()["unassigned"] == 1
    assert sum(m2.counters()["bucket_hits"][0]) == 0


def test_mask_src_ip_and_ports_and_non_tcp_zero_ports():
    # Squid's default 6-bit source mask plus the low bit of the source port (7 bits)
    sets = [{"masks": (0x1741, 0, 0x0001, 0), "values": [(0x0101, 0, 1, 0, 1), (0x0101, 0, 0, 0, 0)]}]
    caches = [cache(CACHE_IP, mac=CACHE_MAC, port=1), cache(CACHE2_IP, mac=CACHE2_MAC, port=1)]
    m = model(caches=caches, service=svc(proto=0, flags=SF_SRC_IP_HASH), mask=sets)
    src = ip("192.168.1.1")
    assert src & 0x1741 == 0x0101
    assert m.decide(0, eth(http(src=src, sport=1235))).cache == 1
    assert m.decide(0, eth(http(src=src, sport=1234))).cache == 0
    assert m.decide(0, eth(http(src=ip("192.168.1.2"), sport=1235))).reason == "unassigned"
    icmp = ipv4(src, SERVER_IP, 1, b"\x08\x00" + b"\x00" * 14)
    assert m.decide(0, eth(icmp)).cache == 0                                  # ports 0,0
    # zero-bit mask with one value: everything to that cache (ATS style)
    m = model(mask=[{"masks": (0, 0, 0, 0), "values": [(0, 0, 0, 0, 0)]}])
    assert m.decide(0, eth(http(dst=ip("8.8.8.8")))).action == "redirect_gre"
    # value with bits outside its mask never matches
    m = model(mask=[{"masks": (0, 0x7F, 0, 0), "values": [(0, 0x87, 0, 0, 0)]}])
    assert m.decide(0, eth(http())).reason == "unassigned"


# --- exclusions, learning, cache resolution ---------------------------------------------

def test_exclusion_by_cache_ip():
    caches = [cache(CACHE_IP, mac=CACHE_MAC, port=1), cache(CACHE2_IP, mac=CACHE2_MAC, port=1)]
    m = model(caches=caches, service=svc(flags=SF_SRC_IP_HASH | SF_PORTS_DEFINED))
    f = eth(http(src=CACHE2_IP), src=CACHE2_MAC)
    assert m.process(1, f) == [(0, f)]
    c = m.counters()
    assert c["from_cache"] == 1 and c["slot_frames"][0] == 1 and c["redirect_gre"] == 0


def test_exclusion_by_cache_mac_only_for_l2_return():
    l2 = [cache(CACHE_IP, fwd=FWD_L2, ret=RET_L2, mac=CACHE_MAC, port=1)]
    m = model(caches=l2)
    f = eth(http(), src=CACHE_MAC)            # the cache returns a client packet at L2
    assert m.process(1, f) == [(0, f)]
    assert m.counters()["from_cache"] == 1
    gre = [cache(CACHE_IP, fwd=FWD_L2, ret=RET_GRE, mac=CACHE_MAC, port=1)]
    m = model(caches=gre)
    d = m.decide(1, f)
    assert d.action == "redirect_l2" and d.out_port == 1


def test_unknown_cache_location_forwards_normally():
    m = model(caches=[cache()])
    f = eth(http())
    assert m.process(0, f) == [(1, f)]
    assert m.counters()["cache_unknown"] == 1
    assert m.cache_location(0, 0) is None
    # MAC known but port not (or the reverse): still unresolved
    for c in (cache(mac=CACHE_MAC), cache(port=1)):
        m = model(caches=[c])
        assert m.decide(0, f).reason == "cache_unknown"
        assert m.cache_location(0, 0) is None
    # ... but a known MAC is enough for the L2-return exclusion
    m = model(caches=[cache(ret=RET_L2, mac=CACHE_MAC)])
    assert m.decide(1, eth(http(), src=CACHE_MAC)).reason == "from_cache"


def test_learning_from_cache_traffic_and_commit_keeps_it():
    m = model(caches=[cache(), cache(CACHE2_IP)])
    f = eth(http())
    assert m.decide(0, f).reason == "cache_unknown"
    # any IPv4 frame from the cache teaches MAC and port (here a UDP frame on port 1)
    hello = eth(ipv4(CACHE_IP, ip("10.0.0.1"), 17, udp(2048, 2048, b"x" * 10)), src=CACHE_MAC)
    assert m.decide(1, hello).action == "forward"             # decide() does not learn
    assert m.cache_location(0, 0) is None
    m.process(1, hello)
    assert m.cache_location(0, 0) == (CACHE_MAC, 1)
    assert m.cache_location(0, 1) is None
    d = m.decide(0, f)
    assert d.action == "redirect_gre" and d.out_port == 1
    # learning while fail-open too, and the port moves with the cache
    m.disarm()
    m.process(0, hello)
    assert m.cache_location(0, 0) == (CACHE_MAC, 0)
    m.arm(1000)
    m.heartbeat()
    # a commit (shadow rewritten with the same caches, no MAC) keeps learnt locations
    m.set_caches(0, [cache(), cache(CACHE2_IP)])
    m.commit()
    assert m.cache_location(0, 0) == (CACHE_MAC, 0)
    # a static MAC re-sent for an unchanged address does not wipe the learnt location
    m.set_caches(0, [cache(mac=CACHE2_MAC), cache(CACHE2_IP, mac=CACHE2_MAC)])
    m.commit()
    assert m.cache_location(0, 0) == (CACHE_MAC, 0) and m.cache_location(0, 1) is None
    # a different cache at that index starts unknown (cleared at once: the old cache's
    # traffic goes normally until commit rather than to a wrong MAC after it)
    m.set_caches(0, [cache(CACHE2_IP), cache(CACHE_IP)])
    assert m.cache_location(0, 0) is None and m.cache_location(0, 1) is None
    assert m.decide(0, f).reason == "cache_unknown"
    m.commit()
    # learning follows the live table: CACHE_IP is index 1 now
    m.process(1, hello)
    assert m.cache_location(0, 1) == (CACHE_MAC, 1) and m.cache_location(0, 0) is None
    assert m.counters()["learnt"] == [1, 2]
    # not-valid IPv4 (fragment) does not teach
    frag = eth(ipv4(CACHE_IP, SERVER_IP, 17, udp(1, 2), flags_frag=0x2000), src=CACHE_MAC)
    m.set_cache_location(0, 1, None, None)
    m.commit()
    m.process(1, frag)
    assert m.cache_location(0, 1) is None


def test_relearnt_old_cache_does_not_carry_over_to_new_cache_at_commit():
    m = model(caches=[cache(CACHE_IP, mac=CACHE_MAC, port=1)])
    m.set_caches(0, [cache(CACHE2_IP)])            # another cache takes index 0
    assert m.cache_location(0, 0) is None
    # the old cache is still live at index 0 and talks: re-learnt there
    m.process(1, eth(ipv4(CACHE_IP, SERVER_IP, 17, udp(1, 2)), src=CACHE_MAC))
    assert m.cache_location(0, 0) == (CACHE_MAC, 1)
    m.commit()
    assert m.cache_location(0, 0) is None          # cleared by the switch
    assert m.decide(0, eth(http())).reason == "cache_unknown"
    m.process(0, eth(ipv4(CACHE2_IP, SERVER_IP, 17, udp(1, 2)), src=CACHE2_MAC))
    assert m.decide(1, eth(http())).action == "redirect_gre"
    assert one(m.process(1, eth(http())))[1][0:6] == CACHE2_MAC


def test_learning_applies_to_every_slot_with_that_cache():
    m = model(caches=[cache()])
    m.set_group(3, svc(sid=93, ports=(443,)))
    m.set_caches(3, [cache(CACHE2_IP), cache(CACHE_IP)])
    m.set_hash(3, [1] * 256)
    m.commit()
    m.process(1, eth(ipv4(CACHE_IP, SERVER_IP, 6, tcp(3128, 80)), src=CACHE_MAC))
    assert m.cache_location(0, 0) == (CACHE_MAC, 1)
    assert m.cache_location(3, 1) == (CACHE_MAC, 1)
    assert m.counters()["learnt"] == [0, 2]                # one event per entry
    assert m.decide(0, eth(http(dport=443))).slot == 3
    assert m.decide(0, eth(http(dport=443))).action == "redirect_gre"


def test_learning_counts_only_changed_locations():
    m = model(caches=[cache()])
    hello = eth(ipv4(CACHE_IP, SERVER_IP, 17, udp(1, 2)), src=CACHE_MAC)
    m.process(1, hello)
    m.process(1, hello)                    # the location is already this frame's: no event
    assert m.counters()["learnt"] == [0, 1]
    m.process(0, hello)                    # the cache moved to port 0
    assert m.cache_location(0, 0) == (CACHE_MAC, 0) and m.counters()["learnt"] == [1, 1]
    m.process(0, eth(ipv4(CACHE_IP, SERVER_IP, 17, udp(1, 2)), src=CACHE2_MAC))    # a new MAC
    assert m.cache_location(0, 0) == (CACHE2_MAC, 0) and m.counters()["learnt"] == [2, 1]
    m.set_cache_location(0, 0, None, None)
    m.commit()
    m.process(0, eth(ipv4(CACHE_IP, SERVER_IP, 17, udp(1, 2)), src=CACHE2_MAC))    # after a clear
    assert m.counters()["learnt"] == [3, 1]


def test_set_cache_location_applies_after_commit():
    m = model(caches=[cache()])
    m.set_cache_location(0, 0, CACHE2_MAC, 0)
    assert m.cache_location(0, 0) is None
    assert m.decide(1, eth(http())).reason == "cache_unknown"
    m.commit()
    assert m.cache_location(0, 0) == (CACHE2_MAC, 0)
    out = one(m.process(1, eth(http())))
    assert out[0] == 0 and out[1][0:6] == CACHE2_MAC
    m.set_cache_location(0, 0, None, None)
    m.commit()
    assert m.cache_location(0, 0) is None
    assert m.decide(1, eth(http())).reason == "cache_unknown"
    m.set_cache_location(0, 31, CACHE_MAC, 1)
    m.set_cache_location(0, 0, CACHE_MAC, None)            # MAC only
    raises(ValueError, m.set_cache_location, 0, 32, CACHE_MAC, 0)
    raises(ValueError, m.set_cache_location, 0, 0, CACHE_MAC, 2)
    raises(ValueError, m.set_cache_location, 0, 0, b"\x01", 0)
    raises(ValueError, m.set_cache_location, 8, 0, CACHE_MAC, 0)
    # set_caches: mac/port applied at commit; a new address clears the location at once
    # and drops location writes queued for that index
    m.set_caches(0, [cache(), cache(CACHE2_IP, mac=CACHE2_MAC, port=1)])
    assert m.cache_location(0, 1) is None
    m.commit()
    assert m.cache_location(0, 1) == (CACHE2_MAC, 1)
    m.set_cache_location(0, 0, CACHE_MAC, 1)
    m.commit()
    m.set_cache_location(0, 0, CACHE2_MAC, 1)
    m.set_caches(0, [cache(CACHE2_IP), cache(CACHE2_IP)])
    assert m.cache_location(0, 0) is None and m.cache_location(0, 1) == (CACHE2_MAC, 1)
    m.commit()
    # index 0's new cache had a location at index 1: it is carried over (D7), the write
    # queued for index 0 before set_caches is not applied
    assert m.cache_location(0, 0) == (CACHE2_MAC, 1) and m.cache_location(0, 1) == (CACHE2_MAC, 1)


# --- redirect methods -------------------------------------------------------------------

def test_l2_rewrite_exact():
    m = model(caches=[cache(fwd=FWD_L2, ret=RET_L2, mac=CACHE_MAC, port=1)])
    pkt = http(payload=b"")                  # short: Ethernet padding must be kept
    f = eth(pkt)
    out = one(m.process(0, f))
    body = bytearray(f[:-4])
    body[0:6] = CACHE_MAC
    body[6:12] = APP_MAC
    assert out == (1, add_fcs(bytes(body)))
    assert len(out[1]) == len(f)
    c = m.counters()
    assert c["redirect_l2"] == 1 and c["cache_bytes"][0][0] == len(f) and c["tx_frames"] == [0, 1]


def test_gre_encapsulation_exact_and_padding_copied():
    m = model()
    pkt = http(payload=b"")                  # 40-byte IP: Ethernet padding behind it
    f = eth(pkt)
    assert len(f) == 64
    out = one(m.process(0, f))
    exp = expected_gre(pkt, prim=fold(SERVER_IP), trailer=b"\x00" * 6)
    assert out == (1, exp) and len(exp) == 64 + 28
    o = out[1]
    assert o[12:14] == b"\x08\x00" and o[14] == 0x45 and o[23] == 47 and o[22] == 64
    assert struct.unpack(">H", o[16:18])[0] == len(pkt) + 28
    assert struct.unpack(">H", o[20:22])[0] == 0x4000
    assert csum(o[14:34]) == 0
    assert o[34:38] == b"\x00\x00\x88\x3e"
    assert o[38] >> 4 != 4                    # never looks like an inner IPv4 header
    assert o[42:42 + len(pkt)] == pkt
    big = http(payload=b"y" * 1000)
    out = one(m.process(0, eth(big)))[1]
    assert out == expected_gre(big, prim=fold(SERVER_IP))


def test_gre_mtu_overflow_forwards_normally():
    m = model(mtu=1000)
    ok = http(payload=b"a" * (1000 - 28 - 40))
    assert len(ok) + 28 == 1000
    assert m.decide(0, eth(ok)).action == "redirect_gre"
    big = http(payload=b"a" * (1000 - 28 - 40 + 1))
    f = eth(big)
    assert m.process(0, f) == [(1, f)]
    c = m.counters()
    assert c["gre_too_big"] == 1 and c["redirect_gre"] == 0
    # default mtu 1500: a full 1500-byte packet cannot be encapsulated
    m = model()
    assert m.decide(0, eth(http(payload=b"a" * 1460))).reason == "gre_too_big"
    assert m.decide(0, eth(http(payload=b"a" * 1432))).action == "redirect_gre"
    # L2 has no such limit
    m = model(caches=[cache(fwd=FWD_L2, mac=CACHE_MAC, port=1)])
    assert m.decide(0, eth(http(payload=b"a" * 1460))).action == "redirect_l2"


def test_gre_with_a_larger_cache_side_mtu_carries_full_size_packets():
    # MTU 1528 on the cache side: a full-size 1500-byte client packet is redirected whole
    m = model(mtu=1528)
    full = http(payload=b"f" * 1460)
    assert len(full) == 1500
    out = one(m.process(0, eth(full)))[1]
    assert out == expected_gre(full, prim=fold(SERVER_IP)) and len(out) - 4 - 14 == 1528
    assert m.decide(0, eth(http(payload=b"f" * 1461))).reason == "gre_too_big"
    # what follows the datagram is clipped at MTU - 28 bytes, never below 1472
    small = http(payload=b"s" * 100)
    f = add_fcs((eth(small)[:-4] + bytes(range(256)) * 6)[:1518])
    out = one(m.process(0, f))[1]
    assert len(out) - 4 == 14 + 28 + 1500 and out[14 + 28:-4] == f[14:14 + 1500]
    out = one(model().process(0, f))[1]
    assert len(out) - 4 == 14 + 28 + 1472 and out[14 + 28:-4] == f[14:14 + 1472]


# --- GRE return -------------------------------------------------------------------------

def gre_return(inner, header=b"\x01\x5a\x00\x07", dst=ROUTER_ID, proto=0x883E, word0=0):
    return ipv4(CACHE_IP, dst, 47, struct.pack(">HH", word0, proto) + header + inner)


def test_gre_return_decap_with_and_without_redirect_header():
    m = model()
    inner = http(src=SERVER_IP, dst=CLIENT_IP, sport=80, dport=40000, payload=b"HTTP/1.1 200 OK\r\n")
    for hdr in (b"\x01\x5a\x00\x07", b"\x04\x00\x00\x00", b"\x00\x00\x00\x00", b""):
        f = eth(gre_return(inner, hdr), dst=APP_MAC, src=CACHE_MAC)
        out = one(m.process(1, f))
        assert out == (0, eth(inner, dst=APP_MAC, src=APP_MAC))
    assert m.counters()["gre_return"] == 4
    assert m.cache_location(0, 0) == (CACHE_MAC, 1)          # learnt from the return traffic
    # next-hop MAC for the egress port, VLAN tag kept, short inner padded to 60
    m.set_next_hop(0, NH_MAC)
    m.commit()
    # (everything after the inner datagram is copied too: D14)
    small = ipv4(SERVER_IP, CLIENT_IP, 1, b"\x00\x00\x00\x00")
    f = eth(gre_return(small + b"trailing"), dst=APP_MAC, src=CACHE_MAC, vlan=12)
    out = one(m.process(1, f))
    assert out == (0, eth(small + b"trailing", dst=NH_MAC, src=APP_MAC, vlan=12))
    assert len(out[1]) == 64
    # next hop of the other port does not apply
    f = eth(gre_return(small), dst=APP_MAC, src=CACHE_MAC)
    assert one(m.process(0, f)) == (1, eth(small, dst=APP_MAC, src=APP_MAC))


def test_gre_return_never_redirected_even_when_it_matches():
    m = model(service=svc(proto=0, flags=SF_DST_IP_HASH))       # would match GRE too
    inner = http()
    f = eth(gre_return(inner), dst=APP_MAC, src=CACHE_MAC)
    d = m.decide(1, f)
    assert d.action == "decap" and d.slot is None
    # decapsulated during fail-open as well
    m.disarm()
    assert one(m.process(1, f)) == (0, eth(inner, dst=APP_MAC, src=APP_MAC))
    # not return traffic: other GRE protocol, GRE flags set, or another destination
    m = model(service=svc(proto=0, flags=SF_DST_IP_HASH), caches=[cache(CACHE2_IP, mac=CACHE2_MAC, port=1)])
    for g in (gre_return(inner, proto=0x0800), gre_return(inner, word0=0x2000), gre_return(inner, dst=SERVER_IP)):
        d = m.decide(1, eth(g, src=CACHE_MAC))
        assert d.action == "redirect_gre", d


def test_gre_return_malformed_inner_dropped():
    m = model()
    inner = http()
    cases = [
        gre_return(b"", header=b""),                                # no payload byte
        gre_return(b"\x45\x00", header=b"\x00\x00\x00\x00"),       # inner total length cut
        gre_return(inner[:30]),                                     # inner claims more than carried
        gre_return(ipv4(SERVER_IP, CLIENT_IP, 1, b"", tot_len=19)),  # inner length < 20
    ]
    for g in cases:
        f = eth(g, dst=APP_MAC, src=CACHE_MAC)
        assert m.process(1, f) == []
        assert m.decide(1, f).reason == "gre_return_bad"
    assert m.counters()["gre_return_bad"] == len(cases)
    assert m.counters()["tx_frames"] == [0, 0]


# --- outputs copy the input up to its FCS (D14) -----------------------------------------

def test_gre_and_l2_outputs_copy_the_trailer():
    trailer = b"TRAILER-" * 5 + b"\x01\x02"
    pkt = http(payload=b"abc")
    for vlan in (None, 7):
        f = eth(pkt + trailer, vlan=vlan)
        m = model()
        out = one(m.process(0, f))
        assert out == (1, expected_gre(pkt, prim=fold(SERVER_IP), vlan=vlan, trailer=trailer))
        assert len(out[1]) == len(f) + 28
        assert m.counters()["tx_bytes"] == [0, len(f) + 28]
        m = model(caches=[cache(fwd=FWD_L2, ret=RET_L2, mac=CACHE_MAC, port=1)])
        body = bytearray(f[:-4])
        body[0:6] = CACHE_MAC
        body[6:12] = APP_MAC
        assert one(m.process(0, f)) == (1, add_fcs(bytes(body)))


def test_gre_output_clipped_to_1472_input_bytes():
    m = model()
    for vlan in (None, 5):
        l3 = 14 if vlan is None else 18
        for tl, extra in ((1472, 0), (1400, 72), (1400, 73), (1400, 100), (1472, 1518 - l3 - 1472),
                          (1300, 1518 - l3 - 1300)):
            pkt = http(payload=b"q" * (tl - 40))
            f = eth(pkt + b"T" * extra, vlan=vlan)
            assert len(f) <= 1522
            copied = min(tl + extra, 1472)
            out = one(m.process(0, f))[1]
            exp = expected_gre(pkt, prim=fold(SERVER_IP), vlan=vlan, trailer=b"T" * (copied - tl))
            assert out == exp, (vlan, tl, extra)
            assert len(out) - 4 == l3 + 28 + copied <= l3 + 1500
    # a datagram whose GRE output exceeds the MTU is not redirected, whatever the trailer
    m = model(mtu=1000)
    pkt = http(payload=b"q" * (1000 - 28 - 40))
    out = one(m.process(0, eth(pkt + b"T" * 400)))[1]
    assert out == expected_gre(pkt, prim=fold(SERVER_IP), trailer=b"T" * 400)
    pkt = http(payload=b"q" * (1000 - 28 - 40 + 1))
    f = eth(pkt + b"T" * 10)
    assert m.process(0, f) == [(1, f)] and m.counters()["gre_too_big"] == 1


def test_decap_copies_everything_after_the_inner_datagram():
    m = model()
    inner = http(src=SERVER_IP, dst=CLIENT_IP, sport=80, dport=40000, payload=b"HTTP/1.1 200 OK\r\n")
    rest = b"rest-of-outer"            # inside the outer datagram, after the inner one
    trailer = b"\xee" * 9              # after the outer datagram
    for hdr in (b"\x01\x5a\x00\x07", b""):
        for vlan in (None, 3):
            f = eth(gre_return(inner + rest, hdr) + trailer, dst=APP_MAC, src=CACHE_MAC, vlan=vlan)
            out = one(m.process(1, f))
            assert out == (0, eth(inner + rest + trailer, dst=APP_MAC, src=APP_MAC, vlan=vlan))
    # a short outer datagram: the bytes after it (here non-zero "padding") are copied, then
    # the output is padded to 60 as before
    small = ipv4(SERVER_IP, CLIENT_IP, 1, b"")
    g = gre_return(small, b"")
    f = eth(g + b"\xaa\xbb", dst=APP_MAC, src=CACHE_MAC)
    assert len(f) == 64 and len(g) == 44
    out = one(m.process(1, f))
    assert out == (0, eth(small + b"\xaa\xbb", dst=APP_MAC, src=APP_MAC)) and out[1][34:36] == b"\xaa\xbb"
    assert m.counters()["gre_return"] == 5


# --- truncated datagrams (D15) ----------------------------------------------------------

def cut(f, n):
    """Frame f (with FCS) cut to an n-byte frame (its first n - 4 bytes and a new FCS)."""
    return add_fcs(f[:n - 4])


def _only_truncated(m, port, f):
    """f is dropped as truncated, and only rx and truncated move."""
    before = m.counters()
    locs = [m.cache_location(s, i) for s in range(8) for i in range(4)]
    d = m.decide(port, f)
    assert d.action == "drop" and d.reason == "truncated" and d.out_port is None, d
    assert m.process(port, f) == []
    after = m.counters()
    for k in after:
        if k == "truncated":
            assert after[k] == before[k] + 1
        elif k in ("rx_frames", "rx_bytes"):
            assert after[k][port] == before[k][port] + (1 if k == "rx_frames" else len(f))
        else:
            assert after[k] == before[k], k
    assert [m.cache_location(s, i) for s in range(8) for i in range(4)] == locs       # no learning


def _forwarded(m, port, f, reason):
    before = m.counters()
    d = m.decide(port, f)
    assert d.action == "forward" and d.reason == reason and d.slot is None, d
    assert m.process(port, f) == [(port ^ 1, f)]
    after = m.counters()
    for k in after:
        if k == reason:
            assert after[k] == before[k] + 1
        elif k in ("rx_frames", "rx_bytes", "tx_frames", "tx_bytes"):
            pass
        else:
            assert after[k] == before[k], k
    assert after["tx_frames"][port ^ 1] == before["tx_frames"][port ^ 1] + 1


def test_truncated_redirects_are_dropped():
    big = eth(http(payload=b"z" * 200))
    m = model()
    assert m.decide(0, big).action == "redirect_gre"
    for n in (64, 65, 100, len(big) - 1):                    # datagram cut anywhere after the ports
        _only_truncated(m, 0, cut(big, n))
    # one byte short: total length claims one byte more than the frame holds
    p = http()
    _only_truncated(m, 0, eth(http(tot_len=len(p) + 1)))
    # tagged
    _only_truncated(m, 1, cut(eth(http(payload=b"z" * 200), vlan=9), 120))
    # L2 redirect
    m = model(caches=[cache(fwd=FWD_L2, ret=RET_L2, mac=CACHE_MAC, port=1)])
    assert m.decide(0, big).action == "redirect_l2"
    _only_truncated(m, 0, cut(big, 90))
    assert m.counters()["truncated"] == 1 and m.counters()["redirect_l2"] == 0
    # the complete frame still goes as before
    assert one(m.process(0, big))[0] == 1 and m.counters()["redirect_l2"] == 1


def test_truncated_header_point_at_the_frame_end():
    """TCP/UDP and other protocols: l4 + 4 <= end decides; GRE: l4 + 12 <= end decides."""
    m = model(service=svc(proto=0, flags=SF_DST_IP_HASH))
    opts = b"\x01" * 24                         # IHL 11: l4 = 14 + 44 = 58
    pkt = http(options=opts, payload=b"z" * 100)
    f = eth(pkt)
    assert m.decide(0, f).action == "redirect_gre"
    _only_truncated(m, 0, cut(f, 58 + 4 + 4))                    # end = l4 + 4
    _forwarded(m, 0, cut(f, 58 + 3 + 4), "not_redirectable")     # end = l4 + 3: header point beyond
    udp_pkt = ipv4(CLIENT_IP, SERVER_IP, 17, udp(1234, 53, b"u" * 80), options=opts)
    _only_truncated(m, 0, cut(eth(udp_pkt), 66))
    _forwarded(m, 0, cut(eth(udp_pkt), 65), "not_redirectable")
    icmp = ipv4(CLIENT_IP, SERVER_IP, 1, b"\x08\x00" + b"i" * 80, options=opts)
    _only_truncated(m, 0, cut(eth(icmp), 66))
    _forwarded(m, 0, cut(eth(icmp), 65), "not_redirectable")
    # GRE (not return traffic: another destination) is redirected by the protocol-0 group
    gre = ipv4(CLIENT_IP, SERVER_IP, 47, b"\x00\x00\x88\x3e" + b"g" * 80, options=opts)
    assert m.decide(0, eth(gre)).action == "redirect_gre"
    _only_truncated(m, 0, cut(eth(gre), 58 + 12 + 4))
    _forwarded(m, 0, cut(eth(gre), 58 + 11 + 4), "not_redirectable")
    _forwarded(m, 0, cut(eth(gre), 58 + 4 + 4), "not_redirectable")
    # while disabled the same frames are forwarded, uncounted
    m.disarm()
    _forwarded(m, 0, cut(f, 58 + 3 + 4), "disabled")
    _forwarded(m, 0, cut(f, 100), "disabled")
    assert m.counters()["truncated"] == 4


def test_truncated_gre_return_dropped_also_while_disabled():
    m = model()
    opts = b"\x01" * 24                         # outer IHL 11: l4 = 58, header point 70
    inner = http(src=SERVER_IP, dst=CLIENT_IP, sport=80, dport=40000, payload=b"r" * 60)
    for hdr in (b"\x01\x5a\x00\x07", b""):
        g = ipv4(CACHE_IP, ROUTER_ID, 47, b"\x00\x00\x88\x3e" + hdr + inner, options=opts)
        f = eth(g, dst=APP_MAC, src=CACHE_MAC)
        assert m.decide(1, f).action == "decap"
        _only_truncated(m, 1, cut(f, 58 + 12 + 4))
        _only_truncated(m, 1, cut(f, len(f) - 5))
        _forwarded(m, 1, cut(f, 58 + 11 + 4), "not_redirectable")
        # inner datagram not contained (D8): truncated as well, not gre_return_bad
        bad = ipv4(CACHE_IP, ROUTER_ID, 47, b"\x00\x00\x88\x3e" + hdr + inner[:2] + b"\x00\x13" + inner[4:],
                   options=opts)
        fb = eth(bad, dst=APP_MAC, src=CACHE_MAC)
        assert m.decide(1, fb).reason == "gre_return_bad"
        _only_truncated(m, 1, cut(fb, 90))
    assert m.cache_location(0, 0) == (CACHE_MAC, 1)              # set by model(), never learnt here
    m.disarm()
    g = ipv4(CACHE_IP, ROUTER_ID, 47, b"\x00\x00\x88\x3e" + inner, options=opts)
    f = eth(g, dst=APP_MAC, src=CACHE_MAC)
    _only_truncated(m, 1, cut(f, 100))
    _forwarded(m, 1, cut(f, 58 + 11 + 4), "disabled")
    c = m.counters()
    assert c["truncated"] == 7 and c["gre_return"] == 0 and c["gre_return_bad"] == 0


def test_truncated_forward_decisions_count_not_redirectable_and_do_not_learn():
    big = http(payload=b"z" * 200)
    # unassigned, no_match, cache_unknown, gre_too_big, from_cache
    cases = [
        (model(buckets=[0xFF] * 256), eth(big)),
        (model(), eth(http(dport=81, payload=b"z" * 200))),
        (model(caches=[cache()]), eth(big)),
        (model(mtu=200), eth(big)),
        (model(), eth(http(src=CACHE_IP, payload=b"z" * 200), src=CACHE2_MAC)),
    ]
    for m, f in cases:
        d = m.decide(0, f)
        assert d.action == "forward" and d.reason != "not_redirectable", d
        loc = m.cache_location(0, 0)
        _forwarded(m, 0, cut(f, 120), "not_redirectable")
        assert m.cache_location(0, 0) == loc                     # the cache's frame did not learn
        m.disarm()
        _forwarded(m, 0, cut(f, 120), "disabled")
        assert m.counters()["truncated"] == 0
    # the complete frame from the cache learns (the truncated one above did not)
    m, f = cases[4]
    m.process(0, f)
    assert m.cache_location(0, 0) == (CACHE2_MAC, 0)


def test_truncated_counter_through_register_file_and_driver():
    from wccp import regmap as R
    from wccp.fpga import FpgaDataPlane
    from wccp.fwdmodel_regs import ModelRegisterFile
    from wccp.transport import LoopbackTransport
    regs = ModelRegisterFile(model())
    drv = FpgaDataPlane(LoopbackTransport(regs))
    drv.arm(1000)
    drv.heartbeat()
    drv.clear_counters()
    big = eth(http(payload=b"z" * 200))
    for keep in (80, 120, 150):
        assert regs.model.process(0, cut(big, keep)) == []
    regs.model.process(1, cut(big, 100))
    assert regs.read_word(R.PORTCNT_BASE + R.CNT_TRUNCATED) == 4          # a total: read on port 0
    assert regs.read_word(R.PORTCNT_BASE + R.PORTCNT_STRIDE + R.CNT_TRUNCATED) == 0
    assert regs.read_word(R.PORTCNT_BASE + R.CNT_TRUNCATED + 1) == 0
    c = drv.counters()
    assert c["truncated"] == 4 and c["redirect_gre"] == 0 and c["rx_frames"] == [3, 1]
    assert sorted(c) == sorted(regs.model.counters())
    assert c == regs.model.counters()
    drv.clear_counters()
    assert drv.counters()["truncated"] == 0
    regs.model.clear_counters()
    assert regs.model.counters()["truncated"] == 0


# --- fail-open watchdog and atomic commit -----------------------------------------------

def test_watchdog_arm_heartbeat_expiry_rearm():
    now = [1000]
    m = ForwardingModel(clock=lambda: now[0])
    m.configure(ROUTER_ID, APP_MAC)
    m.set_group(0, svc())
    m.set_caches(0, [cache(mac=CACHE_MAC, port=1)])
    m.set_hash(0, [0] * 256)
    m.commit()
    f = eth(http())
    assert m.decide(0, f).reason == "disabled"          # never armed
    m.heartbeat()
    assert m.decide(0, f).reason == "disabled"          # heartbeat alone does not enable
    m.arm(500)
    assert m.decide(0, f).reason == "disabled"          # armed, no heartbeat since
    m.heartbeat()
    assert m.decide(0, f).action == "redirect_gre"
    m.arm(500)                                          # already armed: heartbeat still counts
    assert m.decide(0, f).action == "redirect_gre"
    now[0] = 1499
    assert m.redirect_enabled() and m.decide(0, f).action == "redirect_gre"
    now[0] = 1500
    assert not m.redirect_enabled()
    assert m.process(0, f) == [(1, f)]                  # fail-open: forwarded normally
    c = m.counters()
    assert c["redirect_gre"] == 0 and c["slot_frames"][0] == 0 and c["not_redirectable"] == 0
    m.heartbeat()
    assert m.decide(0, f).action == "redirect_gre"      # re-armed by the heartbeat
    m.disarm()
    m.heartbeat()
    assert m.decide(0, f).reason == "disabled"
    # injected time: explicit now arguments and tick()
    m.arm(100)
    assert not m.redirect_enabled(now=5000)             # re-armed from disarmed
    m.heartbeat(now=5000)
    assert m.redirect_enabled(now=5099) and not m.redirect_enabled(now=5100)
    assert m.decide(0, f, now=5050).action == "redirect_gre"
    assert m.tick(5010) is True
    assert m.decide(0, f).action == "redirect_gre"
    assert m.tick(6000) is False
    assert m.process(0, f) == [(1, f)]
    m.arm(0)                                            # 0: never expires
    m.heartbeat(now=6000)
    assert m.redirect_enabled(now=10 ** 8)
    raises(ValueError, m.arm, -1)


def test_default_clock_works():
    m = model(armed=False)
    m2 = ForwardingModel()
    m2.arm()
    m2.heartbeat()
    assert m2.redirect_enabled()
    assert not m.redirect_enabled()


def test_commit_is_atomic_shadow_invisible():
    m = model()
    f = eth(http())
    exp = m.process(0, f)
    # rewrite everything in the shadow: new caches, other buckets, other mtu, new group
    m.configure(ip("10.9.9.9"), CACHE2_MAC, 600)
    m.set_caches(0, [cache(CACHE_IP, fwd=FWD_L2)])
    m.set_hash(0, [0xFF] * 256)
    m.set_group(1, svc(sid=99, ports=(443,)))
    m.set_caches(1, [cache(mac=CACHE_MAC, port=1)])
    m.set_hash(1, [0] * 256)
    m.set_next_hop(0, NH_MAC)
    assert m.process(0, f) == exp                       # nothing visible before commit
    assert m.decide(0, eth(http(dport=443))).reason == "no_match"
    m.commit()
    assert m.process(0, f) == [(1, f)]                  # now unassigned
    assert m.decide(0, eth(http(dport=443))).slot == 1
    # clear_assignment / clear_group also wait for commit
    m.set_hash(0, [0] * 256)
    m.commit()
    assert m.decide(0, f).action == "redirect_l2"
    m.clear_assignment(0)
    assert m.decide(0, f).action == "redirect_l2"
    m.commit()
    assert m.decide(0, f).reason == "unassigned"
    m.clear_group(0)
    assert m.decide(0, f).reason == "unassigned"
    m.commit()
    assert m.decide(0, f).reason == "no_match"
    # set_mask replaces set_hash and vice versa
    m.set_group(0, svc())
    m.set_caches(0, [cache(mac=CACHE_MAC, port=1)])
    m.set_hash(0, [0xFF] * 256)
    m.set_mask(0, [{"masks": (0, 0, 0, 0), "values": [(0, 0, 0, 0, 0)]}])
    m.commit()
    assert m.decide(0, f).action == "redirect_gre"


# --- limits and bad input ---------------------------------------------------------------

def test_limits_raise_value_error():
    m = ForwardingModel()
    raises(ValueError, m.set_group, 8, svc())
    raises(ValueError, m.set_group, -1, svc())
    raises(ValueError, m.set_caches, 0, [cache(ip("10.1.0.0") + i) for i in range(33)])
    m.set_caches(0, [cache(ip("10.1.0.0") + i) for i in range(32)])
    raises(ValueError, m.set_caches, 0, [cache(fwd=3)])
    raises(ValueError, m.set_caches, 0, [cache(ret=0)])
    raises(ValueError, m.set_caches, 0, [{"address": -1}])
    raises(ValueError, m.set_caches, 0, [cache(port=2)])
    raises(ValueError, m.set_hash, 0, [0] * 255)
    raises(ValueError, m.set_hash, 0, [0] * 255 + [256])
    one_set = {"masks": (0, 0, 0, 0), "values": [(0, 0, 0, 0, 0)]}
    m.set_mask(0, [one_set] * 4)
    raises(ValueError, m.set_mask, 0, [one_set] * 5)
    m.set_mask(0, [{"masks": (0, 0, 0, 0), "values": [(0, 0, 0, 0, 0)] * 128}])
    raises(ValueError, m.set_mask, 0, [{"masks": (0, 0, 0, 0), "values": [(0, 0, 0, 0, 0)] * 129}])
    raises(ValueError, m.set_mask, 0, [{"masks": (0, 0, 0x10000, 0), "values": []}])
    raises(ValueError, m.set_mask, 0, [{"masks": (0, 0, 0, 0), "values": [(0, 0, 0, 0, 128)]}])
    m.set_mask(0, [{"masks": (0x1741, 0, 0, 1), "values": []}])                # 7 mask bits
    raises(ValueError, m.set_mask, 0, [{"masks": (0x1741, 0, 1, 1), "values": []}])
    raises(ValueError, m.set_mask, 0, [{"masks": (0, 0xFF, 0, 0), "values": []}])
    raises(ValueError, m.set_group, 0, svc(ports=(1, 2, 3, 4, 5, 6, 7, 8, 9)))
    raises(ValueError, m.set_group, 0, svc(ports=(70000,)))
    m.configure(ROUTER_ID, APP_MAC, 1532)          # the cache side may carry GRE of full-size packets
    raises(ValueError, m.configure, ROUTER_ID, APP_MAC, 1533)
    raises(ValueError, m.configure, ROUTER_ID, b"\x00" * 5)
    raises(ValueError, m.configure, -1, APP_MAC)
    raises(ValueError, m.set_next_hop, 2, NH_MAC)


def test_decide_has_no_side_effects():
    m = model(caches=[cache()])
    hello = eth(http(src=CACHE_IP), src=CACHE_MAC)
    before = m.counters()
    for _ in range(3):
        m.decide(1, hello)
        m.decide(0, eth(http()))
    assert m.counters() == before
    assert m.cache_location(0, 0) is None


def test_random_garbage_never_crashes():
    m = model()
    x = 12345
    for i in range(300):
        n = 50 + (i * 37) % 200
        buf = bytearray(n)
        for j in range(n):
            x = (x * 1103515245 + 12345) & 0x7FFFFFFF
            buf[j] = (x >> 16) & 0xFF
        # make a third of them IPv4, with random header bytes, and valid FCS
        if i % 3 == 0:
            buf[12] = 0x08
            buf[13] = 0x00
            buf[14] = 0x40 | (buf[14] & 0x0F)
        elif i % 3 == 1:
            buf[12] = 0x81
            buf[13] = 0x00
            buf[16] = 0x08
            buf[17] = 0x00
        f = add_fcs(bytes(buf))
        outs = m.process(i & 1, f)
        assert len(outs) <= 1
        for p, o in outs:
            assert 0 <= p < 2 and len(o) >= 64 and frame.fcs_ok(o)
    c = m.counters()
    assert sum(c["rx_frames"]) == 300 and sum(c["rx_bad_fcs"]) == 0


def test_counters_consistent_and_clear():
    m = model()
    f = eth(http())
    m.process(0, f)
    m.process(0, eth(http(dport=1)))
    m.process(1, f[:-1] + b"\x00")
    c = m.counters()
    assert c["rx_frames"] == [2, 1] and c["rx_bytes"][0] == len(f) * 2 and c["rx_bad_fcs"] == [0, 1]
    assert c["tx_frames"] == [0, 2]
    assert c["slot_frames"][0] == 1 and c["slot_bytes"][0] == len(f)
    assert c["cache_frames"][0][0] == 1 and c["cache_bytes"][0][0] == len(f)
    assert c["bucket_hits"][0][fold(SERVER_IP)] == 1
    c["rx_frames"][0] = 99                                  # a copy
    assert m.counters()["rx_frames"][0] == 2
    m.clear_counters()
    c = m.counters()
    assert c["rx_frames"] == [0, 0] and c["redirect_gre"] == 0


def test_decision_record():
    m = model()
    d = m.decide(0, eth(http()))
    r = d.as_dict()
    assert r["action"] == "redirect_gre" and r["slot"] == 0 and r["cache"] == 0
    assert r["bucket"] == fold(SERVER_IP) and r["alt_bucket"] is None and r["reason"] == "redirect_gre"
    assert "redirect_gre" in repr(d)


# --- the driver over the register-level model equals the model programmed directly ------

class Lcg:
    def __init__(self, seed):
        self.x = seed

    def bits(self, n):
        out = 0
        got = 0
        while got < n:
            self.x = (self.x * 1103515245 + 12345) & 0x7FFFFFFF
            out = (out << 15) | ((self.x >> 8) & 0x7FFF)
            got += 15
        return out >> (got - n)

    def below(self, n):
        return self.bits(30) % n

    def pick(self, seq):
        return seq[self.below(len(seq))]


def _program(dp, rng):
    """Program dp with random tables; return the list of (slot, service, caches)."""
    dp.configure(ROUTER_ID, APP_MAC, rng.pick([576, 1000, 1500]))
    dp.set_next_hop(1, NH_MAC)
    groups = []
    for slot in range(4):
        proto = rng.pick([0, 6, 17]) if slot == 3 else rng.pick([6, 17])
        flags = rng.bits(4) | rng.pick([SF_PORTS_DEFINED, SF_PORTS_DEFINED | SF_PORTS_SOURCE]) | (rng.bits(4) << 8)
        ports = [rng.pick([80, 443, 53, 8080]) for _ in range(1 + rng.below(3))]
        service = {"service_type": rng.below(2), "service_id": 50 + slot, "priority": 100, "protocol": proto,
                   "service_flags": flags, "ports": ports}
        caches = []
        for i in range(1 + rng.below(4)):
            mac = bytes([2, 0, 0, 0, slot, i])
            c = {"address": ip("10.0.%d.%d" % (slot, 10 + i)), "forward": rng.pick([FWD_GRE, FWD_L2]),
                 "ret": rng.pick([RET_GRE, RET_L2])}
            if rng.below(2):
                c["mac"] = mac
                c["port"] = rng.below(2)
            caches.append(c)
        dp.set_group(slot, service)
        dp.set_caches(slot, caches)
        if rng.below(2):
            dp.set_hash(slot, [rng.pick([0xFF, 0x80 | rng.below(5), rng.below(5)]) for _ in range(256)])
        else:
            sets = []
            for _ in range(1 + rng.below(3)):
                bits = [rng.below(96) for _ in range(rng.below(8))]
                mk = 0
                for b in bits:
                    mk |= 1 << b
                masks = ((mk >> 64) & 0xFFFFFFFF, (mk >> 32) & 0xFFFFFFFF, (mk >> 16) & 0xFFFF, mk & 0xFFFF)
                vals = []
                for _ in range(rng.below(20)):
                    k = rng.bits(96) & mk
                    vals.append(((k >> 64) & 0xFFFFFFFF, (k >> 32) & 0xFFFFFFFF, (k >> 16) & 0xFFFF, k & 0xFFFF,
                                 rng.below(5)))
                sets.append({"masks": masks, "values": vals})
            dp.set_mask(slot, sets)
        groups.append((slot, service, caches))
    dp.commit()
    dp.arm(1000)
    dp.heartbeat()
    return groups


def _traffic(rng, groups, n):
    frames = []
    for _ in range(n):
        slot, service, caches = rng.pick(groups)
        r = rng.below(10)
        src = rng.bits(32)
        dst = rng.bits(32)
        if r == 0:                                   # a cache talks (learning, exclusion)
            c = rng.pick(caches)
            src = c["address"]
        sp = rng.pick(service["ports"] + [rng.bits(16)])
        dp_ = rng.pick(service["ports"] + [rng.bits(16)])
        proto = service["protocol"] or rng.pick([6, 17, 1])
        payload = b"p" * rng.below(300)
        if proto == 6:
            pkt = ipv4(src, dst, 6, tcp(sp, dp_, payload))
        elif proto == 17:
            pkt = ipv4(src, dst, 17, udp(sp, dp_, payload))
        else:
            pkt = ipv4(src, dst, 1, b"\x08\x00\x00\x00" + payload)
        smac = bytes([2, 0, 0, 0, slot, caches.index(c)]) if r == 0 else CLIENT_MAC
        if r == 1:
            pkt = gre_return(pkt)
        f = eth(pkt, src=smac, vlan=rng.pick([None, None, 9]))
        if r == 2 and len(f) > 65:                   # cut short: a truncated datagram (D15)
            f = add_fcs(f[:60 + rng.below(len(f) - 64)])
        frames.append((rng.below(2), f))
    return frames


def test_fpga_driver_over_register_model_equals_model():
    from wccp.fpga import FpgaDataPlane
    from wccp.fwdmodel_regs import ModelRegisterFile
    from wccp.transport import LoopbackTransport
    actions = {}
    for seed in (1, 2, 3, 4):
        direct = ForwardingModel(clock=lambda: 0)
        regs = ModelRegisterFile(ForwardingModel(clock=lambda: 0))
        drv = FpgaDataPlane(LoopbackTransport(regs))
        groups = _program(direct, Lcg(seed))
        groups2 = _program(drv, Lcg(seed))
        assert [g[0] for g in groups] == [g[0] for g in groups2]
        assert drv.redirect_enabled() and direct.redirect_enabled()
        for port, f in _traffic(Lcg(seed + 100), groups, 150):
            d = direct.decide(port, f)
            actions[d.reason] = actions.get(d.reason, 0) + 1
            assert regs.model.process(port, f) == direct.process(port, f), d
        assert drv.counters() == direct.counters()
        # reprogram through the driver: same result as reprogramming directly
        rng_a = Lcg(seed + 7)
        rng_b = Lcg(seed + 7)
        groups = _program(direct, rng_a)
        _program(drv, rng_b)
        for port, f in _traffic(Lcg(seed + 200), groups, 80):
            assert regs.model.process(port, f) == direct.process(port, f)
        drv.disarm()
        direct.disarm()
        assert not drv.redirect_enabled()
        for port, f in _traffic(Lcg(seed + 300), groups, 20):
            assert regs.model.process(port, f) == direct.process(port, f)
        assert drv.counters() == direct.counters()
    for reason in ("redirect_gre", "redirect_l2", "gre_return", "from_cache", "unassigned", "cache_unknown",
                   "no_match", "truncated", "not_redirectable"):
        assert actions.get(reason, 0) > 0, actions
