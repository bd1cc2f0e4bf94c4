"""`wccp run --fpga rtl` (what `make run` starts) and `--fpga twin-model`: the firmware under
MicroPython answers WCCP, the twin serves its SPI and frame sockets, the banner says where
to point caches and how to watch, the firmware reads the FPGA's counters, and Ctrl-C /
SIGTERM stop every process it started.

Addresses 127.61.4.x / 127.61.5.x; twin ports 7400+, HTTP 18640+.
"""
import json
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import urllib.request

import pytest
from proc_output import Output
from twin_helpers import build_rtl, ether, mac

from wccptool import twin
from wccptool.procgroup import pid_alive

# Listed in conftest.py SPLIT_MODULES: pytest-xdist may run these tests on different
# workers at the same time, as each backend has its own
# 127.61.<n>.x addresses, twin and HTTP ports. Keep it so.

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module", autouse=True)
def _rtl_built():
    build_rtl()


def _wccp():
    exe = pathlib.Path(sys.executable).parent / "wccp"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "wccptool.cli"]


def _status(addr, port):
    with urllib.request.urlopen("http://%s:%d/status" % (addr, port), timeout=5) as r:
        return json.loads(r.read())


def _descendants(pid):
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    ppid = int(f.read().split(")")[-1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        q = todo.pop()
        for k in kids.get(q, []):
            out.append(k)
            todo.append(k)
    return out


@pytest.mark.parametrize("backend,sig,n", [("rtl", signal.SIGINT, 4), ("twin-model", signal.SIGTERM, 5)])
def test_wccp_run_twin_ready_and_stops_cleanly(backend, sig, n, tmp_path):
    addr, http = "127.61.%d.1" % n, 18640 + n
    spi, frames = "127.61.%d.1:%d" % (n, 7400 + 10 * n), "127.61.%d.1:%d" % (n, 7401 + 10 * n)
    env = dict(os.environ, WCCP_TWIN_SPI=spi, WCCP_TWIN_FRAMES=frames)
    env.pop("PYTEST_CURRENT_TEST", None)
    p = subprocess.Popen(_wccp() + ["run", "--fpga", backend, "--wccp-addr", addr, "--http-port", str(http),
                                    "--state-dir", str(tmp_path)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=str(ROOT), env=env,
                         start_new_session=True)
    o = Output(p)
    out = ""
    try:
        # the banner's last line: the firmware is up and `wccp run` has said where everything is
        assert o.wait_for("Stop:", 120), o.text()
        st = _status(addr, http)
        assert st["router_id"] == addr
        assert st["app"]["dataplane"] == "fpga"
        # traffic through the twin; the firmware reads the FPGA's counters for /status
        fc = twin.FrameClient(frames)
        f = ether(mac("02:61:00:00:00:fe"), mac("02:61:00:00:00:01"), bytes(46))
        fc.send(0, f)
        assert fc.barrier() == [(1, f)]       # no assignment: passes to the paired port
        fc.close()
        assert _status(addr, http)["dataplane"]["rx_frames"] == [1, 0]
        started = _descendants(p.pid)             # firmware, twin service, simulator
        assert len(started) >= 2
        p.send_signal(sig)
        out = o.finish(30)
    finally:
        if p.poll() is None:           # failed: take down everything it started
            for q in _descendants(p.pid):
                try:
                    os.kill(q, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            p.kill()
            p.wait()
    assert p.returncode == 0, out
    assert "SPI socket %s" % spi in out and "wccp show --host %s --port %d" % (addr, http) in out
    assert "stopping" in out
    m = re.search(r"digital twin: .*pid (\d+)", out)
    fw = re.search(r"MicroPython \(.*\), pid (\d+)", out)
    assert m and fw, out
    assert int(m.group(1)) in started and int(fw.group(1)) in started
    for pid in started:
        assert not pid_alive(pid), "process %d still running" % pid
    host, port = spi.split(":")
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, int(port)))               # the twin's socket is free again
    s.close()
