"""Control-plane integration, in process and deterministic: the firmware's Router state
machine (wccp.router on CPython, reference data-plane model) against the cache emulator
(wccptool.cachesim.Member) with an injected clock and zero-latency delivery.

The same scenarios run against the real firmware under the MicroPython unix port over
loopback UDP in tests/test_integration_firmware.py; this module covers the timer-heavy
cases exactly (removal query at 2.5T, removal at 3T, flush) in milliseconds of wall time.
Every datagram a router emits is written to a pcap and must decode in tshark with no
expert warning.
"""
import pytest

from tsharkcheck_cache import assert_clean
from wccp import codec, config
from wccp.fwdmodel import ForwardingModel
from wccp.router import Router
from wccp.storage import MemStorage
from wccptool import cachesim as cs

T = 1.0     # seconds (router timers.here_i_am_ms = 1000)


def router_cfg(rid, services=None, **extra):
    cfg = {"router_id": rid, "addresses": [rid], "timers": {"here_i_am_ms": int(T * 1000)},
           "services": services or [{"id": 0, "type": "standard"}]}
    cfg.update(extra)
    return config.load(cfg)


class Bench:
    def __init__(self, routers, members):
        self.routers = {}            # address int -> Router
        for r in routers:
            for a in r.addresses:
                self.routers[cs.ip2int(a)] = r
        self.members = list(members)
        self.now = 0.0
        self.router_out = []         # (t, (src, port), (dst, port), payload) emitted by routers
        self.cut = set()

    def ms(self):
        return int(round(self.now * 1000))

    def add_router(self, r):
        for a in r.addresses:
            self.routers[cs.ip2int(a)] = r

    def _router_sends(self, sends, q):
        for dip, dport, sip, payload in sends:
            self.router_out.append((self.now, (cs.ip2int(sip), 2048), (cs.ip2int(dip), dport), payload))
            q.append((cs.ip2int(sip), cs.ip2int(dip), payload))

    def deliver(self, q):
        while q:
            src, dst, data = q.pop(0)
            if src in self.cut or dst in self.cut:
                continue
            r = self.routers.get(dst)
            if r is not None:
                self._router_sends(r.receive(data, cs.int2ip(src), 2048, cs.int2ip(dst), self.ms()), q)
                continue
            for m in self.members:
                if m.address == dst and m.service["service_id"] == codec.decode(data)["service"]["service_id"]:
                    for to, out in m.on_message((src, 2048), codec.decode(data), data, self.now):
                        q.append((m.address, to, out))

    def start(self):
        for m in self.members:
            m.start(self.now)

    def run(self, until, dt=0.01):
        while self.now < until - 1e-9:
            q = []
            for m in self.members:
                q += [(m.address, to, d) for to, d in m.tick(self.now)]
            for r in set(self.routers.values()):
                self._router_sends(r.tick(self.ms()), q)
            self.deliver(q)
            self.now = round(self.now + dt, 6)

    def send_from(self, member, sends):
        self.deliver([(member.address, to, d) for to, d in sends])

    def check_tshark(self, path, min_frames=1):
        cs.write_pcap(path, self.router_out)
        return assert_clean(path, min_frames=min_frames)


def mk(addr, routers, **kw):
    kw.setdefault("interval", T)
    return cs.Member(addr, routers, **kw)


def group(r, sid=0):
    for g in r.status()["groups"]:
        if g["service_id"] == sid:
            return g
    raise KeyError(sid)


def states(r, sid=0):
    return {c["address"]: c["state"] for c in group(r, sid)["caches"]}


def assert_status_matches(r, member, sid=0):
    """The router's /status assignment is exactly what the designated cache sent."""
    sent = member.state()["assignment_sent"]
    g = group(r, sid)
    assert g["assignment_key"] == {"address": sent["key"][0], "change_number": sent["key"][1]}
    a = g["assignment"]
    assert a is not None
    assert a["caches"] == sent["caches"]
    if sent["method"] == "hash":
        assert a["type"] == "hash" and a["buckets"] == sent["buckets"]
    else:
        assert a["type"] == "mask"
        want = [{"masks": s["masks"], "values": [dict(v, src_addr=cs.int2ip(v["src_addr"]),
                                                      dst_addr=cs.int2ip(v["dst_addr"])) for v in s["values"]]}
                for s in sent["mask_value_sets"]]
        assert a["sets"] == want


