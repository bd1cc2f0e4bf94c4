"""Unit tests of the WCCPv2 cache emulator (host_tools/wccptool/cachesim.py).

The emulator's output is decoded with the project codec and with real tshark.
Protocol flows run against MiniRouter, a deliberately small router responder built
from the codec here (two-way Receive ID check, capabilities, views, RA validation,
removal query, SHUTDOWN), first with an injected clock (sans-io), then over real
UDP sockets on 127.42.x.y.
"""
import asyncio
import json
import socket

import pytest

from tsharkcheck_cache import assert_clean, problems
from wccp import codec
from wccptool import cachesim as cs
from wccptool import cli

R1 = cs.ip2int("127.42.0.1")
R2 = cs.ip2int("127.42.0.2")


# ------------------------------------------------------------------ a tiny router responder
class MiniRouter:
    def __init__(self, addr, password=None, caps=((1, 1), (2, 3), (3, 1)), reflect=True):
        self.addr = cs.ip2int(addr) if isinstance(addr, str) else addr
        self.password = password
        self.caps = caps
        self.reflect = reflect          # False: never accept RAs (key never reflected)
        self.receive_id = 0
        self.caches = {}                # addr -> dict(last_rid, usable, identity)
        self.mcn = 1
        self.key = (0, 0)
        self.accepted = []              # decoded RAs accepted
        self.rejected = 0
        self.bad_md5 = 0
        self.service = None

    def usable(self):
        return sorted(a for a, c in self.caches.items() if c["usable"])

    def _isy(self, to, shutdown_response=False):
        self.receive_id += 1
        self.caches[to]["last_rid"] = self.receive_id
        view_caches = [dict(self.caches[a]["identity"]) for a in self.usable()]
        msg = {"type": 11, "version": 0x0200,
               "security": {"option": 1 if self.password else 0},
               "service": dict(self.service),
               "router_identity": {"router_id": self.addr, "receive_id": self.receive_id,
                                   "sent_to": self.addr, "received_from": [to]},
               "router_view": {"member_change_number": self.mcn,
                               "assignment_key": {"address": self.key[0], "change_number": self.key[1]},
                               "routers": [self.addr], "web_caches": view_caches},
               "capabilities": [{"type": t, "value": v} for t, v in self.caps]}
        if shutdown_response:
            msg["command_extension"] = [{"type": 2, "data": to}]
        return (to, codec.encode(msg, password=self.password))

    def removal_query(self, target):
        self.receive_id += 1
        msg = {"type": 13, "version": 0x0200, "security": {"option": 1 if self.password else 0},
               "service": dict(self.service),
               "router_query": {"router_id": self.addr, "receive_id": self.receive_id,
                                "sent_to": self.addr, "target": target}}
        return (target, codec.encode(msg, password=self.password))

    def handle(self, src, data):
        msg = codec.plain(codec.decode(data))
        if self.password is not None and not codec.verify_md5(data, self.password):
            self.bad_md5 += 1
            return []
        if self.service is None:
            self.service = msg["service"]
        if msg["type"] == 10:
            c = self.caches.setdefault(src, {"last_rid": 0, "usable": False})
            c["identity"] = msg["web_cache_identity"]
            if msg["web_cache_identity"]["data_type"] == "mask":
                c["identity"] = codec.cisco_mask_view_element(src, False,
                                                              weight=msg["web_cache_identity"]["weight"])
            for cmd in msg.get("command_extension", []):
                if cmd["type"] == 1 and cmd["data"] == src:
                    if c["usable"]:
                        self.mcn += 1
                    c["usable"] = False
                    return [self._isy(src, shutdown_response=True)]
            valid = any(r["router_id"] == self.addr and r["receive_id"] == c["last_rid"] != 0
                        for r in msg["web_cache_view"]["routers"])
            caps = {x["type"]: x["value"] for x in msg.get("capabilities", [])}
            cap_ok = all(caps.get(t, 1) & dict(self.caps)[t] for t in (1, 2, 3))
            if valid and cap_ok and not c["usable"]:
                c["usable"] = True
                self.mcn += 1
            return [self._isy(src)]
        if msg["type"] == 12:
            body = msg.get("assignment_info") or msg.get("alternate_assignment")
            mine = [r for r in body["routers"] if r["router_id"] == self.addr]
            des = self.caches.get(src)
            if self.reflect and mine and des and mine[0]["receive_id"] == des["last_rid"] \
                    and mine[0]["member_change_number"] == self.mcn:
                k = body["assignment_key"]
                self.key = (k["address"], k["change_number"])
                self.accepted.append(msg)
            else:
                self.rejected += 1
        return []

    def drop(self, addr):
        c = self.caches.pop(addr, None)
        if c and c["usable"]:
            self.mcn += 1


