"""Reference model throughput: ForwardingModel.process() on 64-byte frames.

Runs itself under CPython and under the MicroPython unix port (same file):
    .venv/bin/python bench/bench_fwdmodel.py            # both interpreters
    .venv/bin/micropython bench/bench_fwdmodel.py       # MicroPython only
Cases: pass-through (IPv4/TCP frame that matches no group, forwarded normally), GRE
redirect and L2 redirect (one hash group, cache location known).
"""
import struct
import sys
import time

try:
    _ROOT = __file__.rsplit("/", 2)[0] if "/" in __file__ else "."
except NameError:  # pragma: no cover
    _ROOT = "."
if _ROOT.endswith("bench"):
    _ROOT = _ROOT[:-6] or "."
if sys.implementation.name == "micropython":
    sys.path.insert(0, _ROOT + "/firmware")   # the unix port has no installed packages

from wccp.dataplane import FWD_GRE, FWD_L2, SF_DST_IP_HASH, SF_PORTS_DEFINED  # noqa: E402
from wccp.fwdmodel import ForwardingModel, with_fcs  # noqa: E402


def frame64(dport):
    ip = bytearray(struct.pack(">BBHHHBBHII", 0x45, 0, 40, 1, 0, 64, 6, 0, 0xC0A8010A, 0xCB007107))
    tcp = struct.pack(">HHIIBBHHH", 40000, dport, 1, 0, 0x50, 0x02, 8192, 0, 0)
    body = b"\x02\x00\x00\x00\x00\x9a" + b"\x02\x00\x00\x00\x00\xc1" + b"\x08\x00" + bytes(ip) + tcp
    body += b"\x00" * (60 - len(body))
    return with_fcs(body)


def model(fwd):
    m = ForwardingModel(clock=lambda: 0)
    m.configure(0x0A000001, b"\x02\x00\x00\x00\x00\x01")
    m.set_group(0, {"service_type": 1, "service_id": 90, "protocol": 6,
                    "service_flags": SF_DST_IP_HASH | SF_PORTS_DEFINED, "ports": [80]})
    m.set_caches(0, [{"address": 0x0A000032, "forward": fwd, "mac": b"\x02\x00\x00\x00\x00\xca", "port": 1}])
    m.set_hash(0, [0] * 256)
    m.commit()
    m.arm(0)
    m.heartbeat()
    return m


def now_s():
    if hasattr(time, "ticks_us"):
        return time.ticks_us() / 1e6
    return time.perf_counter()


def measure(m, f, expect, seconds):
    assert m.decide(0, f).action == expect, m.decide(0, f)
    assert len(f) == 64
    best = 0.0
    for _ in range(5):                   # best of 5 rounds: the VM is shared with other jobs
        n = 0
        t0 = now_s()
        t1 = t0
        while t1 - t0 < seconds / 5:
            for _ in range(100):
                m.process(0, f)
            n += 100
            t1 = now_s()
        best = max(best, n / (t1 - t0))
    return best


def driver_cost():
    """SPI traffic of the FPGA driver for one group reprogram (32 caches, hash) + commit."""
    from wccp.fpga import FpgaDataPlane
    from wccp.fwdmodel_regs import ModelRegisterFile
    from wccp.transport import LoopbackTransport

    class Counting(LoopbackTransport):
        n = 0
        bytes = 0

        def _xfer(self, tx):
            self.n += 1
            self.bytes += len(tx)
            return LoopbackTransport._xfer(self, tx)

    t = Counting(ModelRegisterFile(ForwardingModel(clock=lambda: 0)))
    dp = FpgaDataPlane(t)
    dp.configure(0x0A000001, b"\x02\x00\x00\x00\x00\x01")
    caches = [{"address": 0x0A000100 + i, "forward": FWD_GRE} for i in range(32)]
    dp.set_group(0, {"service_type": 1, "service_id": 90, "protocol": 6,
                     "service_flags": SF_DST_IP_HASH | SF_PORTS_DEFINED, "ports": [80]})
    dp.commit()
    t.n = t.bytes = 0
    dp.set_caches(0, caches)
    dp.set_hash(0, [i % 32 for i in range(256)])
    dp.commit()
    first = (t.n, t.bytes)
    t.n = t.bytes = 0
    dp.set_caches(0, caches)
    dp.set_hash(0, [(i + 1) % 32 for i in range(256)])
    dp.commit()
    again = (t.n, t.bytes)
    t.n = t.bytes = 0
    dp.counters()
    cnt = (t.n, t.bytes)
    for name, (n, b) in (("new 32-cache hash group + commit", first),
                         ("bucket change (same caches) + commit", again),
                         ("read all counters", cnt)):
        print("driver      %-38s %4d SPI transactions %6d bytes = %5.0f us at 25 MHz"
              % (name, n, b, b * 8 / 25.0))


def run(seconds=1.0):
    impl = sys.implementation.name
    res = {}
    res["pass-through"] = measure(model(FWD_GRE), frame64(443), "forward", seconds)
    res["GRE redirect"] = measure(model(FWD_GRE), frame64(80), "redirect_gre", seconds)
    res["L2 redirect"] = measure(model(FWD_L2), frame64(80), "redirect_l2", seconds)
    for k in ("pass-through", "GRE redirect", "L2 redirect"):
        print("%-11s %-13s %9.0f frames/s (best of 5 rounds)" % (impl, k, res[k]))
    if impl == "cpython":
        driver_cost()
    return res


if __name__ == "__main__":
    run()
    if sys.implementation.name == "cpython":
        import os
        import subprocess
        exe = os.path.join(os.path.dirname(sys.executable), "micropython")
        if not os.path.exists(exe):
            import shutil
            exe = shutil.which("micropython")
        if exe is None:
            print("micropython not found")
            sys.exit(1)
        sys.stdout.flush()
        sys.exit(subprocess.call([exe, os.path.abspath(__file__)]))