# ------------------------------------------------------------------ scenarios
def test_join_usable_designated_hash_two_routers_weights(tmp_path):
    r1 = Router(router_cfg("127.61.0.1"), ForwardingModel(), 0)
    r2 = Router(router_cfg("127.61.0.2"), ForwardingModel(), 0)
    rs = ["127.61.0.1", "127.61.0.2"]
    ms = [mk("127.61.0.13", rs, weight=100), mk("127.61.0.11", rs, weight=300), mk("127.61.0.12", rs, weight=200),
          mk("127.61.0.14", rs, weight=0, first_contact="absent")]
    b = Bench([r1, r2], ms)
    b.start()
    b.run(2.5)
    for r in (r1, r2):
        assert set(states(r).values()) == {"usable"} and len(states(r)) == 4
        assert group(r)["routers"] == rs              # routers reported by the caches
    assert all(x["usable"] for m in ms for x in m.state()["routers"])
    b.run(6.0)
    des = [m for m in ms if m.is_designated()]
    assert [m.address for m in des] == [cs.ip2int("127.61.0.11")]
    for r in (r1, r2):
        assert_status_matches(r, des[0])
        assert group(r)["counters"]["ra_accepted"] == 1
        counts = {c["address"]: c["assigned"] for c in group(r)["caches"]}
        assert counts == {"127.61.0.11": 128, "127.61.0.12": 85, "127.61.0.13": 43, "127.61.0.14": 0}
    # the key is reflected, so the designated cache does not repeat
    assert des[0].ra_count == 1
    b.run(9.0)
    assert des[0].ra_count == 1
    assert not any(m.errors for m in ms), [m.errors for m in ms]
    b.check_tshark(tmp_path / "r.pcap", min_frames=30)


def test_mask_assignment_reflected_in_status_and_assignment_map(tmp_path):
    svc = [{"id": 90, "type": "dynamic", "assignment": ["hash", "mask"]}]
    r = Router(router_cfg("127.61.1.1", services=svc), ForwardingModel(), 0)
    dyn = cs.dynamic_service(90, ports=[80, 443], priority=50)
    ms = [mk(a, ["127.61.1.1"], service=dyn, assignment="mask", masks=[{"src_addr": 0x1741}, {"dst_port": 3}])
          for a in ("127.61.1.11", "127.61.1.12", "127.61.1.13")]
    b = Bench([r], ms)
    b.start()
    b.run(6.0)
    g = group(r, 90)
    assert g["definition"] == {"priority": 50, "protocol": 6, "service_flags": 0x12, "ports": [80, 443]}
    assert g["capabilities"]["assignment_locked"] == "mask"
    assert_status_matches(r, ms[0], 90)
    assert sum(c["assigned"] for c in g["caches"]) == 64 + 4
    # the I_SEE_YOUs carry the Assignment Map with the same sets
    isy = [codec.decode(p) for _t, _s, _d, p in b.router_out if codec.decode(p)["type"] == 11][-1]
    sets = codec.plain(isy["assignment_map"]["mask_value_sets"])
    assert sets == ms[0].ra_sent["mask_value_sets"]
    assert not any(m.errors for m in ms)
    b.check_tshark(tmp_path / "m.pcap", min_frames=15)


def test_hash_as_alternate_assignment_and_alt_flags():
    r = Router(router_cfg("127.61.2.1"), ForwardingModel(), 0)
    ms = [mk(a, ["127.61.2.1"], hash_as_alternate=True, alt_buckets=range(0, 256, 8))
          for a in ("127.61.2.11", "127.61.2.12")]
    b = Bench([r], ms)
    b.start()
    b.run(6.0)
    assert_status_matches(r, ms[0])
    assert sum(1 for x in group(r)["assignment"]["buckets"] if x & 0x80) == 32


def test_md5_good_and_bad_password(tmp_path):
    svc = [{"id": 0, "type": "standard", "password": "s3cret"}]
    r = Router(router_cfg("127.61.3.1", services=svc), ForwardingModel(), 0)
    good = mk("127.61.3.11", ["127.61.3.1"], password="s3cret")
    bad = mk("127.61.3.12", ["127.61.3.1"], password="s3cret")
    bad.misbehave.add("bad_md5")
    none = mk("127.61.3.13", ["127.61.3.1"])
    b = Bench([r], [good, bad, none])
    b.start()
    b.run(5.0)
    assert states(r) == {"127.61.3.11": "usable"}
    g = group(r)
    assert g["drops"]["md5_failure"] >= 5 and g["drops"]["security_mismatch"] >= 5
    assert bad.counters["isy_received"] == 0 and none.counters["isy_received"] == 0
    assert_status_matches(r, good)
    assert not good.errors
    for _t, _s, _d, p in b.router_out:
        assert codec.verify_md5(p, "s3cret")
    b.check_tshark(tmp_path / "md5.pcap", min_frames=5)


