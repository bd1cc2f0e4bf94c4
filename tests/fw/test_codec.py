"""WCCPv2 codec tests (CPython and MicroPython).

The sample messages (one per message/component shape) are in codec_samples.py.
"""
import sys

from fwtest import raises

from wccp import codec
from wccp.codec import WccpError

from codec_samples import IP, _caps, _hash_el, samples


def _expected(msg):
    """What decode should return for msg (defaults filled, no header length)."""
    return codec.plain(msg)


def _strip(d):
    d = codec.plain(d)
    d.pop("length", None)
    return d


def test_round_trip_every_shape():
    for name, msg in samples().items():
        data = codec.encode(msg)
        got = codec.decode(data)
        assert got["length"] == len(data) - 8, name
        assert _strip(got) == _expected(msg), name
        # decoded dict encodes to the same bytes
        assert codec.encode(got) == data, name


def test_encode_into_caller_buffer():
    buf = bytearray(2000)
    for name, msg in samples().items():
        n = codec.encode(msg, buf)
        assert bytes(buf[:n]) == codec.encode(msg), name
    mv = memoryview(bytearray(3000))
    n = codec.encode(samples()["isy_32_caches"], mv[100:])
    assert codec.decode(mv[100:100 + n])["router_view"]["web_caches"][31]["address"] == IP("10.1.0.33")


def test_encode_buffer_too_small():
    e = raises(WccpError, codec.encode, samples()["ra_hash"], bytearray(100))
    assert "buffer" in e.reason


def test_encode_bad_fields():
    m = dict(samples()["rq"])
    m["router_query"] = {"receive_id": 1}            # router_id missing
    e = raises(WccpError, codec.encode, m)
    assert "field" in e.reason
    m["router_query"] = {"router_id": "10.0.0.1"}    # not an int
    raises(WccpError, codec.encode, m)
    raises(WccpError, codec.encode, m, bytearray(200))
    m = dict(samples()["hia_squid_hash"])
    m["web_cache_identity"] = dict(m["web_cache_identity"], bucket_bitmap=b"short")
    e = raises(WccpError, codec.encode, m)
    assert "bucket_bitmap must be 32 bytes" in e.reason
    m = dict(samples()["ra_hash"])
    m["assignment_info"] = dict(m["assignment_info"], buckets=b"x" * 255)
    e = raises(WccpError, codec.encode, m)
    assert "buckets must be 256 bytes" in e.reason


def test_decode_reuses_out_dict():
    s = samples()
    out = {}
    for name in ("hia_squid_hash", "hia_squid_mask_md5", "hia_squid_hash", "isy_hash", "ra_hash", "rq",
                 "isy_mask_cisco_shapes", "isy_32_caches", "isy_hash"):
        data = codec.encode(s[name])
        r = codec.decode(data, out)
        assert r is out
        assert _strip(r) == _expected(s[name]), name


def test_wire_layout_header_and_security():
    data = codec.encode(samples()["hia_squid_hash"])
    assert data[:4] == b"\x00\x00\x00\x0a"
    assert data[4:6] == b"\x02\x00"
    assert data[8:16] == b"\x00\x00\x00\x04\x00\x00\x00\x00"      # security none, length 4
    assert data[16:20] == b"\x00\x01\x00\x18"                      # service info, length 24
    assert data[44:48] == b"\x00\x03\x00\x2c"                      # WC identity: 44-byte element


def test_bucket_and_bitmap_encoding():
    msg = samples()["ra_hash"]
    data = codec.encode(msg)
    d = codec.decode(data)
    bk = d["assignment_info"]["buckets"]
    assert bk[7] == 0xFF and bk[9] == 0x81 and bk[0] == 0 and bk[1] == 1
    bm = codec.bucket_bitmap([0, 9, 255])
    assert bm[0] == 0x80 and bm[1] == 0x40 and bm[31] == 0x01
    assert codec.bitmap_has(bm, 9) and not codec.bitmap_has(bm, 8)


def test_identity_flags():
    s = samples()
    d = codec.decode(codec.encode(s["hia_u8000_timers"]))
    assert codec.identity_unassigned(d["web_cache_identity"])
    assert d["web_cache_identity"]["flags"] == 0x8000
    d = codec.decode(codec.encode(s["isy_hash"]))
    wcs = d["router_view"]["web_caches"]
    assert codec.identity_unassigned(wcs[0]) and not codec.identity_unassigned(wcs[1])
    # encode forces the data-type bits from data_type
    el = _hash_el("10.0.0.5", flags=0x0002)
    m = dict(s["hia_squid_hash"])
    m["web_cache_identity"] = el
    d = codec.decode(codec.encode(m))
    assert d["web_cache_identity"]["flags"] == 0 and d["web_cache_identity"]["data_type"] == "hash"


