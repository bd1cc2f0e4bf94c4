"""`wccp lab` — the inline lab: a client, an origin web server, real Squid caches and the
simulated appliance (firmware + FPGA twin), each in a network namespace (root).

    sudo wccp lab                          RTL twin, one Squid, web-cache service (hash, GRE)
    sudo wccp lab --fpga twin-model        the fast model instead of the RTL
    sudo wccp lab --caches 2 --service src-hash
    sudo wccp lab --service mask-l2        dynamic service, mask assignment, L2 forwarding
    sudo wccp lab --cache-mtu 1528         caches' links at 1528: clients at 1500, GRE'd whole
    sudo wccp lab --down                   remove a lab left running (its processes, namespaces)

Prints what to run once everything is up (e.g. `ip netns exec wlab-cl curl -v
http://10.62.0.1/index.html`). Runs until Ctrl-C or SIGTERM, then removes every namespace
and process it made. Topology: wccptool/lab.py and docs/quickstart.md section 1; the
cache-side commands: wccptool/labcache.py and docs/quickstart.md section 7.
"""
import argparse
import signal
import sys
import time


class _Stop(BaseException):
    pass


def _on_term(signum, frame):
    raise _Stop()


def run(args):
    from wccptool import lab as L
    try:
        L.need_root()
    except L.LabError as e:
        print("wccp lab: %s" % e, file=sys.stderr)
        return 2
    state = args.state_dir or str(L.ROOT / "build" / "lab" / args.prefix)
    if args.down:
        L.down_from_state(state, args.prefix, log=print)
        return 0
    try:
        lab = L.Lab(prefix=args.prefix, fpga=args.fpga, caches=args.caches, service=args.service,
                    clients=args.clients, time_scale=args.time_scale, state_dir=state, gre=args.gre,
                    cache_mtu=args.cache_mtu)
    except L.LabError as e:
        print("wccp lab: %s" % e, file=sys.stderr)
        return 2
    old_term = signal.signal(signal.SIGTERM, _on_term)
    old_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        try:
            lab.up()
            lab.log("lab: waiting for the caches to join and receive an assignment ...")
            lab.wait_assigned()
        except L.LabError as e:
            print("wccp lab: %s" % e, file=sys.stderr)
            return 1
        print(lab.banner(), flush=True)
        while True:
            for name, p in list(lab.procs.items()):
                if not p.alive() and not name.startswith("squid"):
                    print("wccp lab: %s exited (%s); log %s:\n%s" % (name, p.popen.returncode, p.log, p.tail()),
                          file=sys.stderr)
                    return 1
            if lab.twin is not None and not lab.twin.alive():
                print("wccp lab: the twin exited; log %s/twin.log" % lab.state, file=sys.stderr)
                return 1
            time.sleep(0.5)
    except (KeyboardInterrupt, _Stop):
        print("\nwccp lab: stopping", flush=True)
        return 0
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            lab.down()
            print("wccp lab: removed its namespaces and processes", flush=True)
        finally:
            signal.signal(signal.SIGTERM, old_term)
            signal.signal(signal.SIGINT, old_int)


def register(subparsers):
    from wccptool.lab import CACHE_MTU, SERVICES
    p = subparsers.add_parser("lab", help="inline lab: client, origin, Squid caches and the appliance in namespaces",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fpga", choices=("rtl", "twin-model"), default="rtl",
                   help="the FPGA: the RTL twin on Verilator (default) or the fast model")
    p.add_argument("--caches", type=int, default=1, help="Squid caches (1-8, default 1)")
    p.add_argument("--service", choices=sorted(SERVICES), default="web-cache",
                   help="; ".join("%s: %s" % (k, v["help"]) for k, v in sorted(SERVICES.items())))
    p.add_argument("--clients", type=int, default=32, help="extra client addresses 10.62.0.100.. (default 32)")
    p.add_argument("--time-scale", type=int, choices=(1, 10), default=1,
                   help="10: Squid under libfaketime and a 1 s HERE_I_AM interval (what the tests use)")
    p.add_argument("--gre", choices=("auto", "ip_gre", "decap"), default="auto",
                   help="GRE on the caches: the kernel's ip_gre, the lab's decapsulator, or auto (default)")
    p.add_argument("--cache-mtu", type=int, default=CACHE_MTU,
                   help="the caches' links and the appliance's mtu (1500-1532, default 1500): at 1528 and "
                        "more the client runs MTU 1500 and full-size packets are GRE-redirected whole")
    p.add_argument("--prefix", default="wlab", help="namespace/interface prefix (default wlab)")
    p.add_argument("--state-dir", default=None, help="logs and sockets (default build/lab/<prefix>)")
    p.add_argument("--down", action="store_true", help="remove a running lab with this prefix and exit")
    p.set_defaults(func=run)
