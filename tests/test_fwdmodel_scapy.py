"""Cross-check the reference model's outputs with independent decoders: scapy and tshark.

Randomised traffic built with scapy goes through wccp.fwdmodel.ForwardingModel; every GRE
redirect must parse in scapy with a correct outer IPv4 checksum, GRE protocol 0x883E, the
redirect header we expect and the original IP packet byte for byte, followed by whatever
followed the datagram in the input frame (Ethernet padding, a trailer: decision D14 of
wccp.fwdmodel); tshark must decode the WCCP redirect header fields with no malformed
packets or expert warnings, trailers included.
"""
import random
import shutil
import struct
import subprocess
import zlib

import pytest
from scapy.layers.inet import GRE, ICMP, IP, TCP, UDP, IPOption_Router_Alert
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Padding, Raw
from scapy.utils import PcapWriter

from wccp.codec import ip2int
from wccp.dataplane import (
    FWD_GRE, FWD_L2, SF_DST_IP_ALT_HASH, SF_DST_IP_HASH, SF_PORTS_DEFINED, SF_SRC_IP_HASH,
    SF_SRC_PORT_ALT_HASH,
)
from wccp.fwdmodel import ForwardingModel

APP_MAC = bytes.fromhex("020000000001")
CACHE_MACS = [bytes.fromhex("0200000000c%d" % i) for i in range(4)]
ROUTER_ID = "10.0.0.1"
CACHE_IPS = ["10.0.0.%d" % (50 + i) for i in range(4)]


def with_fcs(b):
    b = bytes(b)
    return b + struct.pack("<I", zlib.crc32(b) & 0xFFFFFFFF)


def fold(k):
    return (k ^ (k >> 8) ^ (k >> 16) ^ (k >> 24)) & 0xFF


def make_model(rng, stype=1, sid=90, flags=None, mask=False):
    m = ForwardingModel(clock=lambda: 0)
    m.configure(ip2int(ROUTER_ID), APP_MAC, 1500)
    if flags is None:
        flags = SF_SRC_IP_HASH | SF_DST_IP_HASH | SF_PORTS_DEFINED | SF_DST_IP_ALT_HASH | SF_SRC_PORT_ALT_HASH
    m.set_group(0, {"service_type": stype, "service_id": sid, "priority": 10, "protocol": 6,
                    "service_flags": flags, "ports": [80, 8080, 3128]})
    m.set_caches(0, [{"address": ip2int(a), "forward": FWD_GRE, "mac": CACHE_MACS[i], "port": i % 2}
                     for i, a in enumerate(CACHE_IPS)])
    if mask:
        m.set_mask(0, [{"masks": (0, 0x3, 0, 0),
                        "values": [(0, v, 0, 0, v) for v in range(4)]}])
    else:
        buckets = []
        for _ in range(256):
            r = rng.random()
            buckets.append(0xFF if r < 0.1 else (0x80 | rng.randrange(4)) if r < 0.3 else rng.randrange(4))
        m.set_hash(0, buckets)
    m.commit()
    m.arm(0)
    m.heartbeat()
    return m


def random_packet(rng):
    src = "192.168.%d.%d" % (rng.randrange(256), rng.randrange(1, 255))
    dst = "%d.%d.%d.%d" % (rng.randrange(1, 224), rng.randrange(256), rng.randrange(256), rng.randrange(1, 255))
    opts = [IPOption_Router_Alert()] if rng.random() < 0.2 else []
    payload = bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 7, 100, 600, 1400])))
    pkt = IP(src=src, dst=dst, ttl=rng.randrange(1, 255), id=rng.randrange(65536), options=opts) / \
        TCP(sport=rng.randrange(1024, 65536), dport=rng.choice([80, 8080, 3128]), flags="PA", seq=rng.randrange(2 ** 32)) / \
        Raw(payload)
    pkt = IP(bytes(pkt))
    assert len(pkt) + 28 <= 1500
    return pkt


def with_dport(pkt, dport):
    pkt = pkt.copy()
    pkt[TCP].dport = dport
    del pkt[TCP].chksum
    return IP(bytes(pkt))


