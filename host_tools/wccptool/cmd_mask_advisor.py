"""`wccp mask-advisor`: per-cache load for candidate WCCP masks and the mask to use."""
import json
import sys


def register(sub):
    p = sub.add_parser("mask-advisor", help="recommend a mask for mask assignment (load per cache per mask)",
                       description="For mask assignment: the load each cache gets with candidate masks (values "
                                   "dealt round-robin to caches), computed over the addresses of a capture or "
                                   "a synthetic model, the imbalance, and the recommended mask.")
    p.add_argument("--caches", type=int, required=True, help="number of caches in the service group")
    p.add_argument("--bits", type=int, default=None, help="most mask bits to consider (default: 7, or the "
                                                          "bits of --mask)")
    p.add_argument("--pcap", help="pcap or pcapng capture of the traffic to be redirected")
    p.add_argument("--field", default="dst_addr", choices=("src_addr", "dst_addr", "src_port", "dst_port"),
                   help="packet field the mask applies to (standard service 0: dst_addr)")
    p.add_argument("--model", default="uniform", help="synthetic traffic without --pcap: uniform or sites:K")
    p.add_argument("--mask", action="append", default=[], help="also evaluate this mask (hex), repeatable")
    p.add_argument("--weight", choices=("packets", "bytes"), default="packets", help="load unit (default packets)")
    p.add_argument("--top", type=int, default=10, help="rows to show (default 10)")
    p.add_argument("--tolerance", type=float, default=0.02,
                   help="prefer fewer bits when within this fraction of the best imbalance (default 0.02)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args):
    from wccptool import maskadvisor as ma
    from wccptool.pcap import PcapError

    try:
        masks = [int(m, 16) for m in args.mask]
    except ValueError:
        print("wccp mask-advisor: --mask takes hex values like 0x1741", file=sys.stderr)
        return 2
    width = ma.FIELDS[args.field]
    if any(m < 0 or m >= (1 << width) for m in masks):
        print("wccp mask-advisor: --mask wider than the %d-bit %s field" % (width, args.field), file=sys.stderr)
        return 2
    bits = args.bits if args.bits is not None else max([ma.MAX_BITS] + [len(ma.set_bits(m)) for m in masks])
    try:
        if args.pcap:
            samples, n = ma.samples_from_pcap(args.pcap, args.field, args.weight)
            source = "%s: %d IPv4 packets, %d distinct %s values" % (args.pcap, n, len(samples), args.field)
        else:
            samples = ma.synthetic_samples(args.model, args.field)
            source = ("uniform traffic (every value equally likely)" if samples is None else
                      "synthetic model %s (%d samples)" % (args.model, sum(samples.values())))
        results, rec = ma.analyse(samples, args.caches, args.field, bits, masks, args.tolerance)
    except (ma.AdvisorError, PcapError) as e:
        print("wccp mask-advisor: %s" % e, file=sys.stderr)
        return 2
    if args.json:
        out = {"source": source, "caches": args.caches, "field": args.field,
               "recommended": None if rec is None else dict(rec, mask=ma.fmt_mask(rec["mask"], args.field)),
               "results": [dict(r, mask=ma.fmt_mask(r["mask"], args.field)) for r in results[:args.top]]}
        given = [r for r in results if r["mask"] in masks]
        out["given"] = [dict(r, mask=ma.fmt_mask(r["mask"], args.field)) for r in given]
        print(json.dumps(out, indent=1))
        return 0
    print("traffic: %s" % source)
    print("%d caches, mask on %s, values dealt round-robin; imbalance = busiest cache / mean (1.00 = even)"
          % (args.caches, args.field))
    hdr = "%-12s %4s %6s %9s %5s  %-s" % ("mask", "bits", "values", "imbalance", "idle", "load per cache (%)")
    print(hdr)
    shown = results[:args.top] + [r for r in results[args.top:] if r["mask"] in masks]
    for r in shown:
        loads = " ".join("%5.1f" % (100 * s) for s in r["share"][:16]) + (" ..." if args.caches > 16 else "")
        print("%-12s %4d %6d %9.2f %5d  %s%s" % (ma.fmt_mask(r["mask"], args.field), r["bits"], r["values"],
                                                 r["imbalance"], r["idle_caches"], loads,
                                                 ("  [%s]" % r["label"]) if r["label"] else ""))
    if rec is None:
        print("no mask of at most %d bits gives every cache traffic; use more bits (2^bits >= %d) or fewer caches"
              % (bits, args.caches))
        return 1
    hi, lo, idle = rec["structural"]
    print("recommended: %s (%d bits, %d values): imbalance %.2f on this traffic; structurally %d:%d values "
          "per cache" % (ma.fmt_mask(rec["mask"], args.field), rec["bits"], rec["values"], rec["imbalance"], hi, lo))
    return 0
