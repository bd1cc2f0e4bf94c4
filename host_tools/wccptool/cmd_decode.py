"""`wccp decode FILE.pcap[ng] [--json]` - print the WCCPv2 messages in a capture.

Reads pcap or pcapng (Ethernet, Linux cooked v1/v2, raw IPv4, BSD null link types), or
captures live (--live IFACE, dumpcap), picks IPv4/UDP datagrams to or from port 2048
(--port), decodes each with the firmware codec and prints it with names for the numbered
fields (message, security option, service type and flags, protocol, capabilities and their
methods, assignment type, command extension; wccptool.wccpnames) and bucket tables as
ranges per cache (`0-127 → 10.0.0.2`). --json prints one JSON object per message per line,
field names as in the codec data model (docs/protocol.md), addresses dotted, bytes hex,
every number kept and its name added next to it (`option` and `option_name`, ...).
Non-WCCP packets are skipped; a malformed WCCP packet is reported with the reason and
decoding continues. Exit status: 0 when the capture was read completely, 1 when the
file is unreadable / not pcap / truncated (after printing what was decoded), 2 on usage.
"""
import json
import sys

from wccptool import livecap, pcap, wccpnames

from wccp import codec

# keys whose int values are IPv4 addresses (masks included: shown dotted like Cisco/FortiOS do)
_ADDR_KEYS = {"address", "router_id", "sent_to", "target", "cache_address", "src_addr", "dst_addr"}
_ADDR_LIST_KEYS = {"received_from", "routers", "web_caches"}


