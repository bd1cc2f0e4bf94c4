"""Router control-plane benchmark (make bench; results in docs/performance.md "## Control plane").

    .venv/bin/python bench/bench_router.py            # drives everything below
    .venv/bin/micropython -X heapsize=64k bench/bench_router.py --heap [--dataplane null|model]
    .venv/bin/micropython -X heapsize=256k bench/bench_router.py --latency --mpy build/bench-router-mpy
    .venv/bin/micropython -X heapsize=1m bench/bench_router.py --alloc --mpy build/bench-router-mpy
    .venv/bin/micropython -X heapsize=2m bench/bench_router.py --placement source|mpy|romfs PATH

1. Heap: 8 service groups x 32 usable caches, every group with a full hash assignment,
   under ``micropython -X heapsize=64k``: heap in use after gc.collect() (router state with a
   table-only data plane; also with the reference model as data plane).
2. Latency: Router.receive() of a valid HERE_I_AM -> encoded I_SEE_YOU, on the unix port
   (1 cache and 32 caches in the group), plus the UDP round trip through the real firmware
   (app + sockets) measured from CPython.
3. Allocation (MicroPython only, gc.mem_alloc() deltas with the collector disabled): bytes
   allocated per steady-state Router.receive(HERE_I_AM) -> I_SEE_YOU (1 and 32 caches in the
   view), per Router.tick() with nothing due, and per FpgaDataPlane.heartbeat(). The data plane
   is the board's: wccp.fpga over wccp.transport.SpiTransport; the bench's SPI bus object
   stands in for machine.SPI (a C method that allocates nothing) and answers zeros.
   The driver exits 1 when a figure is above its goal (make bench fails): a regression check.
4. Where the bytecode lives: heap taken by importing what a board imports (app, FPGA driver and
   link, board, config, storage and everything they import) from source, from .mpy files on
   the filesystem (loaded into the heap), and from a ROMFS image (`mpremote romfs build`,
   mounted with vfs.VfsRom: bytecode runs in place; the image itself, in flash on a board,
   is subtracted).
"""
import sys

MICRO = sys.implementation.name == "micropython"


def _paths():
    here = __file__.rsplit("/", 1)[0] if "/" in __file__ else "."
    root = here + "/.."
    if "--mpy" in sys.argv:   # precompiled modules (as on a board: frozen or .mpy)
        sys.path.insert(0, sys.argv[sys.argv.index("--mpy") + 1])
    else:   # MicroPython has no installed packages
        sys.path.insert(0, root + "/firmware")
    return root


def _cfg(ngroups, ncaches):
    from wccp import config
    svcs = [{"id": 0}] + [{"id": 60 + i, "type": "dynamic"} for i in range(ngroups - 1)]
    return config.load({"router_id": "192.168.0.1", "addresses": ["192.168.0.1"], "services": svcs,
                        "limits": {"max_total_caches": 512,
                                   # 256 first contacts at one instant: above the admission bucket
                                   "unverified_per_second": 1000, "unverified_burst": 10000}})


def _hia(codec, cache, rid, sid, router=0xC0A80001):
    svc = {"service_type": 0 if sid == 0 else 1, "service_id": sid, "priority": 0 if sid == 0 else 100,
           "protocol": 0 if sid == 0 else 6, "service_flags": 0 if sid == 0 else 0x12,
           "ports": [0] * 8 if sid == 0 else [8000 + sid, 0, 0, 0, 0, 0, 0, 0]}
    return codec.encode({"type": 10, "version": 0x200, "security": {"option": 0}, "service": svc,
                         "web_cache_identity": {"address": cache, "hash_revision": 0, "flags": 0, "data_type": "hash",
                                                "bucket_bitmap": bytes(32), "weight": 10000, "status": 0},
                         "web_cache_view": {"change_number": 1, "routers": [{"router_id": router, "receive_id": rid}],
                                            "web_caches": []},
                         "capabilities": [{"type": 1, "value": 1}, {"type": 2, "value": 1}, {"type": 3, "value": 1}]})


