"""wccp.md5 (the pure-Python fallback) against the port's hashlib and RFC 1321's test suite;
runs under CPython and the MicroPython unix port (whose hashlib has md5)."""
import hashlib
import struct

from wccp import codec
from wccp import md5 as wmd5

# RFC 1321 appendix A.5
RFC_SUITE = (
    (b"", "d41d8cd98f00b204e9800998ecf8427e"),
    (b"a", "0cc175b9c0f1b6a831c399e269772661"),
    (b"abc", "900150983cd24fb0d6963f7d28e17f72"),
    (b"message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
    (b"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"),
    (b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "d174ab98d277d9f5a5611c2c9f419d9f"),
    (b"1234567890" * 8, "57edf4a22be3c955ac49da2e2107b67a"),
)


def _hex(b):
    return "".join("%02x" % x for x in b)


def test_rfc1321_suite():
    for msg, want in RFC_SUITE:
        assert wmd5.md5(msg).hexdigest() == want, msg


def test_matches_hashlib_at_every_length_and_split():
    # every padding case (lengths around the 56/64-byte boundaries) and split updates
    seed = 12345
    for n in list(range(0, 130)) + [200, 511, 512, 513, 1500]:
        data = bytearray(n)
        for i in range(n):
            seed = (seed * 1103515245 + 12345) & 0x7FFFFFFF
            data[i] = seed >> 16 & 0xFF
        want = hashlib.md5(bytes(data)).digest()
        assert wmd5.md5(bytes(data)).digest() == want, n
        h = wmd5.md5(b"")
        cut = n // 3
        h.update(memoryview(data)[:cut])
        h.update(bytes(data[cut:]))
        assert h.digest() == want, n


def test_wccp_message_signed_the_same_way():
    # a WCCP message signed by the codec (hashlib.md5 on this port) verifies with the fallback
    # and the digest the fallback computes equals the one in the message
    pw = b"secret\x00\x00"
    msg = bytearray(b"\x00\x00\x00\x0a\x02\x00\x00\x20" + b"\x00\x00\x00\x14" + struct.pack(">I", 1) + bytes(16)
                    + b"\x00\x01\x00\x04\x0a\x00\x00\x01")
    assert codec.sign_md5(msg, len(msg), "secret")
    digest = bytes(msg[16:32])
    tmp = bytearray(msg)
    for i in range(16, 32):
        tmp[i] = 0
    h = wmd5.md5(pw)
    h.update(tmp)
    assert h.digest() == digest, (_hex(h.digest()), _hex(digest))
    assert codec.verify_md5(bytes(msg), "secret")
