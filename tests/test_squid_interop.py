"""Interoperability with a real Squid (issue 7, docs/squid.md).

Squid 5.7 from Debian's source package with the two upstream WCCPv2 fixes (scripts/build-squid.sh,
built once per machine by scripts/ensure-squid.sh) and Debian's unpatched binary package. Squid runs
under libfaketime at SPEED x so its hard-coded 10 s / 15 s timers take 1 s / 1.5 s. Every scenario
captures UDP 2048 on lo, decodes what is on the wire with our codec and requires tshark to dissect
every frame without expert warnings or errors. Addresses: 127.51.<scenario>.x.
"""
import socket
import time

import pytest
from squid_fixture import SPEED, Capture, Squid, squid_bins, start_router, wait_for  # noqa: F401  (fixture)

from wccp import codec

# Listed in conftest.py SPLIT_MODULES: pytest-xdist may run these tests on different
# workers at the same time, as every scenario has its own
# 127.51.<n>.0/24 subnet, HTTP port and capture lock. Keep it so.

HIA, ISY, RA, RQ = 10, 11, 12, 13


def _net(n):
    return "127.51.%d." % n


def _capture(tmp_path, n):
    """Start capturing 127.51.<n>.0/24. Holds a lock on that subnet until cap.stop(), so two
    pytest sessions running this module at the same time take turns per scenario."""
    return Capture(tmp_path / "wccp.pcap", "(udp port 2048 or udp port 9) and net 127.51.%d.0/24" % n,
                   lock="127.51.%d" % n).start(probe_addr=_net(n) + "1")


def _wccp(cap, **match):
    out = []
    for p in cap.udp_packets():
        if 2048 not in (p["sport"], p["dport"]):
            continue
        if any(p[k] != v for k, v in match.items()):
            continue
        p["msg"] = codec.decode(p["payload"])
        out.append(p)
    return out


def _check_hia(msg, squid_addr, router_addr, service_id=0, data_type="hash", caps=(1, 1, 1)):
    ip = codec.ip2int
    assert msg["type"] == HIA
    assert msg["version"] == 0x0200
    assert msg["security"]["option"] == 0
    assert msg["service"]["service_id"] == service_id
    wci = msg["web_cache_identity"]
    assert wci["address"] == ip(squid_addr)
    assert wci["data_type"] == data_type
    view = msg["web_cache_view"]
    assert view["change_number"] == 1
    assert [r["router_id"] for r in view["routers"]] == [ip(router_addr)]
    assert list(view["web_caches"]) == []
    assert [(c["type"], c["value"]) for c in msg["capabilities"]] == list(zip((1, 2, 3), caps, strict=True))


def _udp_listener(addr):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, 2048))
    s.settimeout(0.1)
    return s


@pytest.mark.parametrize("kind", ["debian", "patched"])
def test_squid_sends_here_i_am(squid_bins, tmp_path, kind):  # noqa: F811
    """Both Squids send HERE_I_AMs every 10 s (1 s at x10) that our codec decodes and tshark
    dissects cleanly; nothing answers, so the Receive ID stays 0."""
    n = 1 if kind == "debian" else 2
    router, cache = _net(n) + "1", _net(n) + "2"
    cap = _capture(tmp_path, n)
    lis = _udp_listener(router)
    sq = Squid(squid_bins, kind, tmp_path / "squid", cache, [router]).start()
    try:
        got = []

        def three():
            try:
                data, src = lis.recvfrom(4096)
                got.append((time.monotonic(), data, src))
            except socket.timeout:
                pass
            return len(got) >= 3
        wait_for(three, 15, step=0, what="3 HERE_I_AMs from %s Squid" % kind)
        assert sq.running(), sq.log()[-3000:]
    finally:
        sq.stop()
        cap.stop()
        lis.close()
    for _t, data, src in got:
        assert src == (cache, 2048)
        msg = codec.decode(data)
        assert msg["length"] + 8 == len(data)
        _check_hia(msg, cache, router)
        assert msg["web_cache_view"]["routers"][0]["receive_id"] == 0
        assert msg["web_cache_identity"]["weight"] == 10000
    gaps = [b[0] - a[0] for a, b in zip(got, got[1:], strict=False)]
    # 10 s in Squid time; generous bounds, this only shows the clock really is sped up.
    assert all(0.3 * 10 / SPEED < g < 3.0 * 10 / SPEED for g in gaps), gaps
    wire = _wccp(cap, src=cache)
    assert len(wire) >= 3
    assert [p["payload"] for p in wire[:3]] == [d for _t, d, _s in got]
    probs = cap.tshark_problems()
    assert probs == [], probs