class Net:
    """Zero-latency message delivery between members and MiniRouters with an injected clock."""

    def __init__(self, members, routers):
        self.members = members
        self.routers = {r.addr: r for r in routers}
        self.log = []               # (t, src, dst, bytes)
        self.now = 0.0
        self.cut = set()            # member addresses whose traffic is dropped both ways

    def deliver(self, queue):
        while queue:
            src, dst, data = queue.pop(0)
            self.log.append((self.now, src, dst, data))
            if src in self.cut or dst in self.cut:
                continue
            if dst in self.routers:
                for to, out in self.routers[dst].handle(src, data):
                    queue.append((dst, to, out))
            else:
                for m in self.members:
                    if m.address == dst:
                        msg = codec.decode(data)
                        for to, o in m.on_message((src, 2048), msg, data, self.now):
                            queue.append((m.address, to, o))

    def start(self):
        for m in self.members:
            m.start(self.now)

    def run(self, until, dt=0.01):
        while self.now < until:
            q = []
            for m in self.members:
                for to, data in m.tick(self.now):
                    q.append((m.address, to, data))
            self.deliver(q)
            self.now = round(self.now + dt, 6)

    def inject(self, router, sends):
        self.deliver([(router.addr, to, data) for to, data in sends])

    def pcap(self, path):
        cs.write_pcap(path, [(t, (s, 2048), (d, 2048), b) for t, s, d, b in self.log])


def mk(addr, routers=(R1,), **kw):
    kw.setdefault("interval", 1.0)
    return cs.Member(addr, list(routers), **kw)


# ------------------------------------------------------------------ message building
def test_here_i_am_fields_and_md5():
    m = mk("127.42.0.11", password="s3cret", weight=1234)
    data = m.build_here_i_am()
    msg = codec.plain(codec.decode(data))
    assert msg["type"] == 10 and msg["version"] == 0x0200
    assert msg["length"] == len(data) - 8
    assert msg["security"]["option"] == 1
    assert codec.verify_md5(data, "s3cret")
    assert not codec.verify_md5(data, "s3cre")
    assert msg["service"] == cs.standard_service(0)
    ident = msg["web_cache_identity"]
    assert ident["address"] == cs.ip2int("127.42.0.11")
    assert ident["data_type"] == "hash" and ident["weight"] == 1234 and ident["hash_revision"] == 0
    assert msg["web_cache_view"]["routers"] == [{"router_id": R1, "receive_id": 0}]
    assert msg["web_cache_view"]["change_number"] == 1
    assert msg["capabilities"] == [{"type": 1, "value": 1}, {"type": 2, "value": 1}, {"type": 3, "value": 1}]
    assert "command_extension" not in msg
    m.misbehave.add("bad_md5")
    bad = m.build_here_i_am()
    assert codec.decode(bad)["security"]["option"] == 1
    assert not codec.verify_md5(bad, "s3cret")


def test_here_i_am_mask_dynamic_shutdown_and_options():
    svc = cs.dynamic_service(91, protocol=17, ports=[53, 5353], priority=7)
    m = mk("127.42.0.12", routers=(R1, R2), service=svc, assignment="mask",
           masks=[{"src_addr": 0x7}], forwarding=2, return_method=2, first_contact="absent")
    msg = codec.plain(codec.decode(m.build_here_i_am(shutdown=True)))
    assert msg["service"] == {"service_type": 1, "service_id": 91, "priority": 7, "protocol": 17,
                              "service_flags": 0x12, "ports": [53, 5353, 0, 0, 0, 0, 0, 0]}
    ident = msg["web_cache_identity"]
    assert ident["data_type"] == "mask" and ident["flags"] & 0x0006 == 0x0002
    assert ident["mask_value_sets"] == [{"masks": {"src_addr": 7, "dst_addr": 0, "src_port": 0, "dst_port": 0},
                                         "values": []}]
    assert msg["web_cache_view"]["routers"] == []          # first_contact="absent"
    assert msg["capabilities"] == [{"type": 1, "value": 2}, {"type": 2, "value": 2}, {"type": 3, "value": 2}]
    assert msg["command_extension"] == [{"type": 1, "data": cs.ip2int("127.42.0.12")}]
    m2 = mk("127.42.0.13", send_capabilities=False)
    m2.misbehave.add("wrong_receive_id")
    m2.routers[0].receive_id = 5
    msg2 = codec.decode(m2.build_here_i_am())
    assert "capabilities" not in msg2
    assert msg2["web_cache_view"]["routers"][0]["receive_id"] == 1005


