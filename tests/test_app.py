"""The real firmware under the MicroPython unix port on loopback (127.31.0.x), driven from CPython.

Also: every message the router state machine emits in tests/fw/test_router.py decodes in
tshark without an expert warning.
"""
import json
import os
import pathlib
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

import test_router as tr
from proc_output import Output
from tsharkcheck import assert_datagrams_clean
from wccp import codec
from wccp import router as router_mod
from wccptool.launch import FirmwareError, start_firmware

ROOT = pathlib.Path(__file__).resolve().parent.parent

RTR = "127.31.0.1"
CACHE = "127.31.0.2"
CACHE2 = "127.31.0.3"


def _udp(addr):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, 2048))
    s.settimeout(3)
    return s


def _exchange(s, payload, router=RTR):
    s.sendto(payload, (router, 2048))
    data, peer = s.recvfrom(65535)
    return data, peer


def test_router_outputs_decode_in_tshark(monkeypatch):
    """Run every state-machine test, capture everything the router sends, dissect it with tshark."""
    captured = []
    orig_receive = router_mod.Router.receive
    orig_tick = router_mod.Router.tick

    def receive(self, *a, **k):
        out = orig_receive(self, *a, **k)
        captured.extend(out)
        return out

    def tick(self, *a, **k):
        out = orig_tick(self, *a, **k)
        captured.extend(out)
        return out

    monkeypatch.setattr(router_mod.Router, "receive", receive)
    monkeypatch.setattr(router_mod.Router, "tick", tick)
    names = sorted(n for n in dir(tr) if n.startswith("test_"))
    for n in names:
        getattr(tr, n)()
    # every distinct message shape, at most a few thousand frames
    seen = set()
    uniq = []
    for d in captured:
        if d[3] not in seen:
            seen.add(d[3])
            uniq.append(d)
    types = set(codec.decode(d[3])["type"] for d in uniq)
    assert types == {11, 13}
    assert len(uniq) > 100
    assert_datagrams_clean(uniq[:3000])


def test_firmware_answers_hia_status_and_sigterm(tmp_path):
    cfg = {"router_id": RTR, "addresses": [RTR],
           "services": [{"id": 0, "forwarding": ["gre"], "assignment": ["hash"]}]}
    fw = start_firmware(cfg, wccp_addr=None, http_port=18131, http_addr=RTR, state_dir=str(tmp_path / "st"))
    got = []
    try:
        st = fw.status()
        assert st["router_id"] == RTR and st["app"]["wccp_sockets"] == [RTR]
        assert st["groups"][0]["service_id"] == 0 and st["groups"][0]["slot"] == 0
        with _udp(CACHE) as s:
            data, peer = _exchange(s, tr.hia(CACHE, 0, router=RTR))
            got.append((CACHE, 2048, peer[0], data))
            assert peer == (RTR, 2048)                 # from the address we sent to, UDP 2048
            m = codec.decode(data)
            assert m["type"] == 11 and m["version"] == 0x0200
            assert m["router_identity"]["received_from"] == [codec.ip2int(CACHE)]
            rid = m["router_identity"]["receive_id"]
            data, peer = _exchange(s, tr.hia(CACHE, rid, router=RTR))
            got.append((CACHE, 2048, peer[0], data))
            m = codec.decode(data)
            assert [e["address"] for e in m["router_view"]["web_caches"]] == [codec.ip2int(CACHE)]
            mcn = m["router_view"]["member_change_number"]
            ra = tr.ra_hash(CACHE, [(RTR, m["router_identity"]["receive_id"], mcn)], [CACHE], key_cn=3)
            s.sendto(ra, (RTR, 2048))
            deadline = time.time() + 5
            while time.time() < deadline:
                st = fw.status()
                if st["groups"][0]["assignment"]:
                    break
                time.sleep(0.05)
            g = st["groups"][0]
            assert g["assignment"]["type"] == "hash" and g["assignment"]["buckets"] == [0] * 256
            assert g["assignment_key"] == {"address": CACHE, "change_number": 3}
            c = g["caches"][0]
            assert c["address"] == CACHE and c["state"] == "usable" and c["assigned"] == 256
            assert st["app"]["udp_rx"] == 3 and st["app"]["udp_tx"] == 2
            # garbage is counted, never fatal
            for k in range(20):
                s.sendto(os.urandom(k * 7), (RTR, 2048))
            data, peer = _exchange(s, tr.hia(CACHE, m["router_identity"]["receive_id"], router=RTR))
            got.append((CACHE, 2048, peer[0], data))
            m = codec.decode(data)
            assert m["router_view"]["assignment_key"]["change_number"] == 3
            st = fw.status()
            assert st["drops"]["malformed"] == 20
            assert st["dataplane"]["slot_frames"] == [0] * 8       # the reference model's counters
        # HTTP: unknown path, bad request
        with pytest.raises(urllib.error.HTTPError) as e:
            fw.get("/nope")
        assert e.value.code == 404
        with socket.create_connection((RTR, 18131), timeout=3) as hs:
            hs.sendall(b"garbage\r\n\r\n")
            assert hs.recv(100).startswith(b"HTTP/1.0 400")
        assert fw.alive()
    finally:
        t0 = time.time()
        rc = fw.stop()
    assert rc == -15 and time.time() - t0 < 3
    # the sockets are gone with the process
    with _udp(RTR):
        pass
    assert "WCCP on %s:2048" % RTR in fw.log()
    assert_datagrams_clean(got)