def frame_for(rng, pkt):
    """An Ethernet frame (with FCS) for pkt, sometimes tagged, sometimes with a trailer of
    random bytes after the datagram (up to the largest frame), padded to 60."""
    if rng.random() < 0.3:
        eth = Ether(dst="02:00:00:00:00:9a", src="02:00:00:00:00:c1") / Dot1Q(vlan=rng.randrange(1, 4095)) / pkt
    else:
        eth = Ether(dst="02:00:00:00:00:9a", src="02:00:00:00:00:c1") / pkt
    raw = bytes(eth)
    if rng.random() < 0.3:
        raw += bytes(rng.randrange(256) for _ in range(min(rng.choice([1, 4, 13, 40]), 1518 - len(raw))))
    if len(raw) < 60:
        raw += b"\x00" * (60 - len(raw))
    return with_fcs(raw)


def check_gre_output(frame_in, pkt, out, d, stype, sid):
    assert zlib.crc32(out[:-4]) & 0xFFFFFFFF == struct.unpack("<I", out[-4:])[0]
    l3 = 18 if Dot1Q in Ether(frame_in[:-4]) else 14
    # after the datagram: the input's bytes after it up to its FCS, at most 1472 copied in all
    trailer = frame_in[l3 + len(pkt):-4][:1472 - len(pkt)]
    assert out[l3 + 28 + len(pkt):-4] == trailer
    assert len(out) - 4 == l3 + 28 + len(pkt) + len(trailer) <= l3 + 1500
    e = Ether(out[:-4])
    assert bytes.fromhex(e.dst.replace(":", "")) == CACHE_MACS[d.cache]
    assert bytes.fromhex(e.src.replace(":", "")) == APP_MAC
    if Dot1Q in Ether(frame_in[:-4]):
        assert e[Dot1Q].vlan == Ether(frame_in[:-4])[Dot1Q].vlan
    outer = e[IP]
    assert outer.proto == 47 and outer.ttl == 64 and outer.flags == "DF" and outer.ihl == 5
    assert outer.src == ROUTER_ID and outer.dst == CACHE_IPS[d.cache]
    assert outer.len == len(pkt) + 28
    chk = outer.chksum
    again = outer.copy()
    del again.chksum
    assert IP(bytes(again)).chksum == chk
    gre = outer[GRE]
    assert gre.proto == 0x883E and gre.chksum_present == 0 and gre.key_present == 0 and gre.seqnum_present == 0
    rest = bytes(gre.payload)
    flags, service, alt, prim = rest[0], rest[1], rest[2], rest[3]
    assert flags == ((1 if stype == 1 else 0) | (2 if d.alt_used else 0))
    assert service == sid
    assert prim == (d.bucket if d.bucket is not None else 0)
    assert alt == (d.alt_bucket if d.alt_used else 0)
    inner = rest[4:4 + outer.len - 28]
    assert inner == bytes(pkt)
    assert IP(inner)[TCP].sport == pkt[TCP].sport
    return out


def test_gre_redirects_parse_in_scapy():
    rng = random.Random(4242)
    m = make_model(rng)
    seen = {"alt": 0, "prim": 0, "normal": 0, "trailer": 0}
    for _ in range(300):
        pkt = random_packet(rng)
        f = frame_for(rng, pkt)
        d = m.decide(0, f)
        outs = m.process(0, f)
        assert len(outs) == 1
        port, out = outs[0]
        if d.action == "redirect_gre":
            assert port == d.cache % 2
            check_gre_output(f, pkt, out, d, 1, 90)
            # bucket is the WCCP fold of src ^ dst (the service's primary flags)
            assert d.bucket == fold(ip2int(pkt.src) ^ ip2int(pkt.dst))
            seen["alt" if d.alt_used else "prim"] += 1
            seen["trailer"] += len(f) - 4 > max(60, (18 if Dot1Q in Ether(f) else 14) + len(pkt))
        else:
            assert out == f and port == 1
            seen["normal"] += 1
    assert min(seen.values()) > 10, seen