def test_bucket_dealing_is_weight_proportional():
    for weights in ([1], [10000, 10000], [10000, 10000, 5000], [1, 2, 3, 4, 5], [7] * 32, [0, 0, 0],
                    [100, 0, 300]):
        table = cs.deal_buckets(weights)
        assert len(table) == 256
        counts = [sum(1 for b in table if b == i) for i in range(len(weights))]
        assert sum(counts) == 256
        eff = weights if sum(weights) else [1] * len(weights)
        for i, w in enumerate(eff):
            assert abs(counts[i] - 256 * w / sum(eff)) < 1, (weights, counts)
    # interleaved, not in blocks: equal weights alternate
    assert list(cs.deal_buckets([1, 1])[:6]) == [0, 1, 0, 1, 0, 1]
    alt = cs.deal_buckets([1, 1], alt_buckets=range(0, 256, 4))
    assert all((alt[b] & 0x80) == (0x80 if b % 4 == 0 else 0) for b in range(256))
    assert cs.deal_buckets([]) == bytearray([0xFF] * 256)


def test_mask_values_enumerate_every_combination():
    vals = cs.mask_values({"src_addr": 0x1741})
    assert len(vals) == 64
    seen = {v["src_addr"] for v in vals}
    assert len(seen) == 64 and all(s & ~0x1741 == 0 for s in seen)
    assert cs.mask_values({}) == [{"src_addr": 0, "dst_addr": 0, "src_port": 0, "dst_port": 0}]
    two = cs.mask_values({"dst_port": 1, "src_addr": 0x80000000})
    # rev1 VSN order: dst_port bit is the least significant
    assert [(v["src_addr"], v["dst_port"]) for v in two] == [(0, 0), (0, 1), (0x80000000, 0), (0x80000000, 1)]
    with pytest.raises(ValueError):
        cs.mask_values({"src_addr": 0xFFFF})


def test_election_orderings():
    a, b = cs.ip2int("127.1.0.1"), cs.ip2int("127.0.0.2")
    assert min([a, b], key=cs.numeric_key) == b
    assert min([a, b], key=cs.squid_key) == a


# ------------------------------------------------------------------ protocol flows (injected clock)
def test_join_usable_designated_hash_assignment():
    r = MiniRouter(R1)
    ms = [mk("127.42.0.13", weight=100), mk("127.42.0.11", weight=300), mk("127.42.0.12", weight=0)]
    net = Net(ms, [r])
    net.start()
    net.run(0.5)
    # first contact (Receive ID 0) is answered but not usable; second HIA makes it usable
    assert r.usable() == []
    net.run(1.5)
    assert r.usable() == sorted(m.address for m in ms)
    assert all(m.routers[0].usable for m in ms)
    net.run(2.1)                        # every cache has now seen a view listing all three
    des = [m for m in ms if m.is_designated()]
    assert [m.address for m in des] == [cs.ip2int("127.42.0.11")]
    assert all(m.ra_sent is None for m in ms)
    net.run(4.0)
    assert len(r.accepted) == 1, (r.accepted, r.rejected)
    ra = r.accepted[0]
    info = ra["assignment_info"]
    assert info["assignment_key"] == {"address": cs.ip2int("127.42.0.11"), "change_number": 1}
    assert info["web_caches"] == sorted(m.address for m in ms)
    buckets = bytes(info["buckets"])
    # weights 300 / 0 / 100 by address order .11 .12 .13
    assert buckets.count(0) == 192 and buckets.count(1) == 0 and buckets.count(2) == 64
    assert info["routers"] == [{"router_id": R1, "receive_id": r.caches[ms[1].address]["last_rid"],
                                "member_change_number": r.mcn}]
    assert ms[1].ra_sent["buckets"] == buckets
    assert r.key == (cs.ip2int("127.42.0.11"), 1)
    # RA timing: 1.5 T after the last membership change the designated cache saw
    sched = [t for t, s, d, b in net.log if d == R1 and codec.decode(b)["type"] == 12]
    assert len(sched) == 1
    # key reflected -> no repeat later
    net.run(8.0)
    assert ms[1].ra_count == 1 and len(r.accepted) == 1
    assert not any(m.errors for m in ms)


