"""Ethernet and IPv4 frame helpers shared by the firmware, the forwarding model, the tools and
the tests: CRC-32 (the IEEE 802.3 FCS), the internet checksum, the WCCP bucket fold and hash key,
the ARP probe's layout. Runs on MicroPython and CPython."""
import struct

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

try:
    import binascii
    _crc32_lib = binascii.crc32
except (ImportError, AttributeError):  # pragma: no cover - both our ports have it
    _crc32_lib = None

from wccp.dataplane import SF_DST_IP_HASH, SF_DST_PORT_HASH, SF_SRC_IP_HASH, SF_SRC_PORT_HASH


# --- CRC32 (IEEE 802.3 FCS) -------------------------------------------------------------

def _crc_table():
    t = []
    for n in range(256):
        c = n
        for _ in range(8):
            if c & 1:
                c = (c >> 1) ^ 0xEDB88320
            else:
                c >>= 1
        t.append(c)
    return t


_crc_tab = None     # built on first use: the ports' binascii.crc32 makes it unneeded on a board


def crc32_py(data, crc=0):
    """Reflected CRC-32 (polynomial 0x04C11DB7), table driven; same as zlib/binascii."""
    global _crc_tab
    t = _crc_tab
    if t is None:
        t = _crc_tab = _crc_table()
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


if _crc32_lib is not None:
    def crc32(data):
        return _crc32_lib(data) & 0xFFFFFFFF
else:  # pragma: no cover
    crc32 = crc32_py


def fcs(data):
    """The 4 FCS bytes for a frame body (transmitted least significant byte first)."""
    return struct.pack("<I", crc32(data))


def with_fcs(data):
    return bytes(data) + fcs(data)


def fcs_ok(frame):
    n = len(frame)
    if n < 4:
        return False
    return crc32(memoryview(frame)[:n - 4]) == struct.unpack_from("<I", frame, n - 4)[0]


def ip_checksum(hdr):
    """Internet checksum (ones' complement sum of 16-bit words) of an even-length buffer."""
    s = 0
    for i in range(0, len(hdr), 2):
        s += (hdr[i] << 8) | hdr[i + 1]
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def fold(key):
    """WCCP bucket index: XOR of the 4 octets of a 32-bit key."""
    return (key ^ (key >> 8) ^ (key >> 16) ^ (key >> 24)) & 0xFF


def hash_key(flags, src, dst, sport, dport, alt=False):
    """Primary (or alternate) hash key: XOR of the fields the service flags select."""
    if alt:
        flags >>= 8     # SF_*_ALT_HASH (0x100 .. 0x800) line up with SF_*_HASH (0x1 .. 0x8)
    k = 0
    if flags & SF_SRC_IP_HASH:
        k ^= src
    if flags & SF_DST_IP_HASH:
        k ^= dst
    if flags & SF_SRC_PORT_HASH:
        k ^= sport
    if flags & SF_DST_PORT_HASH:
        k ^= dport
    return k


# --- ARP probe (RFC 5227) over Ethernet: byte offsets in the frame (no FCS) -------------------

ETH_DST = const(0)
ETH_SRC = const(6)
ETH_TYPE = const(12)
ARP_SHA = const(22)          # sender hardware address
ARP_SPA = const(28)          # sender protocol (IPv4) address
ARP_THA = const(32)          # target hardware address
ARP_TPA = const(38)          # target protocol (IPv4) address
ARP_FRAME_LEN = const(42)    # Ethernet header + ARP for IPv4 (the MAC pads it to 60)
# ethertype ARP, then htype Ethernet, ptype IPv4, hlen 6, plen 4, oper request
_ARP_REQUEST = b"\x08\x06\x00\x01\x08\x00\x06\x04\x00\x01"


def arp_probe(mac):
    """An ARP probe from mac: broadcast request, sender MAC = mac, sender IP 0.0.0.0 (no peer's
    ARP cache changes), target MAC 0. The target IP (ARP_TPA) is 0 until put_ipv4 sets it."""
    f = bytearray(ARP_FRAME_LEN)
    f[ETH_DST:ETH_DST + 6] = b"\xff" * 6
    f[ETH_SRC:ETH_SRC + 6] = mac
    f[ETH_TYPE:ARP_SHA] = _ARP_REQUEST
    f[ARP_SHA:ARP_SHA + 6] = mac
    return f


def put_ipv4(buf, o, a):
    """buf[o:o + 4] = the 32-bit address a, big-endian (no allocation)."""
    buf[o] = (a >> 24) & 0xFF
    buf[o + 1] = (a >> 16) & 0xFF
    buf[o + 2] = (a >> 8) & 0xFF
    buf[o + 3] = a & 0xFF
