"""Per-board heap (make bench): each MCU board that can run the product, on its emulated board
(`wccp vboard --board`, the unix port with the board's heap: docs/performance.md explains the
64-bit scaling), flashed with `wccp flash`, the FPGA behind the twin's SPI socket (fast model),
its limits' worth of service groups and caches (boards/<name>.json "limits") joined by cache-sim;
prints the heap the board has left (gc.mem_free() from /status) after boot and at its limits.

    .venv/bin/python bench/bench_board_heap.py [BOARD...]
Addresses 127.63.0.x on loopback, ports 17600+.
"""
import asyncio
import json
import os
import random
import sys
import tempfile
import time
import urllib.request

from wccptool import boards, cachesim as cs, flash as fl, twin
from wccptool.vboard import WORD_RATIO, VirtualBoard, heap_for

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ROUTER, HTTP = "127.63.0.1", 17600
# the HERE_I_AM interval: the router's default (timers.here_i_am_ms). Each cache sends its first
# HERE_I_AM at its own random moment within the first interval (caches that were started
# independently); 256 caches in the same millisecond would overflow any board's UDP receive queue
# every period, and always the same ones. First contacts beyond the router's admission budget
# (limits.unverified_per_second, default 20/s) are answered a period later.
T = 10.0
JOIN_S = 300


def status():
    with urllib.request.urlopen("http://%s:%d/status" % (ROUTER, HTTP), timeout=30) as r:
        return json.loads(r.read().decode())


def wait(pred, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            v = pred()
            if v:
                return v
        except (OSError, ValueError, KeyError) as e:
            wait.last = e
        time.sleep(0.5)
    return None


def measure(name):
    defn = boards.load(name)
    groups, caches = defn["limits"]["max_groups"], defn["limits"]["max_caches"]
    services = [{"id": 0, "type": "standard"}] + [
        {"id": 50 + g, "type": "dynamic"} for g in range(1, groups)]
    tw = twin.start(fpga="model", bus="spi", spi="127.63.0.1:17601", frames="127.63.0.1:17602")
    d = tempfile.mkdtemp(prefix="wccp-heap-")
    cfg = os.path.join(d, "config.json")
    with open(cfg, "w") as f:
        json.dump({"network": {"dhcp": True}, "http": {"address": ROUTER, "port": HTTP},
                   "timers": {"here_i_am_ms": int(T * 1000)}, "services": services}, f)
    os.mkdir(os.path.join(d, "fs"))
    vb = VirtualBoard(os.path.join(d, "fs"), board=name, fpga="127.63.0.1:17601", lease=ROUTER)
    row = {"board": name, "limits": "%d x %d" % (groups, caches), "board_heap_kib": defn["ram"]["heap_kib"],
           "emulated_heap": heap_for(defn)}
    try:
        vb.start()
        fl.flash(name, vb.port, config=cfg, progress=lambda m: None, boot_wait=2)
        st = wait(status, 30)
        row["free_after_boot"] = st["board"]["heap_free"]
        members = []
        phase = random.Random(1)
        for g, s in enumerate(services):
            svc = cs.standard_service(0) if g == 0 else cs.dynamic_service(s["id"], protocol=6, ports=[8000 + g])
            for c in range(caches):
                members.append(cs.Member("127.63.%d.%d" % (1 + g, 10 + c), [ROUTER], service=svc, interval=T,
                                         first_delay=phase.uniform(0, T)))

        def full():
            s = status()
            row["last"] = s
            return all(x["assignment"] is not None and len(x["caches"]) == caches for x in s["groups"]) and s

        async def run():
            async with cs.CacheSim(members) as sim:
                t0 = time.monotonic()
                r = await asyncio.get_running_loop().run_in_executor(None, wait, full, JOIN_S)
                row["join_s"] = round(time.monotonic() - t0) if r else None
                row["sim"] = dict(sim.counters)
                return r
        st = asyncio.run(run())
        row["free_at_limits"] = st["board"]["heap_free"] if st else None
        row["all_assigned"] = bool(st)
        if not st:
            row.setdefault("last", {"groups": [], "board": {"heap_free": None}, "drops": None, "app": None})
            last = row["last"]
            row["why"] = "last error %r; groups %s, heap_free %s, drops %s, last_error %s" % (
                getattr(wait, "last", None), [(x["service_id"], len(x["caches"]), x["assignment"] is not None)
                                              for x in last["groups"]],
                last["board"]["heap_free"], last["drops"], last.get("last_error")) + " sim %s app %s" % (
                row.get("sim"), last["app"])
    finally:
        vb.stop()
        tw.stop()
    return row


def main(argv):
    names = argv or [b for b in boards.list_boards("mcu") if b != "virtual"]
    print("board              limits   board heap  emulated  free after boot  free at limits  (unix port bytes;"
          " / %d = 32-bit estimate)" % WORD_RATIO)
    rc = 0
    for name in names:
        defn = boards.load(name)
        if not defn.get("limits") or (defn.get("ram") or {}).get("heap_kib", 0) < fl.MIN_HEAP_KIB:
            print("%-18s refused by `wccp flash` (heap %s KiB < %d KiB)" % (name, (defn.get("ram") or {}).get("heap_kib"),
                                                                           fl.MIN_HEAP_KIB))
            continue
        try:
            r = measure(name)
        except fl.FlashError as e:
            print("%-18s refused by `wccp flash`: %s" % (name, e))
            continue
        print("%-18s %-8s %6d KiB  %8s  %15s  %14s  %s%s" % (r["board"], r["limits"], r["board_heap_kib"],
                                                          r["emulated_heap"], r["free_after_boot"],
                                                          r["free_at_limits"],
                                                          "all joined in %s s" % r["join_s"] if r["all_assigned"] else "",
                                                          "" if r["all_assigned"] else "  (NOT all assigned: %s)"
                                                          % r.get("why")))
        rc |= 0 if r["all_assigned"] else 1
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
