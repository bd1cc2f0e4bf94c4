"""Random and malformed Ethernet frames (scapy) for the datapath testbenches."""
import random
import struct
import zlib

from scapy.layers.inet import GRE, ICMP, IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Dot1Q, Ether
from scapy.packet import Raw


def fcs(data):
    return struct.pack("<I", zlib.crc32(bytes(data)) & 0xFFFFFFFF)


def with_fcs(data, pad=True):
    data = bytes(data)
    if pad and len(data) < 60:
        data += b"\x00" * (60 - len(data))
    return data + fcs(data)


def _l3(f):
    """Offset of the IPv4 header in frame f: after one 802.1Q tag if there is one."""
    return 18 if len(f) >= 14 and f[12:14] == b"\x81\x00" else 14


def header_point(f):
    """Index of the last byte of frame f (no FCS) that wccp_parser's header point needs (hdr_done):
    the low ethertype byte for non-IPv4, IPv4 byte 19 and L4 byte 3 (L4 byte 11 for GRE) for IPv4.
    May be >= len(f): the frame ends before it."""
    n = len(f)
    l3 = _l3(f)
    if n < l3 or f[l3 - 2:l3] != b"\x08\x00":
        return l3 - 1
    if n < l3 + 10:
        return l3 + 19
    ihl = f[l3] & 15
    need = 11 if f[l3 + 9] == 47 else 3
    return l3 + max(19, 4 * ihl + need if ihl else need)


def header_point_is_ip19(f):
    """The header point of frame f (as header_point) is IPv4 byte 19 by the parser's choice
    (IHL < 5, or < 3 for GRE, where L4 byte 3 / 11 is not later): its hdr_done comes a cycle
    after the byte (dip's last byte is captured from the input register), every other header
    point's in the cycle the byte is in the parser's input register."""
    n = len(f)
    l3 = _l3(f)
    if n < l3 + 10 or f[l3 - 2:l3] != b"\x08\x00":
        return False
    ihl = f[l3] & 15
    return ihl < (3 if f[l3 + 9] == 47 else 5)


def ip2s(a):
    return "%d.%d.%d.%d" % ((a >> 24) & 255, (a >> 16) & 255, (a >> 8) & 255, a & 255)


def mac2s(m):
    return ":".join("%02x" % b for b in m)