def test_ra_waits_one_and_half_T_and_repeats_until_reflected():
    r = MiniRouter(R1, reflect=False)
    m = mk("127.42.0.11", interval=2.0)
    net = Net([m], [r])
    net.start()
    net.run(2.5)                        # HIA at 0 (first contact), 2 (valid -> usable, mcn 2)
    assert r.usable() == [m.address]
    usable_at = 2.0
    net.run(6.0)
    ras = [t for t, s, d, b in net.log if d == R1 and codec.decode(b)["type"] == 12]
    assert ras and abs(ras[0] - (usable_at + 3.0)) < 0.05, ras
    net.run(12.0)
    ras = [t for t, s, d, b in net.log if d == R1 and codec.decode(b)["type"] == 12]
    assert len(ras) >= 3
    assert all(b - a >= 2.0 - 1e-6 for a, b in zip(ras, ras[1:], strict=False))   # repeat no faster than T
    keys = {codec.decode(b)["assignment_info"]["assignment_key"]["change_number"]
            for t, s, d, b in net.log if d == R1 and codec.decode(b)["type"] == 12}
    assert keys == {1}                  # a repeat re-sends the same key
    r.reflect = True
    net.run(16.0)
    assert len(r.accepted) == 1
    n = m.ra_count
    net.run(22.0)
    assert m.ra_count == n


def test_mask_assignment_round_robin_and_reassignment_after_removal():
    r = MiniRouter(R1, caps=((1, 1), (2, 2), (3, 1)))
    ms = [mk(a, assignment="mask", masks=[{"src_addr": 0x7}, {"dst_port": 0x1}])
          for a in ("127.42.0.21", "127.42.0.22", "127.42.0.23")]
    net = Net(ms, [r])
    net.start()
    net.run(5.0)
    assert len(r.accepted) == 1
    alt = r.accepted[0]["alternate_assignment"]
    assert alt["assignment_type"] == 1
    sets = alt["mask_value_sets"]
    assert [s["masks"]["src_addr"] for s in sets] == [7, 0] and sets[1]["masks"]["dst_port"] == 1
    addrs = [m.address for m in ms]
    assert [v["cache_address"] for v in sets[0]["values"]] == [addrs[i % 3] for i in range(8)]
    assert sorted(v["src_addr"] for v in sets[0]["values"]) == list(range(8))
    assert [v["cache_address"] for v in sets[1]["values"]] == addrs[:2]
    # cache .21 (designated) dies: router drops it; .22 becomes designated and reassigns
    net.cut.add(addrs[0])
    r.drop(addrs[0])
    net.run(10.0)
    assert ms[1].is_designated()
    assert len(r.accepted) == 2
    last = r.accepted[-1]["alternate_assignment"]
    assert last["assignment_key"]["address"] == addrs[1]
    assert {v["cache_address"] for v in last["mask_value_sets"][0]["values"]} == set(addrs[1:])


def test_two_routers_assignment_lists_both_and_squid_election():
    r1, r2 = MiniRouter(R1), MiniRouter(R2)
    ms = [mk("127.1.0.1", routers=(R1, R2), election="squid"),
          mk("127.0.0.2", routers=(R1, R2), election="squid")]
    net = Net(ms, [r1, r2])
    net.start()
    net.run(5.0)
    assert ms[0].is_designated() and not ms[1].is_designated()
    assert len(r1.accepted) == 1 and len(r2.accepted) == 1
    info = r1.accepted[0]["assignment_info"]
    assert [x["router_id"] for x in info["routers"]] == [R1, R2]
    assert info["web_caches"] == sorted(m.address for m in ms)   # list itself is numeric
    hia = codec.decode(ms[0].build_here_i_am())
    assert [x["router_id"] for x in hia["web_cache_view"]["routers"]] == [R1, R2]
    assert hia["web_cache_view"]["web_caches"] == sorted(m.address for m in ms)
    assert hia["web_cache_view"]["change_number"] > 1
    # numeric election instead picks 127.0.0.2
    for m in ms:
        m.election, m.order = "numeric", cs.numeric_key
    assert ms[1].is_designated() and not ms[0].is_designated()


