"""MD5 (RFC 1321) in plain Python, for ports whose ``hashlib`` has no ``md5``.

The rp2 port before MicroPython 1.27 builds ``hashlib`` without MD5; WCCPv2's
security option needs it (wccp.codec signs and verifies with ``md5(password)``
then ``update(message)``). ``wccp.codec`` uses ``hashlib.md5`` where the port has it
and this class otherwise. Same interface as ``hashlib.md5``: ``md5(data=b"")``,
``update(data)``, ``digest()``.

Cost: measured by ``bench/bench_md5.py`` (docs/performance.md). The arithmetic is
done on 32-bit values masked after each add; on 32-bit ports values above 2**30
are heap integers, so a message allocates — this is a fallback, not a hot path
for ports that have the C implementation.
Runs on MicroPython and CPython.
"""
import struct

# RFC 1321 section 3.4: T[i] = floor(2**32 * abs(sin(i + 1))), as listed in the RFC
# (a table, not computed: single-precision floats on some ports would get it wrong)
_T = (
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
)
# per-round left-rotate amounts (RFC 1321 3.4, four per round, repeated)
_S = (7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21)
# message word used by step i (round 1: i, round 2: 5i+1, round 3: 3i+5, round 4: 7i, mod 16)
_K = bytes([i for i in range(16)] + [(5 * i + 1) & 15 for i in range(16)]
           + [(3 * i + 5) & 15 for i in range(16)] + [(7 * i) & 15 for i in range(16)])
_M = 0xFFFFFFFF


def _block(state, x):
    a, b, c, d = state
    for i in range(64):
        r = i >> 4
        if r == 0:
            f = (b & c) | (~b & d)
        elif r == 1:
            f = (b & d) | (c & ~d)
        elif r == 2:
            f = b ^ c ^ d
        else:
            f = c ^ (b | (~d & _M))
        t = (a + (f & _M) + _T[i] + x[_K[i]]) & _M
        s = _S[(r << 2) | (i & 3)]
        a, d, c = d, c, b
        b = (b + (((t << s) | (t >> (32 - s))) & _M)) & _M
    state[0] = (state[0] + a) & _M
    state[1] = (state[1] + b) & _M
    state[2] = (state[2] + c) & _M
    state[3] = (state[3] + d) & _M


class md5:
    digest_size = 16
    block_size = 64

    def __init__(self, data=b""):
        self._h = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476]
        self._buf = bytearray()
        self._n = 0
        if data:
            self.update(data)

    def update(self, data):
        self._n += len(data)
        buf = self._buf
        buf.extend(data)
        i = 0
        while len(buf) - i >= 64:
            _block(self._h, struct.unpack_from("<16I", buf, i))
            i += 64
        if i:
            self._buf = buf[i:]

    def digest(self):
        h = list(self._h)
        tail = bytearray(self._buf)
        tail.append(0x80)
        while len(tail) % 64 != 56:
            tail.append(0)
        tail.extend(struct.pack("<Q", (self._n * 8) & 0xFFFFFFFFFFFFFFFF))
        for i in range(0, len(tail), 64):
            _block(h, struct.unpack_from("<16I", tail, i))
        return struct.pack("<4I", h[0], h[1], h[2], h[3])

    def hexdigest(self):
        return "".join("%02x" % b for b in self.digest())
