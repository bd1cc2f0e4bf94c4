"""Control-plane hardening: one regression test per defect of issue 26, plus admission limits.

Each ``test_d<N>_*`` reproduces defect N of the issue (spoofed or faulty input that the
router used to mishandle). Runs on CPython and under the MicroPython unix port.
"""
from fwtest import raises, scratch_name
from test_router import (FakeDP, R, T, DYN, make, svc, hia, ra_hash, ra_mask, mask_sets, isy_of, join, rid_of,
                         group, cache_state, _two_caches, _last_rid, ip)
from wccp import codec
from wccp.storage import FileStorage

CS = ["127.0.0.2", "127.0.0.3"]


def _assigned(r, dp, key="127.0.0.2", src=None, key_cn=1, caches=CS, b=None):
    mcn = group(r).mcn
    return r.receive(ra_hash(key, [(R, _last_rid(r, key), mcn)], caches, b, key_cn=key_cn),
                     src or key, 2048, R, 0)


# ------------------------------------------------------------------------ defect 1
def test_d1_identity_claimed_from_another_address_is_dropped():
    # 127.0.0.66 is an allowed cache itself, but claims 127.0.0.2's identity
    r, dp = make([{"id": 0, "caches": ["127.0.0.2", "127.0.0.66"]}])
    out = r.receive(hia("127.0.0.2", 0), "127.0.0.66", 2048, R, 0)
    assert out == []
    assert r.drops.get("identity_mismatch") == 1
    assert group(r).caches.get(ip("127.0.0.2")) is None
    # the real cache still joins
    join(r, "127.0.0.2")
    assert cache_state(r, "127.0.0.2") == "usable"
    # and a thief cannot take over its state either
    rid = _last_rid(r, "127.0.0.2")
    assert r.receive(hia("127.0.0.2", rid), "127.0.0.66", 2048, R, 1) == []
    assert _last_rid(r, "127.0.0.2") == rid and r.drops["identity_mismatch"] == 2
    # a different source port of the right address is still answered (at that port)
    out = r.receive(hia("127.0.0.2", rid), "127.0.0.2", 3000, R, 2)
    assert out[0][:2] == ("127.0.0.2", 3000)


# ------------------------------------------------------------------------ defect 2
def test_d2_assignment_only_from_the_designated_cache_address():
    r, dp = make()
    _two_caches(r)
    # a third party at another address, right receive ID and change number
    _assigned(r, dp, src="127.0.0.66")
    assert r.counters["ra_accepted"] == 0 and "hash" not in dp.live.get(0, {})
    assert r.drops.get("ra_wrong_sender") == 1
    # another usable cache sending an assignment keyed to the first one
    _assigned(r, dp, src="127.0.0.3")
    assert r.counters["ra_accepted"] == 0 and r.drops["ra_wrong_sender"] == 2
    # the designated cache itself
    _assigned(r, dp)
    assert r.counters["ra_accepted"] == 1 and "hash" in dp.live[0]


def test_d2_receive_ids_are_not_predictable_from_the_boot_counter():
    seen = set()
    from wccp import config
    from wccp.router import Router
    from wccp.storage import MemStorage
    cfg = config.load({"router_id": R, "addresses": [R], "services": [{"id": 0}]})
    for _k in range(4):
        r = Router(cfg, FakeDP(), 0, storage=MemStorage())
        m = isy_of(r.receive(hia("127.0.0.2", 0), "127.0.0.2", 2048, R, 0))
        seen.add(rid_of(m) >> 8)
    assert len(seen) >= 3


# ------------------------------------------------------------------------ defect 3
def test_d3_not_listed_assignment_from_a_third_party_does_not_flush():
    r, dp = make()
    _two_caches(r)
    _assigned(r, dp)
    live = dp.live[0]["hash"]
    # forged, not listing us: no receive ID to check, so only the sender could vouch for it
    r.receive(ra_hash("127.0.0.2", [("10.9.9.9", 3, 4)], CS, key_cn=2), "127.0.0.66", 2048, R, 0)
    r.receive(ra_hash("127.0.0.2", [("10.9.9.9", 3, 4)], CS, key_cn=2), "127.0.0.3", 2048, R, 0)
    assert dp.live[0]["hash"] == live and r.counters["flushes"] == 0
    assert r.drops["ra_wrong_sender"] == 2
    # from the designated cache: traffic keeps flowing, the assignment expires 5T later
    # unless a valid assignment arrives
    r.receive(ra_hash("127.0.0.2", [("10.9.9.9", 3, 4)], CS, key_cn=2), "127.0.0.2", 2048, R, 0)
    assert r.drops["ra_not_listed"] == 1 and dp.live[0]["hash"] == live
    for k in range(1, 5):
        r.receive(hia("127.0.0.2", _last_rid(r, "127.0.0.2")), "127.0.0.2", 2048, R, k * T)
        r.receive(hia("127.0.0.3", _last_rid(r, "127.0.0.3")), "127.0.0.3", 2048, R, k * T)
        r.tick(k * T)
    assert "hash" in dp.live[0]
    r.tick(5 * T)
    assert "hash" not in dp.live[0] and r.counters["flushes"] == 1


