"""Static balancing (RFC 3074 HBA, wccp.hba): syntax, bucket tables with dead servers, the
TCP health probe against real loopback listeners, the router programming static slots."""
import socket
import time

import pytest


from wccp import codec, config, hba
from wccp.fwdmodel import ForwardingModel
from wccp.router import Router

RFC_EXAMPLE = """192.33.43.11 192.33.43.12: 0..24;
192.33.43.13:  25..55;
192.33.43.15:  56..128;
192.33.43.16: 129 130 131 200..202;
"""


def test_parse_the_rfc_example():
    h = hba.parse(RFC_EXAMPLE)
    assert [s for s, _b in h] == [["192.33.43.11", "192.33.43.12"], ["192.33.43.13"], ["192.33.43.15"],
                                 ["192.33.43.16"]]
    assert h[0][1] == list(range(25)) and h[3][1] == [129, 130, 131, 200, 201, 202]
    assert hba.format_ranges(h[3][1]) == "129..131 200..202"


@pytest.mark.parametrize("text,err", [
    ("10.0.0.1: 0..10", "missing ';'"), ("10.0.0.1 0..10;", "need 'server"), ("10.0.0.1: 5..2;", "empty range"),
    ("10.0.0.1: 256;", "not a bucket"), ("10.0.0.1: 1; 10.0.0.2: 0..1;", "assigned twice"),
    ("10.0.0.300: 1;", "not an IPv4"), (": 1;", "no server"), ("10.0.0.1: ;", "no buckets"), ("", "no HBA")])
def test_parse_errors(text, err):
    with pytest.raises(hba.HbaError, match=err):
        hba.parse(text)


def test_buckets_of_dead_servers_move_round_robin_and_all_dead_is_empty():
    h = hba.parse(RFC_EXAMPLE)
    servers = ["192.33.43.11", "192.33.43.12", "192.33.43.13", "192.33.43.15", "192.33.43.16"]
    t = hba.buckets_for(h, servers, set(servers))
    assert t[0:25] == bytes([0]) * 25 and t[25:56] == bytes([2]) * 31 and t[203] == 0xFF
    t = hba.buckets_for(h, servers, set(servers) - {"192.33.43.11"})     # the HBA's second server takes over
    assert t[0:25] == bytes([1]) * 25
    up = {"192.33.43.11", "192.33.43.16"}
    t = hba.buckets_for(h, servers, up)
    moved = [t[b] for b in range(25, 129)]
    assert set(moved) == {0, 4} and abs(moved.count(0) - moved.count(4)) <= 1
    assert t[203] == 0xFF       # unassigned stays unassigned
    assert hba.buckets_for(h, servers, set()) == bytes([0xFF]) * 256


def test_config_static_section():
    cfg = config.load({"services": [{"id": 0}], "static": [
        {"assignment": "192.0.2.11: 0..127;\n192.0.2.12: 128..255;", "ports": [53], "protocol": 17,
         "servers": [{"address": "192.0.2.11", "mac": "02:00:00:00:00:11", "port": 1}]}]})
    g = cfg["static"][0]
    assert g["hash"] == "pearson" and g["forwarding"] == "gre" and g["health"]["tcp_port"] == 53
    assert g["servers"][0] == {"address": "192.0.2.11", "mac": bytes.fromhex("020000000011"), "port": 1}
    for bad, field in (({"assignment": "192.0.2.11 0..3;"}, r"static\[0\]\.assignment"),
                       ({"assignment": "192.0.2.11: 1;", "forwarding": "ipip"}, r"static\[0\]\.forwarding"),
                       ({"assignment": "192.0.2.11: 1;", "servers": [{"address": "192.0.2.99"}]},
                        r"static\[0\]\.servers\[0\]"),
                       ({"assignment": "192.0.2.11: 1;", "health": {"timeout_ms": 5000}}, r"static\[0\]\.health")):
        with pytest.raises(config.ConfigError, match=field):
            config.load({"services": [{"id": 0}], "static": [bad]})
    with pytest.raises(config.ConfigError, match="slots"):
        config.load({"services": [{"id": i, "type": "dynamic"} for i in range(1, 6)],
                     "static": [{"assignment": "192.0.2.11: 1;"}] * 4})


