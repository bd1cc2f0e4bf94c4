"""`wccp show` renders a real /status from the firmware under MicroPython (127.31.1.x)."""
import json
import pathlib
import socket
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
for p in (str(ROOT / "firmware"), str(ROOT / "tests" / "fw"), str(ROOT / "host_tools")):
    if p not in sys.path:
        sys.path.insert(0, p)

import test_router as tr  # noqa: E402
from wccp import codec  # noqa: E402
from wccptool import cmd_show  # noqa: E402
from wccptool.launch import start_firmware  # noqa: E402

RTR = "127.31.1.1"
C1, C2 = "127.31.1.2", "127.31.1.3"
PORT = 18151


def _wccp(*args):
    exe = pathlib.Path(sys.executable).parent / "wccp"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "wccptool.cli"]
    return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=30, cwd=str(ROOT))


def _join(s, addr, service=None, **kw):
    s.sendto(tr.hia(addr, 0, router=RTR, service=service, **kw), (RTR, 2048))
    m = codec.decode(s.recvfrom(65535)[0])
    s.sendto(tr.hia(addr, m["router_identity"]["receive_id"], router=RTR, service=service, **kw), (RTR, 2048))
    return codec.decode(s.recvfrom(65535)[0])


def test_show_renders_real_status(tmp_path):
    cfg = {"router_id": RTR, "addresses": [RTR],
           "services": [{"id": 0}, {"id": 91, "type": "dynamic", "assignment": ["mask"], "password": "pw"}]}
    fw = start_firmware(cfg, wccp_addr=None, http_port=PORT, http_addr=RTR, state_dir=str(tmp_path / "st"))
    try:
        s1 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s1.bind((C1, 2048))
        s1.settimeout(3)
        s2 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s2.bind((C2, 2048))
        s2.settimeout(3)
        with s1, s2:
            _join(s1, C1)
            m = _join(s2, C2)
            mcn = m["router_view"]["member_change_number"]
            st = fw.status()
            rid = [c for c in st["groups"][0]["caches"] if c["address"] == C1][0]["receive_id_sent"]
            b = bytes([0 if i < 192 else (1 if i < 255 else 0xFF) for i in range(256)])
            s1.sendto(tr.ra_hash(C1, [(RTR, rid, mcn)], [C1, C2], b, key_cn=9), (RTR, 2048))
            svc91 = tr.svc(91, priority=50, protocol=17, flags=0x1, ports=[])
            s1.sendto(tr.hia(C1, 0, router=RTR, service=svc91, password="pw", caps=[(1, 1), (2, 2), (3, 1)],
                             mask=True), (RTR, 2048))
            s1.recvfrom(65535)
            deadline = time.time() + 5
            while time.time() < deadline and not fw.status()["groups"][0]["assignment"]:
                time.sleep(0.05)
        st = fw.status()
        text = cmd_show.render(st)
        assert "Router Identifier:" in text and RTR in text
        assert "Service Identifier: web-cache" in text and "Service Identifier: 91" in text
        assert "Number of Service Group Clients:  2" in text
        assert "Assignment key:                   %s #9" % C1 in text
        detail = cmd_show.render(st, service=0)
        assert "WCCP Client ID:           %s" % C1 in detail
        assert "State:                    Usable" in detail
        assert "Hash Allotment:           192 (75.00%)" in detail
        assert "Hash Allotment:           63 (24.61%)" in detail
        # bucket map rows: row f0 ends with the unassigned bucket 255
        assert [ln for ln in detail.splitlines() if ln.strip().startswith("f0:")][0].endswith("  --")
        assert "unassigned         1 buckets" in detail
        assert "priority 240 protocol 6 flags 0x0012 ports 80" in detail
        # nothing answers the appliance's ARP probes here: the caches have no location, and
        # show says so (summary, detail) with the discovery's own counters
        assert "Clients without location:         %s, %s (their traffic goes to the origin)" % (C1, C2) in text
        assert "Location:                 UNKNOWN (not found yet" in detail
        assert st["discovery"]["enabled"] and st["discovery"]["counters"]["probes"] >= 2
        assert sorted(st["discovery"]["unanswered"]) == [C1, C2]
        assert "Cache discovery (ARP probes):     on: %d probes, 0 replies" % st["discovery"]["counters"]["probes"] in text
        assert "Probed, no answer yet:" in text
        d91 = cmd_show.render(st, service=91)
        assert "NOT Usable (first contact)" in d91 and "Security:                         MD5" in d91
        assert "(undefined: set by the first cache)" in d91
        # the CLI against the live firmware
        r = _wccp("show", "--host", RTR, "--port", str(PORT), "--service", "web-cache")
        assert r.returncode == 0, r.stderr
        assert "Hash Allotment:           192 (75.00%)" in r.stdout
        r = _wccp("show", "--host", RTR, "--port", str(PORT), "--json")
        assert r.returncode == 0 and json.loads(r.stdout)["groups"][0]["assignment"]["caches"] == [C1, C2]
        r = _wccp("show", "--host", RTR, "--port", str(PORT), "--detail")
        assert r.returncode == 0 and r.stdout.count("WCCP Service") == 2
        r = _wccp("show", "--host", RTR, "--port", str(PORT), "--service", "7")
        assert r.returncode == 1 and "not configured" in r.stderr
    finally:
        fw.stop()
    r = _wccp("show", "--host", RTR, "--port", str(PORT))
    assert r.returncode == 1 and "cannot read" in r.stderr and "wccp run" in r.stderr