def test_reboot_changes_member_change_number(tmp_path):
    state = str(tmp_path / "state")
    mcns = []
    boots = []
    for _ in range(2):
        fw = start_firmware(None, wccp_addr=RTR, http_port=18132, state_dir=state)
        try:
            with _udp(CACHE2) as s:
                data, _ = _exchange(s, tr.hia(CACHE2, 0, router=RTR))
                m = codec.decode(data)
                data, _ = _exchange(s, tr.hia(CACHE2, m["router_identity"]["receive_id"], router=RTR))
                mcns.append(codec.decode(data)["router_view"]["member_change_number"])
            boots.append(fw.status()["boot"])
        finally:
            fw.stop()
    assert boots == [1, 2]
    assert mcns[0] != mcns[1] and 0 not in mcns
    assert json.loads((tmp_path / "state" / "wccp_state.json").read_text())["boot"] == 2


def test_bad_config_is_a_clear_error(tmp_path):
    cfg = {"services": [{"id": 0, "password": "much-too-long"}]}
    with pytest.raises(FirmwareError) as e:
        start_firmware(cfg, wccp_addr=RTR, http_port=18133, state_dir=str(tmp_path), timeout=10)
    assert "services[0].password" in str(e.value) and "8" in str(e.value)
    res = subprocess.run([sys.executable, "-c", "pass"])
    assert res.returncode == 0


def _wccp_cmd():
    exe = pathlib.Path(sys.executable).parent / "wccp"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "wccptool.cli"]


def test_wccp_run_keeps_running_until_signal(tmp_path):
    import signal
    addr = "127.31.0.5"
    for sig in (signal.SIGTERM, signal.SIGINT):
        p = subprocess.Popen(_wccp_cmd() + ["run", "--wccp-addr", addr, "--http-port", "18134",
                                            "--state-dir", str(tmp_path)],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=str(ROOT))
        o = Output(p)
        out = ""
        try:
            assert o.wait_for("Stop:", 20), o.text()      # the banner is out: it is running
            with urllib.request.urlopen("http://%s:18134/status" % addr, timeout=5) as r:
                st = json.loads(r.read())
            assert st["router_id"] == addr
            time.sleep(1.5)
            assert p.poll() is None                    # keeps running
            with _udp("127.31.0.6") as s:              # and answers caches
                data, peer = _exchange(s, tr.hia("127.31.0.6", 0, router=addr), router=addr)
                assert codec.decode(data)["type"] == 11 and peer == (addr, 2048)
            p.send_signal(sig)
            out = o.finish(10)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        assert p.returncode == 0, out
        assert "wccp show --host %s --port 18134" % addr in out and "stopping" in out
        with _udp(addr):                               # the firmware is gone: 2048 is free again
            pass


def test_docs_config_example_is_valid():
    import re
    from wccp import config
    text = (ROOT / "docs" / "config.md").read_text()
    example = re.search(r"```json\n(.*?)```", text, re.S).group(1)
    cfg = config.load(example)
    assert [s["id"] for s in cfg["services"]] == [0, 90]


def test_multicast_group_join_and_scheduled_isy(tmp_path):
    grp, rtr, cache = "224.0.0.91", "127.31.0.7", "127.31.0.8"
    cfg = {"router_id": rtr, "addresses": [rtr], "timers": {"here_i_am_ms": 1000},
           "services": [{"id": 0, "multicast": grp}]}
    fw = start_firmware(cfg, wccp_addr=None, http_port=18135, http_addr=rtr, state_dir=str(tmp_path))
    got = []
    try:
        assert fw.status()["app"]["multicast_groups"] == [grp]
        tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)       # the cache: sends to the group
        tx.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        tx.bind((cache, 2048))
        tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(cache))
        rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)       # ... and listens on it
        rx.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        rx.bind((grp, 2048))
        rx.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(grp) + socket.inet_aton(cache))
        rx.settimeout(3)
        with tx, rx:
            rid = 0
            times = []
            t0 = time.time()
            while len(times) < 4 and time.time() - t0 < 10:
                tx.sendto(tr.hia(cache, rid, router=rtr), (grp, 2048))
                data, peer = rx.recvfrom(65535)
                if peer[0] != rtr:
                    continue                                     # our own HIA looped back
                m = codec.decode(data)
                assert m["type"] == 11 and peer == (rtr, 2048)
                assert m["router_identity"]["sent_to"] == codec.ip2int(grp)
                assert m["router_identity"]["received_from"] == [codec.ip2int(cache)]
                got.append((grp, 2048, rtr, data))
                times.append(time.time())
                rid = m["router_identity"]["receive_id"]
        assert len(times) == 4
        gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
        assert all(0.5 < g < 1.5 for g in gaps), gaps                # 0.9 T +-10 %, plus scheduling
        st = fw.status()
        c = st["groups"][0]["caches"][0]
        assert c["address"] == cache and c["state"] == "usable" and c["multicast"] is True
        assert codec.decode(got[-1][3])["router_view"]["web_caches"][0]["address"] == codec.ip2int(cache)
    finally:
        fw.stop()
    assert_datagrams_clean(got)
