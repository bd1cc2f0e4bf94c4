"""Router state machine: every rule of issue 3 with an injected clock (CPython and MicroPython).

Messages are built and parsed with the codec; the data plane is a recording fake with a
shadow/live split, so "handed over atomically" means: visible only after one commit.
"""
from fwtest import scratch_name
from wccp import codec, config
from wccp.router import Router, WEB_CACHE_DEFINITION, C_RID, C_REASON, C_ROUTERS, is_usable
from wccp.storage import MemStorage, FileStorage

R = "127.0.0.1"          # router address = router ID unless a test says otherwise
T = 10000


def ip(s):
    return codec.ip2int(s)


class FakeDP:
    """Recording data plane: writes go to a shadow copy, commit() publishes them."""

    def __init__(self):
        self.shadow = {}
        self.live = {}
        self.commits = 0
        self.calls = []
        self.beats = 0
        self.configured = None

    def configure(self, router_id, mac, mtu=1500):
        self.configured = (router_id, bytes(mac), mtu)

    def _slot(self, slot):
        assert 0 <= slot < 8
        return self.shadow.setdefault(slot, {})

    def set_group(self, slot, service):
        self.calls.append(("set_group", slot))
        self._slot(slot)["service"] = dict(service)

    def set_caches(self, slot, caches):
        assert len(caches) <= 32
        for c in caches:
            assert c["forward"] in (1, 2) and c["ret"] in (1, 2)
        self.calls.append(("set_caches", slot))
        self._slot(slot)["caches"] = [dict(c) for c in caches]

    def set_hash(self, slot, buckets):
        assert len(buckets) == 256
        self.calls.append(("set_hash", slot))
        s = self._slot(slot)
        s["hash"] = bytes(buckets)
        s.pop("mask", None)

    def set_mask(self, slot, sets):
        self.calls.append(("set_mask", slot))
        s = self._slot(slot)
        s["mask"] = [{"masks": tuple(x["masks"]), "values": [tuple(v) for v in x["values"]]} for x in sets]
        s.pop("hash", None)

    def clear_assignment(self, slot):
        self.calls.append(("clear_assignment", slot))
        s = self._slot(slot)
        s.pop("hash", None)
        s.pop("mask", None)

    def clear_group(self, slot):
        self.calls.append(("clear_group", slot))
        self.shadow.pop(slot, None)

    def commit(self):
        self.commits += 1
        self.calls.append(("commit",))
        live = {}
        for k in self.shadow:
            v = self.shadow[k]
            live[k] = dict(v)
        self.live = live

    def heartbeat(self):
        self.beats += 1

    def counters(self):
        return {"commits": self.commits}


def make(services=None, now=0, storage=None, dp=None, **top):
    cfgd = {"router_id": top.pop("router_id", R), "addresses": top.pop("addresses", [R]),
            "services": services or [{"id": 0}]}
    cfgd.update(top)
    cfg = config.load(cfgd)
    dp = dp or FakeDP()
    r = Router(cfg, dp, now, storage=storage or MemStorage(), seed=1)
    return r, dp


def svc(sid=0, stype=None, priority=0, protocol=0, flags=0, ports=None):
    if stype is None:
        stype = 0 if sid == 0 else 1
    p = list(ports or [])
    p += [0] * (8 - len(p))
    return {"service_type": stype, "service_id": sid, "priority": priority, "protocol": protocol,
            "service_flags": flags, "ports": p}


DYN = dict(priority=100, protocol=6, flags=0x12, ports=[8080])


def hia(cache, rid=0, router=R, service=None, caps=None, password=None, mask=False, weight=10000,
        routers=None, shutdown=False, flags=0, version=0x0200):
    ident = {"address": ip(cache), "hash_revision": 0, "flags": flags, "weight": weight, "status": 0}
    if mask:
        ident["data_type"] = "mask"
        ident["mask_value_sets"] = [{"masks": {"src_addr": 0, "dst_addr": 0x1741, "src_port": 0, "dst_port": 0},
                                     "values": []}]
    else:
        ident["data_type"] = "hash"
        ident["bucket_bitmap"] = bytes(32)
    rl = routers if routers is not None else [(router, rid)]
    msg = {"type": 10, "version": version,
           "security": {"option": 1, "digest": None} if password else {"option": 0},
           "service": service or svc(0),
           "web_cache_identity": ident,
           "web_cache_view": {"change_number": 1,
                              "routers": [{"router_id": ip(a), "receive_id": b} for a, b in rl],
                              "web_caches": []}}
    if caps is not None:
        msg["capabilities"] = [{"type": t, "value": v} for t, v in caps]
    if shutdown:
        msg["command_extension"] = [{"type": 1, "data": ip(cache)}]
    return codec.encode(msg, None, password)


def ra_hash(cache, routers, caches, buckets=None, service=None, key_cn=1, alt=False, password=None):
    n = len(caches)
    if buckets is None:
        buckets = bytes([i % n for i in range(256)])
    info = {"assignment_key": {"address": ip(cache), "change_number": key_cn},
            "routers": [{"router_id": ip(a), "receive_id": b, "member_change_number": c} for a, b, c in routers],
            "web_caches": [ip(x) for x in caches], "buckets": buckets}
    msg = {"type": 12, "version": 0x0200,
           "security": {"option": 1, "digest": None} if password else {"option": 0},
           "service": service or svc(0)}
    if alt:
        info["assignment_type"] = 0
        msg["alternate_assignment"] = info
    else:
        msg["assignment_info"] = info
    return codec.encode(msg, None, password)


def ra_mask(cache, routers, sets, service=None, key_cn=1):
    info = {"assignment_type": 1,
            "assignment_key": {"address": ip(cache), "change_number": key_cn},
            "routers": [{"router_id": ip(a), "receive_id": b, "member_change_number": c} for a, b, c in routers],
            "mask_value_sets": sets}
    msg = {"type": 12, "version": 0x0200, "security": {"option": 0}, "service": service or svc(0),
           "alternate_assignment": info}
    return codec.encode(msg)


def mask_sets(caches, mask=0x1741, nvalues=64):
    # values for the set bits of `mask` on dst_addr, dealt round-robin like Squid
    bits = [b for b in range(32) if mask >> b & 1]
    vals = []
    for k in range(nvalues):
        v = 0
        for j, b in enumerate(bits):
            if k >> j & 1:
                v |= 1 << b
        vals.append({"src_addr": 0, "dst_addr": v, "src_port": 0, "dst_port": 0,
                     "cache_address": ip(caches[k % len(caches)])})
    return [{"masks": {"src_addr": 0, "dst_addr": mask, "src_port": 0, "dst_port": 0}, "values": vals}]


def one(out):
    assert len(out) == 1, out
    return out[0]


def isy_of(out):
    dst, port, src, payload = one(out)
    m = codec.decode(payload)
    assert m["type"] == 11 and m["version"] == 0x0200
    return m


def join(r, cache, now=0, dst=R, **kw):
    """First contact + valid HIA; returns the last I_SEE_YOU (decoded)."""
    m = isy_of(r.receive(hia(cache, 0, **kw), cache, 2048, dst, now))
    rid = m["router_identity"]["receive_id"]
    m = isy_of(r.receive(hia(cache, rid, **kw), cache, 2048, dst, now))
    return m


