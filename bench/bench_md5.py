"""MD5 cost per WCCP message (make bench): the pure-Python fallback (wccp.md5, used where the
port's hashlib has no md5: rp2 before MicroPython 1.27) against the port's hashlib.md5.

Run by CPython (bench/run_all.py): re-runs itself under .venv/bin/micropython. Direct use:
    .venv/bin/micropython -X heapsize=8m bench/bench_md5.py [ROOT]
Per message: codec.verify_md5 of a signed HERE_I_AM (Squid-like) and of a signed I_SEE_YOU
listing 32 caches, microseconds (best of 15 rounds, unix port on this machine) and heap bytes
allocated, once with hashlib.md5 and once with the fallback. A board's CPU is slower than this
machine's: docs/performance.md scales the figure.
"""
import sys

from bench_codec import IS_MPY, _alloc_per_call as _alloc, _time_per_call as _time  # noqa: E402 - bench/ on the path


def bench(root):
    sys.path.insert(0, root + "/firmware")   # MicroPython: no installed packages
    sys.path.insert(0, root + "/tests/fw")   # the message samples (codec_samples)
    from wccp import codec
    from wccp import codec_security as sec
    from wccp import md5 as fallback
    import codec_samples as fw

    msgs = {"hia": codec.encode(fw.samples()["hia_squid_mask_md5"], password="secret"),
            "isy32": codec.encode(fw.isy_hash(32, md5=True), password="secret")}
    out = {"impl": sys.implementation.name}
    orig = sec._md5
    for name, data in msgs.items():
        assert codec.verify_md5(data, "secret"), name
        out[name + "_bytes"] = len(data)
        for impl, md5 in (("hashlib", orig), ("fallback", fallback.md5)):
            sec._md5 = md5
            try:
                assert codec.verify_md5(data, "secret"), impl

                def verify(data=data):
                    codec.verify_md5(data, "secret")
                out["%s_%s_us" % (name, impl)] = _time(verify, 20)
                out["%s_%s_alloc" % (name, impl)] = _alloc(verify, 20)
            finally:
                sec._md5 = orig
    return out


def report(r):
    print("[%s] MD5 verification per message (codec.verify_md5)" % r["impl"])
    for name in ("hia", "isy32"):
        if name + "_bytes" not in r:
            print("  %s: not measured (message could not be signed)" % name)
            continue
        for impl in ("hashlib", "fallback"):
            a = r["%s_%s_alloc" % (name, impl)]
            print("  %-5s %4d B  %-8s: %9.1f us  %s" % (name, r[name + "_bytes"], impl, r["%s_%s_us" % (name, impl)],
                                                       "" if a is None else "%6.0f B allocated" % a))


def main():
    if IS_MPY:
        report(bench(sys.argv[1] if len(sys.argv) > 1 else "."))
        return 0
    import os
    import subprocess
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    exe = os.path.join(root, ".venv", "bin", "micropython")
    return subprocess.call([exe, "-X", "heapsize=8m", os.path.abspath(__file__), root], cwd=root)


if __name__ == "__main__":
    sys.exit(main())