def test_tshark_check_catches_bad_wccp(tmp_path):
    """The "decodes without warnings" check used by every scenario really reports problems:
    a header Length past the end of the datagram and an I_SEE_YOU with Receive ID 0."""
    n = 3
    router, cache = _net(n) + "1", _net(n) + "2"
    cap = _capture(tmp_path, n)
    rx = _udp_listener(cache)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx.bind((router, 2048))
    try:
        ip = codec.ip2int
        svc = {"service_type": 0, "service_id": 0, "priority": 0, "protocol": 0, "service_flags": 0,
               "ports": [0] * 8}
        isy = {"type": ISY, "version": 0x0200, "security": {"option": 0}, "service": svc,
               "router_identity": {"router_id": ip(router), "receive_id": 0, "sent_to": ip(router),
                                   "received_from": [ip(cache)]},
               "router_view": {"member_change_number": 1,
                               "assignment_key": {"address": 0, "change_number": 0},
                               "routers": [ip(router)], "web_caches": []}}
        tx.sendto(codec.encode(isy), (cache, 2048))
        tx.sendto(b"\x00\x00\x00\x0b\x02\x00\x00\x40" + bytes(8), (cache, 2048))
        wait_for(lambda: len(_wccp_raw(cap)) >= 2, 5, what="2 frames captured")
    finally:
        cap.stop()
        rx.close()
        tx.close()
    probs = cap.tshark_problems()
    assert any("Receive ID" in p and "frame" in p for p in probs), probs
    assert len({p.split()[1] for p in probs}) == 2, probs       # both frames flagged


def _wccp_raw(cap):
    return [p for p in cap.udp_packets() if p["dport"] == 2048 or p["sport"] == 2048]


# ----------------------------------------------------------------------------------------------
# Scenarios with the firmware (MicroPython unix port) as the router.

T_MS = 10000 // SPEED          # firmware HERE_I_AM interval matching Squid's sped-up clock


def _config(n, services):
    router = _net(n) + "1"
    return {"router_id": router, "addresses": [router],
            "http": {"address": router, "port": 18000 + n},
            "timers": {"here_i_am_ms": T_MS}, "services": services}


def _group(status, sid):
    for g in status["groups"]:
        if g["service_id"] == sid:
            return g
    raise AssertionError("no group %d in %r" % (sid, status))


def _ra_assignment(msg):
    """What a REDIRECT_ASSIGN assigns, in the firmware's /status shape."""
    ip = codec.int2ip
    if "assignment_info" in msg:
        a = msg["assignment_info"]
        return {"type": "hash", "caches": [ip(c) for c in a["web_caches"]], "buckets": list(a["buckets"])}
    a = msg["alternate_assignment"]
    if a["assignment_type"] == 0:
        return {"type": "hash", "caches": [ip(c) for c in a["web_caches"]], "buckets": list(a["buckets"])}
    assert a["assignment_type"] == 1, a
    return {"type": "mask", "sets": [
        {"masks": dict(s["masks"]),
         "values": [{"src_addr": ip(v["src_addr"]), "dst_addr": ip(v["dst_addr"]),
                     "src_port": v["src_port"], "dst_port": v["dst_port"],
                     "cache_address": ip(v["cache_address"])} for v in s["values"]]}
        for s in a["mask_value_sets"]]}


def _ra_key(msg):
    a = msg.get("assignment_info") or msg["alternate_assignment"]
    return a["assignment_key"]


def _bucket_owners(asg):
    """Per bucket the owning cache address (None = unassigned); hash only."""
    return [None if b == 0xFF else asg["caches"][b & 0x7F] for b in asg["buckets"]]


def _assert_same_assignment(status_asg, ra_asg):
    assert status_asg is not None, "the firmware holds no assignment"
    assert status_asg["type"] == ra_asg["type"]
    if ra_asg["type"] == "hash":
        assert len(ra_asg["buckets"]) == 256
        assert _bucket_owners(status_asg) == _bucket_owners(ra_asg)
        assert sorted(status_asg["caches"]) == sorted(ra_asg["caches"])
    else:
        assert status_asg["sets"] == ra_asg["sets"]


