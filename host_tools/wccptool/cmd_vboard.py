"""`wccp vboard`: serve a virtual MicroPython board on a pseudo-terminal."""
import os
import signal
import sys
import threading


def register(sub):
    p = sub.add_parser("vboard", help="virtual MicroPython board (unix port on a pty) for mpremote and `wccp flash`",
                       description="Run the MicroPython unix port behind a pseudo-terminal that behaves like a "
                                   "board for mpremote: raw REPL, raw-paste, soft reset, machine.reset(); "
                                   "DIR is the board's filesystem (boot.py and main.py run at boot).")
    p.add_argument("--dir", required=True, help="host directory used as the board's filesystem (created if missing)")
    p.add_argument("--link", help="also create this symlink to the pts device (e.g. /tmp/ttyVB0)")
    p.add_argument("--micropython", help="unix-port executable (default: the venv's micropython)")
    p.add_argument("--heapsize", help="MicroPython heap size (default 8m; with --board the board's heap, "
                                      "docs/performance.md)")
    p.add_argument("--board", help="emulate this MCU board (boards/<name>.json): its port's machine, network "
                                   "and hashlib, its heap, its wiring to the FPGA")
    p.add_argument("--fpga", help="HOST:PORT of the SPI socket of the FPGA the board is wired to (`wccp twin`); "
                                  "default: no FPGA")
    p.add_argument("--lease", default="127.0.0.1", help="address the emulated DHCP hands out (a loopback address)")
    p.add_argument("--input", action="append", default=[], metavar="PIN=LEVEL",
                   help="level an input pin reads, e.g. GP27=0 (the safe-mode jumper)")
    p.add_argument("-v", "--verbose", action="store_true", help="log boots and resets to stderr")
    p.set_defaults(func=run)


def run(args):
    from wccptool.boards import BoardError
    from wccptool.vboard import VirtualBoard

    os.makedirs(args.dir, exist_ok=True)
    log = (lambda m: print(m, file=sys.stderr, flush=True)) if args.verbose else None
    try:
        inputs = {}
        for item in args.input:
            pin, _, level = item.partition("=")
            inputs[pin] = int(level)
        vb = VirtualBoard(args.dir, micropython=args.micropython, heapsize=args.heapsize, log=log,
                          board=args.board, fpga=args.fpga, lease=args.lease, inputs=inputs)
    except (ValueError, RuntimeError, BoardError) as e:
        print("wccp vboard: %s" % e, file=sys.stderr)
        return 2
    port = vb.start(background=False)
    if args.link:
        try:
            if os.path.islink(args.link):
                os.unlink(args.link)
            os.symlink(port, args.link)
        except OSError as e:
            print("wccp vboard: cannot create link %s: %s" % (args.link, e), file=sys.stderr)
    print("vboard: %s (filesystem %s)" % (port, os.path.abspath(args.dir)), flush=True)
    done = threading.Event()

    def _stop(signum, frame):
        done.set()
        vb._stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        vb.serve()
    finally:
        vb.stop()
        if args.link and os.path.islink(args.link):
            os.unlink(args.link)
    return 0