def _listener(addr):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, 0))
    s.listen(16)
    return s


def _wait(probe, h, secs=3):
    t0 = time.monotonic()
    while time.monotonic() - t0 < secs:
        r = probe.result(h)
        if r is not None:
            return r
        time.sleep(0.01)
    return None


def test_tcp_probe_against_real_listeners():
    p = hba.TcpProbe()
    ls = _listener("127.62.8.1")
    port = ls.getsockname()[1]
    h = p.start("127.62.8.1", port)
    assert _wait(p, h) is True
    p.close(h)
    ls.close()
    h = p.start("127.62.8.1", port)         # nobody listens any more: refused
    assert _wait(p, h) is False
    p.close(h)


def test_router_programs_static_slot_and_moves_a_dead_servers_buckets():
    ls = [_listener("127.62.8.11"), _listener("127.62.8.12")]
    port = ls[0].getsockname()[1]
    ls[1].close()
    ls[1] = socket.socket()
    ls[1].setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls[1].bind(("127.62.8.12", port))
    ls[1].listen(16)
    cfg = config.load({"addresses": ["127.62.8.1"], "services": [{"id": 0}], "static": [
        {"assignment": "127.62.8.11: 0..127; 127.62.8.12: 128..255;", "ports": [80],
         "health": {"tcp_port": port, "interval_ms": 100, "timeout_ms": 100, "fails": 1}}]})
    m = ForwardingModel(clock=lambda: 0)
    r = Router(cfg, m, 0, seed=1)
    slot = m._live.slots[7]
    assert slot.enabled and slot.hash is None           # servers not checked yet: fail-open
    assert slot.service["hash_fn"] == 1 and slot.service["ports"][0] == 80

    def run_until(cond, now):
        for _ in range(300):
            now += 50
            r.tick(now)
            if cond():
                return now
            time.sleep(0.01)
        raise AssertionError(r.status()["static"])
    now = run_until(lambda: m._live.slots[7].hash is not None and len(r.static.groups[0]["up"]) == 2, 0)
    t = m._live.slots[7].hash
    assert t[:128] == bytes(128) and t[128:] == bytes([1]) * 128
    ls[1].close()
    now = run_until(lambda: "127.62.8.12" not in r.static.groups[0]["up"], now)
    assert m._live.slots[7].hash == bytes(256)          # server 0 has every bucket
    st = r.status()["static"][0]
    assert st["servers"][0]["buckets"] == "0..255" and not st["servers"][1]["up"]
    ls[0].close()
    run_until(lambda: m._live.slots[7].hash is None, now)    # all dead: fail-open


def test_static_servers_without_a_location_are_discovered_with_the_caches():
    """Active discovery's target set (kept until membership, slots or a static group change)
    holds the static servers whose MAC is not configured, next to the usable caches."""
    cfg = config.load({"addresses": ["127.62.8.1"], "services": [{"id": 0}], "static": [
        {"assignment": "127.62.9.11 127.62.9.12: 0..255;", "ports": [80], "health": None,
         "servers": [{"address": "127.62.9.12", "mac": "02:00:00:00:09:12", "port": 1}]}]})   # located
    r = Router(cfg, ForwardingModel(clock=lambda: 0), 0, seed=1)
    r.tick(100)
    assert sorted(r.discovery.probes) == [codec.ip2int("127.62.9.11")]
    assert r.targets == {codec.ip2int("127.62.9.11")}
    kept = r.targets
    r.tick(200)
    assert r.targets is kept                 # nothing changed: the same set
    r.static.tick = lambda now: True         # a health check changed a static group: rebuilt
    r.tick(300)
    assert r.targets is not kept and r.targets == {codec.ip2int("127.62.9.11")}