def _accepted_ra(cap, router, group):
    """The REDIRECT_ASSIGN on the wire whose Assignment Key the firmware reports as accepted."""
    key = group["assignment_key"]

    def find():
        ras = [p for p in _wccp(cap, dst=router, dport=2048) if p["msg"]["type"] == RA]
        return ras, [p for p in ras if codec.int2ip(_ra_key(p["msg"])["address"]) == key["address"]
                     and _ra_key(p["msg"])["change_number"] == key["change_number"]]
    try:                                       # dumpcap writes the file with a little delay
        wait_for(lambda: find()[1], 5, step=0.1, what="the accepted RA in the capture")
    except AssertionError:
        pass
    ras, match = find()
    assert len(match) == 1, (key, [_ra_key(p["msg"]) for p in ras])
    return match[0]


def _assigned_to(group, caches):
    """Predicate: the group holds an assignment covering exactly `caches` (all usable)."""
    if group["assignment"] is None:
        return False
    usable = sorted(c["address"] for c in group["caches"] if c["state"] == "usable")
    if usable != sorted(caches):
        return False
    a = group["assignment"]
    owners = set(_bucket_owners(a)) - {None} if a["type"] == "hash" else \
        set(v["cache_address"] for s in a["sets"] for v in s["values"])
    return owners == set(caches)


def _wait_assigned(fw, sid, caches, timeout=20, newer_than=None):
    """Wait until service sid's assignment covers exactly `caches`; with newer_than (a group
    status) it must also come from a later REDIRECT_ASSIGN (another Assignment Key)."""
    def ready():
        g = _group(fw.status(), sid)
        if newer_than is not None and g["assignment_key"] == newer_than["assignment_key"]:
            return None
        return g if _assigned_to(g, caches) else None
    return wait_for(ready, timeout, step=0.1, what="assignment of service %d to %s" % (sid, caches))


def _squids_accepted_everything(s):
    """No patched Squid rejected any of the firmware's datagrams (it logs each rejection)."""
    for sq in s.squids:
        if sq.kind == "patched":
            log = sq.log()
            assert "Incoming WCCPv2 I_SEE_YOU" in log, log[-3000:]
            assert "Ignoring WCCPv2 message" not in log, log[-3000:]


def _check_wire(cap, router, caches, sid, data_type="hash"):
    """Every WCCP datagram decodes; ISYs come from the router's port 2048 and list the caches."""
    pkts = _wccp(cap)
    assert pkts, "nothing captured"
    for p in pkts:
        m = p["msg"]
        assert m["length"] + 8 == len(p["payload"])
        assert m["service"]["service_id"] == sid
        if p["src"] == router:
            assert p["sport"] == 2048 and m["type"] in (ISY, RQ), p
        else:
            assert p["src"] in caches and m["type"] in (HIA, RA), p
    isys = [p["msg"] for p in pkts if p["msg"]["type"] == ISY]
    assert isys, "no I_SEE_YOU on the wire"
    for m in isys:
        assert m["router_identity"]["router_id"] == codec.ip2int(router)
        for el in m["router_view"]["web_caches"]:
            assert el["data_type"] == data_type
    probs = cap.tshark_problems()
    assert probs == [], probs


class _Scenario:
    """Firmware + capture + Squids for one scenario; everything stopped in close()."""

    def __init__(self, bins, tmp_path, n, services):
        self.bins = bins
        self.tmp = tmp_path
        self.n = n
        self.router = _net(n) + "1"
        self.config = _config(n, services)
        self.squids = []
        self.fw = None
        self.cap = _capture(tmp_path, n)

    def start_fw(self):
        self.fw = start_router(self.config, self.tmp / "fw")
        return self.fw

    def squid(self, host, kind="patched", **kw):
        sq = Squid(self.bins, kind, self.tmp / ("squid%d" % host), _net(self.n) + str(host), [self.router], **kw)
        self.squids.append(sq)
        return sq.start()

    def close(self):
        for sq in self.squids:
            sq.stop()
        if self.fw is not None:
            self.fw.stop()
        self.cap.stop()

    def logs(self):
        return "\n".join("---- %s\n%s" % (sq.address, sq.log()[-2500:]) for sq in self.squids)


@pytest.fixture
def scenario(squid_bins, tmp_path):  # noqa: F811
    made = []

    def make(n, services):
        s = _Scenario(squid_bins, tmp_path, n, services)
        made.append(s)
        return s
    yield make
    for s in made:
        s.close()


