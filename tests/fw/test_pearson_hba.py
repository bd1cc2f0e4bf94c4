"""Pearson hash and static HBA groups on both interpreters (CPython and the MicroPython unix
port): the RFC's hash computed step by step, the model's Pearson buckets, HBA parsing and
bucket tables, the TCP health probe against a listener on loopback (127.64.0.x)."""
import socket
import struct
import time

from fwtest import raises
from wccp import hba
from wccp.fwdmodel import ForwardingModel, with_fcs
from wccp.pearson import MIX, bucket, key_bytes, pearson


def test_pearson_follows_the_rfc_steps():
    # RFC 3074 section 6: hash = len; for i = len-1 .. 0: hash = T[hash ^ key[i]]
    assert pearson(b"") == 0
    assert pearson(b"\x01") == MIX[1 ^ 1]
    assert pearson(b"\x01\x02") == MIX[MIX[2 ^ 2] ^ 1]
    k = bytes(range(12))
    h = 12
    for i in range(11, -1, -1):
        h = MIX[h ^ k[i]]
    assert pearson(k) == h
    assert key_bytes(0x9, 0x01020304, 0x05060708, 0x0A0B, 0x0C0D) == b"\x01\x02\x03\x04\x0c\x0d"


def _frame(src, dst, sport, dport):
    ip = struct.pack(">BBHHHBBHII", 0x45, 0, 40, 1, 0, 64, 6, 0, src, dst)
    tcp = struct.pack(">HHIIBBHHH", sport, dport, 0, 0, 0x50, 0x18, 8192, 0, 0)
    return with_fcs(bytes.fromhex("020000000001" "02000000009a" "0800") + ip + tcp + bytes(6))


def test_model_uses_the_pearson_bucket():
    m = ForwardingModel(clock=lambda: 0)
    m.configure(0x0A000001, bytes.fromhex("020000000001"), 1500)
    flags = 0x1 | 0x4 | 0x200
    m.set_group(0, {"service_type": 1, "service_id": 7, "protocol": 6, "service_flags": flags, "ports": [],
                    "hash_fn": "pearson"})
    m.set_caches(0, [{"address": 0x0A000099, "forward": 1}])
    m.set_hash(0, [0x80] * 128 + [0] * 128)
    m.commit()
    m.arm(0)
    m.heartbeat()
    for i in range(40):
        p = (0xC0A80000 + i * 7919, 0x08080808 + i, 1024 + i * 31, 80)
        d = m.decide(0, _frame(*p))
        assert d.bucket == bucket(flags, *p)
        if d.bucket < 128:
            assert d.alt_used and d.alt_bucket == bucket(flags, *p, alt=True)


def test_hba_parse_and_tables():
    h = hba.parse("10.0.0.1 10.0.0.2: 0..9; 10.0.0.3: 10 12..13;")
    assert h == [(["10.0.0.1", "10.0.0.2"], list(range(10))), (["10.0.0.3"], [10, 12, 13])]
    assert "twice" in str(raises(hba.HbaError, hba.parse, "10.0.0.1: 1; 10.0.0.2: 1;"))
    servers = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    t = hba.buckets_for(h, servers, {"10.0.0.2", "10.0.0.3"})
    assert t[0:10] == bytes([1] * 10) and t[11] == 0xFF and t[12] == 2
    t = hba.buckets_for(h, servers, {"10.0.0.1"})
    assert t[10] == 0 and t[12] == 0 and t[13] == 0
    assert hba.format_ranges([3, 1, 2, 9]) == "1..3 9"


def test_tcp_probe_on_loopback():
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(socket.getaddrinfo("127.64.0.1", 0)[0][-1])
    ls.listen(4)
    # the port the system chose (MicroPython has no getsockname: connect a client and ask it)
    port = None
    if hasattr(ls, "getsockname"):
        port = ls.getsockname()[1]
    if port is None:
        ls.close()
        ls = socket.socket()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        port = 20000 + (time.ticks_ms() % 20000) if hasattr(time, "ticks_ms") else 21000
        ls.bind(socket.getaddrinfo("127.64.0.1", port)[0][-1])
        ls.listen(4)
    p = hba.TcpProbe()

    def wait(h):
        for _ in range(300):
            r = p.result(h)
            if r is not None:
                return r
            time.sleep(0.01)
        return None
    h = p.start("127.64.0.1", port)
    assert wait(h) is True
    p.close(h)
    ls.close()
    h = p.start("127.64.0.1", port)
    assert wait(h) is False
    p.close(h)