def rid_of(m):
    return m["router_identity"]["receive_id"]


def group(r, sid=None):
    if sid is None:
        return r.groups[0]
    for g in r.groups:
        if g.sid == sid:
            return g


def cache_state(r, addr, sid=None):
    c = group(r, sid).caches.get(ip(addr))
    if c is None:
        return None
    return "usable" if is_usable(c) else "pending"


# ------------------------------------------------------------------------ HERE_I_AM / I_SEE_YOU

def test_first_contact_gets_isy_but_cache_not_usable():
    r, dp = make()
    out = r.receive(hia("127.0.0.2", 0), "127.0.0.2", 2048, R, 1000)
    dst, port, src, payload = one(out)
    assert (dst, port, src) == ("127.0.0.2", 2048, R)
    m = codec.decode(payload)
    assert m["type"] == 11 and m["version"] == 0x0200
    ri = m["router_identity"]
    assert ri["router_id"] == ip(R) and ri["receive_id"] != 0
    assert ri["sent_to"] == ip(R) and ri["received_from"] == [ip("127.0.0.2")]
    assert m["router_view"]["web_caches"] == []
    assert m["service"] == svc(0)
    assert cache_state(r, "127.0.0.2") == "pending"
    assert group(r).caches[ip("127.0.0.2")][C_REASON] == "first contact"


def test_valid_receive_id_makes_cache_usable_and_bumps_change_number():
    r, dp = make()
    m1 = isy_of(r.receive(hia("127.0.0.2", 0), "127.0.0.2", 2048, R, 0))
    mcn0 = m1["router_view"]["member_change_number"]
    m2 = isy_of(r.receive(hia("127.0.0.2", rid_of(m1)), "127.0.0.2", 2048, R, 10))
    assert cache_state(r, "127.0.0.2") == "usable"
    assert rid_of(m2) != rid_of(m1) and rid_of(m2) != 0
    rv = m2["router_view"]
    assert rv["member_change_number"] == mcn0 + 1
    assert [e["address"] for e in rv["web_caches"]] == [ip("127.0.0.2")]
    el = rv["web_caches"][0]
    assert el["data_type"] == "hash" and el["weight"] == 10000 and codec.identity_unassigned(el)
    assert rv["routers"] == [ip(R)]
    assert rv["assignment_key"] == {"address": 0, "change_number": 0}
    # keeps being usable with the next valid HIA; no further membership change
    m3 = isy_of(r.receive(hia("127.0.0.2", rid_of(m2)), "127.0.0.2", 2048, R, 20))
    assert m3["router_view"]["member_change_number"] == mcn0 + 1


def test_stale_receive_id_is_answered_but_ignored():
    r, dp = make()
    m1 = isy_of(r.receive(hia("127.0.0.2", 0), "127.0.0.2", 2048, R, 0))
    m2 = isy_of(r.receive(hia("127.0.0.2", rid_of(m1) + 7), "127.0.0.2", 2048, R, 0))
    assert cache_state(r, "127.0.0.2") == "pending"
    assert group(r).caches[ip("127.0.0.2")][C_REASON] == "stale receive ID"
    assert r.counters["hia_invalid_receive_id"] == 2
    # the per-cache last Receive ID counts: an older one no longer validates
    isy_of(r.receive(hia("127.0.0.2", rid_of(m1)), "127.0.0.2", 2048, R, 0))
    assert cache_state(r, "127.0.0.2") == "pending"
    m4 = isy_of(r.receive(hia("127.0.0.2", 0), "127.0.0.2", 2048, R, 0))
    isy_of(r.receive(hia("127.0.0.2", rid_of(m4)), "127.0.0.2", 2048, R, 0))
    assert cache_state(r, "127.0.0.2") == "usable"
    assert rid_of(m2) != rid_of(m1)


def test_receive_id_is_per_cache_last_sent():
    r, dp = make()
    a = isy_of(r.receive(hia("127.0.0.2", 0), "127.0.0.2", 2048, R, 0))
    b = isy_of(r.receive(hia("127.0.0.3", 0), "127.0.0.3", 2048, R, 0))
    assert rid_of(b) == rid_of(a) + 1       # one counter per group, incremented per ISY
    # cache 2 echoes the ID sent to it (not the group's latest) and is valid
    isy_of(r.receive(hia("127.0.0.2", rid_of(a)), "127.0.0.2", 2048, R, 0))
    assert cache_state(r, "127.0.0.2") == "usable"
    isy_of(r.receive(hia("127.0.0.3", rid_of(a)), "127.0.0.3", 2048, R, 0))
    assert cache_state(r, "127.0.0.3") == "pending"


def test_receive_id_never_zero_on_wrap():
    r, dp = make()
    group(r).rid = 0xFFFFFFFF
    m = isy_of(r.receive(hia("127.0.0.2", 0), "127.0.0.2", 2048, R, 0))
    assert rid_of(m) == 1


def test_reply_from_address_cache_sent_to_and_to_its_port():
    r, dp = make(router_id="10.255.0.1", addresses=["127.0.0.1", "127.0.0.9"])
    out = r.receive(hia("127.0.0.2", 0, router="127.0.0.9"), "127.0.0.2", 40000, "127.0.0.9", 0)
    dst, port, src, payload = one(out)
    assert (dst, port, src) == ("127.0.0.2", 40000, "127.0.0.9")
    m = codec.decode(payload)
    assert m["router_identity"]["router_id"] == ip("10.255.0.1")
    assert m["router_identity"]["sent_to"] == ip("127.0.0.9")
    # the cache may name us by interface address (first contact) or by Router ID (after): both valid
    m2 = isy_of(r.receive(hia("127.0.0.2", rid_of(m), router="127.0.0.9"), "127.0.0.2", 2048, "127.0.0.9", 0))
    assert cache_state(r, "127.0.0.2") == "usable"
    isy_of(r.receive(hia("127.0.0.2", rid_of(m2), router="10.255.0.1"), "127.0.0.2", 2048, "127.0.0.9", 0))
    assert cache_state(r, "127.0.0.2") == "usable"
    # reported routers: ourselves by Router ID
    assert group(r).caches[ip("127.0.0.2")][C_ROUTERS] == (ip("10.255.0.1"),)


def test_header_version_0200_even_to_201_cache():
    r, dp = make()
    m = isy_of(r.receive(hia("127.0.0.2", 0, version=0x0201), "127.0.0.2", 2048, R, 0))
    assert m["version"] == 0x0200


# ------------------------------------------------------------------------ service groups

def test_unconfigured_service_dropped_and_counted():
    r, dp = make()
    out = r.receive(hia("127.0.0.2", 0, service=svc(77, **DYN)), "127.0.0.2", 2048, R, 0)
    assert out == []
    assert r.drops["unconfigured_service"] == 1


