"""Ethernet and IPv4 frame helpers shared by the forwarding model, the tools and the tests:
CRC-32 (the IEEE 802.3 FCS), the internet checksum, the WCCP bucket fold and hash key.
Runs on MicroPython and CPython."""
import struct

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


_CRC_TABLE = _crc_table()


def crc32_py(data, crc=0):
    """Reflected CRC-32 (polynomial 0x04C11DB7), table driven; same as zlib/binascii."""
    t = _CRC_TABLE
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