def test_cache_failure_query_removal_purge_and_reassignment(tmp_path):
    r = Router(router_cfg("127.61.4.1"), ForwardingModel(), 0)
    ms = [mk(a, ["127.61.4.1"]) for a in ("127.61.4.11", "127.61.4.12", "127.61.4.13")]
    b = Bench([r], ms)
    b.start()
    b.run(6.0)
    assert_status_matches(r, ms[0])
    first_key = ms[0].ra_sent["key"]
    # the designated cache goes silent at t=6.0 (its last HIA was at t=5.0... cadence 1 s)
    ms[0].misbehave.add("silent")
    last = max(t for t, s, d, p in [(x[0], x[1], x[2], x[3]) for x in b.router_out]
               if d[0] == ms[0].address and codec.decode(p)["type"] == 11)
    b.run(last + 2.4)
    assert group(r)["counters"]["rq_tx"] == 0
    b.run(last + 2.6)
    rqs = [(t, codec.decode(p)) for t, s, d, p in b.router_out if codec.decode(p)["type"] == 13]
    assert len(rqs) == 1 and rqs[0][1]["router_query"]["target"] == ms[0].address
    assert abs(rqs[0][0] - (last + 2.5)) < 0.05
    assert states(r)["127.61.4.11"] == "usable"
    b.run(last + 3.05)
    g = group(r)
    assert "127.61.4.11" not in states(r) and g["counters"]["removals_timeout"] == 1
    # purged: its buckets are unassigned right away, the others keep theirs
    assert 0 not in g["assignment"]["buckets"] and g["assignment"]["buckets"].count(0xFF) in (85, 86)
    b.run(last + 7.0)
    assert ms[1].is_designated()
    assert ms[1].ra_sent["key"][0] != first_key[0]
    assert_status_matches(r, ms[1])
    assert group(r)["assignment"]["caches"] == ["127.61.4.12", "127.61.4.13"]
    b.check_tshark(tmp_path / "fail.pcap", min_frames=30)


def test_removal_query_answered_keeps_cache():
    r = Router(router_cfg("127.61.5.1"), ForwardingModel(), 0)
    m = mk("127.61.5.11", ["127.61.5.1"])
    b = Bench([r], [m])
    b.start()
    b.run(3.0)
    # periodic HIAs lost for a while, but the cache answers the query (3 HIAs, T/10 apart)
    b.cut.add(m.address)
    b.run(4.4)
    b.cut.discard(m.address)
    m.next_hia = 100.0              # no periodic HIA for a long time: only query replies
    b.run(6.0)
    assert m.routers[0].rq_count == 1
    assert states(r) == {"127.61.5.11": "usable"}
    assert group(r)["counters"]["removals_timeout"] == 0


def test_shutdown_removes_at_once_and_is_acknowledged(tmp_path):
    r = Router(router_cfg("127.61.6.1"), ForwardingModel(), 0)
    ms = [mk(a, ["127.61.6.1"]) for a in ("127.61.6.11", "127.61.6.12")]
    b = Bench([r], ms)
    b.start()
    b.run(6.0)
    assert_status_matches(r, ms[0])
    b.send_from(ms[1], ms[1].shutdown(b.now))
    assert states(r) == {"127.61.6.11": "usable"}
    assert group(r)["counters"]["removals_shutdown"] == 1
    assert ms[1].routers[0].shutdown_response
    ack = [codec.decode(p) for _t, _s, d, p in b.router_out if d[0] == ms[1].address][-1]
    assert ack["command_extension"] == [{"type": 2, "data": ms[1].address}]
    assert 1 not in group(r)["assignment"]["buckets"]
    b.run(10.0)
    assert_status_matches(r, ms[0])
    assert group(r)["assignment"]["caches"] == ["127.61.6.11"]
    b.check_tshark(tmp_path / "sd.pcap", min_frames=10)


def test_reboot_changes_member_change_number_and_caches_reassign():
    store = MemStorage()
    r = Router(router_cfg("127.61.7.1"), ForwardingModel(), 0, storage=store)
    ms = [mk(a, ["127.61.7.1"]) for a in ("127.61.7.11", "127.61.7.12")]
    b = Bench([r], ms)
    b.start()
    b.run(6.0)
    mcn1 = group(r)["member_change_number"]
    assert_status_matches(r, ms[0])
    # reboot: a fresh router with the same storage and no state
    r2 = Router(router_cfg("127.61.7.1"), ForwardingModel(), b.ms(), storage=store)
    b.add_router(r2)
    assert r2.status()["boot"] == r.status()["boot"] + 1
    b.run(12.0)
    g = group(r2)
    assert g["member_change_number"] != mcn1
    assert ms[0].routers[0].member_change_number == g["member_change_number"]
    assert ms[0].ra_count == 2
    assert_status_matches(r2, ms[0])