# ------------------------------------------------------------------------ defect 4
def test_d4_spoofed_first_contacts_do_not_evict_a_joining_cache():
    r, dp = make()
    m = isy_of(r.receive(hia("127.0.0.2", 0), "127.0.0.2", 2048, R, 0))
    for k in range(40):                              # 4 per second for 10 s
        a = "10.0.%d.%d" % (k >> 8, k + 1)
        r.receive(hia(a, 0), a, 2048, R, 250 * k + 1)
    r.receive(hia("127.0.0.2", rid_of(m)), "127.0.0.2", 2048, R, T)
    assert cache_state(r, "127.0.0.2") == "usable"
    # a cache arriving while the pending table is full of unverified entries still joins:
    # its first HIA is answered without state, its echo proves its address
    m = isy_of(r.receive(hia("127.0.0.3", 0), "127.0.0.3", 2048, R, T + 1))
    r.receive(hia("127.0.0.3", rid_of(m)), "127.0.0.3", 2048, R, T + 2)
    assert cache_state(r, "127.0.0.3") == "usable"
    assert len(group(r).caches) <= 2 + 32


# ------------------------------------------------------------------------ defect 5
def test_d5_no_amplification_per_source_and_overall():
    r, dp = make()
    join(r, "127.0.0.2")
    join(r, "127.0.0.3")
    req = hia("127.0.0.9", 0)
    answers = 0
    for k in range(200):                             # one source, 200 HIAs in 2 s
        answers += len(r.receive(req, "127.0.0.9", 2048, R, 10 * k))
    assert answers <= 4
    assert r.drops.get("rate_limited_source", 0) >= 190
    rx = tx = 0
    for k in range(1000):                            # 1000 sources in 1 s
        a = "10.1.%d.%d" % (k >> 8, (k & 255) or 1)
        req = hia(a, 0)
        rx += len(req)
        for o in r.receive(req, a, 2048, R, 3 * T + k):
            tx += len(o[3])
    assert tx <= rx, (tx, rx)
    assert r.drops.get("rate_limited_global", 0) > 0
    # usable caches are never limited
    for k in range(20):
        out = r.receive(hia("127.0.0.2", _last_rid(r, "127.0.0.2")), "127.0.0.2", 2048, R, 3 * T + 1000 + k)
        assert len(out) == 1


# ------------------------------------------------------------------------ defect 6
class _UdpSock:
    """A datagram socket as the app sees it: recvfrom(n) truncates to n, like the kernel."""

    def __init__(self, datagrams):
        self.q = list(datagrams)
        self.sent = []

    def recvfrom(self, n):
        if not self.q:
            raise OSError(11)
        d, peer = self.q.pop(0)
        return d[:n], peer

    def sendto(self, data, addr):
        self.sent.append((data, addr))


def test_d6_largest_accepted_assignment_is_received_whole_larger_counted():
    from wccp import config
    from wccp.app import App
    cfg = config.load({"router_id": R, "addresses": [R], "services": [{"id": 0, "assignment": ["mask"]}],
                       "http": {"port": 0}})
    app = App(cfg, FakeDP(), log=lambda *a: None)
    r = app.router
    m = join(r, "127.0.0.2", caps=[(1, 1), (2, 2), (3, 1)], mask=True)
    sets = mask_sets(["127.0.0.2"], mask=0x7F, nvalues=128)        # 7 mask bits: 128 values
    big = ra_mask("127.0.0.2", [(R, _last_rid(r, "127.0.0.2"), m["router_view"]["member_change_number"])], sets)
    assert len(big) > 2048
    s = _UdpSock([(big, ("127.0.0.2", 2048)), (big + bytes(70000 - len(big)), ("127.0.0.2", 2048))])
    app.drain(s, R)
    assert r.counters["ra_accepted"] == 1, (r.drops, r.last_malformed)
    assert r.drops.get("oversize") == 1 and "malformed" not in r.drops
    # the buffer holds the largest assignment the limits allow (MD5, 32 routers, 256 values)
    from wccp.router import max_message
    routers = [("10.0.0.%d" % (k + 1), 1, 1) for k in range(32)]
    two = mask_sets(["127.0.0.2"], mask=0x7F, nvalues=128) + mask_sets(["127.0.0.2"], mask=0x7F00, nvalues=128)
    info = {"assignment_type": 1, "assignment_key": {"address": 1, "change_number": 1},
            "routers": [{"router_id": ip(a), "receive_id": b, "member_change_number": c} for a, b, c in routers],
            "mask_value_sets": two}
    worst = codec.encode({"type": 12, "version": 0x0200, "security": {"option": 1, "digest": None},
                          "service": svc(0), "alternate_assignment": info}, None, "12345678")
    assert len(worst) <= app.rx_max == max_message(cfg["limits"]), (len(worst), app.rx_max)