def test_removal_query_three_replies_spaced_T_over_10():
    r = MiniRouter(R1)
    m = mk("127.42.0.31", interval=2.0)
    net = Net([m], [r])
    net.start()
    net.run(0.5)
    before = len(net.log)
    net.inject(r, [r.removal_query(m.address)])
    net.run(1.0)
    hias = [t for t, s, d, b in net.log[before:] if s == m.address and codec.decode(b)["type"] == 10]
    assert len(hias) == 3
    assert abs(hias[1] - hias[0] - 0.2) < 0.02 and abs(hias[2] - hias[1] - 0.2) < 0.02
    assert m.routers[0].rq_count == 1
    # a query for another cache is not answered, and recorded as a router error
    before = len(net.log)
    net.inject(r, [(m.address, r.removal_query(cs.ip2int("127.42.0.99"))[1])])
    net.run(1.5)
    assert not [1 for t, s, d, b in net.log[before:] if s == m.address]
    assert any("target" in e for e in m.errors)


def test_shutdown_and_silence():
    r = MiniRouter(R1)
    ms = [mk("127.42.0.41"), mk("127.42.0.42")]
    net = Net(ms, [r])
    net.start()
    net.run(2.5)
    assert r.usable() == [ms[0].address, ms[1].address]
    net.deliver([(ms[1].address, R1, d) for _to, d in ms[1].shutdown(net.now)])
    assert r.usable() == [ms[0].address]
    assert ms[1].routers[0].shutdown_response
    n = len(net.log)
    net.run(5.0)
    assert not [1 for t, s, d, b in net.log[n:] if s == ms[1].address]
    ms[0].misbehave.add("silent")
    n = len(net.log)
    net.run(8.0)
    assert not [1 for t, s, d, b in net.log[n:] if s == ms[0].address]


def test_strict_checks_record_router_errors():
    r = MiniRouter(R1)
    m = mk("127.42.0.51", password="pw")
    r.password = "pw"
    net = Net([m], [r])
    net.start()
    net.run(2.5)
    assert m.routers[0].usable and not m.errors
    isy = r._isy(m.address)[1]
    # wrong source port
    m.on_message((R1, 3000), codec.decode(isy), isy, 3.0)
    assert any("port 3000" in e for e in m.errors)
    # bad MD5 → dropped
    bad = bytearray(isy)
    bad[-1] ^= 1
    dropped = m.counters["isy_dropped"]
    m.on_message((R1, 2048), codec.decode(bytes(bad)), bytes(bad), 3.0)
    assert m.counters["isy_dropped"] == dropped + 1 and "MD5" in m.errors[-1]
    # service mismatch, not in Received-From, unknown router: all dropped
    msg = codec.plain(codec.decode(isy))
    msg["service"]["service_id"] = 5
    m.on_message((R1, 2048), msg, codec.encode(msg, password="pw"), 3.0)
    assert "service" in m.errors[-1]
    msg = codec.plain(codec.decode(isy))
    msg["router_identity"]["received_from"] = [cs.ip2int("127.42.0.99")]
    m.on_message((R1, 2048), msg, codec.encode(msg, password="pw"), 3.0)
    assert "Received-From" in m.errors[-1]
    m.on_message((R2, 2048), codec.decode(isy), isy, 3.0)
    assert "unconfigured router" in m.errors[-1]
    # capability mismatch: router does not offer mask
    msg = codec.plain(codec.decode(isy))
    msg["capabilities"] = [{"type": 1, "value": 1}, {"type": 2, "value": 1}, {"type": 3, "value": 1}]
    m.assignment = "mask"
    m.on_message((R1, 2048), msg, codec.encode(msg, password="pw"), 3.0)
    assert m.routers[0].cap_ok is False


