"""How many emulated web caches can one `wccp cache-sim` process drive?

1. Per-message cost of the emulator core (sans-io): build a HERE_I_AM, process an
   I_SEE_YOU listing 32 caches, build a 32-cache hash REDIRECT_ASSIGN.
2. End to end over loopback UDP: N caches (one socket each, 127.63.x.y) against the
   firmware's Router state machine running in a separate CPython process, T = 1 s, for a
   few seconds; reports the emulator's CPU use and how many HERE_I_AMs were answered.
   The projected capacity is caches per core at the default T = 10 s.

Usage: .venv/bin/python bench/bench_cachesim.py [--sizes 64,256,1024] [--seconds 5]
"""
import argparse
import asyncio
import multiprocessing
import resource
import sys
import time

from wccp import codec, config  # noqa: E402
from wccp.fwdmodel import ForwardingModel  # noqa: E402
from wccp.router import Router  # noqa: E402
from wccptool import cachesim as cs  # noqa: E402

ROUTER = "127.63.255.1"


def per_message():
    r = Router(config.load({"router_id": "127.64.0.1", "timers": {"here_i_am_ms": 1000},
                            "services": [{"id": 0, "type": "standard"}]}), ForwardingModel(), 0)
    ms = [cs.Member(cs.int2ip(cs.ip2int("127.64.1.1") + i), ["127.64.0.1"], interval=1.0) for i in range(32)]
    isy = None
    for rnd in range(2):
        for m in ms:
            out = r.receive(m.build_here_i_am(), cs.int2ip(m.address), 2048, "127.64.0.1", rnd * 1000)
            isy = out[0][3]
            m.on_message((cs.ip2int("127.64.0.1"), 2048), codec.decode(isy), isy, rnd)
    m = ms[0]
    res = {}
    n = 2000
    t0 = time.perf_counter()
    for _ in range(n):
        m.build_here_i_am()
    res["build HERE_I_AM"] = (time.perf_counter() - t0) / n
    t0 = time.perf_counter()
    for _ in range(n):
        m.on_message((cs.ip2int("127.64.0.1"), 2048), codec.decode(isy), isy, 5.0)
    res["decode+process I_SEE_YOU (32-cache view)"] = (time.perf_counter() - t0) / n
    t0 = time.perf_counter()
    for _ in range(200):
        m.build_assignment()
    res["build REDIRECT_ASSIGN (32 caches, hash)"] = (time.perf_counter() - t0) / 200
    return res


def router_process(ready, stop, stats):
    async def main():
        cfg = config.load({"router_id": ROUTER, "addresses": [ROUTER], "timers": {"here_i_am_ms": 1000},
                           "limits": {"max_pending": 1024, "max_total_caches": 8192},
                           "services": [{"id": 0, "type": "standard"}]})
        r = Router(cfg, ForwardingModel(), 0)
        loop = asyncio.get_running_loop()
        t0 = loop.time()

        class P(asyncio.DatagramProtocol):
            def connection_made(self, tr):
                self.tr = tr

            def datagram_received(self, data, addr):
                for dip, dport, _sip, payload in r.receive(data, addr[0], addr[1], ROUTER,
                                                           int((loop.time() - t0) * 1000)):
                    self.tr.sendto(payload, (dip, dport))

        tr, _p = await loop.create_datagram_endpoint(P, local_addr=(ROUTER, 2048))
        ready.set()
        while not stop.is_set():
            r.tick(int((loop.time() - t0) * 1000))
            await asyncio.sleep(0.05)
        st = r.status()
        stats["isy_tx"] = st["counters"]["isy_tx"]
        stats["rx"] = st["counters"]["rx"]
        tr.close()

    asyncio.run(main())


def end_to_end(n, seconds):
    mgr = multiprocessing.Manager()
    stats = mgr.dict()
    ready, stop = multiprocessing.Event(), multiprocessing.Event()
    p = multiprocessing.Process(target=router_process, args=(ready, stop, stats))
    p.start()
    ready.wait(10)
    base = cs.ip2int("127.63.0.1")
    members = [cs.Member(cs.int2ip(base + i), [ROUTER], interval=1.0, first_delay=(i % 100) / 100.0)
               for i in range(n)]

    async def run():
        sim = cs.CacheSim(members)
        await sim.start()
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        w0 = time.perf_counter()
        await asyncio.sleep(seconds)
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        w1 = time.perf_counter()
        await sim.stop()
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        return sim, cpu, w1 - w0

    sim, cpu, wall = asyncio.run(run())
    stop.set()
    p.join(10)
    hia = sum(m.counters["hia_sent"] for m in members)
    isy = sum(m.counters["isy_received"] for m in members)
    usable = sum(1 for m in members if m.routers[0].usable)
    return {"caches": n, "wall_s": wall, "cpu_s": cpu, "hia_sent": hia, "isy_received": isy,
            "usable": usable, "router_isy_tx": stats.get("isy_tx")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="64,256,1024")
    ap.add_argument("--seconds", type=float, default=5.0)
    args = ap.parse_args()
    print("cache emulator per-message cost (CPython %s):" % sys.version.split()[0])
    for k, v in per_message().items():
        print("  %-45s %8.1f us" % (k, v * 1e6))
    print("end to end, T = 1 s, router = firmware Router state machine in another CPython process:")
    print("  %7s %9s %8s %9s %9s %8s %22s" % ("caches", "HIA/s", "cpu %", "ISY/HIA", "usable", "us/HIA",
                                             "caches/core @ T=10s"))
    for n in [int(x) for x in args.sizes.split(",")]:
        r = end_to_end(n, args.seconds)
        rate = r["hia_sent"] / r["wall_s"]
        per = r["cpu_s"] / max(1, r["hia_sent"])
        print("  %7d %9.0f %8.1f %9.3f %9d %8.1f %22.0f" % (
            n, rate, 100 * r["cpu_s"] / r["wall_s"], r["isy_received"] / max(1, r["hia_sent"]),
            r["usable"], per * 1e6, 10.0 / per if per else 0))
    print("(usable is bounded by the router: 32 caches per group; the rest stay pending but are answered)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
