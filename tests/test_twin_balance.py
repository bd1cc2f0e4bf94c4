"""Static balancing (RFC 3074 HBA) and the per-group hash function in the digital twin: the
firmware's Router (config -> wccp.hba static group) programs the twin (RTL fpga_core on
Verilator, or the fast mode) through the real driver; the servers send no WCCP, only answer
TCP health checks on loopback; client frames on port 0 leave GRE-encapsulated to the server
the configured hash function and HBA name; a server whose listener closes loses its buckets
to the others; with every server dead the traffic passes unredirected (fail-open).

Addresses 127.63.9.x (health listeners) and 127.63.1.1 (twin sockets), ports 7600+.
"""
import random
import socket
import struct
import time

import pytest
from twin_helpers import build_rtl, by_port, ether, ip2int, ipv4, mac, tcp

from wccp import config
from wccp.fpga import FpgaDataPlane
from wccp.fwdmodel import fold, hash_key
from wccp.hba import buckets_for, parse
from wccp.pearson import bucket as pearson_bucket
from wccp.router import Router
from wccptool import twin

SERVERS = ["127.63.9.11", "127.63.9.12", "127.63.9.13"]
HBA = "127.63.9.11: 0..99; 127.63.9.12: 100..199; 127.63.9.13: 200..255;"
FLAGS = 0x1 | 0x4       # src_ip, src_port
APPL_MAC = mac("02:63:00:00:00:aa")
GW_MAC = mac("02:63:00:00:00:fe")
_PORTS = {"rtl": 7600, "model": 7650}


@pytest.fixture(scope="module", autouse=True)
def _rtl_built():
    build_rtl()


def _listeners(port=0):
    out = []
    for a in SERVERS:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((a, port))
        s.listen(64)
        port = s.getsockname()[1]
        out.append(s)
    return out, port


def _router(dp, hash_fn, port):
    cfg = config.load({"router_id": "10.63.0.1", "mac": "02:63:00:00:00:aa", "addresses": ["127.63.9.1"],
                       # a dynamic service has no slot until a cache defines it: the static
                       # group's port 80 is not matched by a WCCP group first
                       "services": [{"id": 90, "type": "dynamic"}], "static": [
                           {"assignment": HBA, "protocol": 6, "ports": [80], "hash": hash_fn,
                            "hash_fields": ["src_ip", "src_port"], "forwarding": "gre",
                            "servers": [{"address": a, "mac": "02:63:09:00:00:%02x" % (11 + i), "port": 1}
                                        for i, a in enumerate(SERVERS)],
                            "health": {"tcp_port": port, "interval_ms": 100, "timeout_ms": 100, "fails": 1}}]})
    return Router(cfg, dp, int(time.monotonic() * 1000), seed=7)


def _tick_until(r, cond, what):
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        r.tick(int(time.monotonic() * 1000))
        if cond():
            return
        time.sleep(0.02)
    raise AssertionError("%s: %s" % (what, r.status()["static"]))


def _clients(rng, n):
    pk = []
    for i in range(n):
        src, sport = ip2int("10.63.%d.%d" % (rng.randrange(4), rng.randrange(1, 250))), rng.randrange(1024, 65536)
        dst = rng.getrandbits(32)
        pk.append(((src, dst, sport, 80),
                   ether(GW_MAC, mac("02:63:02:00:00:%02x" % (i % 250)), ipv4(src, dst, 6, tcp(sport, 80, b"x" * 20)))))
    return pk


def _expected(pkts, hash_fn, up):
    tab = buckets_for(parse(HBA), SERVERS, up)
    out = []
    for (src, dst, sport, dport), _f in pkts:
        b = pearson_bucket(FLAGS, src, dst, sport, dport) if hash_fn == "pearson" \
            else fold(hash_key(FLAGS, src, dst, sport, dport))
        out.append(None if tab[b] == 0xFF else SERVERS[tab[b]])
    return out


def _send(fc, pkts):
    """Send the client frames one by one; the GRE destination of each (None: forwarded as is)."""
    got = []
    for _k, f in pkts:
        fc.send_many([(0, f)])
        out = by_port(fc.barrier())
        assert len(out[1]) == 1 and not out[0]
        o = out[1][0]
        if o[12:14] == b"\x08\x00" and o[23] == 47:
            assert o[6:12] == APPL_MAC and o[26:30] == struct.pack(">I", ip2int("10.63.0.1"))
            got.append("%d.%d.%d.%d" % tuple(o[30:34]))
        else:
            assert o == f
            got.append(None)
    return got


def _start(fpga, tmp_path, n):
    p = _PORTS[fpga] + 10 * n
    return twin.start(fpga=fpga, spi="127.63.1.1:%d" % p, frames="127.63.1.1:%d" % (p + 1),
                      log_file=str(tmp_path / "twin.log"))


@pytest.mark.parametrize("fpga,hash_fn", [("rtl", "pearson"), ("model", "wccp")])
def test_static_hba_redirects_and_a_dead_servers_buckets_move(fpga, hash_fn, tmp_path):
    rng = random.Random(2801)
    ls, port = _listeners()
    tw = _start(fpga, tmp_path, 0 if hash_fn == "wccp" else 1)
    try:
        r = _router(FpgaDataPlane(tw.transport()), hash_fn, port)
        fc = tw.frame_client()
        pkts = _clients(rng, 60)
        assert _send(fc, pkts[:5]) == [None] * 5        # servers not yet checked: fail-open
        grp = r.static.groups[0]
        _tick_until(r, lambda: len(grp["up"]) == 3, "all servers up")
        got = _send(fc, pkts)
        assert got == _expected(pkts, hash_fn, set(SERVERS))
        assert len(set(got)) == 3
        ls[1].close()                                   # server .12 dies
        _tick_until(r, lambda: SERVERS[1] not in grp["up"], "server .12 down")
        got = _send(fc, pkts)
        assert got == _expected(pkts, hash_fn, {SERVERS[0], SERVERS[2]})
        assert SERVERS[1] not in got and None not in got
        ls[0].close()
        ls[2].close()
        _tick_until(r, lambda: not grp["up"], "all down")
        assert _send(fc, pkts[:10]) == [None] * 10      # fail-open
        fc.close()
    finally:
        for s in ls:
            s.close()
        tw.stop()


@pytest.mark.parametrize("fpga", ["rtl", "model"])
def test_group_switched_between_hash_functions_by_config(fpga, tmp_path):
    """The same static group, configured with hash "pearson", then "wccp", then "pearson"
    again: the twin redirects every packet to the server its configured function names."""
    rng = random.Random(2802)
    ls, port = _listeners()
    tw = _start(fpga, tmp_path, 2)
    try:
        fc = tw.frame_client()
        pkts = _clients(rng, 60)
        results = {}
        for h in ("pearson", "wccp", "pearson"):
            r = _router(FpgaDataPlane(tw.transport()), h, port)
            _tick_until(r, lambda r=r: len(r.static.groups[0]["up"]) == 3, "all servers up")
            got = _send(fc, pkts)
            assert got == _expected(pkts, h, set(SERVERS)), h
            results[h] = got
        assert sum(a != b for a, b in zip(results["pearson"], results["wccp"], strict=True)) > 20
        fc.close()
    finally:
        for s in ls:
            s.close()
        tw.stop()