def test_standard_service_hash_gre(scenario):
    """Service 0, hash assignment, GRE: the firmware holds exactly the RA Squid sent."""
    s = scenario(10, [{"id": 0, "type": "standard", "forwarding": ["gre"], "assignment": ["hash"],
                       "return": ["gre"]}])
    fw = s.start_fw()
    cache = _net(10) + "2"
    s.squid(2)
    g = _wait_assigned(fw, 0, [cache])
    ra = _accepted_ra(s.cap, s.router, g)
    assert ra["src"] == cache
    _assert_same_assignment(g["assignment"], _ra_assignment(ra["msg"]))
    rel = ra["msg"]["assignment_info"]["routers"]
    assert [codec.int2ip(r["router_id"]) for r in rel] == [s.router]
    assert rel[0]["member_change_number"] == g["member_change_number"]
    # equal weights: every bucket to the single cache
    assert set(_bucket_owners(g["assignment"])) == {cache}
    c = g["caches"][0]
    assert (c["address"], c["state"], c["forwarding"], c["return"], c["assignment"]) == \
        (cache, "usable", "gre", "gre", "hash")
    assert g["counters"]["ra_accepted"] >= 1 and g["counters"]["isy_tx"] >= 1
    assert all(sq.running() for sq in s.squids), s.logs()
    _check_wire(s.cap, s.router, [cache], 0)
    _squids_accepted_everything(s)


def test_dynamic_service_mask_l2(scenario):
    """Dynamic service 90, mask assignment, L2 forwarding and return (cache configured as
    L2-adjacent): Squid's 64 mask values are what the firmware holds."""
    cache = _net(11) + "2"
    s = scenario(11, [{"id": 90, "type": "dynamic", "forwarding": ["l2"], "assignment": ["mask"],
                       "return": ["l2"], "l2_adjacent": [{"address": cache, "mac": "02:00:00:51:0b:02"}]}])
    fw = s.start_fw()
    s.squid(2, service=90, assignment="mask", forwarding="l2", returning="l2", ports=(80, 8080))
    g = _wait_assigned(fw, 90, [cache])
    ra = _accepted_ra(s.cap, s.router, g)
    ra_asg = _ra_assignment(ra["msg"])
    assert ra_asg["type"] == "mask"
    _assert_same_assignment(g["assignment"], ra_asg)
    assert sum(len(x["values"]) for x in g["assignment"]["sets"]) == 64
    assert g["definition"]["ports"] == [80, 8080]
    c = g["caches"][0]
    assert (c["state"], c["forwarding"], c["return"], c["assignment"], c["l2_adjacent"]) == \
        ("usable", "l2", "l2", "mask", True)
    # mask groups carry the assignment as an Assignment Map in the I_SEE_YOUs that follow it
    isy = wait_for(lambda: [p["msg"] for p in _wccp(s.cap, src=s.router)
                            if p["msg"]["type"] == ISY and p["t"] > ra["t"]], 5, step=0.1,
                   what="an I_SEE_YOU after the RA")[0]
    assert isy["assignment_map"]["mask_value_sets"] == ra["msg"]["alternate_assignment"]["mask_value_sets"]
    _check_wire(s.cap, s.router, [cache], 90, data_type="mask")
    _squids_accepted_everything(s)


def test_md5_security(scenario):
    """Service 0 with an MD5 password on both sides: every datagram's digest verifies."""
    pw = "s3cr3t"
    s = scenario(12, [{"id": 0, "type": "standard", "password": pw}])
    fw = s.start_fw()
    cache = _net(12) + "2"
    s.squid(2, password=pw)
    g = _wait_assigned(fw, 0, [cache])
    assert g["md5"] is True
    _assert_same_assignment(g["assignment"], _ra_assignment(_accepted_ra(s.cap, s.router, g)["msg"]))
    pkts = _wccp(s.cap)
    assert {p["msg"]["type"] for p in pkts} >= {HIA, ISY, RA}
    for p in pkts:
        assert p["msg"]["security"]["option"] == 1
        assert codec.verify_md5(p["payload"], pw), p
        assert not codec.verify_md5(p["payload"], "wrong")
    _check_wire(s.cap, s.router, [cache], 0)
    _squids_accepted_everything(s)


