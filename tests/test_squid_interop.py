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
from squid_fixture import SPEED, Capture, Squid, squid_bins, wait_for  # noqa: F401  (fixture)

from wccp import codec

HIA, ISY, RA, RQ = 10, 11, 12, 13


def _net(n):
    return "127.51.%d." % n


def _capture(tmp_path, n):
    return Capture(tmp_path / "wccp.pcap",
                   "(udp port 2048 or udp port 9) and net 127.51.%d.0/24" % n).start(probe_addr=_net(n) + "1")


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
    lis = _udp_listener(router)
    cap = _capture(tmp_path, n)
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