def _ra(codec, cache, rid, mcn, caches, sid):
    svc = {"service_type": 0 if sid == 0 else 1, "service_id": sid, "priority": 0 if sid == 0 else 100,
           "protocol": 0 if sid == 0 else 6, "service_flags": 0 if sid == 0 else 0x12,
           "ports": [0] * 8 if sid == 0 else [8000 + sid, 0, 0, 0, 0, 0, 0, 0]}
    n = len(caches)
    return codec.encode({"type": 12, "version": 0x200, "security": {"option": 0}, "service": svc,
                         "assignment_info": {"assignment_key": {"address": cache, "change_number": 1},
                                             "routers": [{"router_id": 0xC0A80001, "receive_id": rid,
                                                          "member_change_number": mcn}],
                                             "web_caches": caches, "buckets": bytes([i % n for i in range(256)])}})


def _populate(r, codec, ngroups, ncaches):
    import gc
    from wccp.router import C_RID
    for gi, g in enumerate(r.groups):
        sid = g.sid
        caches = []
        for k in range(ncaches):
            a = 0xC0A81000 + (gi << 8) + k + 2   # 192.168.16+.x: boxed ints, as real addresses
            caches.append(a)
            ip = codec.int2ip(a)
            r.receive(_hia(codec, a, 0, sid), ip, 2048, "192.168.0.1", 0)
            r.receive(_hia(codec, a, g.caches[a][C_RID], sid), ip, 2048, "192.168.0.1", 0)
            gc.collect()
        d = caches[0]
        r.receive(_ra(codec, d, g.caches[d][C_RID], g.mcn, caches, sid), codec.int2ip(d), 2048, "192.168.0.1", 0)
        assert g.assignment is not None and len(g.order) == ncaches, (len(g.order), r.drops)
        gc.collect()


def heap(dpname):
    import gc
    _paths()
    gc.collect()
    base = gc.mem_alloc()
    from wccp import codec, config  # noqa: F401 - module bytecode counted apart from the state
    from wccp.dataplane import NullDataPlane
    from wccp.router import Router
    from wccp.storage import MemStorage
    if dpname == "model":
        from wccp import fwdmodel  # noqa: F401
    gc.collect()
    mods = gc.mem_alloc() - base
    if dpname == "model":
        from wccp.fwdmodel import ForwardingModel
        dp = ForwardingModel()
    else:
        dp = NullDataPlane()
    gc.collect()
    dp_bytes = gc.mem_alloc() - base - mods
    r = Router(_cfg(8, 32), dp, 0, storage=MemStorage(), seed=1)
    gc.collect()
    empty = gc.mem_alloc() - base - mods - dp_bytes
    _populate(r, codec, 8, 32)
    # one I_SEE_YOU with a full 32-cache view per group, as in steady state
    from wccp.router import C_RID
    for g in r.groups:
        a = g.order[0]
        r.receive(_hia(codec, a, g.caches[a][C_RID], g.sid), codec.int2ip(a), 2048, "192.168.0.1", 1)
    gc.collect()
    used = gc.mem_alloc()
    free = gc.mem_free()
    state = used - base - mods - dp_bytes
    print("HEAP dataplane=%s total=%d used=%d free=%d modules=%d dataplane=%d router_empty=%d router_full=%d caches=%d"
          % (dpname, used + free, used, free, mods, dp_bytes, empty, state, r.total))