def test_standard_service_programs_web_cache_definition():
    r, dp = make()
    assert dp.commits >= 1
    s = dp.live[0]["service"]
    assert s["protocol"] == 6 and s["ports"][0] == 80 and s["service_flags"] & 0x0002
    assert s["service_flags"] & 0x0010 and s["priority"] == 240 and s["service_id"] == 0
    assert dp.configured[0] == ip(R)
    # the cache's own (all-zero) Service Info is echoed, not the effective definition
    m = join(r, "127.0.0.2")
    assert m["service"] == svc(0)
    assert WEB_CACHE_DEFINITION["ports"][0] == 80


def test_dynamic_service_defined_by_first_cache_conflicts_discarded():
    r, dp = make([{"id": 90, "type": "dynamic"}])
    assert dp.live == {}            # undefined: no slot programmed
    s1 = svc(90, **DYN)
    m = join(r, "127.0.0.2", service=s1)
    assert m["service"] == s1       # echoed exactly
    assert dp.live[0]["service"]["ports"][0] == 8080 and dp.live[0]["service"]["protocol"] == 6
    bad = svc(90, priority=100, protocol=17, flags=0x12, ports=[53])
    out = r.receive(hia("127.0.0.3", 0, service=bad), "127.0.0.3", 2048, R, 0)
    assert out == [] and r.drops["service_conflict"] == 1
    assert cache_state(r, "127.0.0.3") is None
    # the same definition is fine
    join(r, "127.0.0.4", service=s1)
    assert cache_state(r, "127.0.0.4") == "usable"


def test_dynamic_definition_forgotten_when_group_empties():
    r, dp = make([{"id": 90, "type": "dynamic"}])
    s1 = svc(90, **DYN)
    join(r, "127.0.0.2", service=s1)
    r.tick(3 * T + 1)
    assert group(r, 90).definition is None
    assert dp.live == {}
    s2 = svc(90, priority=10, protocol=17, flags=0x01, ports=[])
    m = join(r, "127.0.0.3", now=3 * T + 2, service=s2)
    assert m["service"] == s2 and dp.live[0]["service"]["protocol"] == 17


def test_slots_in_priority_order():
    r, dp = make([{"id": 0}, {"id": 91, "type": "dynamic"}, {"id": 92, "type": "dynamic"}])
    join(r, "127.0.0.2", service=svc(91, priority=100, protocol=6, flags=0x1, ports=[]))
    join(r, "127.0.0.3", service=svc(92, priority=250, protocol=17, flags=0x1, ports=[]))
    ids = [dp.live[i]["service"]["service_id"] for i in range(3)]
    assert ids == [92, 0, 91]
    assert 3 not in dp.live


def test_several_groups_independent():
    r, dp = make([{"id": 0}, {"id": 91, "type": "dynamic"}])
    join(r, "127.0.0.2")
    m = isy_of(r.receive(hia("127.0.0.2", 0, service=svc(91, **DYN)), "127.0.0.2", 2048, R, 0))
    assert cache_state(r, "127.0.0.2", 91) == "pending" and cache_state(r, "127.0.0.2", 0) == "usable"
    assert m["service"]["service_id"] == 91


# ------------------------------------------------------------------------ capabilities

def caps_of(m):
    d = {}
    for e in m["capabilities"]:
        d[e["type"]] = e["value"]
    return d


def test_capabilities_advertised_every_isy_four_byte_values():
    r, dp = make([{"id": 0, "forwarding": ["gre", "l2"], "return": ["gre", "l2"], "assignment": ["hash", "mask"],
                   "l2_adjacent": ["127.0.0.5"]}])
    m = isy_of(r.receive(hia("127.0.0.2", 0), "127.0.0.2", 2048, R, 0))
    assert caps_of(m) == {1: 1, 2: 3, 3: 1}       # no L2 for a non-adjacent cache
    for e in m["capabilities"]:
        assert isinstance(e["value"], int)      # codec decodes 4-byte values as int
    m = isy_of(r.receive(hia("127.0.0.5", 0), "127.0.0.5", 2048, R, 0))
    assert caps_of(m) == {1: 3, 2: 3, 3: 3}


def test_capabilities_absent_means_gre_hash_gre():
    r, dp = make([{"id": 0, "forwarding": ["l2"], "return": ["gre"], "l2_adjacent": ["127.0.0.2"]}])
    join(r, "127.0.0.2")
    assert cache_state(r, "127.0.0.2") == "pending"
    assert "forwarding method gre" in group(r).caches[ip("127.0.0.2")][C_REASON]
    join(r, "127.0.0.2", caps=[(1, 2), (2, 1), (3, 1)])
    assert cache_state(r, "127.0.0.2") == "usable"
    assert dp.live[0]["caches"][0]["forward"] == 2


def test_capability_mismatch_and_l2_only_when_adjacent():
    r, dp = make([{"id": 0, "forwarding": ["gre", "l2"], "return": ["gre", "l2"], "l2_adjacent": [
        {"address": "127.0.0.5", "mac": "02:00:00:00:00:05"}]}])
    join(r, "127.0.0.2", caps=[(1, 2), (2, 1), (3, 1)])
    assert cache_state(r, "127.0.0.2") == "pending"
    assert r.counters["capability_mismatch"] == 1
    join(r, "127.0.0.3", caps=[(1, 1), (2, 2), (3, 1)])      # mask not configured
    assert cache_state(r, "127.0.0.3") == "pending"
    join(r, "127.0.0.4", caps=[(1, 3), (2, 1), (3, 1)])      # not a single choice
    assert cache_state(r, "127.0.0.4") == "pending"
    join(r, "127.0.0.5", caps=[(1, 2), (2, 1), (3, 2), (99, 7)])  # unknown types ignored
    assert cache_state(r, "127.0.0.5") == "usable"
    c = dp.live[0]["caches"][0]
    assert c["forward"] == 2 and c["ret"] == 2 and c["mac"] == bytes([2, 0, 0, 0, 0, 5])


def test_first_cache_fixes_assignment_method():
    r, dp = make([{"id": 0, "assignment": ["hash", "mask"]}])
    join(r, "127.0.0.2", caps=[(1, 1), (2, 2), (3, 1)], mask=True)
    m = join(r, "127.0.0.3", caps=[(1, 1), (2, 1), (3, 1)])
    assert cache_state(r, "127.0.0.3") == "pending"
    assert caps_of(m)[2] == 2          # only the group's method is advertised now
    join(r, "127.0.0.4", caps=[(1, 1), (2, 2), (3, 1)], mask=True)
    assert cache_state(r, "127.0.0.4") == "usable"


def test_usable_cache_changing_to_bad_capability_leaves_group():
    r, dp = make()
    m = join(r, "127.0.0.2")
    mcn = m["router_view"]["member_change_number"]
    m = isy_of(r.receive(hia("127.0.0.2", rid_of(m), caps=[(1, 2)]), "127.0.0.2", 2048, R, 0))
    assert cache_state(r, "127.0.0.2") == "pending"
    assert m["router_view"]["member_change_number"] == mcn + 1
    assert m["router_view"]["web_caches"] == []


# ------------------------------------------------------------------------ views and assignment

def test_routers_reported_by_caches_listed():
    r, dp = make()
    m = isy_of(r.receive(hia("127.0.0.2", 0), "127.0.0.2", 2048, R, 0))
    m = isy_of(r.receive(hia("127.0.0.2", 0, routers=[(R, rid_of(m)), ("10.9.9.9", 5)]), "127.0.0.2", 2048, R, 0))
    assert m["router_view"]["routers"] == [ip(R), ip("10.9.9.9")]