def test_emulator_and_minirouter_output_decodes_cleanly_in_tshark(tmp_path):
    r = MiniRouter(R1, caps=((1, 3), (2, 3), (3, 3)))
    ms = [mk("127.42.0.61", first_contact="absent"), mk("127.42.0.62", first_contact="absent",
                                                       alt_buckets=range(0, 256, 3)),
          mk("127.42.0.63", first_contact="absent", hash_as_alternate=True)]
    net = Net(ms, [r])
    net.start()
    net.run(5.0)
    ms[2].shutdown(net.now)
    rm = MiniRouter(R2, caps=((1, 1), (2, 2), (3, 1)), password="abc")
    mm = [mk(a, routers=(R2,), assignment="mask", password="abc", first_contact="absent",
             service=cs.dynamic_service(77, ports=[80, 8080]), masks=[{"src_addr": 0x1741}])
          for a in ("127.42.0.71", "127.42.0.72")]
    net2 = Net(mm, [rm])
    net2.start()
    net2.run(5.0)
    net2.inject(rm, [rm.removal_query(mm[0].address)])
    net2.run(6.0)
    assert len(r.accepted) == 1 and len(rm.accepted) == 1
    net.log += net2.log
    types = {codec.decode(b)["type"] for _t, _s, _d, b in net.log}
    assert types == {10, 11, 12, 13}
    p = tmp_path / "sim.pcap"
    net.pcap(p)
    frames = assert_clean(p, min_frames=len(net.log))
    assert len(frames) == len(net.log)


def test_first_contact_zero_only_warns_receive_id_zero(tmp_path):
    m = mk("127.42.0.81")           # Squid-like first contact: router listed with Receive ID 0
    p = tmp_path / "hia.pcap"
    cs.write_pcap(p, [(0.0, (m.address, 2048), (R1, 2048), m.build_here_i_am())])
    probs, frames = problems(p)
    assert len(frames) == 1 and frames[0]["type"] == 10
    assert probs == ["frame 1 (HERE_I_AM): Receive ID shouldn't be 0"]


def test_tshark_check_catches_a_broken_message(tmp_path):
    m = mk("127.42.0.82", first_contact="absent")
    bad = bytearray(m.build_here_i_am())
    bad[7] += 8                     # header length larger than the datagram
    p = tmp_path / "bad.pcap"
    cs.write_pcap(p, [(0.0, (m.address, 2048), (R1, 2048), bytes(bad))])
    probs, _frames = problems(p)
    assert probs and "length" in probs[0]


# ------------------------------------------------------------------ real sockets (asyncio)
class UdpMiniRouter(asyncio.DatagramProtocol):
    def __init__(self, router):
        self.router = router
        self.transport = None
        self.sources = []

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        self.sources.append(addr)
        for to, out in self.router.handle(cs.ip2int(addr[0]), data):
            self.transport.sendto(out, (cs.int2ip(to), addr[1]))


async def _udp_router(addr, router):
    loop = asyncio.get_running_loop()
    proto = UdpMiniRouter(router)
    await loop.create_datagram_endpoint(lambda: proto, local_addr=(addr, 2048))
    return proto


def test_cachesim_over_real_udp_sockets(tmp_path):
    async def main():
        r = MiniRouter("127.42.1.1")
        proto = await _udp_router("127.42.1.1", r)
        events = []
        sim = cs.CacheSim([cs.Member(a, ["127.42.1.1"], interval=0.4, first_contact="absent")
                           for a in ("127.42.1.11", "127.42.1.12")], capture=True, sink=events.append)
        await sim.start()
        try:
            ok = await sim.wait_for(lambda: len(r.accepted) == 1, 5.0)
            assert ok, sim.state()
            st = sim.state()
            assert [c["designated"] for c in st["caches"]] == [True, False]
            assert all(c["routers"][0]["usable"] for c in st["caches"])
            assert st["caches"][0]["assignment_sent"]["caches"] == ["127.42.1.11", "127.42.1.12"]
            await sim.wait_for(lambda: sim.member("127.42.1.11").routers[0].view_key == (r.key), 2.0)
            assert sim.member("127.42.1.11").state()["routers"][0]["view_key"] == ["127.42.1.11", 1]
            sim.shutdown("127.42.1.12")
            ok = await sim.wait_for(lambda: sim.member("127.42.1.12").routers[0].shutdown_response, 2.0)
            assert ok
        finally:
            await sim.stop()
            proto.transport.close()
        assert all(src[1] == 2048 for src in proto.sources)      # caches send from UDP 2048
        assert {e["event"] for e in events} >= {"usable", "assign-scheduled", "send-ra", "send-shutdown"}
        json.dumps(sim.state())                                     # state is JSON-serialisable
        p = tmp_path / "udp.pcap"
        cs.write_pcap(p, sorted(sim.sent + sim.received, key=lambda x: x[0]))
        assert_clean(p, min_frames=6)
        assert sim.counters["decode_errors"] == 0

    asyncio.run(main())


