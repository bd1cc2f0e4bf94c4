"""RFC 3074 load-balancing hash (Pearson's hash with the RFC's mixing table).

A service group may hash with this function instead of the WCCP draft's XOR fold
(``fwdmodel.fold(hash_key(...))``). The key is the bytes of the fields the group's hash
flags select, in packet order and network byte order: source IP (4), destination IP (4),
source port (2), destination port (2) — at most 12 bytes; the alternate hash flags select
the alternate key the same way. The bucket is ``loadb_p_hash(key, len(key))`` of RFC 3074
section 6: the hash starts as the key length and mixes the key from its LAST byte to its
first, ``hash = MIX[hash ^ key[i]]``. Runs on MicroPython and CPython.
"""
try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

HASH_WCCP = const(0)
HASH_PEARSON = const(1)
HASH_NAMES = ("wccp", "pearson")

# RFC 3074 section 6, loadb_mx_tbl: 256 distinct values in pseudo-random order.
MIX = bytes((
    251, 175, 119, 215, 81, 14, 79, 191, 103, 49, 181, 143, 186, 157, 0, 232,
    31, 32, 55, 60, 152, 58, 17, 237, 174, 70, 160, 144, 220, 90, 57, 223,
    59, 3, 18, 140, 111, 166, 203, 196, 134, 243, 124, 95, 222, 179, 197, 65,
    180, 48, 36, 15, 107, 46, 233, 130, 165, 30, 123, 161, 209, 23, 97, 16,
    40, 91, 219, 61, 100, 10, 210, 109, 250, 127, 22, 138, 29, 108, 244, 67,
    207, 9, 178, 204, 74, 98, 126, 249, 167, 116, 34, 77, 193, 200, 121, 5,
    20, 113, 71, 35, 128, 13, 182, 94, 25, 226, 227, 199, 75, 27, 41, 245,
    230, 224, 43, 225, 177, 26, 155, 150, 212, 142, 218, 115, 241, 73, 88, 105,
    39, 114, 62, 255, 192, 201, 145, 214, 168, 158, 221, 148, 154, 122, 12, 84,
    82, 163, 44, 139, 228, 236, 205, 242, 217, 11, 187, 146, 159, 64, 86, 239,
    195, 42, 106, 198, 118, 112, 184, 172, 87, 2, 173, 117, 176, 229, 247, 253,
    137, 185, 99, 164, 102, 147, 45, 66, 231, 52, 141, 211, 194, 206, 246, 238,
    56, 110, 78, 248, 63, 240, 189, 93, 92, 51, 53, 183, 19, 171, 72, 50,
    33, 104, 101, 69, 8, 252, 83, 120, 76, 135, 85, 54, 202, 125, 188, 213,
    96, 235, 136, 208, 162, 129, 190, 132, 156, 38, 47, 1, 7, 254, 24, 4,
    216, 131, 89, 21, 28, 133, 37, 153, 149, 80, 170, 68, 6, 169, 234, 151,
))


def pearson(key):
    """RFC 3074 loadb_p_hash over the bytes ``key``: 0..255."""
    h = len(key) & 0xFF
    i = len(key)
    while i > 0:
        i -= 1
        h = MIX[h ^ key[i]]
    return h


def key_bytes(flags, src, dst, sport, dport, alt=False):
    """The Pearson key of a packet: the fields ``flags`` selects (bits 0x1..0x8, or with
    ``alt`` the alternate bits 0x100..0x800), in packet order, network byte order."""
    if alt:
        flags >>= 8
    k = bytearray()
    if flags & 1:
        k += bytes(((src >> 24) & 255, (src >> 16) & 255, (src >> 8) & 255, src & 255))
    if flags & 2:
        k += bytes(((dst >> 24) & 255, (dst >> 16) & 255, (dst >> 8) & 255, dst & 255))
    if flags & 4:
        k += bytes(((sport >> 8) & 255, sport & 255))
    if flags & 8:
        k += bytes(((dport >> 8) & 255, dport & 255))
    return k


def bucket(flags, src, dst, sport, dport, alt=False):
    """The group's Pearson bucket (0..255) for a packet."""
    return pearson(key_bytes(flags, src, dst, sport, dport, alt))


def check_hash_fn(v):
    """A hash function given as 0/1 or "wccp"/"pearson"; returns HASH_WCCP or HASH_PEARSON."""
    if v in HASH_NAMES:
        return HASH_NAMES.index(v)
    if v == HASH_WCCP or v == HASH_PEARSON:
        return v
    raise ValueError("hash function must be \"wccp\" or \"pearson\": %r" % (v,))