def _two_caches(r):
    join(r, "127.0.0.2")
    m = join(r, "127.0.0.3")
    return m


def _last_rid(r, addr, sid=None):
    return group(r, sid).caches[ip(addr)][C_RID]


def _two_caches_hashed(r):
    """Caches 127.0.0.2 and .3 join; .2 assigns both a hash share at t=0. The member change number."""
    mcn = _two_caches(r)["router_view"]["member_change_number"]
    r.receive(ra_hash("127.0.0.2", [(R, _last_rid(r, "127.0.0.2"), mcn)], ["127.0.0.2", "127.0.0.3"]),
              "127.0.0.2", 2048, R, 0)
    return mcn


def test_hash_assignment_applied_atomically_and_key_reflected():
    r, dp = make()
    m = _two_caches(r)
    mcn = m["router_view"]["member_change_number"]
    before = dp.commits
    b = bytes([i % 2 for i in range(256)])
    out = r.receive(ra_hash("127.0.0.2", [(R, _last_rid(r, "127.0.0.2"), mcn)], ["127.0.0.2", "127.0.0.3"], b, key_cn=7),
                    "127.0.0.2", 2048, R, 100)
    assert out == []
    assert r.counters["ra_accepted"] == 1
    assert dp.commits == before + 1                 # one transaction
    tail = dp.calls[-4:]
    assert tail == [("set_caches", 0), ("set_hash", 0), ("commit",)] or tail[-3:] == [
        ("set_caches", 0), ("set_hash", 0), ("commit",)]
    live = dp.live[0]
    assert [c["address"] for c in live["caches"]] == [ip("127.0.0.2"), ip("127.0.0.3")]
    assert live["hash"] == b
    m = isy_of(r.receive(hia("127.0.0.2", _last_rid(r, "127.0.0.2")), "127.0.0.2", 2048, R, 200))
    rv = m["router_view"]
    assert rv["assignment_key"] == {"address": ip("127.0.0.2"), "change_number": 7}
    e0, e1 = rv["web_caches"]
    assert not codec.identity_unassigned(e0) and not codec.identity_unassigned(e1)
    assert codec.bitmap_has(e0["bucket_bitmap"], 0) and not codec.bitmap_has(e0["bucket_bitmap"], 1)
    assert codec.bitmap_has(e1["bucket_bitmap"], 255)
    st = r.status()
    assert st["groups"][0]["assignment"]["buckets"][:4] == [0, 1, 0, 1]


def test_alternate_assignment_hash_accepted():
    r, dp = make()
    m = _two_caches(r)
    mcn = m["router_view"]["member_change_number"]
    b = bytes([0x80 if i == 5 else (0xFF if i == 6 else i % 2) for i in range(256)])
    r.receive(ra_hash("127.0.0.2", [(R, _last_rid(r, "127.0.0.2"), mcn)], ["127.0.0.2", "127.0.0.3"], b, alt=True),
              "127.0.0.2", 2048, R, 0)
    assert r.counters["ra_accepted"] == 1
    h = dp.live[0]["hash"]
    assert h[5] == 0x80 and h[6] == 0xFF and h[7] == 1


def test_ra_validation_rules():
    r, dp = make()
    m = _two_caches(r)
    mcn = m["router_view"]["member_change_number"]
    rid2 = _last_rid(r, "127.0.0.2")
    cs = ["127.0.0.2", "127.0.0.3"]
    # stale receive ID
    r.receive(ra_hash("127.0.0.2", [(R, rid2 + 100, mcn)], cs), "127.0.0.2", 2048, R, 0)
    assert r.drops["ra_stale_receive_id"] == 1
    # wrong member change number
    r.receive(ra_hash("127.0.0.2", [(R, rid2, mcn - 1)], cs), "127.0.0.2", 2048, R, 0)
    assert r.drops["ra_stale_change_number"] == 1
    # from a cache that is not usable
    r.receive(ra_hash("127.0.0.9", [(R, rid2, mcn)], cs), "127.0.0.9", 2048, R, 0)
    assert r.drops["ra_unknown_cache"] == 1
    # the receive ID last sent to the *designated* cache matters, not another cache's
    r.receive(ra_hash("127.0.0.2", [(R, _last_rid(r, "127.0.0.3"), mcn)], cs), "127.0.0.2", 2048, R, 0)
    assert r.drops["ra_stale_receive_id"] == 2
    assert r.counters["ra_accepted"] == 0 and "hash" not in dp.live[0]
    # the one before the last (an RA in flight while an I_SEE_YOU goes out) is tolerated
    isy_of(r.receive(hia("127.0.0.2", rid2), "127.0.0.2", 2048, R, 0))
    r.receive(ra_hash("127.0.0.2", [(R, rid2, mcn)], cs), "127.0.0.2", 2048, R, 0)
    assert r.counters["ra_accepted"] == 1


def test_ra_not_listing_this_router_flushes():
    r, dp = make()
    m = _two_caches(r)
    mcn = m["router_view"]["member_change_number"]
    cs = ["127.0.0.2", "127.0.0.3"]
    r.receive(ra_hash("127.0.0.2", [(R, _last_rid(r, "127.0.0.2"), mcn)], cs), "127.0.0.2", 2048, R, 0)
    assert "hash" in dp.live[0]
    r.receive(ra_hash("127.0.0.2", [("10.9.9.9", 3, 4)], cs, key_cn=2), "127.0.0.2", 2048, R, 0)
    assert r.drops["ra_not_listed"] == 1
    assert "hash" in dp.live[0] and r.counters["flushes"] == 0       # unauthenticated: flush timer only
    for now in (2 * T, 4 * T):
        for c in cs:
            r.receive(hia(c, _last_rid(r, c)), c, 2048, R, now)
    r.tick(5 * T)
    assert "hash" not in dp.live[0] and r.counters["flushes"] == 1
    m = isy_of(r.receive(hia("127.0.0.2", _last_rid(r, "127.0.0.2")), "127.0.0.2", 2048, R, 5 * T))
    assert m["router_view"]["assignment_key"]["change_number"] == 0


def test_multi_router_assignment_uses_our_element():
    r, dp = make(router_id="10.1.1.1", addresses=[R])
    m = isy_of(r.receive(hia("127.0.0.2", 0, routers=[(R, 0), ("10.2.2.2", 0)]), "127.0.0.2", 2048, R, 0))
    m = isy_of(r.receive(hia("127.0.0.2", 0, routers=[("10.1.1.1", rid_of(m)), ("10.2.2.2", 44)]),
                         "127.0.0.2", 2048, R, 0))
    assert m["router_view"]["routers"] == [ip("10.1.1.1"), ip("10.2.2.2")]
    mcn = m["router_view"]["member_change_number"]
    rid = _last_rid(r, "127.0.0.2")
    routers = [("10.2.2.2", 44, 999), ("10.1.1.1", rid, mcn)]
    r.receive(ra_hash("127.0.0.2", routers, ["127.0.0.2"]), "127.0.0.2", 2048, R, 0)
    assert r.counters["ra_accepted"] == 1
    # our element stale while the other router's is fine: ignored
    routers = [("10.2.2.2", 44, 999), ("10.1.1.1", rid, mcn + 5)]
    r.receive(ra_hash("127.0.0.2", routers, ["127.0.0.2"], key_cn=2), "127.0.0.2", 2048, R, 0)
    assert r.drops["ra_stale_change_number"] == 1