def latency():
    import time
    _paths()
    from wccp import codec
    from wccp.dataplane import NullDataPlane
    from wccp.router import Router
    from wccp.storage import MemStorage
    for ncaches in (1, 32):
        r = Router(_cfg(1, ncaches), NullDataPlane(), 0, storage=MemStorage(), seed=1)
        _populate(r, codec, 1, ncaches)
        g = r.groups[0]
        a = g.order[0]
        ip = codec.int2ip(a)
        from wccp.router import C_RID
        rid = g.caches[a][C_RID]
        n = 2000 if ncaches == 1 else 500
        samples = []
        # each HIA must echo the Receive ID of the previous I_SEE_YOU: pre-encode per ID
        for i in range(n):
            pkt = _hia(codec, a, rid, 0)
            t0 = time.ticks_us() if MICRO else time.perf_counter_ns() // 1000
            out = r.receive(pkt, ip, 2048, "192.168.0.1", 1 + i)
            t1 = time.ticks_us() if MICRO else time.perf_counter_ns() // 1000
            dt = time.ticks_diff(t1, t0) if MICRO else t1 - t0
            assert len(out) == 1
            rid = g.caches[a][C_RID]
            samples.append(dt)
        assert r.counters["hia_valid"] >= n
        samples.sort()
        print("LAT caches=%d n=%d median_us=%d p99_us=%d mean_us=%d best_us=%d isy_bytes=%d"
              % (ncaches, n, samples[n // 2], samples[n * 99 // 100], sum(samples) // n, samples[0], len(out[0][3])))


class _Bus:
    """machine.SPI / machine.Pin stand-in for the allocation bench: the C methods of the ports
    allocate nothing; MISO reads as zeros (no ARP captures, packet-out never busy)."""

    def write_readinto(self, tx, rx):
        pass

    def write(self, tx):
        pass

    def value(self, v=None):
        return 0


def alloc():
    import gc
    _paths()
    from wccp import codec
    from wccp.fpga import FpgaDataPlane
    from wccp.router import C_RID, Router
    from wccp.storage import MemStorage
    from wccp.transport import SpiTransport
    bus = _Bus()
    for ngroups, ncaches in ((1, 1), (1, 32), (8, 32)):
        dp = FpgaDataPlane(SpiTransport(bus, bus), check_id=False)
        r = Router(_cfg(ngroups, ncaches), dp, 0, storage=MemStorage(), seed=1)
        _populate(r, codec, ngroups, ncaches)
        g = r.groups[0]
        a = g.order[0]
        ip = codec.int2ip(a)
        now = 1000
        r.receive(_hia(codec, a, g.caches[a][C_RID], 0), ip, 2048, "192.168.0.1", now)  # template built
        n = 64
        # each HIA echoes the Receive ID of the previous I_SEE_YOU (the group counter + 1 per answer)
        rid = g.caches[a][C_RID]
        pkts = [_hia(codec, a, (rid + i) & 0xFFFFFFFF or 1, 0) for i in range(n)]
        for k in range(2):      # the first round reaches the steady state (reused buffers, dict sizes)
            gc.collect()
            gc.disable()
            m0 = gc.mem_alloc()
            for i in range(n // 2):
                out = r.receive_view(pkts[k * n // 2 + i], ip, 2048, "192.168.0.1", now)
            m1 = gc.mem_alloc()
            gc.enable()
            assert len(out) == 1 and r.counters["hia_valid"] >= n // 2 * (k + 1), r.drops
        hia = (m1 - m0) // (n // 2)
        assert g.caches[a][C_RID] == (rid + n) & 0xFFFFFFFF, "not the steady-state path"
        r.tick(now)
        gc.collect()
        gc.disable()
        m0 = gc.mem_alloc()
        for i in range(32):
            r.tick(now + i)
        m1 = gc.mem_alloc()
        gc.enable()
        tick = (m1 - m0) // 32
        gc.collect()
        gc.disable()
        m0 = gc.mem_alloc()
        for _ in range(32):
            dp.heartbeat()
        m1 = gc.mem_alloc()
        gc.enable()
        print("ALLOC groups=%d caches=%d hia_isy=%d tick=%d heartbeat=%d" % (ngroups, ncaches, hia, tick,
                                                                          (m1 - m0) // 32))


def placement(mode, path):
    import gc
    import vfs
    gc.collect()
    base = gc.mem_alloc()
    if mode == "romfs":
        with open(path, "rb") as f:
            data = f.read()
        vfs.mount(vfs.VfsRom(data), "/rom")
        sys.path.insert(0, "/rom")
    else:
        sys.path.insert(0, path)
    gc.collect()
    image = gc.mem_alloc() - base
    import wccp.app  # noqa: F401
    import wccp.board  # noqa: F401
    import wccp.config  # noqa: F401
    import wccp.fpga  # noqa: F401
    import wccp.fpgalink  # noqa: F401
    import wccp.storage  # noqa: F401
    import wccp.transport  # noqa: F401
    gc.collect()
    print("PLACE mode=%s image=%d modules=%d" % (mode, image, gc.mem_alloc() - base - image))


def driver():
    import json
    import os
    import pathlib
    import re
    import socket
    import subprocess
    import time
    root = pathlib.Path(__file__).resolve().parent.parent
    from wccp import codec
    from wccptool.launch import find_micropython, start_firmware
    mp = find_micropython()
    me = str(pathlib.Path(__file__).resolve())
    # boards run precompiled modules (.mpy / frozen): compiling the sources needs more heap
    # than the state itself, so compile them first, as `wccp flash` does
    mpy = root / "build" / "bench-router-mpy"
    (mpy / "wccp").mkdir(parents=True, exist_ok=True)
    cross = str(pathlib.Path(mp).parent / "mpy-cross")
    for old in (mpy / "wccp").glob("*.mpy"):
        old.unlink()                # modules that no longer exist must not be imported
    for src in sorted((root / "firmware" / "wccp").glob("*.py")):
        subprocess.run([cross, "-o", str(mpy / "wccp" / (src.stem + ".mpy")), str(src)], check=True)
    for dpname in ("null", "model"):
        cmd = [mp, "-X", "heapsize=1m", me, "--heap", "--dataplane", dpname, "--mpy", str(mpy)]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        line = [ln for ln in res.stdout.splitlines() if ln.startswith("HEAP")]
        if res.returncode or not line:
            print("heap (%s): FAILED\n%s%s" % (dpname, res.stdout[-2000:], res.stderr[-2000:]))
            continue
        d = dict((k, int(v) if v.isdigit() else v) for k, v in (kv.split("=") for kv in line[0].split()[1:]))
        print("heap, 8 groups x 32 caches, data plane %-5s: router state %d B (empty router %d B), data plane %d B, "
              "module bytecode %d B (unix port loads .mpy into the heap; frozen on a board)"
              % (dpname, d["router_full"], d["router_empty"], d["dataplane"], d["modules"]))
        # -X heapsize=64k for the data, the bytecode on top (as if frozen): does it fit?
        for budget in (64 * 1024, 128 * 1024):
            size = d["modules"] + budget + 4096
            cmd = [mp, "-X", "heapsize=%d" % size, me, "--heap", "--dataplane", dpname, "--mpy", str(mpy)]
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            ok = [ln for ln in res.stdout.splitlines() if ln.startswith("HEAP")]
            if res.returncode == 0 and ok:
                dd = dict(kv.split("=") for kv in ok[0].split()[1:])
                print("   -X heapsize=%d (bytecode + %d KiB): fits, %s B free after gc" % (size, budget // 1024, dd["free"]))
            else:
                err = ((res.stdout + res.stderr).strip().splitlines() or ["?"])[-1]
                print("   -X heapsize=%d (bytecode + %d KiB): does NOT fit (%s)" % (size, budget // 1024, err))
    # allocation per message / tick / heartbeat (goals: <= 256 B, <= 256 B, 0 B)
    status = 0
    res = subprocess.run([mp, "-X", "heapsize=1m", me, "--alloc", "--mpy", str(mpy)], capture_output=True,
                         text=True, timeout=600)
    rows = [ln for ln in res.stdout.splitlines() if ln.startswith("ALLOC")]
    for ln in rows:
        d = dict((k, int(v)) for k, v in (kv.split("=") for kv in ln.split()[1:]))
        over = [k for k, goal in (("hia_isy", 256), ("tick", 256), ("heartbeat", 0)) if d[k] > goal]
        print("allocated, MicroPython unix, %d group(s) x %2d cache(s): HERE_I_AM -> I_SEE_YOU %d B (goal <= 256), "
              "tick() %d B (goal <= 256), heartbeat() %d B (goal 0)%s"
              % (d["groups"], d["caches"], d["hia_isy"], d["tick"], d["heartbeat"],
                 "  GOAL NOT MET: " + ", ".join(over) if over else ""))
        status |= 1 if over else 0
    if res.returncode or not rows:
        print("allocation run failed:\n" + res.stderr[-2000:])
        status = 1
    # where the bytecode lives: heap after importing what a board imports
    stage = root / "build" / "bench-router-romfs"
    (stage / "wccp").mkdir(parents=True, exist_ok=True)
    for old in (stage / "wccp").glob("*.py"):
        old.unlink()
    for src in sorted((root / "firmware" / "wccp").glob("*.py")):
        (stage / "wccp" / src.name).write_bytes(src.read_bytes())
    img = root / "build" / "bench-router-romfs.img"
    mpremote = str(pathlib.Path(mp).parent / "mpremote")
    subprocess.run([mpremote, "romfs", "-o", str(img), "build", str(stage)], check=True, capture_output=True)
    for mode, path in (("source", root / "firmware"), ("mpy", mpy), ("romfs", img)):
        res = subprocess.run([mp, "-X", "heapsize=2m", me, "--placement", mode, str(path)], capture_output=True,
                             text=True, timeout=600)
        ln = [x for x in res.stdout.splitlines() if x.startswith("PLACE")]
        if res.returncode or not ln:
            print("bytecode placement %s failed:\n%s" % (mode, res.stderr[-2000:]))
            status = 1
            continue
        d = dict(kv.split("=") for kv in ln[0].split()[1:])
        print("heap after importing the board's modules from %-6s: %7s B%s" % (
            mode, d["modules"], " (image %s B, in flash on a board, not counted)" % d["image"] if mode == "romfs" else ""))
    # precompiled modules and a board-sized heap (GC pauses scale with the heap in use)
    res = subprocess.run([mp, "-X", "heapsize=256k", me, "--latency", "--mpy", str(mpy)], capture_output=True,
                         text=True, timeout=600)
    for ln in res.stdout.splitlines():
        if ln.startswith("LAT"):
            d = dict(kv.split("=") for kv in ln.split()[1:])
            print("Router.receive(HERE_I_AM) -> I_SEE_YOU, MicroPython unix (-X heapsize=256k), %2s cache(s) in view: median %s us, "
                  "p99 %s us, mean %s us, best %s us (ISY %s bytes)" % (d["caches"], d["median_us"], d["p99_us"],
                                                                        d["mean_us"], d["best_us"], d["isy_bytes"]))
    if res.returncode:
        print("latency run failed:\n" + res.stderr[-2000:])
    # UDP round trip through the real firmware (app, sockets, asyncio) from CPython
    rtr, cache = "127.31.7.1", "127.31.7.2"
    fw = start_firmware({"router_id": rtr, "addresses": [rtr], "services": [{"id": 0}]}, wccp_addr=None,
                        http_port=18197, http_addr=rtr)
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((cache, 2048))
        s.settimeout(2)
        rid = 0
        rtts = []
        for _ in range(600):
            pkt = _hia(codec, codec.ip2int(cache), rid, 0, codec.ip2int(rtr))
            t0 = time.perf_counter()
            s.sendto(pkt, (rtr, 2048))
            data = s.recv(65535)
            rtts.append(time.perf_counter() - t0)
            rid = codec.decode(data)["router_identity"]["receive_id"]
        s.close()
        rtts = sorted(rtts[100:])
        st = fw.status()
        assert st["groups"][0]["caches"][0]["state"] == "usable"
        print("UDP round trip HERE_I_AM -> I_SEE_YOU through the firmware (loopback, CPython client): "
              "median %.0f us, p90 %.0f us, min %.0f us" % (rtts[len(rtts) // 2] * 1e6, rtts[len(rtts) * 9 // 10] * 1e6,
                                                           rtts[0] * 1e6))
    finally:
        fw.stop()
    del json, os, re
    return status


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--heap" in args:
        heap(args[args.index("--dataplane") + 1] if "--dataplane" in args else "null")
    elif "--latency" in args:
        latency()
    elif "--alloc" in args:
        alloc()
    elif "--placement" in args:
        i = args.index("--placement")
        placement(args[i + 1], args[i + 2])
    else:
        sys.exit(driver())