def test_md5_wrong_password_keeps_cache_out(scenario):
    """A Squid with another password is dropped (counted), never usable, never answered."""
    s = scenario(13, [{"id": 0, "type": "standard", "password": "right"}])
    fw = s.start_fw()
    s.squid(2, password="wrong")
    wait_for(lambda: fw.status()["drops"].get("md5_failure", 0) + _group(fw.status(), 0)["drops"]
             .get("md5_failure", 0) >= 2, 10, what="two md5_failure drops")
    g = _group(fw.status(), 0)
    assert g["assignment"] is None and g["usable"] == 0
    assert [p for p in _wccp(s.cap, src=s.router)] == []
    _check_wire_clean(s.cap)


def _check_wire_clean(cap):
    probs = cap.tshark_problems()
    assert probs == [], probs


def test_two_squids_designated_cache_assigns_both(scenario):
    """Two Squids: the designated one (lowest address) sends the RA, both get buckets."""
    s = scenario(14, [{"id": 0, "type": "standard"}])
    fw = s.start_fw()
    a, b = _net(14) + "2", _net(14) + "3"
    s.squid(2)
    s.squid(3)
    g = _wait_assigned(fw, 0, [a, b], timeout=25)
    ra = _accepted_ra(s.cap, s.router, g)
    assert ra["src"] == a, "the designated cache is the lowest address"
    asg = _ra_assignment(ra["msg"])
    _assert_same_assignment(g["assignment"], asg)
    owners = _bucket_owners(g["assignment"])
    assert owners.count(a) == owners.count(b) == 128        # equal weights
    assert not [p for p in _wccp(s.cap, src=b) if p["msg"]["type"] == RA \
                and _ra_key(p["msg"])["change_number"] == g["member_change_number"]]
    _check_wire(s.cap, s.router, [a, b], 0)
    _squids_accepted_everything(s)


def test_squid_joins_later(scenario):
    """A second Squid joining changes the member change number; the designated cache
    re-assigns and the firmware holds the new RA."""
    s = scenario(15, [{"id": 0, "type": "standard"}])
    fw = s.start_fw()
    a, b = _net(15) + "2", _net(15) + "3"
    s.squid(2)
    g1 = _wait_assigned(fw, 0, [a])
    s.squid(3)
    g2 = _wait_assigned(fw, 0, [a, b], timeout=25)
    assert g2["member_change_number"] != g1["member_change_number"]
    assert g2["assignment_key"] != g1["assignment_key"]
    ra1 = _accepted_ra(s.cap, s.router, g1)
    ra2 = _accepted_ra(s.cap, s.router, g2)
    assert ra1["src"] == ra2["src"] == a
    _assert_same_assignment(g1["assignment"], _ra_assignment(ra1["msg"]))
    _assert_same_assignment(g2["assignment"], _ra_assignment(ra2["msg"]))
    assert set(_bucket_owners(g2["assignment"])) == {a, b}
    _check_wire(s.cap, s.router, [a, b], 0)
    _squids_accepted_everything(s)


def test_appliance_restart_squid_reassigns(scenario):
    """The appliance restarts while Squid keeps running: the new boot has a new member change
    number (persisted boot counter), so Squid assigns again and the firmware holds that RA."""
    s = scenario(16, [{"id": 0, "type": "standard"}])
    fw = s.start_fw()
    cache = _net(16) + "2"
    sq = s.squid(2)
    g1 = _wait_assigned(fw, 0, [cache])
    boot1 = fw.status()["boot"]
    fw.stop()
    fw = s.start_fw()                         # same state directory: boot counter persists
    assert fw.status()["boot"] == boot1 + 1
    g2 = _wait_assigned(fw, 0, [cache], timeout=25)
    assert g2["member_change_number"] != g1["member_change_number"]
    assert sq.running(), s.logs()
    ra2 = _accepted_ra(s.cap, s.router, g2)
    _assert_same_assignment(g2["assignment"], _ra_assignment(ra2["msg"]))
    rel = ra2["msg"]["assignment_info"]["routers"][0]
    assert rel["member_change_number"] == g2["member_change_number"]
    _check_wire(s.cap, s.router, [cache], 0)
    _squids_accepted_everything(s)