def test_mask_and_standard_service_redirects_parse_in_scapy():
    rng = random.Random(7)
    m = make_model(rng, stype=0, sid=0, mask=False)       # standard 0: TCP/80, dst-IP hash
    n = 0
    for _ in range(50):
        pkt = random_packet(rng)
        pkt = with_dport(pkt, 80)
        f = frame_for(rng, pkt)
        d = m.decide(0, f)
        if d.action == "redirect_gre":
            check_gre_output(f, pkt, m.process(0, f)[0][1], d, 0, 0)
            assert d.bucket == fold(ip2int(pkt.dst))
            n += 1
    assert n > 10
    m = make_model(rng, mask=True)
    for _ in range(50):
        pkt = random_packet(rng)
        f = frame_for(rng, pkt)
        d = m.decide(0, f)
        assert d.action == "redirect_gre" and d.cache == ip2int(pkt.dst) & 3
        check_gre_output(f, pkt, m.process(0, f)[0][1], d, 1, 90)


def test_l2_redirect_and_gre_return_with_scapy():
    rng = random.Random(99)
    m = ForwardingModel(clock=lambda: 0)
    m.configure(ip2int(ROUTER_ID), APP_MAC)
    m.set_group(0, {"service_type": 1, "service_id": 61, "protocol": 0, "service_flags": SF_DST_IP_HASH})
    m.set_caches(0, [{"address": ip2int(CACHE_IPS[0]), "forward": FWD_L2, "mac": CACHE_MACS[0], "port": 0}])
    m.set_hash(0, [0] * 256)
    m.set_next_hop(1, bytes.fromhex("020000000077"))
    m.commit()
    m.arm(0)
    m.heartbeat()
    for proto in (TCP(dport=443), UDP(dport=53) / Raw(b"q" * 30), ICMP()):
        pkt = IP(src="192.168.1.10", dst="198.51.100.%d" % rng.randrange(1, 255)) / proto
        f = with_fcs(bytes(Ether(dst="02:00:00:00:00:9a", src="02:00:00:00:00:c1") / pkt).ljust(60, b"\x00"))
        [(port, out)] = m.process(1, f)
        assert port == 0
        e = Ether(out[:-4])
        assert e.dst == "02:00:00:00:00:c0" and e.src == "02:00:00:00:00:01"
        assert bytes(e[IP])[:len(pkt)] == bytes(pkt) and len(out) == len(f)
        assert zlib.crc32(out[:-4]) & 0xFFFFFFFF == struct.unpack("<I", out[-4:])[0]
    # GRE return from the cache (scapy-built, with a redirect header) is decapsulated
    inner = IP(src="198.51.100.7", dst="192.168.1.10") / TCP(sport=80, dport=40000, flags="SA")
    ret = Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:c0") / \
        IP(src=CACHE_IPS[0], dst=ROUTER_ID) / GRE(proto=0x883E) / Raw(b"\x01\x3d\x00\x00") / inner
    [(port, out)] = m.process(0, with_fcs(bytes(ret)))
    assert port == 1
    e = Ether(out[:-4])
    assert e.dst == "02:00:00:00:00:77" and e.src == "02:00:00:00:00:01" and e.type == 0x0800
    assert bytes(e[IP])[:len(inner)] == bytes(inner)
    # with an Ethernet trailer after the outer datagram: copied behind the inner one, which
    # still parses (scapy keeps the trailer as padding)
    [(port, out)] = m.process(0, with_fcs(bytes(ret) + b"trailer!"))
    e = Ether(out[:-4])
    assert bytes(e[IP])[:len(inner)] == bytes(inner) and e[TCP].flags == "SA"
    assert e[Padding].load == b"trailer!" and out[14 + len(inner):-4] == b"trailer!"
    assert m.counters()["gre_return"] == 2


def _tshark():
    exe = shutil.which("tshark")
    if exe is None:
        pytest.fail("tshark not installed (scripts/setup-system.sh installs it)")
    return exe