def test_cisco_mask_view_shapes():
    data = codec.encode(samples()["isy_mask_cisco_shapes"])
    # find the router view component and check the element sizes Squid expects
    o = 8
    while True:
        t = (data[o] << 8) | data[o + 1]
        ln = (data[o + 2] << 8) | data[o + 3]
        if t == 4:
            break
        o += 4 + ln
    body = data[o + 4:o + 4 + ln]
    # 4 change + 8 key + 4 nrouters + 4 router + 4 ncaches
    els = body[24:]
    assert els[4:8] == b"\x00\x00\x00\x02"     # assigned: 16 bytes, word after address != 3
    assert len(els) == 16 + 32
    assert els[16 + 4:16 + 8] == b"\x00\x00\x00\x03"  # unassigned: 32 bytes, word == 3


def test_md5_sign_and_verify():
    for name in ("hia_squid_mask_md5", "isy_hash_md5_shutdown_resp", "ra_mask_64_md5", "rq_md5"):
        msg = samples()[name]
        data = codec.encode(msg, password="s3cret")
        assert codec.verify_md5(data, "s3cret"), name
        assert codec.verify_md5(data, b"s3cret"), name
        assert not codec.verify_md5(data, "s3cre"), name
        assert not codec.verify_md5(data, "wrong"), name
        # password padded with zeros to 8: "s3cret" and "s3cret\0" are the same key
        assert codec.verify_md5(data, b"s3cret\x00"), name
        # a flipped bit anywhere in the message breaks the digest
        bad = bytearray(data)
        bad[-1] ^= 1
        assert not codec.verify_md5(bad, "s3cret"), name
        # bytes beyond the header Length are not covered
        assert codec.verify_md5(data + b"\x00\x01", "s3cret"), name
    # non-MD5 messages never verify
    assert not codec.verify_md5(codec.encode(samples()["rq"]), "x")
    assert not codec.verify_md5(b"\x00\x00", "x")
    raises(WccpError, codec.encode, samples()["rq_md5"], None, "123456789")


def test_md5_known_answer():
    # digest = MD5(password zero-padded to 8 || message with digest zeroed), computed independently
    import hashlib
    msg = samples()["rq_md5"]
    data = codec.encode(msg, password="pw")
    z = bytearray(data)
    for i in range(16, 32):
        z[i] = 0
    h = hashlib.md5(b"pw\x00\x00\x00\x00\x00\x00")
    h.update(z)
    assert data[16:32] == h.digest()
    # Squid bug 5076 variant (9 octets hashed) does not verify
    h9 = hashlib.md5(b"pw\x00\x00\x00\x00\x00\x00\x00")
    h9.update(z)
    z[16:32] = h9.digest()
    assert not codec.verify_md5(z, "pw")


def _patch(data, off, val, size=4):
    b = bytearray(data)
    for i in range(size):
        b[off + i] = (val >> (8 * (size - 1 - i))) & 0xFF
    return bytes(b)


def _comp_offset(data, ctype):
    o = 8
    while o < len(data):
        t = (data[o] << 8) | data[o + 1]
        if t == ctype:
            return o
        o += 4 + ((data[o + 2] << 8) | data[o + 3])
    raise AssertionError("component %d not found" % ctype)


def _bad(data, words):
    e = raises(WccpError, codec.decode, data)
    low = e.reason.lower()
    for w in words:
        assert w in low, (w, e.reason)
    return e


