"""Codec benchmark (make bench): MicroPython unix port timings and allocations.

Run by CPython (bench/run_all.py): re-runs itself under .venv/bin/micropython and also
prints CPython numbers for comparison. Direct use:
    .venv/bin/micropython -X heapsize=8m bench/bench_codec.py [ROOT]
Measures, per message: decode of a HERE_I_AM (Squid-like: hash identity, 1 router in
the view, 3 capabilities) and encode of an I_SEE_YOU whose Router View lists 32 hash
caches into a preallocated buffer; microseconds and heap bytes allocated in steady state.
"""
import sys

IS_MPY = sys.implementation.name == "micropython"


def _setup(root):
    # MicroPython has no installed packages; the samples come from the firmware tests
    sys.path.insert(0, root + "/firmware")
    sys.path.insert(0, root + "/tests/fw")


def _now_us():
    if IS_MPY:
        import time
        return time.ticks_us()
    import time
    return time.perf_counter_ns() // 1000


def _elapsed(t0, t1):
    if IS_MPY:
        import time
        return time.ticks_diff(t1, t0)
    return t1 - t0


def _alloc_per_call(fn, n):
    import gc
    gc.collect()
    if not IS_MPY:
        import tracemalloc
        tracemalloc.start()
        s0 = tracemalloc.get_traced_memory()[0]
        for _ in range(n):
            fn()
        s1 = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return None if s1 is None else max(0, s1[0] - s0) / n
    gc.disable()
    a = gc.mem_alloc()
    for _ in range(n):
        fn()
    b = gc.mem_alloc()
    gc.enable()
    gc.collect()
    return (b - a) / n


def _time_per_call(fn, n):
    import gc
    best = None
    for _ in range(15):
        gc.collect()   # steady state of a control loop that collects when idle (see docs/performance.md)
        t0 = _now_us()
        for _ in range(n):
            fn()
        dt = _elapsed(t0, _now_us()) / n
        best = dt if best is None or dt < best else best
    return best


def bench(root):
    _setup(root)
    from wccp import codec
    import codec_samples as fw

    hia = codec.encode(fw.samples()["hia_squid_hash"])
    isy = fw.isy_hash(32)
    buf = bytearray(2048)
    out = {}
    codec.decode(hia, out)
    n_isy = codec.encode(isy, buf)
    mv = memoryview(hia)

    def dec_reuse():
        codec.decode(mv, out)

    def dec_fresh():
        codec.decode(mv)

    def enc():
        codec.encode(isy, buf)

    for f in (dec_reuse, dec_fresh, enc):   # warm up
        for _ in range(50):
            f()
    n = 100 if IS_MPY else 1000
    r = {
        "impl": sys.implementation.name,
        "hia_bytes": len(hia), "isy_bytes": n_isy,
        "decode_hia_us": _time_per_call(dec_reuse, n),
        "decode_hia_fresh_us": _time_per_call(dec_fresh, n),
        "encode_isy32_us": _time_per_call(enc, n),
        "decode_hia_alloc": _alloc_per_call(dec_reuse, 200),
        "decode_hia_fresh_alloc": _alloc_per_call(dec_fresh, 200),
        "encode_isy32_alloc": _alloc_per_call(enc, 200),
    }
    r["pair_us"] = r["decode_hia_us"] + r["encode_isy32_us"]
    return r


def report(r):
    unit = "B allocated/msg" if r["impl"] == "micropython" else "B net (tracemalloc)"
    print("[%s] HERE_I_AM %d B, I_SEE_YOU(32 caches) %d B" % (r["impl"], r["hia_bytes"], r["isy_bytes"]))
    print("  decode HERE_I_AM (reused out dict): %8.1f us  %6.0f %s"
          % (r["decode_hia_us"], r["decode_hia_alloc"], unit))
    print("  decode HERE_I_AM (fresh dict)     : %8.1f us  %6.0f %s"
          % (r["decode_hia_fresh_us"], r["decode_hia_fresh_alloc"], unit))
    print("  encode I_SEE_YOU 32 caches (buf)  : %8.1f us  %6.0f %s"
          % (r["encode_isy32_us"], r["encode_isy32_alloc"], unit))
    print("  pair (decode HIA + encode ISY)    : %8.1f us   (goal <= 200 us, <= 256 B/msg)" % r["pair_us"])


def main():
    if IS_MPY:
        root = sys.argv[1] if len(sys.argv) > 1 else "."
        report(bench(root))
        return 0
    import os
    import subprocess
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    exe = os.path.join(root, ".venv", "bin", "micropython")
    rc = subprocess.call([exe, "-X", "heapsize=8m", os.path.abspath(__file__), root], cwd=root)
    report(bench(root))
    return rc


if __name__ == "__main__":
    sys.exit(main())