def to_jsonable(obj, key=None, in_masks=False):
    """Decoded message -> JSON-friendly structure (dotted addresses, hex bytes)."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if k == "data" and isinstance(v, int) and key == "command_extension":
                out[k] = codec.int2ip(v)
            else:
                out[k] = to_jsonable(v, k if k != "data" else key, k == "masks")
        return out
    if isinstance(obj, list):
        if key in _ADDR_LIST_KEYS and all(isinstance(x, int) for x in obj):
            return [codec.int2ip(x) for x in obj]
        return [to_jsonable(x, key) for x in obj]
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return bytes(obj).hex()
    if isinstance(obj, int) and key in _ADDR_KEYS and not isinstance(obj, bool):
        return codec.int2ip(obj)
    return obj


def _with_name(d, k, v):
    """`v (name)` when the message carries a name for the number (wccpnames.annotate)."""
    v = _scalar(k, v)
    n = d.get(k + "_name")
    ns = d.get(k + "_names")
    if n is not None:
        return "%s (%s)" % (v, n)
    if ns:
        return "%s (%s)" % (v, ", ".join(ns))
    return v


def _skip(d, k):
    """Keys shown with another key (names next to their number, tables as ranges)."""
    if k.endswith("_name") and k[:-5] in d or k.endswith("_names") and k[:-6] in d:
        return True
    if k == "bucket_ranges" or (k == "bucket_bitmap" and "buckets" in d):
        return True
    return k == "buckets" and "bucket_ranges" in d


def _scalar(k, v):
    if k in ("flags", "service_flags") and isinstance(v, int):
        return "0x%04x" % v
    return v


def _inline(d):
    if "name" in d and "type" in d:         # a capability, command extension or unknown component
        rest = ", ".join("%s %s" % (a, b) for a, b in d.items() if a not in ("name", "value_name"))
        if "value_name" in d:
            return "%s: %s (%s)" % (d["name"], d["value_name"], rest)
        return "%s (%s)" % (d["name"], rest)
    return "{%s}" % ", ".join("%s: %s" % (a, _with_name(d, a, b)) for a, b in d.items() if not _skip(d, a))


def _pretty(obj, indent, lines):
    pad = "  " * indent
    if isinstance(obj, dict):
        if "bucket_ranges" in obj:
            lines.append("%sbuckets: (per cache; alternate: the bucket says use the alternate hash)" % pad)
            for r in obj["bucket_ranges"]:
                to = "unassigned" if r["cache_index"] is None else "%s%s" % (
                    r["cache"] if r["cache"] is not None else "cache index %d (not listed)" % r["cache_index"],
                    " (alternate)" if r["alternate"] else "")
                lines.append("%s  %s \u2192 %s  [%d]" % (pad, r["buckets"], to, r["count"]))
        for k, v in obj.items():
            if _skip(obj, k):
                continue
            if isinstance(v, (dict, list)) and v and not all(not isinstance(x, (dict, list)) for x in
                                                               (v.values() if isinstance(v, dict) else v)):
                lines.append("%s%s:" % (pad, k))
                _pretty(v, indent + 1, lines)
            elif isinstance(v, dict):
                lines.append("%s%s: %s" % (pad, k, _inline(v)))
            elif isinstance(v, list):
                lines.append("%s%s: [%s]" % (pad, k, ", ".join(str(x) for x in v)))
            else:
                lines.append("%s%s: %s" % (pad, k, _with_name(obj, k, v)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            if isinstance(v, dict) and not any(isinstance(x, (dict, list)) for x in v.values()):
                lines.append("%s- %s" % (pad, _inline(v)))
            elif isinstance(v, (dict, list)):
                lines.append("%s- [%d]" % (pad, i))
                _pretty(v, indent + 1, lines)
            else:
                lines.append("%s- %s" % (pad, v))


def format_text(head, msg):
    lines = [head]
    _pretty(msg, 1, lines)
    return "\n".join(lines)


def run(path, as_json=False, port=2048, out=None, password=None, limit=None):
    out = out or sys.stdout
    count = {"wccp": 0, "malformed": 0, "skipped": 0}
    try:
        for rec in pcap.read_pcap(path):
            udp = pcap.extract_udp(rec.linktype, rec.data)
            if udp is None or (udp.sport != port and udp.dport != port):
                count["skipped"] += 1
                continue
            meta = {"packet": rec.index, "time": round(rec.ts, 6),
                    "src": "%s:%d" % (udp.src, udp.sport), "dst": "%s:%d" % (udp.dst, udp.dport)}
            try:
                if udp.truncated:
                    raise codec.WccpError("UDP datagram truncated in the capture (snaplen or bad length)")
                msg = codec.decode(udp.payload)
            except codec.WccpError as e:
                count["malformed"] += 1
                if as_json:
                    meta["error"] = e.reason
                    out.write(json.dumps(meta) + "\n")
                else:
                    out.write("#%d %.6f %s -> %s MALFORMED WCCP: %s\n\n"
                              % (rec.index, rec.ts, meta["src"], meta["dst"], e.reason))
                out.flush()
                if limit is not None and count["malformed"] + count["wccp"] >= limit:
                    break
                continue
            count["wccp"] += 1
            name = codec.MESSAGE_NAMES.get(msg["type"], str(msg["type"]))
            body = wccpnames.annotate(to_jsonable(msg))
            if password is not None and msg["security"]["option"] == 1:
                meta["md5_ok"] = codec.verify_md5(udp.payload, password)
            if as_json:
                obj = dict(meta)
                obj["message"] = name
                obj.update(body)
                out.write(json.dumps(obj) + "\n")
            else:
                head = "#%d %.6f %s -> %s %s (version 0x%04x, %d bytes)" % (
                    rec.index, rec.ts, meta["src"], meta["dst"], name, msg["version"], msg["length"] + 8)
                if "md5_ok" in meta:
                    head += " md5 %s" % ("OK" if meta["md5_ok"] else "BAD")
                body.pop("type", None)
                body.pop("version", None)
                body.pop("length", None)
                out.write(format_text(head, body) + "\n\n")
            out.flush()
            if limit is not None and count["wccp"] + count["malformed"] >= limit:
                break
    except pcap.PcapError as e:
        out.flush()
        sys.stderr.write("wccp decode: %s\n" % e)
        return 1
    if not as_json:
        out.write("%d WCCP message(s), %d malformed, %d other packet(s) skipped\n"
                  % (count["wccp"], count["malformed"], count["skipped"]))
    return 0


def live(iface, as_json=False, port=2048, password=None, count=None, duration=None, capture_filter=None):
    """Decode WCCP traffic live: dumpcap captures UDP `port` on `iface` (wccptool.livecap)."""
    flt = "udp port %d" % port
    if capture_filter:
        flt = "(%s) and (%s)" % (flt, capture_filter)
    try:
        proc = livecap.start(iface, flt, duration)
    except livecap.LiveCaptureError as e:
        sys.stderr.write("wccp decode: %s\n" % e)
        return 1
    sys.stderr.write("wccp decode: listening on %s (%s); Ctrl-C to stop\n" % (iface, flt))
    sys.stderr.flush()
    try:
        rc = run(proc.stdout, as_json=as_json, port=port, password=password, limit=count)
    except KeyboardInterrupt:
        rc = 0
    finally:
        err = livecap.stop(proc)
    if err and rc == 0 and count is None:
        sys.stderr.write("wccp decode: dumpcap failed: %s\n" % err)
        return 1
    if rc and err:
        sys.stderr.write("wccp decode: dumpcap: %s\n" % err)
    return rc


def _main(args):
    if args.live:
        return live(args.live, as_json=args.json, port=args.port, password=args.password, count=args.count,
                    duration=args.duration, capture_filter=args.filter)
    if not args.file:
        sys.stderr.write("wccp decode: give a pcap FILE, or --live IFACE\n")
        return 2
    return run(args.file, as_json=args.json, port=args.port, password=args.password, limit=args.count)


def register(subparsers):
    p = subparsers.add_parser("decode", help="print the WCCPv2 messages in a pcap capture",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("file", nargs="?", help="pcap or pcapng file")
    p.add_argument("--live", metavar="IFACE", help="decode live UDP traffic on an interface (uses dumpcap)")
    p.add_argument("--count", type=int, help="stop after N WCCP messages")
    p.add_argument("--duration", type=float, help="with --live: stop after S seconds")
    p.add_argument("--filter", help="with --live: extra capture filter, e.g. 'host 10.0.0.1'")
    p.add_argument("--json", action="store_true", help="one JSON object per message per line")
    p.add_argument("--port", type=int, default=2048, help="WCCP UDP port (default 2048)")
    p.add_argument("--password", help="check MD5 digests with this password (md5_ok in the output)")
    p.set_defaults(func=_main)
