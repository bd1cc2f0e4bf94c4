"""`wccp cache-sim` — emulate WCCPv2 web caches against one or more routers.

Library: wccptool.cachesim.  Each cache binds its own address on UDP 2048 (on
Linux any 127.x.y.z works without configuration), sends HERE_I_AM every T to
every router, follows the protocol (designated cache assigns hash buckets or
mask/value sets after 1.5 T, answers REMOVAL_QUERY) and can misbehave on demand.
"""
import argparse
import asyncio
import json
import sys
import time

from wccptool import cachesim as cs

EPILOG = """\
service SPEC:
  standard:ID | ID              well-known service (0 = web-cache), all other fields 0
  dynamic:ID[,key=value...]     keys: protocol=tcp|udp|N (default tcp), ports=80+443 (up to 8),
                                flags=0xNN (service flags; default 0x02 dst-IP hash, +0x10 if ports),
                                priority=N (default 100), source-ports (adds 0x20)
mask SPEC (mask assignment; repeatable = one mask/value set each; default dst_addr=0x1741):
  src_addr=0x..,dst_addr=0x..,src_port=0x..,dst_port=0x..   every combination of the set bits
  becomes one value element, dealt round-robin to the caches (at most %d bits per set)
misbehave ADDR=KIND[@SECONDS] (repeatable; from the start, or SECONDS after it):
  bad-md5            sign every message with a wrong password
  wrong-receive-id   report Receive ID + 1000 in the Web-Cache View
  cap-mismatch       choose L2 forwarding and L2 return (GRE-only routers must refuse the cache)
  silent             stop sending anything (and ignore REMOVAL_QUERY): the router times it out
  no-assign          never send REDIRECT_ASSIGN when designated (routers flush 5 T after a change)
  shutdown           send SHUTDOWN (Command Extension type 1) once, then stay silent
election: the designated cache is the lowest address among caches all routers list.
  numeric  network-order numeric value (10.0.0.2 < 10.0.0.10 < 10.0.1.1), the drafts' intent
  squid    Squid's quirk on little-endian hosts: last octet most significant (127.1.0.1 < 127.0.0.2)
events are printed one per line (--json: JSON lines); periodic HERE_I_AMs only with -v.
examples:
  wccp cache-sim --router 127.0.0.1 --caches 3 --interval 2 --duration 20
  wccp cache-sim --router 127.0.0.1 --router 127.0.0.2 --cache 127.0.0.11,weight=100 \\
      --cache 127.0.0.12 --assignment mask --mask src_addr=0x7 --password s3cret
  wccp cache-sim --router 127.0.0.1 --caches 2 --misbehave 127.0.0.12=silent@15 --pcap out.pcap
""" % cs.MAX_MASK_BITS

PROTOCOLS = {"tcp": 6, "udp": 17}
MISBEHAVIOURS = ("bad-md5", "wrong-receive-id", "cap-mismatch", "silent", "shutdown", "no-assign")


def parse_service(spec):
    spec = spec.strip()
    if spec.isdigit():
        return cs.standard_service(int(spec))
    kind, _, rest = spec.partition(":")
    if kind == "standard":
        return cs.standard_service(_int(rest, "service id", 0, 255))
    if kind != "dynamic":
        raise argparse.ArgumentTypeError("service must be standard:ID or dynamic:ID,... (got %r)" % spec)
    parts = rest.split(",")
    sid = _int(parts[0], "service id", 0, 255)
    protocol, ports, flags, priority, source = 6, [], None, 100, False
    for p in parts[1:]:
        k, _, v = p.partition("=")
        k = k.strip()
        if k == "protocol":
            protocol = PROTOCOLS.get(v.lower()) if v.lower() in PROTOCOLS else _int(v, "protocol", 0, 255)
        elif k == "ports":
            ports = [_int(x, "port", 1, 65535) for x in v.replace("/", "+").split("+") if x]
            if len(ports) > 8:
                raise argparse.ArgumentTypeError("at most 8 ports")
        elif k == "flags":
            flags = _int(v, "flags", 0, 0xFFFFFFFF)
        elif k == "priority":
            priority = _int(v, "priority", 0, 255)
        elif k == "source-ports":
            source = True
        else:
            raise argparse.ArgumentTypeError("unknown service key %r" % k)
    svc = cs.dynamic_service(sid, protocol=protocol, ports=ports, flags=flags, priority=priority)
    if source:
        svc["service_flags"] |= 0x20
    return svc


def _int(text, what, lo, hi):
    try:
        v = int(str(text).strip(), 0)
    except ValueError:
        raise argparse.ArgumentTypeError("%s: not a number: %r" % (what, text)) from None
    if not lo <= v <= hi:
        raise argparse.ArgumentTypeError("%s must be %d..%d (got %d)" % (what, lo, hi, v))
    return v