def test_malformed_inputs():
    s = samples()
    hia = codec.encode(s["hia_squid_hash"])
    isy = codec.encode(s["isy_hash"])
    _bad(b"", ["truncated header"])
    _bad(hia[:7], ["truncated header"])
    _bad(_patch(hia, 0, 9), ["unknown message type 9"])
    _bad(_patch(hia, 4, 0x0100, 2), ["version"])
    _bad(_patch(hia, 4, 0x0300, 2), ["version"])
    _bad(hia[:-1], ["header length"])
    _bad(_patch(hia + b"\x00\x00", 6, len(hia) - 8 + 2, 2), ["2 trailing bytes"])
    # security option unknown / wrong length
    _bad(_patch(hia, 12, 7), ["security option 7"])
    _bad(_patch(hia, 12, 1), ["security", "20"])
    # service length wrong: claim 20 bytes, 4 left over are parsed as a bogus component
    e = raises(WccpError, codec.decode, _patch(hia, 18, 20, 2))
    assert "service info length must be 24" in e.reason.lower()
    # component overrunning the message
    _bad(_patch(hia, 18, 2000, 2), ["overruns"])
    # missing mandatory component: turn the WC view into an unknown type 12
    o = _comp_offset(hia, 5)
    _bad(_patch(hia, o, 12, 2), ["mandatory", "web-cache view"])
    # foreign component: a HERE_I_AM type header over an I_SEE_YOU body
    _bad(_patch(isy, 0, 10), ["mandatory"])
    # router view: cache count far beyond the bytes present
    o = _comp_offset(isy, 4)
    _bad(_patch(isy, o + 4 + 20, 0x7FFFFFFF), ["count", "exceeds"])
    # router view: router count too large
    _bad(_patch(isy, o + 4 + 12, 1000), ["router count 1000 exceeds"])
    # received-from count
    o2 = _comp_offset(isy, 2)
    _bad(_patch(isy, o2 + 4 + 12, 5), ["received-from"])
    # assignment info truncated bucket table
    ra = codec.encode(s["ra_hash"])
    o = _comp_offset(ra, 6)
    _bad(_patch(ra, o + 4 + 12 + 12, 3), ["bucket table"])
    # alternate assignment length far off
    ram = codec.encode(s["ra_mask_64_md5"])
    o = _comp_offset(ram, 13)
    _bad(_patch(ram, o + 6, 12, 2), ["alternate assignment length 12"])
    _bad(_patch(ram, o + 4, 9, 2), ["unknown alternate assignment type 9"])
    # RA without any assignment component
    o = _comp_offset(ra, 6)
    _bad(_patch(ra, o, 11, 2), ["without an assignment"])
    # capability element overrunning its component
    o = _comp_offset(hia, 8)
    _bad(_patch(hia, o + 6, 40, 2), ["capability element"])
    # address table in a 2.00 message
    at = codec.encode(s["hia_rev1_addrtable_nodata"])
    _bad(_patch(at, 4, 0x0200, 2), ["address table requires"])
    # router query with wrong length
    rq = codec.encode(s["rq"])
    _bad(_patch(rq, _comp_offset(rq, 7) + 2, 12, 2), ["router query info length must be 16"])
    # not bytes at all
    _bad(12345, ["bytes-like"])


def test_duplicates_first_wins():
    s = samples()
    a = codec.encode(s["rq"])
    # append a second, different Router Query component
    rq2 = dict(s["rq"])
    rq2["router_query"] = {"router_id": 1, "receive_id": 2, "sent_to": 3, "target": 4}
    b = codec.encode(rq2)
    o = _comp_offset(b, 7)
    extra = b[o:o + 20]
    data = bytearray(a + extra)
    data[6:8] = bytes([(len(data) - 8) >> 8, (len(data) - 8) & 255])
    d = codec.decode(bytes(data))
    assert d["router_query"]["target"] == IP("10.1.0.2")
    assert d["duplicate_components"] == [{"type": 7, "length": 16}]


def test_assignment_length_off_by_four_accepted():
    s = samples()
    data = codec.encode(s["ra_mask_64_md5"])
    o = _comp_offset(data, 13)
    alen = (data[o + 6] << 8) | data[o + 7]
    for delta in (-4, 4):
        d = codec.decode(_patch(data, o + 6, alen + delta, 2))
        assert _strip(d) == _expected(s["ra_mask_64_md5"])


def test_trailing_udp_bytes_ignored():
    data = codec.encode(samples()["isy_hash"])
    d = codec.decode(data + b"\xde\xad\xbe\xef")
    assert _strip(d) == _expected(samples()["isy_hash"])


def test_unknown_capability_kept():
    m = dict(samples()["hia_squid_hash"])
    m["capabilities"] = _caps(extra=[{"type": 77, "value": b"\x01\x02"}, {"type": 78, "value": b""}])
    d = codec.decode(codec.encode(m))
    assert codec.plain(d["capabilities"][3]) == {"type": 77, "value": b"\x01\x02"}
    assert codec.plain(d["capabilities"][4]) == {"type": 78, "value": b""}


def test_ip_helpers():
    assert IP("1.2.3.4") == 0x01020304
    assert codec.int2ip(0xC0A80001) == "192.168.0.1"
    assert codec.int2ip(IP("255.255.255.255")) == "255.255.255.255"
    for bad in ("1.2.3", "1.2.3.256", "a.b.c.d", "1..2.3", ""):
        raises(WccpError, IP, bad)


# ---------------------------------------------------------------------------------------------
# mutation fuzzer (seeded, identical sequence on CPython and MicroPython)