def test_tshark_decodes_redirect_header_without_errors(tmp_path):
    exe = _tshark()
    rng = random.Random(2026)
    pcap = tmp_path / "gre.pcap"
    expected = []
    w = PcapWriter(str(pcap), linktype=1, sync=True)
    for stype, sid, mask in ((1, 90, False), (0, 0, False), (1, 91, True)):
        m = make_model(rng, stype=stype, sid=sid, mask=mask)
        got = 0
        while got < 40:
            pkt = random_packet(rng)
            if stype == 0:
                pkt = with_dport(pkt, 80)
            f = frame_for(rng, pkt)
            d = m.decide(0, f)
            if d.action != "redirect_gre":
                continue
            out = m.process(0, f)[0][1]
            w.write(Ether(out[:-4]))       # pcap without FCS, as captured by a NIC
            expected.append((sid, d.bucket or 0, d.alt_bucket if d.alt_used else 0,
                             stype == 1, d.alt_used, len(pkt)))
            got += 1
    w.close()
    fields = ["gre.proto", "gre.wccp.service_id", "gre.wccp.primary_bucket", "gre.wccp.alternative_bucket",
              "gre.wccp.dynamic_service", "gre.wccp.alternative_bucket_used", "ip.checksum.status", "ip.len"]
    prefs = ["-o", "ip.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE",
             "-o", "tcp.analyze_sequence_numbers:FALSE",
             "--disable-protocol", "http"]      # random payload on port 80 is not HTTP
    cmd = [exe, "-n", "-r", str(pcap)] + prefs + [
           "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=;"]
    for fl in fields:
        cmd += ["-e", fl]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.strip().splitlines()
    assert len(lines) == len(expected)
    for line, (sid, prim, alt, dyn, alt_used, inner_len) in zip(lines, expected, strict=True):
        proto, svc, pb, ab, dflag, aflag, cks, iplen = line.split("\t")
        assert int(proto, 16) == 0x883E
        assert int(svc) == sid and int(pb) == prim and int(ab) == alt
        assert dflag in ("True", "1") if dyn else dflag in ("False", "0")
        assert aflag in ("True", "1") if alt_used else aflag in ("False", "0")
        # outer and inner checksums validated: status 1 = Good (0 Bad, 2 Unverified)
        assert cks.split(";") == ["1", "1"], cks
        assert [int(x) for x in iplen.split(";")] == [inner_len + 28, inner_len]
    # no malformed packets and no expert info of warning severity or worse
    bad = subprocess.run([exe, "-n", "-r", str(pcap)] + prefs +
                         ["-Y", "_ws.malformed or _ws.expert.severity >= 0x00600000"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 0, bad.stderr
    assert bad.stdout.strip() == "", bad.stdout


# --- property-based: invariants over random tables and random (often malformed) frames ---

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _model_from(data):
    m = ForwardingModel(clock=lambda: 0)
    m.configure(ip2int(ROUTER_ID), APP_MAC, data.draw(st.integers(68, 1500)))
    for slot in range(data.draw(st.integers(0, 3))):
        m.set_group(slot, {"service_type": data.draw(st.integers(0, 1)), "service_id": data.draw(st.integers(0, 255)),
                           "protocol": data.draw(st.sampled_from([0, 6, 17, 47])),
                           "service_flags": data.draw(st.integers(0, 0xFFF)),
                           "ports": data.draw(st.lists(st.sampled_from([0, 53, 80, 443]), max_size=8))})
        n = data.draw(st.integers(0, 4))
        m.set_caches(slot, [{"address": ip2int(CACHE_IPS[i]), "forward": data.draw(st.sampled_from([FWD_GRE, FWD_L2])),
                             "mac": CACHE_MACS[i], "port": data.draw(st.integers(0, 1))} for i in range(n)])
        if data.draw(st.booleans()):
            m.set_hash(slot, data.draw(st.binary(min_size=256, max_size=256)))
        else:
            m.set_mask(slot, [{"masks": (0, 3, 0, 0), "values": [(0, v, 0, 0, v) for v in range(4)]}])
    m.commit()
    m.arm(0)
    m.heartbeat()
    return m


def _frame(data):
    kind = data.draw(st.sampled_from(["tcp", "tcp", "udp", "gre", "gre", "raw", "icmp"]))
    src = data.draw(st.sampled_from(["192.168.1.10", CACHE_IPS[0], "10.9.8.7"]))
    dst = data.draw(st.sampled_from(["203.0.113.7", ROUTER_ID, "198.51.100.1"]))
    payload = data.draw(st.binary(max_size=200))
    if kind == "tcp":
        pkt = IP(src=src, dst=dst) / TCP(sport=data.draw(st.sampled_from([80, 1234])), dport=data.draw(st.sampled_from([80, 443, 9]))) / payload
    elif kind == "udp":
        pkt = IP(src=src, dst=dst) / UDP(dport=data.draw(st.sampled_from([53, 80]))) / payload
    elif kind == "gre":
        pkt = IP(src=src, dst=dst) / GRE(proto=0x883E) / data.draw(st.sampled_from([b"\x01\x00\x00\x00", b""])) / \
            IP(src="203.0.113.7", dst="192.168.1.10") / payload
    elif kind == "icmp":
        pkt = IP(src=src, dst=dst) / ICMP() / payload
    else:
        pkt = IP(src=src, dst=dst, proto=99) / payload
    raw = bytearray(bytes(Ether(dst="02:00:00:00:00:9a", src="02:00:00:00:00:c1") / pkt))
    # corrupt some bytes of the headers now and then (IHL, lengths, flags, anything)
    for _ in range(data.draw(st.integers(0, 3))):
        i = data.draw(st.integers(12, min(len(raw) - 1, 60)))
        raw[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, 2))
    if cut == 1:
        raw = raw[:data.draw(st.integers(min(40, len(raw)), len(raw)))]
    body = bytes(raw)
    if len(body) < 60 and data.draw(st.integers(0, 5)) != 0:
        body = body.ljust(60, b"\x00")
    f = with_fcs(body)
    if data.draw(st.integers(0, 20)) == 0:
        f = f[:-1] + bytes([f[-1] ^ 1])
    return f


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_invariants_random_tables_and_frames(data):
    m = _model_from(data)
    for _ in range(5):
        port = data.draw(st.integers(0, 1))
        f = _frame(data)
        d = m.decide(port, f)
        before = m.counters()
        outs = m.process(port, f)
        after = m.counters()
        assert after["rx_frames"][port] == before["rx_frames"][port] + 1
        if d.action == "drop":
            assert outs == []
            if isinstance(after[d.reason], int):            # gre_return_bad, truncated
                assert after[d.reason] == before[d.reason] + 1
            else:
                assert after[d.reason][port] == before[d.reason][port] + 1
            if d.reason == "truncated":                     # D15: the datagram is cut by the frame end
                src_ip = Ether(f[:-4])[IP]
                assert src_ip.len > len(bytes(src_ip)), (src_ip.len, len(f))
            continue
        [(o, out)] = outs
        assert o == d.out_port
        assert len(out) >= 64 and len(out) <= 1522
        assert zlib.crc32(out[:-4]) & 0xFFFFFFFF == struct.unpack("<I", out[-4:])[0]
        if d.action == "forward":
            assert out == f and o == port ^ 1
        elif d.action == "redirect_gre":
            e = Ether(out[:-4])
            outer = e[IP]
            again = outer.copy()
            del again.chksum
            assert IP(bytes(again)).chksum == outer.chksum
            inner = bytes(outer[GRE].payload)[4:4 + outer.len - 28]
            src_ip = Ether(f[:-4])[IP]
            assert inner == bytes(src_ip)[:src_ip.len]
            assert outer.len <= m._live.mtu
            l3 = 18 if Dot1Q in Ether(f[:-4]) else 14
            assert out[l3 + 28:-4] == f[l3:-4][:1472]      # datagram, then padding / trailer (D14)
        elif d.action == "redirect_l2":
            assert out[12:-4] == f[12:-4] and out[:6] in CACHE_MACS
        else:
            assert d.action == "decap" and o == port ^ 1
            assert Ether(out[:-4]).type == 0x0800
            l3 = 18 if Dot1Q in Ether(f[:-4]) else 14
            rest = f[d.inner:-4]                            # inner datagram and all after it (D14)
            assert out[l3:-4] == rest + b"\x00" * (len(out) - 4 - l3 - len(rest)) and len(out) == max(64, l3 + len(rest) + 4)
        if isinstance(after.get(d.reason), int):
            assert after[d.reason] == before[d.reason] + 1, d