def parse_mask(spec):
    m = {f: 0 for f in cs.MASK_FIELDS}
    for p in spec.split(","):
        k, _, v = p.partition("=")
        k = k.strip().replace("-", "_")
        if k not in m:
            raise argparse.ArgumentTypeError("mask field must be one of %s" % ", ".join(cs.MASK_FIELDS))
        m[k] = _int(v, k, 0, (1 << cs.MASK_WIDTHS[k]) - 1)
    try:
        cs.mask_values(m)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return m


def parse_cache(spec):
    parts = spec.split(",")
    addr = parts[0].strip()
    try:
        cs.ip2int(addr)
    except ValueError:
        raise argparse.ArgumentTypeError("bad cache address %r" % addr) from None
    weight = None
    for p in parts[1:]:
        k, _, v = p.partition("=")
        if k.strip() != "weight":
            raise argparse.ArgumentTypeError("cache option must be weight=N")
        weight = _int(v, "weight", 0, 65535)
    return addr, weight


def parse_misbehave(spec):
    addr, _, rest = spec.partition("=")
    kind, _, at = rest.partition("@")
    if kind not in MISBEHAVIOURS:
        raise argparse.ArgumentTypeError("misbehaviour must be one of %s" % ", ".join(MISBEHAVIOURS))
    try:
        cs.ip2int(addr.strip())
        when = float(at) if at else 0.0
    except ValueError:
        raise argparse.ArgumentTypeError("misbehave is ADDR=KIND[@SECONDS], got %r" % spec) from None
    return addr.strip(), kind, when


def register(subparsers):
    p = subparsers.add_parser(
        "cache-sim", help="emulate WCCPv2 web caches (bench / test peer for routers)",
        description=__doc__, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--router", action="append", metavar="ADDR",
                   help="router address to send HERE_I_AMs to (repeatable; default 127.0.0.1)")
    p.add_argument("--cache", action="append", type=parse_cache, metavar="ADDR[,weight=W]",
                   help="an emulated cache address (repeatable)")
    p.add_argument("--caches", type=int, default=0, metavar="N",
                   help="N more caches at consecutive addresses from --first-address")
    p.add_argument("--first-address", default="127.0.0.11", metavar="ADDR",
                   help="first address for --caches (default 127.0.0.11)")
    p.add_argument("--service", action="append", type=parse_service, metavar="SPEC",
                   help="service group to join (repeatable; default standard:0); see below")
    p.add_argument("--interval", "-T", type=float, default=10.0, metavar="SECONDS",
                   help="HERE_I_AM interval T (default 10); RA wait 1.5T, query replies T/10")
    p.add_argument("--first-delay", type=float, default=0.0, metavar="SECONDS",
                   help="delay before the first HERE_I_AM (default 0; Squid uses 1)")
    p.add_argument("--first-contact", choices=("zero", "absent"), default="zero",
                   help="before a router's first I_SEE_YOU list it in the Web-Cache View with Receive "
                        "ID 0 (zero, as Squid; default) or leave it out (absent)")
    p.add_argument("--assignment", choices=("hash", "mask"), default="hash",
                   help="assignment method (default hash)")
    p.add_argument("--mask", action="append", type=parse_mask, metavar="SPEC",
                   help="mask/value set for mask assignment (repeatable)")
    p.add_argument("--weight", type=int, default=10000, help="assignment weight (default 10000, as Squid)")
    p.add_argument("--alt-flag-every", type=int, default=0, metavar="N",
                   help="hash: set the alternate-hash flag (0x80) on every N-th bucket")
    p.add_argument("--hash-as-alternate", action="store_true",
                   help="hash: send Alternate Assignment type 0 instead of Assignment Info")
    p.add_argument("--forwarding", choices=("gre", "l2"), default="gre")
    p.add_argument("--return", dest="return_method", choices=("gre", "l2"), default="gre")
    p.add_argument("--no-capabilities", action="store_true",
                   help="omit the Capabilities component (router must assume GRE/hash/GRE)")
    p.add_argument("--password", metavar="PW", help="MD5 password (at most 8 octets)")
    p.add_argument("--election", choices=("numeric", "squid"), default="numeric",
                   help="designated-cache ordering (default numeric)")
    p.add_argument("--misbehave", action="append", type=parse_misbehave, metavar="ADDR=KIND[@S]",
                   help="misbehave on demand (repeatable); see below")
    p.add_argument("--port", type=int, default=2048, help="local UDP port (default 2048)")
    p.add_argument("--router-port", type=int, default=2048, help="router UDP port (default 2048)")
    p.add_argument("--duration", type=float, default=0.0, metavar="SECONDS",
                   help="stop after SECONDS (default: run until interrupted)")
    p.add_argument("--json", action="store_true", help="print events as JSON lines")
    p.add_argument("-v", "--verbose", action="store_true", help="also print every HERE_I_AM sent")
    p.add_argument("--state", action="store_true", help="print the final state as JSON at exit")
    p.add_argument("--pcap", metavar="FILE", help="write every datagram sent and received to FILE")
    p.set_defaults(func=run)


