"""What the emulated caches (wccptool.cachesim) assign and send: protocol numbers, service
definitions, mask/value enumeration, weight-proportional bucket dealing, address parsing and
the designated-cache election orders."""
import struct

from wccp import codec
from wccp.const import (  # noqa: F401 - the protocol numbers, for the emulator's users too
    BUCKET_ALT, BUCKET_UNASSIGNED, CMD_SHUTDOWN, CMD_SHUTDOWN_RESPONSE, HERE_I_AM, I_SEE_YOU,
    REDIRECT_ASSIGN, REMOVAL_QUERY, WCCP_PORT,
)
from wccp.const import CAP_ASSIGNMENT_METHOD as CAP_ASSIGNMENT  # noqa: F401
from wccp.const import CAP_FORWARDING_METHOD as CAP_FORWARDING  # noqa: F401
from wccp.const import CAP_RETURN_METHOD as CAP_RETURN  # noqa: F401

MASK_FIELDS = ("src_addr", "dst_addr", "src_port", "dst_port")
MASK_WIDTHS = {"src_addr": 32, "dst_addr": 32, "src_port": 16, "dst_port": 16}
MAX_MASK_BITS = 12   # 4096 values: far beyond any real platform (Cisco ~7 bits)


def ip2int(a):
    """An address as an integer: dotted text parsed by wccp.codec.ip2int (WccpError, a
    ValueError, on bad text); an integer passes through."""
    return a if isinstance(a, int) else codec.ip2int(a)


int2ip = codec.int2ip


def numeric_key(addr):
    """Numeric (network-order value) ordering: 10.0.0.2 < 10.0.0.10 < 10.0.1.1."""
    return addr


def squid_key(addr):
    """Squid's ordering on little-endian hosts: the raw network-order word read as a
    host integer, so the LAST octet is most significant (127.1.0.1 < 127.0.0.2)."""
    return struct.unpack("<I", struct.pack("!I", addr))[0]


ELECTION_KEYS = {"numeric": numeric_key, "squid": squid_key}


def standard_service(service_id=0):
    """Well-known service: only the ID is meaningful, the rest zero (as Squid sends)."""
    return {"service_type": 0, "service_id": service_id, "priority": 0, "protocol": 0,
            "service_flags": 0, "ports": [0] * 8}


def dynamic_service(service_id, protocol=6, ports=(80,), flags=None, priority=100):
    """Dynamic service definition; ports-defined flag (0x10) is set when ports are given
    and ``flags`` is None (default hash on destination IP, 0x02)."""
    ports = list(ports)[:8]
    if flags is None:
        flags = 0x0002 | (0x0010 if ports else 0)
    return {"service_type": 1, "service_id": service_id, "priority": priority,
            "protocol": protocol, "service_flags": flags, "ports": ports + [0] * (8 - len(ports))}


def _bits_of(mask, width):
    return [b for b in range(width) if (mask >> b) & 1]


def mask_values(masks, limit_bits=MAX_MASK_BITS):
    """Every combination of the set bits of ``masks`` (dict of the four mask fields), in
    rev1 VSN order: bit k of the sequence number goes to the k-th set bit counted from
    dst_port (least significant) through src_port, dst_addr, src_addr (most)."""
    slots = []
    for field in ("dst_port", "src_port", "dst_addr", "src_addr"):
        for b in _bits_of(masks.get(field, 0), MASK_WIDTHS[field]):
            slots.append((field, b))
    if len(slots) > limit_bits:
        raise ValueError("mask has %d bits set; at most %d supported" % (len(slots), limit_bits))
    out = []
    for k in range(1 << len(slots)):
        v = {"src_addr": 0, "dst_addr": 0, "src_port": 0, "dst_port": 0}
        for i, (field, b) in enumerate(slots):
            if (k >> i) & 1:
                v[field] |= 1 << b
        out.append(v)
    return out


def bucket_counts(weights, nbuckets=256):
    """Largest-remainder split of ``nbuckets`` by ``weights``; all-zero weights → equal."""
    n = len(weights)
    if n == 0:
        return []
    if sum(weights) == 0:
        weights = [1] * n
    total = sum(weights)
    exact = [w * nbuckets / total for w in weights]
    counts = [int(e) for e in exact]
    rest = nbuckets - sum(counts)
    order = sorted(range(n), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in order[:rest]:
        counts[i] += 1
    return counts


def deal_buckets(weights, alt_buckets=()):
    """256-byte bucket table: index per bucket, weight-proportional and interleaved
    (smooth weighted round-robin over the exact counts); 0x80 added on ``alt_buckets``."""
    counts = bucket_counts(weights)
    table = bytearray([BUCKET_UNASSIGNED] * 256)
    if not counts:
        return table
    current = [0] * len(counts)
    for b in range(256):
        for i, c in enumerate(counts):
            current[i] += c
        best = max(range(len(counts)), key=lambda i: (current[i], -i))
        current[best] -= 256
        table[b] = best
    for b in alt_buckets:
        if table[b] != BUCKET_UNASSIGNED:
            table[b] |= BUCKET_ALT
    return table
