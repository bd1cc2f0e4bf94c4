"""The twin's simulator service process: ``python -m wccptool.twin --fpga rtl|model ...``.

Normally started by ``wccptool.twin.start()`` (``wccp run``, ``wccp twin``); see docs/twin.md.
"""
import argparse
import os
import signal
import sys


def _port_map(items, what):
    out = {}
    for it in items or []:
        if "=" not in it:
            raise SystemExit("%s: expected PORT=VALUE, got %r" % (what, it))
        p, v = it.split("=", 1)
        if p not in ("0", "1"):
            raise SystemExit("%s: port must be 0 or 1, got %r" % (what, p))
        out[p] = v
    return out


def parser():
    ap = argparse.ArgumentParser(prog="python -m wccptool.twin", description="WCCP appliance twin: simulated FPGA")
    ap.add_argument("--fpga", choices=("rtl", "model"), default="rtl")
    ap.add_argument("--sim", choices=("verilator", "icarus"), default="verilator")
    ap.add_argument("--bus", choices=("regbus", "spi"), default="regbus",
                    help="RTL: execute SPI transactions on the register bus (default, fast) or clock "
                         "them bit by bit into the SPI slave pins")
    ap.add_argument("--spi", default="127.0.0.1:7470", help="SPI socket: HOST:PORT or a UNIX path")
    ap.add_argument("--frames", default=None, help="frame socket: HOST:PORT or a UNIX path")
    ap.add_argument("--pcap-in", action="append", metavar="PORT=FILE")
    ap.add_argument("--pcap-in-delay", type=float, default=0.0)
    ap.add_argument("--pcap-out", action="append", metavar="PORT=FILE")
    ap.add_argument("--tap", action="append", metavar="PORT=IFNAME")
    ap.add_argument("--clk-per-us", type=int, default=None,
                    help="RTL: clock cycles per watchdog microsecond (default: the twin's choice, docs/twin.md)")
    ap.add_argument("--spi-log", metavar="FILE", help="append every SPI transaction to FILE")
    ap.add_argument("--ready-file")
    ap.add_argument("--parent-pid", type=int)
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true")
    return ap


def config_from_args(a):
    from wccptool.twin import DEFAULT_CLK_PER_US
    return {"fpga": a.fpga, "sim": a.sim, "bus": a.bus, "spi": a.spi, "frames": a.frames,
            "pcap_in": _port_map(a.pcap_in, "--pcap-in"), "pcap_in_delay": a.pcap_in_delay,
            "pcap_out": _port_map(a.pcap_out, "--pcap-out"), "taps": _port_map(a.tap, "--tap"),
            "clk_per_us": a.clk_per_us or DEFAULT_CLK_PER_US, "ready_file": a.ready_file,
            "parent_pid": a.parent_pid, "spi_log": a.spi_log, "verbose": a.verbose}


def _die_with_parent():
    """Linux: SIGTERM this process when the process that started it exits."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def main(argv=None):
    a = parser().parse_args(argv)
    cfg = config_from_args(a)
    os.environ.pop("PYTEST_CURRENT_TEST", None)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    _die_with_parent()
    if a.fpga == "model":
        from wccptool.twin import model
        try:
            model.serve(cfg)
        except OSError as e:
            print("wccptool.twin: %s" % e, file=sys.stderr)
            return 1
        return 0
    from wccptool.twin import rtl
    if a.build_only:
        rtl.build(a.sim, cfg)
        return 0
    rtl.serve(cfg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