def test_capability_mismatch_and_wrong_receive_id_keep_cache_unusable():
    r = Router(router_cfg("127.61.8.1"), ForwardingModel(), 0)
    l2 = mk("127.61.8.11", ["127.61.8.1"], forwarding=2, return_method=2)
    masky = mk("127.61.8.12", ["127.61.8.1"], assignment="mask")
    liar = mk("127.61.8.13", ["127.61.8.1"])
    liar.misbehave.add("wrong_receive_id")
    ok = mk("127.61.8.14", ["127.61.8.1"])
    b = Bench([r], [l2, masky, liar, ok])
    b.start()
    b.run(6.0)
    st = {c["address"]: c for c in group(r)["caches"]}
    assert st["127.61.8.14"]["state"] == "usable"
    for a in ("127.61.8.11", "127.61.8.12", "127.61.8.13"):
        assert st[a]["state"] == "pending"
    assert "capability" in st["127.61.8.11"]["reason"] and "capability" in st["127.61.8.12"]["reason"]
    assert group(r)["counters"]["capability_mismatch"] >= 8
    assert group(r)["counters"]["hia_invalid_receive_id"] >= 5
    # the emulator sees the mismatch too (the router does not offer L2 / mask)
    assert l2.routers[0].cap_ok is False and masky.routers[0].cap_ok is False
    assert_status_matches(r, ok)
    assert group(r)["assignment"]["caches"] == ["127.61.8.14"]


def test_hia_flood_from_spoofed_addresses_does_not_evict_usable_caches():
    r = Router(router_cfg("127.61.9.1"), ForwardingModel(), 0)
    ms = [mk(a, ["127.61.9.1"]) for a in ("127.61.9.11", "127.61.9.12")]
    b = Bench([r], ms)
    b.start()
    b.run(6.0)
    before = group(r)["assignment"]
    tmpl = mk("127.62.0.1", ["127.61.9.1"])
    for i in range(5000):
        tmpl.address = cs.ip2int("127.62.0.0") + i + 1
        r.receive(tmpl.build_here_i_am(), cs.int2ip(tmpl.address), 2048, "127.61.9.1", b.ms())
    st = r.status()
    assert st["total_caches"] <= 2 + 32
    assert states(r)["127.61.9.11"] == "usable" and states(r)["127.61.9.12"] == "usable"
    g = group(r)
    assert g["counters"]["pending_evicted"] == 0            # unverified senders never evict
    assert g["drops"]["rate_limited_global"] + g["counters"]["isy_stateless"] >= 5000 - 32
    b.run(8.0)
    assert group(r)["assignment"] == before
    assert all(x == "usable" for a, x in states(r).items() if a.startswith("127.61.9."))


@pytest.mark.parametrize("election", ["numeric", "squid"])
def test_election_ordering_against_the_router(election):
    r = Router(router_cfg("127.61.10.1"), ForwardingModel(), 0)
    ms = [mk(a, ["127.61.10.1"], election=election) for a in ("127.61.10.2", "127.61.11.1")]
    b = Bench([r], ms)
    b.start()
    b.run(6.0)
    want = "127.61.10.2" if election == "numeric" else "127.61.11.1"
    assert group(r)["assignment_key"]["address"] == want
    des = [m for m in ms if cs.int2ip(m.address) == want][0]
    assert_status_matches(r, des)


def test_l2_adjacent_caches_and_default_capabilities():
    svc = [{"id": 0, "type": "standard", "forwarding": ["gre", "l2"], "return": ["gre", "l2"],
            "l2_adjacent": ["127.61.13.11"]}]
    r = Router(router_cfg("127.61.13.1", services=svc), ForwardingModel(), 0)
    adj = mk("127.61.13.11", ["127.61.13.1"], forwarding=2, return_method=2)
    far = mk("127.61.13.12", ["127.61.13.1"], forwarding=2, return_method=1)
    nocap = mk("127.61.13.13", ["127.61.13.1"], send_capabilities=False)
    b = Bench([r], [adj, far, nocap])
    b.start()
    b.run(6.0)
    st = {c["address"]: c for c in group(r)["caches"]}
    assert st["127.61.13.11"]["state"] == "usable" and st["127.61.13.11"]["forwarding"] == "l2"
    assert st["127.61.13.12"]["state"] == "pending" and "L2" in st["127.61.13.12"]["reason"]
    assert st["127.61.13.13"]["state"] == "usable"
    assert (st["127.61.13.13"]["forwarding"], st["127.61.13.13"]["return"]) == ("gre", "gre")
    assert adj.routers[0].cap_ok and nocap.routers[0].cap_ok and far.routers[0].cap_ok is False
    assert_status_matches(r, adj)
    assert group(r)["assignment"]["caches"] == ["127.61.13.11", "127.61.13.13"]


