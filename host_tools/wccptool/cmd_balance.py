"""`wccp balance CAPTURE --caches N [--method wccp-hash|pearson|mask --mask M]`: how a traffic
mix would spread over N caches — per cache the share of flows and of bytes, the max/mean
ratio, and a plot (SVG) of the shares and of the load per bucket or mask value.

Reads pcap or pcapng (or --live IFACE through dumpcap). A flow is a (protocol, source,
destination, ports) tuple as captured; --dst-port keeps the traffic a service group would
redirect. --method all compares the three methods (mask needs --mask). The engine is
wccptool.balance (the mask advisor uses it too). Exit status 0, 1 when the capture cannot be
read or holds no matching IPv4 packet, 2 on usage errors.
"""
import json
import sys


def register(sub):
    p = sub.add_parser("balance", help="per-cache share of flows and bytes of a capture under hash, Pearson or mask",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("capture", nargs="?", help="pcap or pcapng file")
    p.add_argument("--live", metavar="IFACE", help="capture live on an interface (dumpcap) for --duration seconds")
    p.add_argument("--duration", type=float, default=10.0, help="with --live: seconds to capture (default 10)")
    p.add_argument("--caches", type=int, required=True, help="number of caches")
    p.add_argument("--method", default="wccp-hash", choices=("wccp-hash", "pearson", "mask", "all"),
                   help="assignment: the WCCP hash (default), RFC 3074 Pearson, mask, or all of them")
    p.add_argument("--fields", default="src_ip",
                   help="comma-separated key fields: src_ip, dst_ip, src_port, dst_port (default src_ip; "
                        "mask: exactly one)")
    p.add_argument("--mask", help="mask (hex) for --method mask/all, on the one --fields field")
    p.add_argument("--deal", default="blocks", choices=("blocks", "interleaved"),
                   help="buckets to caches: contiguous blocks as Squid assigns (default) or interleaved")
    p.add_argument("--dst-port", type=int, action="append", default=[],
                   help="only TCP/UDP packets to this port (repeatable)")
    p.add_argument("--plot", metavar="FILE.svg", help="write the plot (SVG); with --method all one per method, "
                                                      "FILE-<method>.svg")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def _err(msg):
    print("wccp balance: %s" % msg, file=sys.stderr)


def run(args):
    from wccptool import balance as bal
    from wccptool import livecap
    from wccptool.pcap import PcapError

    fields = [f.strip() for f in args.fields.split(",") if f.strip()]
    mask = None
    if args.mask is not None:
        try:
            mask = int(args.mask, 16)
        except ValueError:
            _err("--mask takes a hex value like 0x1741")
            return 2
    methods = ["wccp-hash", "pearson", "mask"] if args.method == "all" else [args.method]
    if args.method == "all" and mask is None:
        methods.remove("mask")
    if not args.capture and not args.live:
        _err("give a CAPTURE file, or --live IFACE")
        return 2
    proc = None
    try:
        if args.live:
            proc = livecap.start(args.live, duration=args.duration)
            source, name = proc.stdout, "live %s (%g s)" % (args.live, args.duration)
        else:
            source, name = args.capture, args.capture
        flows, npk = bal.read_flows(source, tuple(args.dst_port))
    except (PcapError, livecap.LiveCaptureError) as e:
        _err(e)
        return 1
    finally:
        if proc is not None:
            e = livecap.stop(proc)
            if e:
                _err("dumpcap: %s" % e)
    if not flows:
        _err("%s: no IPv4 packet%s" % (name, " to port(s) %s" % args.dst_port if args.dst_port else ""))
        return 1
    try:
        results = [bal.assign(flows, args.caches, m, fields, mask, args.deal) for m in methods]
    except bal.BalanceError as e:
        _err(e)
        return 2
    if args.plot:
        for r in results:
            path = args.plot
            if len(results) > 1:
                stem = path[:-4] if path.endswith(".svg") else path
                path = "%s-%s.svg" % (stem, r["method"])
            with open(path, "w") as f:
                f.write(bal.svg(r, "%s: %d flows, %d packets" % (name, len(flows), npk)))
    if args.json:
        out = {"capture": name, "packets": npk, "flows": len(flows), "results": []}
        for r in results:
            d = {k: v for k, v in r.items() if k not in ("slot_flows", "slot_bytes", "slot_cache")}
            d["mask"] = None if mask is None or r["method"] != "mask" else "0x%X" % mask
            d["slot_flows"] = r["slot_flows"]
            out["results"].append(d)
        print(json.dumps(out, indent=1))
        return 0
    print("%s: %d IPv4 packets, %d flows; key %s, %d caches" % (name, npk, len(flows), ",".join(fields), args.caches))
    print("%-10s %10s %10s %5s  %s" % ("method", "flows max/mean", "bytes max/mean", "idle", "flow share per cache (%)"))
    for r in results:
        label = r["method"] + (" 0x%X" % mask if r["method"] == "mask" else "")
        shares = " ".join("%5.1f" % (100 * c["flow_share"]) for c in r["per_cache"][:16])
        print("%-10s %14.2f %14.2f %5d  %s%s" % (label, r["flow_ratio"], r["byte_ratio"], r["idle_caches"], shares,
                                                 " ..." if args.caches > 16 else ""))
    if len(results) == 1:
        r = results[0]
        print("%5s %8s %7s %12s %7s" % ("cache", "flows", "flows%", "bytes", "bytes%"))
        for c in r["per_cache"]:
            print("%5d %8d %6.1f%% %12d %6.1f%%" % (c["cache"], c["flows"], 100 * c["flow_share"], c["bytes"],
                                                    100 * c["byte_share"]))
    return 0