class FrameGen:
    """Builds frames for a scenario (clients, servers, caches, router id)."""

    def __init__(self, rng, router_id, caches, cache_macs, cache_ports, router_mac=b"\x02\x00\x00\x00\x00\x01"):
        self.rng = rng
        self.router_id = router_id
        self.caches = caches            # list of int addresses
        self.cache_macs = cache_macs    # list of 6-byte MACs
        self.cache_ports = cache_ports  # list of ports
        self.router_mac = router_mac
        self.clients = [0xC0A80000 | rng.randrange(1, 1 << 12) for _ in range(24)]
        self.servers = [0x08080000 | rng.randrange(1, 1 << 12) for _ in range(24)]

    def _l2(self, vlan=None, src=None, dst=None):
        r = self.rng
        e = Ether(src=mac2s(src or bytes([0x02, 0x10] + [r.randrange(256) for _ in range(4)])),
                  dst=mac2s(dst or self.router_mac))
        if vlan is not None:
            e = e / Dot1Q(vlan=vlan, prio=r.randrange(8))
        return e

    def payload(self, lo=0, hi=200):
        n = self.rng.randrange(lo, hi + 1)
        return Raw(bytes(self.rng.randrange(256) for _ in range(n)))

    def ip_frame(self, proto=None, vlan=None, src=None, dst=None, sport=None, dport=None, l2src=None,
                 plen=(0, 200)):
        r = self.rng
        src = src if src is not None else r.choice(self.clients)
        dst = dst if dst is not None else r.choice(self.servers)
        proto = proto if proto is not None else r.choice([6, 6, 6, 17, 17, 1, 47, 50])
        ip = IP(src=ip2s(src), dst=ip2s(dst), ttl=r.randrange(1, 255), id=r.randrange(65536))
        if proto == 6:
            l4 = TCP(sport=sport if sport is not None else r.randrange(1024, 65536),
                     dport=dport if dport is not None else r.choice([80, 80, 8080, 443, 3128, 0]),
                     flags=r.choice(["S", "A", "PA"]))
        elif proto == 17:
            l4 = UDP(sport=sport if sport is not None else r.randrange(1024, 65536),
                     dport=dport if dport is not None else r.choice([53, 123, 3130, 80]))
        elif proto == 1:
            l4 = ICMP()
        else:
            ip.proto = proto
            l4 = Raw(b"")
        pkt = self._l2(vlan, src=l2src) / ip / l4 / self.payload(*plen)
        return bytes(pkt)

    def gre_return(self, ci, vlan=None, redirect_header=True, inner=None, bad=None):
        """GRE(0x883E) from cache ci to the router id carrying an inner packet."""
        r = self.rng
        inner = inner or bytes(IP(src=ip2s(r.choice(self.servers)), dst=ip2s(r.choice(self.clients))) /
                               TCP(sport=80, dport=r.randrange(1024, 65536), flags="A") / self.payload(0, 100))
        rh = bytes([0x01, 90, 0, r.randrange(256)]) if redirect_header else b""
        body = rh + inner
        if bad == "short":
            body = rh + inner[:10]
        gre = GRE(proto=0x883E)
        pkt = (self._l2(vlan, src=self.cache_macs[ci]) /
               IP(src=ip2s(self.caches[ci]), dst=ip2s(self.router_id), proto=47) / gre / Raw(body))
        return bytes(pkt)

    def non_ip(self):
        r = self.rng
        if r.random() < 0.5:
            return bytes(self._l2() / ARP(psrc=ip2s(r.choice(self.clients)), pdst=ip2s(self.router_id)))
        return bytes(self._l2() / IPv6() / UDP(sport=1, dport=2) / self.payload(0, 50))

    def malformed(self, kind):
        """Returns (frame_with_fcs) for a malformed-input kind."""
        r = self.rng
        base = self.ip_frame(proto=6, dport=80)
        if kind == "runt":
            return with_fcs(base[:r.randrange(14, 59)], pad=False)
        if kind == "bad_fcs":
            f = bytearray(with_fcs(base))
            f[r.randrange(len(f))] ^= 1 << r.randrange(8)
            return bytes(f)
        if kind == "oversize":
            return with_fcs(self.ip_frame(proto=6, dport=80, plen=(1480, 1500)) + b"\x00" * 20)
        if kind == "truncated":
            f = bytearray(base)
            tl = (f[16] << 8) | f[17]
            struct.pack_into(">H", f, 16, tl + r.randrange(1, 400))
            return with_fcs(f)
        if kind == "ihl_lt5":
            f = bytearray(base)
            f[14] = 0x40 | r.randrange(0, 5)
            return with_fcs(f)
        if kind == "options":
            r2 = self.rng
            opt = bytes(r2.randrange(256) for _ in range(4 * r2.randrange(1, 11)))
            from scapy.layers.inet import IPOption
            pkt = (self._l2() / IP(src=ip2s(r2.choice(self.clients)), dst=ip2s(r2.choice(self.servers)),
                                   options=[IPOption(b"\x01" * len(opt))]) /
                   TCP(sport=r2.randrange(1024, 65536), dport=80) / self.payload(0, 60))
            return with_fcs(bytes(pkt))
        if kind == "fragment":
            f = bytearray(base)
            if r.random() < 0.5:
                f[20] |= 0x20          # MF
            else:
                struct.pack_into(">H", f, 20, r.randrange(1, 0x1FFF))
            return with_fcs(f)
        if kind == "version6":
            f = bytearray(base)
            f[14] = 0x65
            return with_fcs(f)
        if kind == "l4_short":
            f = bytearray(base)
            struct.pack_into(">H", f, 16, 22)   # TCP ports cut by total length
            return with_fcs(f)
        raise ValueError(kind)


MALFORMED = ("runt", "bad_fcs", "oversize", "truncated", "ihl_lt5", "options", "fragment", "version6",
             "l4_short")

_ = (random, Dot1Q, UDP)
