"""The allocation-free paths (CPython and MicroPython): what they return must equal what the
general paths return. The allocation figures themselves are measured by bench/bench_router.py
(docs/performance.md).
"""
import struct

from fwtest import raises
from test_router import R, hia, join, make

from wccp import codec
from wccp.discovery import Discovery
from wccp.router import C_RID
from wccp.transport import SpiTransport, TransportError, read_transaction, write_transaction

CACHE = "127.0.0.2"


def test_receive_view_answers_as_receive_does():
    r, _ = make()
    join(r, CACHE)
    g = r.groups[0]
    c = g.caches[codec.ip2int(CACHE)]
    # the template is built by the first steady-state answer, patched from then on
    first = r.receive(hia(CACHE, c[C_RID]), CACHE, 2048, R, 10)
    copies = []
    for i in range(3):
        rid = c[C_RID]
        out = r.receive_view(hia(CACHE, rid), CACHE, 2048, R, 20 + i)
        assert len(out) == 1
        dst, port, src, payload = out[0]
        assert (dst, port, src) == (CACHE, 2048, R)
        m = codec.decode(bytes(payload))
        assert m["type"] == 11 and m["router_identity"]["receive_id"] == c[C_RID] != rid
        assert m["router_identity"]["received_from"] == [codec.ip2int(CACHE)]
        copies.append(bytes(payload))
        # the same answer through receive(): bytes of its own, not a view of the send buffer
        out2 = r.receive(hia(CACHE, c[C_RID]), CACHE, 2048, R, 30 + i)
        assert isinstance(out2[0][3], bytes)
        kept = out2[0][3]
        r.receive_view(hia(CACHE, c[C_RID]), CACHE, 2048, R, 40 + i)
        assert kept == out2[0][3] and codec.decode(kept)["router_identity"]["receive_id"] == c[C_RID] - 1
    assert len(first[0][3]) == len(copies[0])
    assert r.counters["hia_valid"] == 1 + 1 + 3 * 3     # join: first contact, then one valid


def test_receive_view_from_another_source_port():
    r, _ = make()
    join(r, CACHE)
    c = r.groups[0].caches[codec.ip2int(CACHE)]
    out = r.receive_view(hia(CACHE, c[C_RID]), CACHE, 3000, R, 10)
    assert out[0][:3] == (CACHE, 3000, R)
    # REMOVAL_QUERY goes to the same place (the stored reply address)
    out = r.tick(10 + 25 * r.T // 10)
    assert [o[:3] for o in out] == [(CACHE, 3000, R)]


class _Spi:
    """machine.SPI: records MOSI, clocks out the prepared MISO bytes."""

    def __init__(self):
        self.mosi = []
        self.miso = b""
        self.selected = False

    def write(self, tx):
        assert self.selected
        self.mosi.append(bytes(tx))

    def write_readinto(self, tx, rx):
        assert self.selected and len(tx) == len(rx)
        self.mosi.append(bytes(tx))
        rx[:] = (self.miso + bytes(len(rx)))[:len(rx)]


class _Cs:
    def __init__(self, spi):
        self.spi = spi

    def value(self, v=None):
        self.spi.selected = v == 0


def test_one_word_spi_transactions_match_the_general_format():
    spi = _Spi()
    t = SpiTransport(spi, _Cs(spi))
    for addr, v in ((0x000010, 1), (0xFFFFFE, 0xFFFFFFFF), (0x123456, 0x89ABCDEF)):
        t.write(addr, (v,))
        t.write(addr, [v, v])
        assert spi.mosi[-2] == bytes(write_transaction(addr, [v]))
        assert spi.mosi[-1] == bytes(write_transaction(addr, [v, v]))
        spi.miso = bytes(5) + struct.pack(">II", v, 7)
        assert t.read(addr - 1, 1) == [v]
        assert spi.mosi[-1] == bytes(read_transaction(addr - 1, 1))
        assert t.read(addr - 1, 2) == [v, 7]
    assert not spi.selected
    raises(ValueError, t.write, 0x1000000, (1,))
    raises(ValueError, t.read, -1, 1)


def test_one_word_read_checks_the_answer_length():
    from wccp.transport import LoopbackTransport

    class Short:
        def transaction(self, tx):
            return bytes(len(tx) - 1)
    t = LoopbackTransport(Short())
    raises(TransportError, t.read, 4, 1)
    raises(TransportError, t.read, 4, 2)


def test_ip2int_parses_in_place_and_rejects_what_split_rejected():
    good = {"1.2.3.4": 0x01020304, "255.255.255.255": 0xFFFFFFFF, "0.0.0.0": 0, "10.0.010.1": 0x0A000A01}
    for text, n in good.items():
        assert codec.ip2int(text) == n
        assert codec.ip2int(codec.int2ip(n)) == n
    for bad in ("", "1.2.3", "1.2.3.4.5", "1..2.3", "256.1.1.1", "1.2.3.256", "1.2.3.4.", ".1.2.3",
                "1.2.3.a", "1.2.3.0004", " 1.2.3.4", "1.2.3.-4", "1.2.3.4 ", "1.2.3.+4", "1,2.3.4"):
        raises(codec.WccpError, codec.ip2int, bad)
    raises(codec.WccpError, codec.ip2int, 0x01020304)


class _ProbeDP:
    def __init__(self):
        self.sent = []

    def arp_replies(self, since):
        return since, []

    def send_frame(self, ports, frame):
        self.sent.append(bytes(frame))


def test_discovery_forgets_caches_when_the_targets_change():
    dp = _ProbeDP()
    d = Discovery(dp, b"\x02\x00\x00\x00\x00\x01")
    a, b = 0x0A000002, 0x0A000003
    both = {a, b}
    d.run(0, both)
    assert sorted(d.probes) == [a, b] and len(dp.sent) == 2
    d.run(10, both)                     # the same set: nothing to prune, nothing due
    assert sorted(d.probes) == [a, b] and len(dp.sent) == 2
    d.run(20, {a})                      # b left: a new set
    assert sorted(d.probes) == [a]
    assert d.status()["unanswered"] == [a]