def test_cachesim_counts_garbage_without_crashing():
    async def main():
        sim = cs.CacheSim([cs.Member("127.42.2.11", ["127.42.2.1"], interval=5)])
        await sim.start()
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.42.2.1", 0))
        try:
            for junk in (b"", b"\x00" * 3, b"\x00\x00\x00\x0b\x02\x00\xff\xff", bytes(range(256))):
                s.sendto(junk, ("127.42.2.11", 2048))
            ok = await sim.wait_for(lambda: sim.counters["decode_errors"] >= 4, 2.0)
            assert ok, sim.counters
            assert sim.member("127.42.2.11").counters["isy_received"] == 0
        finally:
            s.close()
            await sim.stop()

    asyncio.run(main())


def test_cli_runs_against_a_router_and_writes_pcap(tmp_path, capsys):
    async def main():
        r = MiniRouter("127.42.3.1")
        proto = await _udp_router("127.42.3.1", r)
        try:
            pcap = tmp_path / "cli.pcap"
            argv = ["cache-sim", "--router", "127.42.3.1", "--caches", "2", "--first-address", "127.42.3.11",
                    "--interval", "0.3", "--duration", "1.6", "--json", "--state", "--pcap", str(pcap),
                    "--first-contact", "absent", "--misbehave", "127.42.3.12=shutdown@1.2"]
            rc = await asyncio.get_running_loop().run_in_executor(None, cli.main, argv)
            return rc, r, pcap
        finally:
            proto.transport.close()

    rc, r, pcap = asyncio.run(main())
    assert rc == 0
    out = capsys.readouterr().out
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{\"t\"")]
    kinds = {e["event"] for e in events}
    assert {"usable", "send-ra", "send-shutdown"} <= kinds
    assert len(r.accepted) == 1
    assert r.usable() == [cs.ip2int("127.42.3.11")]          # .12 shut down
    assert_clean(pcap, min_frames=8)


def test_cli_rejects_bad_options():
    for argv in (["cache-sim", "--service", "dynamic:300"], ["cache-sim", "--mask", "src_addr=0xffffff"],
                 ["cache-sim", "--misbehave", "127.0.0.1=explode"], ["cache-sim", "--service", "weird:1"]):
        with pytest.raises(SystemExit) as e:
            cli.main(argv)
        assert e.value.code == 2


def test_silent_router_stops_counting_after_3T():
    r1, r2 = MiniRouter(R1), MiniRouter(R2)
    ms = [mk("127.42.5.11", routers=(R1, R2)), mk("127.42.5.12", routers=(R1, R2))]
    net = Net(ms, [r1, r2])
    net.start()
    net.run(5.0)
    assert len(r1.accepted) == 1 and len(r2.accepted) == 1
    # router 2 dies; a new cache joins router 1 only... it is seen by router 1 only
    net.cut.add(R2)
    late = mk("127.42.5.13", routers=(R1, R2))
    late.start(net.now)
    net.members.append(late)
    net.run(7.0)
    # within 3 T the dead router's stale view (without .13) still limits the assignment
    assert [x["live"] for x in ms[0].state()["routers"]] == [True, True]
    assert ms[0].ra_sent["caches"] == [ms[0].address, ms[1].address]
    net.run(13.0)
    assert [x["live"] for x in ms[0].state()["routers"]] == [True, False]
    last = r1.accepted[-1]["assignment_info"]
    assert [x["router_id"] for x in last["routers"]] == [R1]
    assert last["web_caches"] == [ms[0].address, ms[1].address, late.address]
    # router 2 comes back: it counts again and gets the next assignment
    net.cut.discard(R2)
    net.run(20.0)
    assert [x["live"] for x in ms[0].state()["routers"]] == [True, True]
    assert r2.accepted[-1]["assignment_info"]["web_caches"] == [ms[0].address, ms[1].address, late.address]