def test_ra_naming_unknown_cache_leaves_its_buckets_unassigned():
    r, dp = make()
    m = join(r, "127.0.0.2")
    mcn = m["router_view"]["member_change_number"]
    r.receive(ra_hash("127.0.0.2", [(R, _last_rid(r, "127.0.0.2"), mcn)], ["127.0.0.2", "127.0.0.77"]),
              "127.0.0.2", 2048, R, 0)
    h = dp.live[0]["hash"]
    assert h[0] == 0 and h[1] == 0xFF
    assert r.counters["ra_unknown_cache_entries"] == 1


def test_mask_assignment_without_cache_list_and_assignment_map():
    r, dp = make([{"id": 0, "assignment": ["mask"]}])
    mk = dict(caps=[(1, 1), (2, 2), (3, 1)], mask=True)
    join(r, "127.0.0.2", **mk)
    m = join(r, "127.0.0.3", **mk)
    # before any assignment: the unassigned Cisco shape (flags word 3, one set, 0 values)
    for el in m["router_view"]["web_caches"]:
        assert el["flags"] == 3 and len(el["mask_value_sets"]) == 1 and el["mask_value_sets"][0]["values"] == []
    assert "assignment_map" not in m
    mcn = m["router_view"]["member_change_number"]
    sets = mask_sets(["127.0.0.3", "127.0.0.2"])
    r.receive(ra_mask("127.0.0.2", [(R, _last_rid(r, "127.0.0.2"), mcn)], sets), "127.0.0.2", 2048, R, 0)
    assert r.counters["ra_accepted"] == 1
    live = dp.live[0]
    assert [c["address"] for c in live["caches"]] == [ip("127.0.0.3"), ip("127.0.0.2")]
    assert live["mask"][0]["masks"] == (0, 0x1741, 0, 0)
    assert len(live["mask"][0]["values"]) == 64 and live["mask"][0]["values"][1][4] == 1
    m = isy_of(r.receive(hia("127.0.0.2", _last_rid(r, "127.0.0.2"), **mk), "127.0.0.2", 2048, R, 0))
    assert m["assignment_map"]["mask_value_sets"][0]["values"][0]["cache_address"] == ip("127.0.0.3")
    for el in m["router_view"]["web_caches"]:
        assert el["flags"] == 2 and el["mask_value_sets"] == []        # 16-byte "assigned" shape


def test_mask_zero_bit_single_value_and_many_values():
    r, dp = make([{"id": 0, "assignment": ["mask"]}])
    mk = dict(caps=[(1, 1), (2, 2), (3, 1)], mask=True)
    m = join(r, "127.0.0.2", **mk)
    mcn = m["router_view"]["member_change_number"]
    zero = [{"masks": {"src_addr": 0, "dst_addr": 0, "src_port": 0, "dst_port": 0},
             "values": [{"src_addr": 0, "dst_addr": 0, "src_port": 0, "dst_port": 0, "cache_address": ip("127.0.0.2")}]}]
    r.receive(ra_mask("127.0.0.2", [(R, _last_rid(r, "127.0.0.2"), mcn)], zero), "127.0.0.2", 2048, R, 0)
    assert r.counters["ra_accepted"] == 1 and dp.live[0]["mask"][0]["values"] == [(0, 0, 0, 0, 0)]
    many = mask_sets(["127.0.0.2"], mask=0x7F, nvalues=128)
    r.receive(ra_mask("127.0.0.2", [(R, _last_rid(r, "127.0.0.2"), mcn)], many, key_cn=2), "127.0.0.2", 2048, R, 0)
    assert r.counters["ra_accepted"] == 2 and len(dp.live[0]["mask"][0]["values"]) == 128


def test_ra_method_mismatch_and_too_large():
    r, dp = make()
    m = join(r, "127.0.0.2")
    mcn = m["router_view"]["member_change_number"]
    r.receive(ra_mask("127.0.0.2", [(R, _last_rid(r, "127.0.0.2"), mcn)], mask_sets(["127.0.0.2"])),
              "127.0.0.2", 2048, R, 0)
    assert r.drops["ra_method_mismatch"] == 1
    r2, dp2 = make([{"id": 0, "assignment": ["mask"]}], limits={"max_mask_values": 16})
    m = join(r2, "127.0.0.2", caps=[(1, 1), (2, 2), (3, 1)], mask=True)
    r2.receive(ra_mask("127.0.0.2", [(R, _last_rid(r2, "127.0.0.2"), m["router_view"]["member_change_number"])],
                       mask_sets(["127.0.0.2"])), "127.0.0.2", 2048, R, 0)
    assert r2.drops["ra_too_large"] == 1


# ------------------------------------------------------------------------ timers