def test_one_cache_in_two_service_groups(tmp_path):
    svc = [{"id": 0, "type": "standard"}, {"id": 91, "type": "dynamic", "assignment": ["mask"]}]
    r = Router(router_cfg("127.61.14.1", services=svc), ForwardingModel(), 0)
    dyn = cs.dynamic_service(91, protocol=17, ports=[53], priority=10)
    ms = []
    for a in ("127.61.14.11", "127.61.14.12"):
        ms.append(mk(a, ["127.61.14.1"]))
        ms.append(mk(a, ["127.61.14.1"], service=dyn, assignment="mask", masks=[{"src_addr": 1}]))
    b = Bench([r], ms)
    b.start()
    b.run(6.0)
    assert_status_matches(r, ms[0], 0)
    assert_status_matches(r, ms[1], 91)
    assert group(r, 91)["assignment"]["type"] == "mask" and group(r, 0)["assignment"]["type"] == "hash"
    assert group(r, 91)["definition"]["protocol"] == 17
    assert not any(m.errors for m in ms)
    b.check_tshark(tmp_path / "two.pcap", min_frames=20)


def test_router_with_two_interfaces_answers_from_the_address_used(tmp_path):
    cfg = config.load({"router_id": "127.61.15.9", "addresses": ["127.61.15.1", "127.61.15.2"],
                       "timers": {"here_i_am_ms": 1000}, "services": [{"id": 0, "type": "standard"}]})
    r = Router(cfg, ForwardingModel(), 0)
    a = mk("127.61.15.11", ["127.61.15.1"])
    b_ = mk("127.61.15.12", ["127.61.15.2"])
    b = Bench([r], [a, b_])
    b.start()
    b.run(6.0)
    # each cache hears from the interface it talks to (the emulator drops anything else) and
    # learns the Router ID; the Router View lists the router once, by its ID
    for m, iface in ((a, "127.61.15.1"), (b_, "127.61.15.2")):
        st = m.state()["routers"][0]
        assert st["address"] == iface and st["router_id"] == "127.61.15.9" and st["usable"]
        assert not m.errors, m.errors
    for _t, src, dst, _p in b.router_out:
        assert src[0] == cs.ip2int("127.61.15.1" if dst[0] == a.address else "127.61.15.2")
    assert group(r)["routers"] == ["127.61.15.9"]
    assert_status_matches(r, a)
    assert group(r)["assignment"]["caches"] == ["127.61.15.11", "127.61.15.12"]
    b.check_tshark(tmp_path / "if.pcap", min_frames=10)


def test_flush_5T_after_membership_change_without_assignment():
    r = Router(router_cfg("127.61.16.1"), ForwardingModel(), 0)
    ms = [mk("127.61.16.11", ["127.61.16.1"]), mk("127.61.16.12", ["127.61.16.1"])]
    late = mk("127.61.16.13", ["127.61.16.1"], first_delay=7.0)
    b = Bench([r], ms + [late])
    b.start()
    b.run(6.0)
    assert_status_matches(r, ms[0])
    ms[0].misbehave.add("no_assign")      # the designated cache stops assigning
    b.run(8.5)                            # .13 joined at ~8.0: membership change
    assert states(r)["127.61.16.13"] == "usable"
    g = group(r)
    assert g["assignment"] is not None and g["flush_in_ms"] is not None
    change = 8.0
    b.run(change + 4.8)
    assert group(r)["assignment"] is not None
    b.run(change + 5.3)
    g = group(r)
    assert g["assignment"] is None and g["counters"]["flushes"] == 1
    assert g["assignment_key"] == {"address": "0.0.0.0", "change_number": 0}
    # the cache resumes: a new assignment covers all three
    ms[0].misbehave.discard("no_assign")
    b.run(change + 10.0)
    assert_status_matches(r, ms[0])
    assert group(r)["assignment"]["caches"] == ["127.61.16.11", "127.61.16.12", "127.61.16.13"]