class _NoHeapSock:
    """A readable socket whose datagram the heap cannot take: recvfrom raises MemoryError."""

    def __init__(self):
        self.calls = 0

    def recvfrom(self, n):
        self.calls += 1
        raise MemoryError("memory allocation failed, allocating %d bytes" % n)


def test_receive_memory_error_is_counted_and_pauses_the_reader():
    """A MemoryError in recvfrom is counted and reaches the reader (which then pauses): drain()
    swallowing it left the socket readable and the reader woke at once, again and again."""
    from wccp import config
    from wccp.app import App
    cfg = config.load({"router_id": R, "addresses": [R], "services": [{"id": 0}], "http": {"port": 0}})
    app = App(cfg, FakeDP(), log=lambda *a: None)
    s = _NoHeapSock()
    before = app.stats["udp_rx_errors"]
    raises(MemoryError, app.drain, s, R)
    assert s.calls == 1 and app.stats["udp_rx_errors"] == before + 1 and app.stats["udp_rx"] == 0


# ------------------------------------------------------------------------ defect 7
class _FlakyTransport:
    def __init__(self, inner):
        self.inner = inner
        self.fail_at = None
        self.times = 1
        self.failures = 0

    def write(self, addr, words):
        if self.fail_at is not None and addr == self.fail_at:
            self.times -= 1
            if self.times <= 0:
                self.fail_at = None
            self.failures += 1
            raise OSError(5, "SPI write failed")
        self.inner.write(addr, words)

    def read(self, addr, n):
        return self.inner.read(addr, n)


def test_d7_failed_spi_write_leaves_previous_tables_live_and_driver_consistent():
    from wccp.fpga import FpgaDataPlane, cache_addr
    from wccp.fwdmodel import ForwardingModel
    from wccp.fwdmodel_regs import ModelRegisterFile
    from wccp.transport import LoopbackTransport
    from wccp import regmap as RM
    fm = ForwardingModel()
    t = _FlakyTransport(LoopbackTransport(ModelRegisterFile(fm)))
    dp = FpgaDataPlane(t)
    r, _ = make(dp=dp)
    _two_caches(r)
    b = bytes([i % 2 for i in range(256)])
    _assigned(r, dp, b=b)
    assert r.counters["ra_accepted"] == 1, r.last_error
    live = fm._live.slots[0]
    assert [c[0] for c in live.caches] == [ip(x) for x in CS] and bytes(live.hash) == b
    # the next assignment swaps the cache order; writing cache entry 1 fails
    t.fail_at = cache_addr(0, 1, RM.CACHE_ADDRESS)
    _assigned(r, dp, caches=["127.0.0.3", "127.0.0.2"], key_cn=2)
    assert t.failures == 1 and r.drops.get("ra_dataplane_refused") == 1
    live = fm._live.slots[0]
    assert [c[0] for c in live.caches] == [ip(x) for x in CS], [c[0] for c in live.caches]
    assert bytes(live.hash) == b
    assert [c[0] for c in dp.tables()["slots"][0]["caches"]] == [c[0] for c in live.caches]
    # and the next assignment goes through whole
    _assigned(r, dp, caches=["127.0.0.3", "127.0.0.2"], key_cn=3)
    live = fm._live.slots[0]
    assert r.counters["ra_accepted"] == 2
    assert [c[0] for c in live.caches] == [ip("127.0.0.3"), ip("127.0.0.2")]
    # the new tables and the rollback both fail: nothing is published, tick() rewrites
    # everything until a commit succeeds
    t.fail_at = cache_addr(0, 0, RM.CACHE_ADDRESS)
    t.times = 2
    _assigned(r, dp, key_cn=4, b=b)
    assert t.failures == 3 and dp.stale_slots() == [0]
    live = fm._live.slots[0]
    assert [c[0] for c in live.caches] == [ip("127.0.0.3"), ip("127.0.0.2")]
    r.tick(1)
    assert dp.stale_slots() == [] and r.status()["groups"][0]["assignment"]["caches"] == ["127.0.0.3", "127.0.0.2"]
    live = fm._live.slots[0]
    assert [c[0] for c in live.caches] == [ip("127.0.0.3"), ip("127.0.0.2")]
    assert [c[0] for c in dp.tables()["slots"][0]["caches"]] == [c[0] for c in live.caches]