def build_members(args, sink):
    routers = args.router or ["127.0.0.1"]
    caches = list(args.cache or [])
    base = cs.ip2int(args.first_address)
    for i in range(args.caches):
        caches.append((cs.int2ip(base + i), None))
    if not caches:
        raise SystemExit("wccp cache-sim: no caches (use --cache ADDR or --caches N)")
    if args.password is not None and len(args.password.encode()) > 8:
        raise SystemExit("wccp cache-sim: --password is at most 8 octets")
    services = args.service or [cs.standard_service(0)]
    alt = range(0, 256, args.alt_flag_every) if args.alt_flag_every > 0 else ()
    members = []
    for addr, weight in caches:
        for svc in services:
            members.append(cs.Member(
                addr, routers, svc, interval=args.interval,
                weight=args.weight if weight is None else weight, password=args.password,
                assignment=args.assignment, forwarding=1 if args.forwarding == "gre" else 2,
                return_method=1 if args.return_method == "gre" else 2,
                send_capabilities=not args.no_capabilities, masks=args.mask,
                alt_buckets=alt, hash_as_alternate=args.hash_as_alternate, election=args.election,
                first_delay=args.first_delay, first_contact=args.first_contact, sink=sink, wccp_port=args.port))
    return members


def apply_misbehaviour(sim, member, kind, now):
    if kind == "shutdown":
        sim._send(member, member.shutdown(now))
    else:
        member.misbehave.add(kind.replace("-", "_"))


def run(args):
    t0 = time.monotonic()
    verbose = args.verbose

    def sink(ev):
        if ev["event"] == "send-hia" and ev.get("why") == "periodic" and not verbose:
            return
        ev = dict(ev)
        ev["t"] = round(time.monotonic() - t0, 3)
        if args.json:
            print(json.dumps(ev), flush=True)
        else:
            rest = " ".join("%s=%s" % (k, v) for k, v in ev.items()
                            if k not in ("t", "cache", "event", "service"))
            print("%9.3f %-15s svc%-3s %-18s %s" % (ev["t"], ev["cache"], ev["service"], ev["event"], rest),
                  flush=True)

    members = build_members(args, sink)
    try:
        return asyncio.run(_main(args, members, sink))
    except OSError as e:
        print("wccp cache-sim: %s" % e, file=sys.stderr)
        return 1


async def _main(args, members, sink):
    sim = cs.CacheSim(members, capture=bool(args.pcap), sink=sink, router_port=args.router_port)
    loop = asyncio.get_running_loop()
    timed = []
    for addr, kind, when in args.misbehave or []:
        hit = [m for m in members if m.address == cs.ip2int(addr)]
        if not hit:
            raise SystemExit("wccp cache-sim: --misbehave names %s, which is not an emulated cache" % addr)
        for m in hit:
            if kind == "cap-mismatch":
                m.forwarding = 2
                m.return_method = 2
            elif when <= 0 and kind != "shutdown":
                apply_misbehaviour(sim, m, kind, 0)
            else:
                timed.append((when, m, kind))
    await sim.start()
    start = loop.time()
    try:
        end = start + args.duration if args.duration > 0 else None
        timed.sort(key=lambda x: x[0])
        while True:
            now = loop.time()
            while timed and now - start >= timed[0][0]:
                _w, m, kind = timed.pop(0)
                apply_misbehaviour(sim, m, kind, now)
                sim.kick()
            if end is not None and now >= end:
                break
            nxt = [end] if end is not None else []
            if timed:
                nxt.append(start + timed[0][0])
            await asyncio.sleep(min([0.5] + [max(0.0, x - now) for x in nxt]))
    finally:
        await sim.stop()
        if args.pcap:
            cs.write_pcap(args.pcap, sorted(sim.sent + sim.received, key=lambda r: r[0]))
    if args.state:
        print(json.dumps(sim.state(), indent=1))
    errors = sum(len(m.errors) for m in members)
    if errors:
        print("wccp cache-sim: %d router protocol errors observed (see router-error events)" % errors,
              file=sys.stderr)
    return 0
