"""`wccp twin` — the simulated FPGA alone, as a service (docs/twin.md).

    wccp twin                                  RTL fpga_core on Verilator, SPI socket
                                               127.0.0.1:7470, frame socket 127.0.0.1:7471
    wccp twin --fpga model                     fast mode (register map + reference model)
    wccp twin --netns                          TAP ports in namespaces wccp-p0 / wccp-p1 (root)
    wccp twin --pcap-in 0=in.pcap --pcap-out 1=out.pcap

Point a firmware at it with `micropython firmware/main.py --dataplane fpga --fpga-socket
127.0.0.1:7470` (or use `wccp run --fpga rtl`, which starts both). Ctrl-C stops it.
"""
import argparse
import signal
import sys
import time


def _ports(items, what):
    out = {}
    for it in items or []:
        p, sep, v = it.partition("=")
        if not sep or p not in ("0", "1"):
            raise SystemExit("wccp twin: %s expects PORT=VALUE with PORT 0 or 1, got %r" % (what, it))
        out[int(p)] = v
    return out


def run(args):
    from wccptool import twin
    topo = None
    if args.netns:
        from wccptool.twin.netns import Topology
        topo = Topology(prefix=args.netns_prefix)
    if args.fpga == "rtl":
        print("wccp twin: building/starting the RTL twin (%s) ..." % args.sim, flush=True)
    old = signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        tw = twin.start(fpga=args.fpga, sim=args.sim, bus=args.bus, spi=args.spi, frames=args.frames,
                        pcap_in=_ports(args.pcap_in, "--pcap-in"), pcap_out=_ports(args.pcap_out, "--pcap-out"),
                        pcap_in_delay=args.pcap_in_delay, netns=topo, log_file=args.log, spi_log=args.spi_log)
    except Exception as e:  # noqa: BLE001 - reported, not a traceback
        print("wccp twin: %s" % e, file=sys.stderr)
        signal.signal(signal.SIGTERM, old)
        return 1
    try:
        print("digital twin up (%s), pid %d" % (args.fpga if args.fpga == "model" else "RTL on " + args.sim,
                                               tw.proc.pid))
        print("  SPI socket     %s   (firmware: --dataplane fpga --fpga-socket %s)" % (args.spi, args.spi))
        print("  frame socket   %s   (wccptool.twin.FrameClient)" % args.frames)
        if tw.netns is not None:
            print("  " + tw.netns.describe())
        print("Stop: Ctrl-C", flush=True)
        while tw.alive():
            time.sleep(0.2)
        print("wccp twin: the simulator exited (%s)" % tw.proc.returncode, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nwccp twin: stopping", flush=True)
        return 0
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        tw.stop()
        signal.signal(signal.SIGTERM, old)


def register(subparsers):
    p = subparsers.add_parser("twin", help="run the simulated FPGA (RTL or model) as a service",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fpga", choices=("rtl", "model"), default="rtl")
    p.add_argument("--sim", choices=("verilator", "icarus"), default="verilator")
    p.add_argument("--bus", choices=("regbus", "spi"), default="regbus",
                   help="RTL: run SPI transactions on the register bus (fast) or clock them into the SPI pins")
    p.add_argument("--spi", default="127.0.0.1:7470", help="SPI socket HOST:PORT or UNIX path")
    p.add_argument("--frames", default="127.0.0.1:7471", help="frame socket HOST:PORT or UNIX path")
    p.add_argument("--pcap-in", action="append", metavar="PORT=FILE")
    p.add_argument("--pcap-in-delay", type=float, default=0.0, metavar="SECONDS")
    p.add_argument("--pcap-out", action="append", metavar="PORT=FILE")
    p.add_argument("--netns", action="store_true", help="TAP ports inside two new network namespaces (root)")
    p.add_argument("--netns-prefix", default="wccp")
    p.add_argument("--spi-log", metavar="FILE")
    p.add_argument("--log", metavar="FILE", help="simulator output (default: inherit)")
    p.set_defaults(func=run)