def test_d7_failed_commit_is_retried_whole():
    from wccp.fpga import FpgaDataPlane, cache_addr
    from wccp.fwdmodel import ForwardingModel
    from wccp.fwdmodel_regs import ModelRegisterFile
    from wccp.transport import LoopbackTransport
    from wccp import regmap as RM
    fm = ForwardingModel()
    t = _FlakyTransport(LoopbackTransport(ModelRegisterFile(fm)))
    dp = FpgaDataPlane(t)
    dp.set_group(0, svc(0))
    dp.set_caches(0, [{"address": 5}, {"address": 6}])
    t.fail_at = cache_addr(0, 1, RM.CACHE_ADDRESS)
    raised = False
    try:
        dp.set_caches(0, [{"address": 6}, {"address": 5}])
    except OSError:
        raised = True
    assert raised
    # the driver does not know what the shadow holds for entry 1: it rewrites it
    dp.set_caches(0, [{"address": 5}, {"address": 6}])
    dp.commit()
    assert [c[0] for c in fm._live.slots[0].caches] == [5, 6]


# ------------------------------------------------------------------------ defect 8
def test_d8_watchdog_fed_often_enough_whatever_T():
    from wccp.fwdmodel import ForwardingModel
    now = [0]
    fm = ForwardingModel(clock=lambda: now[0])
    r, _ = make(dp=fm, timers={"here_i_am_ms": 40000})
    r.tick(0)
    off = 0
    for _k in range(200):
        now[0] += r.next_deadline(now[0])
        if not fm.redirect_enabled():
            off += 1
        r.tick(now[0])
    assert off == 0


# ------------------------------------------------------------------------ defect 9
def test_d9_method_change_of_a_usable_cache_is_programmed():
    r, dp = make([{"id": 0, "forwarding": ["gre", "l2"], "return": ["gre", "l2"], "l2_adjacent": ["127.0.0.2"]}])
    join(r, "127.0.0.2", caps=[(1, 1), (2, 1), (3, 1)])
    c = dp.live[0]["caches"][0]
    assert (c["forward"], c["ret"]) == (1, 1)
    r.receive(hia("127.0.0.2", _last_rid(r, "127.0.0.2"), caps=[(1, 2), (2, 1), (3, 2)]), "127.0.0.2", 2048, R, 5)
    c = dp.live[0]["caches"][0]
    assert (c["forward"], c["ret"]) == (2, 2)


# ------------------------------------------------------------------------ defect 10
def test_d10_unwritable_state_never_repeats_change_numbers_and_says_so():
    d = "/tmp/" + scratch_name("wccp_no_such_dir") + "/sub"
    mcns = set()
    routers = []
    for _k in range(3):
        r, dp = make(storage=FileStorage(d))
        mcns.add(group(r).mcn)
        routers.append(r)
    assert len(mcns) == 3
    for r in routers:
        st = r.status()
        assert st["boot_persisted"] is False and st["storage_error"]


# ------------------------------------------------------------------------ defect 11
def test_d11_defining_a_service_keeps_other_groups_cache_locations():
    from wccp.fwdmodel import ForwardingModel
    fm = ForwardingModel()
    r, _ = make([{"id": 0}, {"id": 91, "type": "dynamic"}], dp=fm)
    join(r, "127.0.0.2")
    g0 = group(r, 0)
    assert g0.slot == 0
    mac = b"\x02\x00\x00\x00\x00\x02"
    fm.set_cache_location(0, 0, mac, 1)             # as if learnt from the cache's frames
    fm.commit()
    hi = dict(DYN)
    hi["priority"] = 250
    join(r, "127.0.0.4", service=svc(91, **hi))
    assert g0.slot == 1
    assert fm.cache_location(1, 0) == (mac, 1)
    # forgetting the dynamic service moves it back, location kept
    r.receive(hia("127.0.0.4", _last_rid(r, "127.0.0.4", 91), service=svc(91, **hi), shutdown=True),
              "127.0.0.4", 2048, R, 1)
    assert g0.slot == 0
    assert fm.cache_location(0, 0) == (mac, 1)