def test_debian_squid_gets_answers_but_never_assigns(scenario):
    """Debian's unpatched Squid: the firmware parses its HERE_I_AMs and answers each with an
    I_SEE_YOU; Squid cannot parse them (upstream bugs), so it never echoes a Receive ID, never
    becomes usable and never sends REDIRECT_ASSIGN."""
    s = scenario(17, [{"id": 0, "type": "standard"}])
    fw = s.start_fw()
    cache = _net(17) + "2"
    sq = s.squid(2, kind="debian")
    g = wait_for(lambda: (lambda g: g if g["counters"]["isy_tx"] >= 3 else None)(_group(fw.status(), 0)),
                 15, step=0.1, what="3 I_SEE_YOUs to Debian's Squid")
    time.sleep(2.5 * 15 / SPEED)              # longer than Squid's RA delay
    g = _group(fw.status(), 0)
    assert sq.running(), s.logs()
    c = [x for x in g["caches"] if x["address"] == cache]
    assert len(c) == 1 and c[0]["state"] == "pending" and c[0]["hia_count"] >= 3, g
    assert g["counters"]["hia_rx"] >= 3 and g["counters"]["isy_tx"] >= 3
    assert g["counters"]["ra_rx"] == 0 and g["assignment"] is None and g["usable"] == 0
    hias = [p for p in _wccp(s.cap, src=cache)]
    isys = [p for p in _wccp(s.cap, src=s.router)]
    assert hias and all(p["msg"]["type"] == HIA for p in hias)
    assert all(p["msg"]["web_cache_view"]["routers"][0]["receive_id"] == 0 for p in hias)
    assert len(isys) >= 3 and all(p["msg"]["type"] == ISY and p["dst"] == cache and p["dport"] == 2048
                                  for p in isys)
    rids = [p["msg"]["router_identity"]["receive_id"] for p in isys]
    assert all(r != 0 for r in rids) and rids == sorted(rids) and len(set(rids)) == len(rids)
    for p in isys:
        assert p["msg"]["router_identity"]["received_from"] == [codec.ip2int(cache)] or \
            codec.ip2int(cache) in p["msg"]["router_identity"]["received_from"]
    _check_wire(s.cap, s.router, [cache], 0)
    # ... and they reached it: Squid logs each I_SEE_YOU and its (buggy) rejection
    log = sq.log()
    assert log.count("Incoming WCCPv2 I_SEE_YOU") >= 3, log[-3000:]
    assert "Ignoring WCCPv2 message" in log, log[-3000:]


def test_squid_leaves_survivor_reassigns(scenario):
    """One of two Squids dies (it never says goodbye): the firmware sends it a REMOVAL_QUERY,
    removes it after 3 T of silence, bumps the member change number, and the surviving Squid
    assigns every bucket to itself."""
    s = scenario(18, [{"id": 0, "type": "standard"}])
    fw = s.start_fw()
    a, b = _net(18) + "2", _net(18) + "3"
    s.squid(2)
    sq_b = s.squid(3)
    g1 = _wait_assigned(fw, 0, [a, b], timeout=25)
    sq_b.stop()
    t_dead = time.monotonic()
    # at 3 T the firmware drops it from the held assignment at once (its buckets unassigned) ...
    purged = wait_for(lambda: (lambda g: g if g["usable"] == 1 else None)(_group(fw.status(), 0)),
                      15, step=0.1, what="removal of the dead cache")
    assert time.monotonic() - t_dead >= 3 * T_MS / 1000.0 - 1.5       # not before its timeout
    assert purged["assignment_key"] == g1["assignment_key"]
    assert set(_bucket_owners(purged["assignment"])) <= {a, None}
    # ... and the survivor's new REDIRECT_ASSIGN takes over
    g2 = _wait_assigned(fw, 0, [a], timeout=25, newer_than=g1)
    assert g2["member_change_number"] != g1["member_change_number"]
    assert g2["counters"]["removals_timeout"] >= 1
    ra = _accepted_ra(s.cap, s.router, g2)
    assert ra["src"] == a
    _assert_same_assignment(g2["assignment"], _ra_assignment(ra["msg"]))
    assert set(_bucket_owners(g2["assignment"])) == {a}
    rqs = [p for p in _wccp(s.cap, src=s.router) if p["msg"]["type"] == RQ]
    assert rqs and all(p["dst"] == b for p in rqs)
    assert rqs[0]["msg"]["router_query"]["target"] == codec.ip2int(b)
    _check_wire(s.cap, s.router, [a, b], 0)
    _squids_accepted_everything(s)