def test_show_dataplane_decision_counters():
    st = {"router_id": RTR, "drops": {}, "groups": [],
          "dataplane": {"not_redirectable": 7, "gre_return_bad": 2, "truncated": 3, "unassigned": 1,
                         "cache_unknown": 4}}
    text = cmd_show.render(st)
    assert "Packets not redirectable:         7" in text
    assert "Packets to origin, no location:   4" in text
    assert "Data-plane packets dropped:       5" in text
    assert "          gre_return_bad:                     2" in text
    assert "          truncated:                          3" in text
    # a data plane that raised (or none): no data-plane lines
    for dp in ({"error": "OSError: spi"}, None):
        assert "Data-plane packets dropped" not in cmd_show.render({"router_id": RTR, "dataplane": dp})


def test_show_caches_without_location():
    g = {"service_type": "standard", "service_id": 0, "slot": 0, "usable": 2, "routers": [], "to_origin": 7,
         "assignment": {"type": "hash", "caches": [C1, C2], "buckets": [0] * 128 + [1] * 128},
         "caches": [{"address": C1, "state": "usable", "location": None, "to_origin": 7, "assigned": 128},
                    {"address": C2, "state": "usable", "assigned": 128, "to_origin": 0,
                     "location": {"mac": "02:00:00:00:00:c2", "port": 1, "source": "probe"}}]}
    st = {"router_id": RTR, "drops": {}, "groups": [g], "dataplane": {"not_redirectable": 0, "cache_unknown": 7},
          "discovery": {"enabled": True, "counters": {"probes": 9, "replies": 1, "learnt": 1, "moved": 0},
                        "unanswered": [C1]}}
    text = cmd_show.render(st)
    assert text.count("Packets to origin, no location:   7") == 2       # the data plane's, the group's
    assert "Clients without location:         %s (their traffic goes to the origin)" % C1 in text
    assert "Cache discovery (ARP probes):     on: 9 probes, 1 replies, 1 found, 0 moved" in text
    assert "Probed, no answer yet:            %s" % C1 in text
    detail = cmd_show.render(st, service=0)
    assert "Location:                 UNKNOWN (not found yet: its traffic goes to the origin)" in detail
    assert "Location:                 02:00:00:00:00:c2 on port 1 (probe)" in detail
    assert "To origin, no location:   7" in detail and "To origin, no location:   0" in detail