class Rng:
    """xorshift32: deterministic across interpreters."""

    def __init__(self, seed):
        self.s = (seed & 0xFFFFFFFF) or 1

    def next(self):
        x = self.s
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        self.s = x
        return x

    def below(self, n):
        return self.next() % n if n > 0 else 0


def _tlv_offsets(data):
    """Offsets of component headers (walk leniently)."""
    offs = []
    o = 8
    while o + 4 <= len(data):
        offs.append(o)
        o += 4 + ((data[o + 2] << 8) | data[o + 3])
    return offs


_INTERESTING = (0, 1, 2, 3, 4, 7, 8, 12, 16, 0x7F, 0x80, 0xFF, 0x100, 0xFFFF, 0x10000, 0x7FFFFFFF,
                0xFFFFFFFF, 0xFFFFFFFC)


def mutate(rng, data):
    b = bytearray(data)
    if len(b) < 12:
        return bytes(b)
    kind = rng.below(8)
    if kind == 0:  # bit flips
        for _ in range(1 + rng.below(4)):
            i = rng.below(len(b))
            b[i] ^= 1 << rng.below(8)
    elif kind == 1:  # truncation (keeping header length consistent half of the time)
        n = rng.below(len(b))
        b = b[:n]
        if rng.below(2) and n >= 8:
            b[6] = ((n - 8) >> 8) & 0xFF
            b[7] = (n - 8) & 0xFF
    elif kind == 2:  # header length corruption
        v = _INTERESTING[rng.below(len(_INTERESTING))] + rng.below(9) - 4
        b[6] = (v >> 8) & 0xFF
        b[7] = v & 0xFF
    elif kind == 3:  # component length corruption
        offs = _tlv_offsets(b)
        if offs:
            o = offs[rng.below(len(offs))]
            ln = ((b[o + 2] << 8) | b[o + 3]) + rng.below(17) - 8
            if rng.below(4) == 0:
                ln = _INTERESTING[rng.below(len(_INTERESTING))]
            b[o + 2] = (ln >> 8) & 0xFF
            b[o + 3] = ln & 0xFF
    elif kind == 4:  # a 32-bit word (count, length, address) set to an interesting value
        if len(b) >= 12:
            o = 8 + 4 * rng.below((len(b) - 8) // 4)
            v = _INTERESTING[rng.below(len(_INTERESTING))]
            if o + 4 <= len(b):
                b[o:o + 4] = bytes([(v >> 24) & 255, (v >> 16) & 255, (v >> 8) & 255, v & 255])
    elif kind == 5:  # component type corruption
        offs = _tlv_offsets(b)
        if offs:
            o = offs[rng.below(len(offs))]
            b[o] = 0
            b[o + 1] = rng.below(20)
    elif kind == 6:  # random bytes inserted or deleted
        i = rng.below(len(b))
        if rng.below(2):
            b = b[:i] + bytearray([rng.below(256) for _ in range(1 + rng.below(8))]) + b[i:]
        else:
            b = b[:i] + b[i + 1 + rng.below(8):]
    else:  # 16-bit value corruption (element lengths, assignment length, flags)
        if len(b) >= 10:
            o = 8 + 2 * rng.below((len(b) - 8) // 2)
            v = _INTERESTING[rng.below(len(_INTERESTING))] + rng.below(9) - 4
            if o + 2 <= len(b):
                b[o] = (v >> 8) & 0xFF
                b[o + 1] = v & 0xFF
    return bytes(b)


def fuzz(seed, cases):
    """Run `cases` mutations; only WccpError may escape decode. Returns (ok, rejected)."""
    rng = Rng(seed)
    corpus = [codec.encode(m) for m in samples().values()]
    ok = rejected = 0
    for _ in range(cases):
        data = corpus[rng.below(len(corpus))]
        for _ in range(1 + rng.below(3)):
            data = mutate(rng, data)
        try:
            d = codec.decode(data)
        except WccpError as e:
            assert not e.reason.startswith("internal"), (e.reason, data)
            rejected += 1
            continue
        ok += 1
        # whatever decodes re-encodes to something that decodes to the same thing
        again = codec.decode(codec.encode(d))
        dd = _strip(d)
        dd.pop("duplicate_components", None)
        assert _strip(again) == dd, data
    return ok, rejected


def fuzz_cases():
    return 20000


def test_fuzz_mutations():
    ok, rejected = fuzz(12345, fuzz_cases())
    assert ok + rejected == fuzz_cases()
    # the mutator must exercise both paths
    assert ok > 50 and rejected > 1000, (ok, rejected)


if __name__ == "__main__":  # pragma: no cover
    for _n in sorted(dir(sys.modules[__name__])):
        if _n.startswith("test_"):
            getattr(sys.modules[__name__], _n)()
            print("ok", _n)