def test_removal_query_at_2_5T_and_removal_at_3T_purges_assignment():
    r, dp = make()
    mcn = _two_caches_hashed(r)
    # cache 2 keeps talking, cache 3 goes silent
    t = 0
    out = []
    while t < 25 * T // 10 - 1000:
        t += 1000
        if t % T == 0:
            isy_of(r.receive(hia("127.0.0.2", _last_rid(r, "127.0.0.2")), "127.0.0.2", 2048, R, t))
        out += r.tick(t)
    assert out == []
    out = r.tick(25 * T // 10)
    dst, port, src, payload = one(out)
    q = codec.decode(payload)
    assert q["type"] == 13 and dst == "127.0.0.3" and src == R
    assert q["router_query"] == {"router_id": ip(R), "receive_id": _last_rid(r, "127.0.0.3"),
                                 "sent_to": ip(R), "target": ip("127.0.0.3")}
    assert r.tick(25 * T // 10 + 500) == []            # only once
    assert cache_state(r, "127.0.0.3") == "usable"
    isy_of(r.receive(hia("127.0.0.2", _last_rid(r, "127.0.0.2")), "127.0.0.2", 2048, R, 3 * T - 1))
    r.tick(3 * T)
    assert cache_state(r, "127.0.0.3") is None and cache_state(r, "127.0.0.2") == "usable"
    assert r.counters["removals_timeout"] == 1
    h = dp.live[0]["hash"]
    assert h[0] == 0 and h[1] == 0xFF                  # purged at once
    m = isy_of(r.receive(hia("127.0.0.2", _last_rid(r, "127.0.0.2")), "127.0.0.2", 2048, R, 3 * T + 1))
    assert m["router_view"]["member_change_number"] == mcn + 1
    assert [e["address"] for e in m["router_view"]["web_caches"]] == [ip("127.0.0.2")]


def test_removal_query_answered_keeps_cache():
    r, dp = make()
    join(r, "127.0.0.2")
    out = r.tick(25 * T // 10)
    assert len(out) == 1
    isy_of(r.receive(hia("127.0.0.2", _last_rid(r, "127.0.0.2")), "127.0.0.2", 2048, R, 26 * T // 10))
    r.tick(3 * T + 1)
    assert cache_state(r, "127.0.0.2") == "usable"


def test_flush_5T_after_membership_change_without_assignment():
    r, dp = make()
    _two_caches_hashed(r)
    # a third cache joins at t=1000; nobody re-assigns
    t = 1000
    join(r, "127.0.0.4", now=t)
    for k in range(1, 6):
        for a in ("127.0.0.2", "127.0.0.3", "127.0.0.4"):
            r.receive(hia(a, _last_rid(r, a)), a, 2048, R, t + k * T - 10)
        r.tick(t + k * T - 1)
        assert "hash" in dp.live[0]
    r.tick(t + 5 * T)
    assert "hash" not in dp.live[0] and r.counters["flushes"] == 1
    m = isy_of(r.receive(hia("127.0.0.2", _last_rid(r, "127.0.0.2")), "127.0.0.2", 2048, R, t + 5 * T + 1))
    assert m["router_view"]["assignment_key"] == {"address": 0, "change_number": 0}
    assert all(codec.identity_unassigned(e) for e in m["router_view"]["web_caches"])


def test_valid_assignment_stops_flush_timer():
    r, dp = make()
    m = join(r, "127.0.0.2")
    mcn = m["router_view"]["member_change_number"]
    r.receive(ra_hash("127.0.0.2", [(R, _last_rid(r, "127.0.0.2"), mcn)], ["127.0.0.2"]), "127.0.0.2", 2048, R, 15000)
    for k in range(1, 6):
        r.receive(hia("127.0.0.2", _last_rid(r, "127.0.0.2")), "127.0.0.2", 2048, R, k * T)
        r.tick(k * T + 1)
    assert "hash" in dp.live[0] and r.counters["flushes"] == 0


def test_pending_entries_expire():
    r, dp = make()
    r.receive(hia("127.0.0.2", 0), "127.0.0.2", 2048, R, 0)
    r.tick(3 * T - 1)
    assert cache_state(r, "127.0.0.2") == "pending"
    r.tick(3 * T)
    assert cache_state(r, "127.0.0.2") is None and r.total == 0


def test_multicast_group_scheduled_isy_with_jitter():
    r, dp = make([{"id": 0, "multicast": "224.0.0.7"}], addresses=[R, "127.0.0.9"])
    out = r.receive(hia("127.0.0.2", 0, router="224.0.0.7"), "127.0.0.2", 2048, "224.0.0.7", 0)
    assert out == []                                    # answered by the scheduled multicast ISY
    times = []
    msgs = []
    t = 0
    last_rid = 0
    while t < 60000:
        t += 100
        if t % T == 0:    # the cache keeps sending HIAs (to the group), echoing the last multicast ID
            assert r.receive(hia("127.0.0.2", last_rid), "127.0.0.2", 2048,
                             "224.0.0.7", t) == []
        for o in r.tick(t):
            times.append(t)
            msgs.append(o)
            last_rid = rid_of(codec.decode(o[3]))
    assert len(times) >= 6
    for dst, port, src, payload in msgs:
        assert (dst, port, src) == ("224.0.0.7", 2048, R)
        m = codec.decode(payload)
        assert m["router_identity"]["sent_to"] == ip("224.0.0.7")
        assert m["router_identity"]["received_from"] == [ip("127.0.0.2")]
    gaps = [times[i + 1] - times[i] for i in range(len(times) - 1)]
    for gp in gaps:
        assert 8100 - 100 <= gp <= 9900 + 100, gaps
    assert len(set(gaps)) > 1                          # jittered
    # echoing the multicast ISY's Receive ID made the cache usable; it is in the later views
    assert cache_state(r, "127.0.0.2") == "usable"
    assert [e["address"] for e in codec.decode(msgs[-1][3])["router_view"]["web_caches"]] == [ip("127.0.0.2")]
    # unicast HIAs to a multicast group are still answered at once
    out = r.receive(hia("127.0.0.3", 0), "127.0.0.3", 2048, R, t)
    assert len(out) == 1


def test_shutdown_removes_at_once_with_response():
    r, dp = make()
    m = _two_caches(r)
    mcn = m["router_view"]["member_change_number"]
    out = r.receive(hia("127.0.0.3", _last_rid(r, "127.0.0.3"), shutdown=True), "127.0.0.3", 2048, R, 5)
    m = isy_of(out)
    assert m["command_extension"] == [{"type": 2, "data": ip("127.0.0.3")}]
    assert m["router_identity"]["received_from"] == [ip("127.0.0.3")]
    assert [e["address"] for e in m["router_view"]["web_caches"]] == [ip("127.0.0.2")]
    assert m["router_view"]["member_change_number"] == mcn + 1
    assert cache_state(r, "127.0.0.3") is None and r.counters["removals_shutdown"] == 1
    # a spoofed SHUTDOWN (wrong Receive ID) does nothing
    out = r.receive(hia("127.0.0.2", 12345, shutdown=True), "127.0.0.2", 2048, R, 6)
    assert "command_extension" not in isy_of(out)
    assert cache_state(r, "127.0.0.2") == "usable"


def test_removed_cache_purged_from_alternate_entries():
    # alt-flagged entries name a cache when reached by the secondary lookup: a removed
    # cache must disappear from them too, and unknown indices never survive an RA
    r, dp = make()
    m = _two_caches(r)
    mcn = m["router_view"]["member_change_number"]
    b = bytes([(0x80 | 1) if i % 2 else 0 for i in range(254)] + [0x80 | 5, 0x80 | 0])
    r.receive(ra_hash("127.0.0.2", [(R, _last_rid(r, "127.0.0.2"), mcn)], ["127.0.0.2", "127.0.0.3"], b, alt=True),
              "127.0.0.2", 2048, R, 0)
    assert r.counters["ra_accepted"] == 1
    h = dp.live[0]["hash"]
    assert h[1] == 0x81 and h[0] == 0 and h[254] == 0xFF and h[255] == 0x80
    r.receive(hia("127.0.0.3", _last_rid(r, "127.0.0.3"), shutdown=True), "127.0.0.3", 2048, R, 5)
    h = dp.live[0]["hash"]
    assert all(v == 0xFF or (v & 0x7F) == 0 for v in h)
    assert h[1] == 0xFF and h[0] == 0 and h[255] == 0x80


# ------------------------------------------------------------------------ MD5

def test_md5_per_group():
    r, dp = make([{"id": 0, "password": "secret"}, {"id": 91, "type": "dynamic"}])
    out = r.receive(hia("127.0.0.2", 0, password="secret"), "127.0.0.2", 2048, R, 0)
    dst, port, src, payload = one(out)
    assert codec.verify_md5(payload, "secret") and not codec.verify_md5(payload, "other")
    m = codec.decode(payload)
    assert m["security"]["option"] == 1
    assert r.receive(hia("127.0.0.2", 0, password="wrong"), "127.0.0.2", 2048, R, 0) == []
    assert r.drops["md5_failure"] == 1
    assert r.receive(hia("127.0.0.2", 0), "127.0.0.2", 2048, R, 0) == []
    assert r.drops["security_mismatch"] == 1
    # group without password: MD5 messages are refused
    assert r.receive(hia("127.0.0.2", 0, service=svc(91, **DYN), password="x"), "127.0.0.2", 2048, R, 0) == []
    assert r.drops["security_mismatch"] == 2
    m = join(r, "127.0.0.2", password="secret")
    assert cache_state(r, "127.0.0.2") == "usable"
    mcn = m["router_view"]["member_change_number"]
    r.receive(ra_hash("127.0.0.2", [(R, _last_rid(r, "127.0.0.2"), mcn)], ["127.0.0.2"], password="wrong"),
              "127.0.0.2", 2048, R, 0)
    assert r.drops["md5_failure"] == 2 and r.counters["ra_accepted"] == 0
    r.receive(ra_hash("127.0.0.2", [(R, _last_rid(r, "127.0.0.2"), mcn)], ["127.0.0.2"], password="secret"),
              "127.0.0.2", 2048, R, 0)
    assert r.counters["ra_accepted"] == 1
    out = r.tick(25 * T // 10)
    assert codec.verify_md5(one(out)[3], "secret")


# ------------------------------------------------------------------------ reboot

def test_reboot_never_repeats_member_change_numbers():
    st = MemStorage()
    seen = set()
    for boot in range(3):
        r, dp = make(storage=st)
        m = isy_of(r.receive(hia("127.0.0.2", 0), "127.0.0.2", 2048, R, 0))
        seen.add(m["router_view"]["member_change_number"])
        for k in range(5):
            m = join(r, "127.0.0.%d" % (3 + k))
            seen.add(m["router_view"]["member_change_number"])
        assert r.boot == boot + 1
    assert len(seen) == 18 and 0 not in seen


def test_file_storage_persists_boot_counter():
    import os
    d = "/tmp/" + scratch_name("wccp_test_router_storage")
    try:
        os.mkdir(d)
    except OSError:
        pass
    try:
        os.remove(d + "/" + FileStorage.NAME)
    except OSError:
        pass
    r1, _ = make(storage=FileStorage(d))
    r2, _ = make(storage=FileStorage(d))
    assert (r1.boot, r2.boot) == (1, 2)
    assert group(r1).mcn != group(r2).mcn
    with open(d + "/" + FileStorage.NAME, "w") as f:
        f.write("garbage{")
    r3, _ = make(storage=FileStorage(d))
    assert r3.boot_persisted is False and "previous state lost" in r3.status()["storage_error"]
    assert group(r3).mcn not in (group(r1).mcn, group(r2).mcn)
    r4, _ = make(storage=FileStorage(d))                 # the file was rewritten: counting again
    assert r4.boot_persisted is True and r4.boot == r3.boot + 1
    os.remove(d + "/" + FileStorage.NAME)
    os.rmdir(d)


# ------------------------------------------------------------------------ hostile input

def test_spoofed_hia_flood_bounded_and_usable_caches_kept():
    r, dp = make(limits={"max_pending": 8, "max_total_caches": 40})
    join(r, "127.0.0.2")
    join(r, "127.0.0.3")
    for k in range(600):
        a = "10.%d.%d.%d" % (k >> 16, (k >> 8) & 255, k & 255 or 1)
        out = r.receive(hia(a, 0), a, 2048, R, 1 + k)
        assert len(out) <= 1
    g = group(r)
    assert len(g.caches) <= 2 + 8 and r.total <= 40
    assert cache_state(r, "127.0.0.2") == "usable" and cache_state(r, "127.0.0.3") == "usable"
    # unverified senders: never evict; answered without state (cookie) within the rate limit
    assert r.counters["pending_evicted"] == 0
    assert r.counters["isy_stateless"] > 0 and r.drops["rate_limited_global"] > 0
    assert 595 <= r.counters["isy_stateless"] + 8 + r.drops["rate_limited_global"] <= 600   # a few addresses repeat
    # the usable caches still work
    isy_of(r.receive(hia("127.0.0.2", _last_rid(r, "127.0.0.2")), "127.0.0.2", 2048, R, 1000))
    assert cache_state(r, "127.0.0.2") == "usable"


def test_group_size_bounded():
    r, dp = make([{"id": 0, "max_caches": 3}])
    for k in range(5):
        join(r, "127.0.1.%d" % (k + 1))
    assert len(group(r).order) == 3
    assert r.counters["group_full"] == 2
    assert "group full" in group(r).caches[ip("127.0.1.5")][C_REASON]


def test_total_state_bounded_across_groups():
    r, dp = make([{"id": 0}, {"id": 91, "type": "dynamic"}], limits={"max_total_caches": 5, "max_pending": 32})
    for k in range(20):
        r.receive(hia("127.0.2.%d" % (k + 1), 0), "127.0.2.%d" % (k + 1), 2048, R, k)
        r.receive(hia("127.0.3.%d" % (k + 1), 0, service=svc(91, **DYN)), "127.0.3.%d" % (k + 1), 2048, R, k)
    assert r.total <= 5
    assert sum(len(g.caches) for g in r.groups) == r.total


def test_malformed_and_unauthorised_dropped_by_reason_never_raise():
    r, dp = make([{"id": 0, "caches": ["127.0.0.2"]}])
    assert r.receive(b"", "127.0.0.2", 2048, R, 0) == []
    assert r.receive(b"\x00\x00\x00\x0a\x02\x00\xff\xff", "127.0.0.2", 2048, R, 0) == []
    assert r.drops["malformed"] == 2 and r.last_malformed
    assert r.receive(hia("127.0.0.5", 0), "127.0.0.5", 2048, R, 0) == []
    assert r.drops["cache_not_allowed"] == 1
    assert r.receive(hia("127.0.0.2", 0), R, 2048, R, 0) == []
    assert r.drops["own_packet"] == 1
    assert r.receive(hia("0.0.0.0", 0), "127.0.0.2", 2048, R, 0) == []
    assert r.drops["bad_cache_address"] == 1
    isy = codec.encode({"type": 11, "version": 0x200, "security": {"option": 0}, "service": svc(0),
                        "router_identity": {"router_id": 1, "receive_id": 1, "sent_to": 1, "received_from": []},
                        "router_view": {"member_change_number": 1, "assignment_key": {"address": 0, "change_number": 0},
                                        "routers": [], "web_caches": []}})
    assert r.receive(isy, "127.0.0.2", 2048, R, 0) == []
    assert r.drops["unexpected_type"] == 1
    assert r.receive(None, "127.0.0.2", 2048, R, 0) == []
    assert r.receive(hia("127.0.0.2", 0), "not-an-ip", 2048, "x", 0) == []
    # byte flips / truncations of a valid HIA and RA never escape
    good = bytearray(hia("127.0.0.2", 0, caps=[(1, 1), (2, 1), (3, 1)], shutdown=True))
    seed = 7
    for k in range(300):
        b = bytearray(good)
        seed = (seed * 1103515245 + 12345) & 0x7FFFFFFF
        pos = seed % len(b)
        b[pos] = (seed >> 8) & 0xFF
        if k % 3 == 0:
            b = b[:seed % len(b)]
        r.receive(bytes(b), "127.0.0.2", 2048, R, k)
    total = 0
    for k in r.drops:
        total += r.drops[k]
    assert total > 10
    assert "internal_error" not in r.drops, r.last_error


def test_status_is_json_and_complete():
    import json
    r, dp = make([{"id": 0}, {"id": 91, "type": "dynamic", "password": "pw"}])
    _two_caches_hashed(r)
    r.receive(b"junk", "127.0.0.2", 2048, R, 0)
    st = json.loads(json.dumps(r.status()))
    assert st["router_id"] == R and st["boot"] == 1
    g0 = st["groups"][0]
    assert g0["service_id"] == 0 and g0["usable"] == 2 and g0["slot"] == 0
    assert g0["assignment"]["type"] == "hash" and len(g0["assignment"]["buckets"]) == 256
    assert [c["assigned"] for c in g0["caches"]] == [128, 128]
    assert g0["caches"][0]["state"] == "usable" and g0["caches"][0]["weight"] == 10000
    assert g0["capabilities"]["forwarding"] == ["gre"]
    assert st["drops"]["malformed"] == 1 and st["dataplane"]["commits"] >= 2
    assert st["groups"][1]["md5"] is True and st["groups"][1]["definition"] is None


def test_mask_beyond_dataplane_limits_refused():
    r, dp = make([{"id": 0, "assignment": ["mask"]}])
    m = join(r, "127.0.0.2", caps=[(1, 1), (2, 2), (3, 1)], mask=True)
    mcn = m["router_view"]["member_change_number"]
    wide = mask_sets(["127.0.0.2"], mask=0xFF, nvalues=8)          # 8 mask bits > 7
    r.receive(ra_mask("127.0.0.2", [(R, _last_rid(r, "127.0.0.2"), mcn)], wide), "127.0.0.2", 2048, R, 0)
    assert r.drops["ra_mask_too_wide"] == 1 and r.counters["ra_accepted"] == 0


def test_with_reference_forwarding_model():
    from wccp.fwdmodel import ForwardingModel
    fm = ForwardingModel()
    r, _ = make([{"id": 0, "assignment": ["hash", "mask"]}, {"id": 91, "type": "dynamic"}], dp=fm)
    m = _two_caches(r)
    mcn = m["router_view"]["member_change_number"]
    b = bytes([(i % 2) if i != 9 else 0x80 for i in range(256)])
    r.receive(ra_hash("127.0.0.2", [(R, _last_rid(r, "127.0.0.2"), mcn)], ["127.0.0.2", "127.0.0.3"], b),
              "127.0.0.2", 2048, R, 0)
    assert r.counters["ra_accepted"] == 1 and r.counters["dataplane_errors"] == 0, r.last_error
    live = fm._live.slots[0]
    assert bytes(live.hash) == b and [c[0] for c in live.caches] == [ip("127.0.0.2"), ip("127.0.0.3")]
    assert live.service["ports"][0] == 80
    join(r, "127.0.0.4", service=svc(91, **DYN))
    r.tick(3 * T)
    assert r.counters["dataplane_errors"] == 0, r.last_error
    assert fm.redirect_enabled(0) is not None


def test_fast_path_isy_equals_full_encoding():
    for pw in (None, "pw8chars"):
        r, dp = make([{"id": 0, "password": pw}] if pw else None)
        kw = {"password": pw} if pw else {}
        join(r, "127.0.0.2", **kw)
        m = join(r, "127.0.0.3", **kw)
        mcn = m["router_view"]["member_change_number"]
        r.receive(ra_hash("127.0.0.2", [(R, _last_rid(r, "127.0.0.2"), mcn)], ["127.0.0.2", "127.0.0.3"],
                          password=pw), "127.0.0.2", 2048, R, 0)
        outs = []
        for k in range(4):
            a = "127.0.0.2" if k % 2 else "127.0.0.3"
            if k == 3:
                group(r).template = None          # force the full encoding for comparison
            out = r.receive(hia(a, _last_rid(r, a), **kw), a, 2048, R, 10 + k)
            dst, port, src, payload = one(out)
            if pw:
                assert codec.verify_md5(payload, pw)
            outs.append(codec.plain(codec.decode(payload)))
        assert group(r).template is not None
        for m in outs:
            assert m["router_view"] == outs[3]["router_view"]
        ids = [m["router_identity"]["receive_id"] for m in outs]
        assert ids == [ids[0] + k for k in range(4)]
        assert [m["router_identity"]["received_from"] for m in outs] == [[ip("127.0.0.3")], [ip("127.0.0.2")]] * 2
        for m in outs:
            del m["router_identity"]
            del m["security"]
        assert outs[0] == outs[1] == outs[2] == outs[3]
        # a weight change is visible at once
        out = r.receive(hia("127.0.0.2", _last_rid(r, "127.0.0.2"), weight=5, **kw), "127.0.0.2", 2048, R, 20)
        ws = [e["weight"] for e in isy_of(out)["router_view"]["web_caches"]]
        assert sorted(ws) == [5, 10000]


def test_reply_goes_to_the_hia_source_port_identity_from_its_own_address():
    r, dp = make()
    out = r.receive(hia("127.0.0.2", 0), "127.0.0.2", 3000, R, 0)
    dst, port, src, payload = one(out)
    assert (dst, port, src) == ("127.0.0.2", 3000, R)
    assert codec.decode(payload)["router_identity"]["received_from"] == [ip("127.0.0.2")]
    assert r.receive(hia("127.0.0.2", 0), "127.0.0.50", 2048, R, 0) == []    # another host's identity
    assert r.drops["identity_mismatch"] == 1
    out = r.receive(hia("127.0.0.2", _last_rid(r, "127.0.0.2")), "127.0.0.2", 2048, R, 1)
    assert one(out)[:2] == ("127.0.0.2", 2048)
    assert cache_state(r, "127.0.0.2") == "usable"
    out = r.tick(25 * T // 10 + 1)                  # the REMOVAL_QUERY follows the latest source
    assert one(out)[:3] == ("127.0.0.2", 2048, R)


class NoPearsonDP(FakeDP):
    """A data plane whose FPGA image has no Pearson hash: it refuses such a group's definition
    as a table it cannot hold (wccp.fpga does the same when CAPS lacks CAPS_PEARSON)."""

    def set_group(self, slot, service):
        if service.get("hash_fn") == "pearson":
            raise ValueError("this FPGA image has no Pearson hash")
        FakeDP.set_group(self, slot, service)


def test_group_the_data_plane_cannot_define_leaves_the_others_programmed():
    r, dp = make(services=[{"id": 0, "hash": "pearson"}, {"id": 90, "type": "dynamic"}], dp=NoPearsonDP())
    join(r, "10.0.0.2", service=svc(90, **DYN))
    assert dp.commits >= 1 and "no Pearson hash" in r.last_error
    slots = [s for s, v in dp.live.items() if "service" in v]
    assert [dp.live[s]["service"]["service_id"] for s in slots] == [90]       # the dynamic group only
    assert group(r, 0).counters["dataplane_errors"] >= 1
