"""Digital twin benchmarks (docs/performance.md, "Digital twin"):

* packet rate: 64-byte frames (incl. FCS) through the twin's frame socket, both ports
  loaded, the real driver having programmed a hash group over the SPI socket; cases:
  pass-through and GRE redirect; RTL on Verilator (goal >= 1,000 frames/s) and the fast mode;
* register access: FpgaDataPlane.counters() (about 10 KB of SPI reads) over the socket,
  register-bus execution (default) and bit-level SPI;
* time to ready: from starting `wccp run --fpga rtl` (cached RTL build) until the
  firmware's /status answers with its data plane on the twin; and the cold RTL build.

    .venv/bin/python bench/bench_twin.py [--quick] [--cold]
"""
import argparse
import json
import os
import pathlib
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]

from wccp.dataplane import FWD_GRE, SF_DST_IP_HASH, SF_PORTS_DEFINED  # noqa: E402
from wccp.fpga import FpgaDataPlane  # noqa: E402
from wccp.fwdmodel import with_fcs  # noqa: E402
from wccptool import twin  # noqa: E402


def frame64(dport, i):
    ip = bytearray(struct.pack(">BBHHHBBHII", 0x45, 0, 40, i & 0xFFFF, 0, 64, 6, 0, 0xC0A80100 | (i & 0xFF),
                               0xCB007100 | ((i * 7) & 0xFF)))
    tcp = struct.pack(">HHIIBBHHH", 40000, dport, 1, 0, 0x50, 0x02, 8192, 0, 0)
    body = b"\x02\x00\x00\x00\x00\x9a" + b"\x02\x00\x00\x00\x00\xc1" + b"\x08\x00" + bytes(ip) + tcp
    body += b"\x00" * (60 - len(body))
    return with_fcs(body)


def program(dp):
    dp.configure(0x0A000001, b"\x02\x00\x00\x00\x00\x01")
    dp.set_group(0, {"service_type": 1, "service_id": 90, "protocol": 6,
                     "service_flags": SF_DST_IP_HASH | SF_PORTS_DEFINED, "ports": [80]})
    dp.set_caches(0, [{"address": 0x0A000032, "forward": FWD_GRE, "ret": 1,
                       "mac": b"\x02\x00\x00\x00\x00\xca", "port": 1}])
    dp.set_hash(0, [0] * 256)
    dp.commit()
    dp.arm(60000)
    dp.heartbeat()


def rate(fc, dp, frames, rounds):
    """Best frames/s (frames in / wall time until all processed) and the share dropped by
    the FPGA (egress queue full: GRE frames are longer than what arrives at line rate)."""
    best, dropped = 0.0, 0
    for _ in range(rounds):
        before = sum(dp.counters()["rx_overflow"])
        t = time.perf_counter()
        fc.send_many(frames)
        out = fc.barrier()
        dt = time.perf_counter() - t
        drops = sum(dp.counters()["rx_overflow"]) - before
        assert len(out) + drops == len(frames), (len(out), drops, len(frames))
        best = max(best, len(frames) / dt)
        dropped += drops
    return best, dropped / float(rounds * len(frames))


def bench_rates(fpga, n, rounds, port_base):
    tw = twin.start(fpga=fpga, spi="127.61.8.1:%d" % port_base, frames="127.61.8.1:%d" % (port_base + 1))
    try:
        dp = FpgaDataPlane(tw.transport())
        program(dp)
        fc = tw.frame_client()
        res = {}
        res["pass"] = rate(fc, dp, [(i % 2, frame64(443, i)) for i in range(n)], rounds)
        res["gre"] = rate(fc, dp, [(0, frame64(80, i)) for i in range(n)], rounds)
        c = dp.counters()
        assert c["redirect_gre"] >= n * rounds * (1 - res["gre"][1]) - 1, c["redirect_gre"]
        t = time.perf_counter()
        for _ in range(3):
            dp.counters()
        res["counters_s"] = (time.perf_counter() - t) / 3
        res["stats"] = fc.stats()
        fc.close()
    finally:
        tw.stop()
    return res


def bench_spi_bits(port_base):
    tw = twin.start(fpga="rtl", bus="spi", spi="127.61.8.1:%d" % port_base)
    try:
        dp = FpgaDataPlane(tw.transport())
        t = time.perf_counter()
        dp.counters()
        return time.perf_counter() - t
    finally:
        tw.stop()


def bench_ready(port_base):
    """`wccp run --fpga rtl` start -> /status answers (cached RTL build)."""
    state = tempfile.mkdtemp(prefix="wccp-bench-run-")
    env = dict(os.environ, WCCP_TWIN_SPI="127.61.8.1:%d" % port_base, WCCP_TWIN_FRAMES="127.61.8.1:%d" % (port_base + 1))
    wccp = pathlib.Path(sys.executable).parent / "wccp"
    cmd = ([str(wccp)] if wccp.exists() else [sys.executable, "-m", "wccptool.cli"])
    t = time.perf_counter()
    p = subprocess.Popen(cmd + ["run", "--fpga", "rtl", "--wccp-addr", "127.61.8.1", "--http-port", "18680",
                                "--state-dir", state], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         cwd=str(ROOT), env=env, start_new_session=True)
    try:
        while True:
            if p.poll() is not None:
                raise RuntimeError("wccp run exited %s" % p.returncode)
            try:
                with urllib.request.urlopen("http://127.61.8.1:18680/status", timeout=2) as r:
                    st = json.loads(r.read())
                if st["app"]["dataplane"] == "fpga" and "rx_frames" in st["dataplane"]:
                    break
            except OSError:
                pass
            time.sleep(0.02)
        ready = time.perf_counter() - t
        time.sleep(1.0)         # let `wccp run` finish its own start-up before interrupting it
    finally:
        p.send_signal(2)
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            p.wait()
        shutil.rmtree(state, ignore_errors=True)
    return ready


def bench_cold_build():
    from wccptool.twin import rtl
    root = tempfile.mkdtemp(prefix="wccp-bench-build-")
    try:
        t = time.perf_counter()
        rtl.build("verilator", {"clk_per_us": twin.DEFAULT_CLK_PER_US, "build_root": root}, log=lambda m: None)
        return time.perf_counter() - t
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--cold", action="store_true", help="also time a cold Verilator build (~1 min)")
    a = ap.parse_args()
    n = 1000 if a.quick else 4000
    rounds = 2 if a.quick else 3
    twin.build("verilator", log=lambda m: print(m, flush=True))
    print("twin packet rate, 64-byte frames, best of %d rounds of %d frames" % (rounds, n))
    for fpga, base in (("rtl", 7600), ("model", 7610)):
        r = bench_rates(fpga, n, rounds, base)
        print("  %-5s pass-through (both ports) %7.0f frames/s   GRE redirect (port 0) %7.0f frames/s "
              "(%.0f%% dropped: egress full)   counters() %.3f s" % (
                  fpga, r["pass"][0], r["gre"][0], 100 * r["gre"][1], r["counters_s"]))
    print("  rtl, bit-level SPI (--bus spi): counters() %.2f s" % bench_spi_bits(7620))
    print("time from `wccp run --fpga rtl` to ready (cached build): %.2f s" % bench_ready(7630))
    if a.cold:
        print("cold Verilator build of the twin: %.1f s" % bench_cold_build())
    return 0


if __name__ == "__main__":
    sys.exit(main())
