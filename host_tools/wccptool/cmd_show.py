"""`wccp show` — the router's state (GET /status) rendered like Cisco `show ip wccp`.

    wccp show                        summary of every service group (`show ip wccp`)
    wccp show --service 0            one group in detail (`show ip wccp web-cache detail`)
    wccp show --detail               every group in detail, with the bucket -> cache map
    wccp show --json                 the raw /status JSON (docs/status.md)
    wccp show --host H --port P      another router (default 127.0.0.1:8080)
"""
import json
import sys
import urllib.error
import urllib.request

SERVICE_NAMES = {0: "web-cache"}


def fetch(host, port, timeout=5):
    with urllib.request.urlopen("http://%s:%d/status" % (host, port), timeout=timeout) as r:
        return json.loads(r.read())


def _svc_name(g):
    if g["service_type"] == "standard":
        return SERVICE_NAMES.get(g["service_id"], "standard %d" % g["service_id"])
    return str(g["service_id"])


def _dp_list(st, key, slot, default=0):
    dp = st.get("dataplane") or {}
    v = dp.get(key)
    if isinstance(v, list) and 0 <= slot < len(v):
        return v[slot]
    return default


def _dur(ms):
    s = max(0, int(ms // 1000))
    return "%02d:%02d:%02d" % (s // 3600, (s // 60) % 60, s % 60)


def _row(label, value, width=38):
    return "        %-*s%s" % (width, label + ":", value)


# Data-plane decision counters shown in the summary (totals; docs/regmap.md PORTCNT):
# packets forwarded normally because they were not valid for redirect, and packets dropped
# by a decision (GRE return with a bad inner packet; a truncated datagram cut through; a closed
# service's unassigned packet).
DP_DROPS = ("gre_return_bad", "truncated", "closed_drop")


def render_dataplane(dp):
    if not isinstance(dp.get("not_redirectable"), int):
        return []           # no data-plane counters (or the data plane raised)
    out = [_row("Packets not redirectable", dp["not_redirectable"], 34),
           _row("Packets to origin, no location", dp.get("cache_unknown", 0), 34),
           _row("Data-plane packets dropped", sum(dp.get(k, 0) for k in DP_DROPS), 34)]
    for k in DP_DROPS:
        out.append("          %-36s%d" % (k + ":", dp.get(k, 0)))
    return out


def unlocated(g):
    """Usable caches of group g whose location (MAC, port) the data plane does not know."""
    return [c["address"] for c in g.get("caches", []) if c.get("state") == "usable" and c.get("location") is None]


def _location(c):
    lc = c.get("location")
    if lc is None:
        if c.get("state") != "usable":
            return "-"
        return "UNKNOWN (not found yet: its traffic goes to the origin)"
    return "%s on port %s (%s)" % (lc["mac"], lc["port"], lc.get("source", "?"))


def render_summary(st, groups=None):
    out = ["Global WCCP information:", "    Router information:",
           _row("Router Identifier", st.get("router_id", "?"), 34),
           _row("Protocol Version", st.get("version", "2.00"), 34),
           _row("Boot counter", st.get("boot", "?"), 34),
           _row("Uptime", _dur(st.get("uptime_ms", 0)), 34)]
    app = st.get("app") or {}
    if app:
        out.append(_row("WCCP addresses", ", ".join(app.get("wccp_sockets", [])) or "-none-", 34))
        out.append(_row("Data plane", app.get("dataplane", "?"), 34))
    drops = st.get("drops") or {}
    out.append(_row("Messages dropped", sum(drops.values()), 34))
    for k in sorted(drops):
        out.append("          %-36s%d" % (k + ":", drops[k]))
    dp = st.get("dataplane") or {}
    out.extend(render_dataplane(dp))
    disc = st.get("discovery")
    if disc:
        dc = disc.get("counters") or {}
        out.append(_row("Cache discovery (ARP probes)", "%s: %d probes, %d replies, %d found, %d moved" % (
            "on" if disc.get("enabled") else "off (data plane cannot send)", dc.get("probes", 0),
            dc.get("replies", 0), dc.get("learnt", 0), dc.get("moved", 0)), 34))
        if disc.get("unanswered"):
            out.append(_row("Probed, no answer yet", ", ".join(disc["unanswered"]), 34))
    for g in st.get("groups", []):
        if groups is not None and g["service_id"] not in groups:
            continue
        slot = g.get("slot", -1)
        c = g.get("counters", {})
        gd = g.get("drops", {})
        out.append("")
        out.append("    Service Identifier: %s" % _svc_name(g))
        out.append(_row("Number of Service Group Clients", g.get("usable", 0), 34))
        out.append(_row("Number of Service Group Routers", len(g.get("routers", [])), 34))
        out.append(_row("Total Packets Redirected", _dp_list(st, "slot_frames", slot), 34))
        out.append(_row("Service mode", "Open", 34))
        out.append(_row("Group address", g.get("multicast") or "-none-", 34))
        out.append(_row("Security", "MD5" if g.get("md5") else "none", 34))
        out.append(_row("Member change number", g.get("member_change_number", 0), 34))
        out.append(_row("Receive ID", g.get("receive_id", 0), 34))
        k = g.get("assignment_key") or {}
        out.append(_row("Assignment key", "%s #%s" % (k.get("address", "0.0.0.0"), k.get("change_number", 0)), 34))
        a = g.get("assignment")
        out.append(_row("Assignment", ("%s, %d caches" % (a["type"], len(a["caches"]))) if a else "-none-", 34))
        if g.get("flush_in_ms") is not None:
            out.append(_row("Flush without assignment in", "%.1f s" % (g["flush_in_ms"] / 1000.0), 34))
        out.append(_row("Total Packets Unassigned", dp.get("unassigned", 0), 34))
        out.append(_row("Packets to origin, no location", g.get("to_origin", 0), 34))
        lost = unlocated(g)
        if lost:
            out.append(_row("Clients without location", "%s (their traffic goes to the origin)" % ", ".join(lost), 34))
        out.append(_row("Total Messages Denied to Group", gd.get("cache_not_allowed", 0) + gd.get("service_conflict", 0), 34))
        out.append(_row("Total Authentication failures", gd.get("md5_failure", 0) + gd.get("security_mismatch", 0), 34))
        out.append(_row("Total Bypassed Packets Received", dp.get("gre_return", 0), 34))
        out.append(_row("HERE_I_AM / I_SEE_YOU", "%d / %d" % (c.get("hia_rx", 0), c.get("isy_tx", 0)), 34))
        out.append(_row("REDIRECT_ASSIGN received/accepted", "%d / %d" % (c.get("ra_rx", 0), c.get("ra_accepted", 0)), 34))
        if gd:
            out.append(_row("Dropped", ", ".join("%s %d" % (x, gd[x]) for x in sorted(gd)), 34))
    return "\n".join(out)


def _bitmap_hex(buckets, idx):
    bm = bytearray(32)
    for n, v in enumerate(buckets):
        if v == idx:
            bm[n >> 3] |= 0x80 >> (n & 7)
    words = ["%02X%02X%02X%02X" % tuple(bm[i:i + 4]) for i in range(0, 32, 4)]
    return ":".join(words)


def render_buckets(a):
    """Bucket -> cache map: 16 buckets per row, cache index (or -- unassigned, A alternate)."""
    out = ["    Bucket assignment (cache index per bucket; -- unassigned, A+n alternate hash):"]
    for i, x in enumerate(a["caches"]):
        out.append("        [%2d] %s" % (i, x))
    b = a["buckets"]
    out.append("          " + "".join("%4x" % k for k in range(16)))
    for row in range(16):
        cells = []
        for v in b[row * 16:row * 16 + 16]:
            if v == 0xFF:
                cells.append("  --")
            elif v & 0x80:
                cells.append("  A%d" % (v & 0x7F) if (v & 0x7F) < 10 else " A%d" % (v & 0x7F))
            else:
                cells.append("%4d" % v)
        out.append("      %02x: " % (row * 16) + "".join(cells))
    dist = {}
    for v in b:
        dist[v] = dist.get(v, 0) + 1
    out.append("    Distribution:")
    for i, x in enumerate(a["caches"]):
        n = dist.get(i, 0)
        out.append("        %-16s %3d buckets (%6.2f%%)" % (x, n, 100.0 * n / 256))
    if dist.get(0xFF):
        out.append("        %-16s %3d buckets (%6.2f%%)" % ("unassigned", dist[0xFF], 100.0 * dist[0xFF] / 256))
    alt = sum(dist[v] for v in dist if v != 0xFF and v & 0x80)
    if alt:
        out.append("        %-16s %3d buckets (%6.2f%%)" % ("alternate hash", alt, 100.0 * alt / 256))
    return out


def render_masks(a):
    out = ["    Mask/value sets:"]
    for k, s in enumerate(a.get("sets", [])):
        m = s["masks"]
        out.append("        Set %d: mask src-addr 0x%08X dst-addr 0x%08X src-port 0x%04X dst-port 0x%04X (%d values)"
                   % (k, m["src_addr"], m["dst_addr"], m["src_port"], m["dst_port"], len(s["values"])))
        for j, v in enumerate(s["values"]):
            out.append("          %4d: src %-15s dst %-15s sport %5d dport %5d -> %s"
                       % (j, v["src_addr"], v["dst_addr"], v["src_port"], v["dst_port"], v["cache_address"]))
    return out


def render_detail(st, g):
    slot = g.get("slot", -1)
    a = g.get("assignment")
    out = ["WCCP Service %s detail:" % _svc_name(g)]
    d = g.get("definition")
    if d:
        out.append(_row("Definition", "priority %d protocol %d flags 0x%04X ports %s" % (
            d["priority"], d["protocol"], d["service_flags"], ",".join(str(p) for p in d["ports"]) or "-"), 26))
    else:
        out.append(_row("Definition", "(undefined: set by the first cache)", 26))
    caps = g.get("capabilities") or {}
    out.append(_row("Capabilities", "forwarding %s, assignment %s, return %s" % (
        "/".join(caps.get("forwarding", [])), "/".join(caps.get("assignment", [])), "/".join(caps.get("return", []))), 26))
    if caps.get("assignment_locked"):
        out.append(_row("Assignment method in use", caps["assignment_locked"], 26))
    out.append(_row("Routers", ", ".join(g.get("routers", [])) or "-none-", 26))
    out.append("")
    out.append("    WCCP Client information:")
    cache_frames = (st.get("dataplane") or {}).get("cache_frames")
    for c in g.get("caches", []):
        out.append(_row("WCCP Client ID", c["address"], 26))
        out.append(_row("Protocol Version", "2.0", 26))
        state = "Usable" if c["state"] == "usable" else "NOT Usable (%s)" % (c.get("reason") or "pending")
        out.append(_row("State", state, 26))
        out.append(_row("Redirection", c.get("forwarding", "?").upper(), 26))
        out.append(_row("Packet Return", c.get("return", "?").upper(), 26))
        out.append(_row("Assignment", (c.get("assignment") or "?").upper(), 26))
        out.append(_row("Weight / Status", "%s / %s" % (c.get("weight", 0), c.get("status", 0)), 26))
        out.append(_row("Location", _location(c), 26))
        if a and a["type"] == "hash" and c["address"] in a["caches"]:
            idx = a["caches"].index(c["address"])
            out.append(_row("Assigned Hash Info", _bitmap_hex(a["buckets"], idx), 26))
        n = c.get("assigned", 0)
        if a and a["type"] == "hash":
            out.append(_row("Hash Allotment", "%d (%.2f%%)" % (n, 100.0 * n / 256), 26))
        elif a:
            out.append(_row("Mask Allotment", "%d values" % n, 26))
        frames = 0
        if isinstance(cache_frames, list) and 0 <= slot < len(cache_frames) and a and c["address"] in a["caches"]:
            idx = a["caches"].index(c["address"])
            if idx < len(cache_frames[slot]):
                frames = cache_frames[slot][idx]
        out.append(_row("Packets Redirected", frames, 26))
        out.append(_row("To origin, no location", c.get("to_origin", 0), 26))
        out.append(_row("Connect Time", _dur(c.get("connected_ms", 0)) if c["state"] == "usable" else "-", 26))
        out.append(_row("Last heard", "%.1f s ago" % (c.get("heard_ms_ago", 0) / 1000.0), 26))
        out.append(_row("Receive ID sent", c.get("receive_id_sent", 0), 26))
        out.append("")
    if not g.get("caches"):
        out.append("        (no clients)")
        out.append("")
    if a is None:
        out.append("    Assignment: none (everything forwarded normally)")
    elif a["type"] == "hash":
        out.extend(render_buckets(a))
    else:
        out.extend(render_masks(a))
    return "\n".join(out)


def render(st, service=None, detail=False):
    groups = st.get("groups", [])
    if service is not None:
        sel = [g for g in groups if g["service_id"] == service]
        if not sel:
            raise KeyError("service %s is not configured (have: %s)" % (
                service, ", ".join(str(g["service_id"]) for g in groups)))
        return render_summary(st, {service}) + "\n\n" + render_detail(st, sel[0])
    text = render_summary(st)
    if detail:
        for g in groups:
            text += "\n\n" + render_detail(st, g)
    return text


def _service_arg(v):
    if v == "web-cache":
        return 0
    n = int(v)
    if not 0 <= n <= 255:
        raise ValueError(v)
    return n


def run(args):
    try:
        st = fetch(args.host, args.port)
    except (urllib.error.URLError, OSError, ValueError) as e:
        print("wccp show: cannot read http://%s:%d/status: %s" % (args.host, args.port, e), file=sys.stderr)
        print("  (is the router running? start one with `wccp run`)", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(st, indent=1, sort_keys=True))
        return 0
    try:
        print(render(st, args.service, args.detail))
    except KeyError as e:
        print("wccp show: %s" % e.args[0], file=sys.stderr)
        return 1
    return 0


def register(subparsers):
    p = subparsers.add_parser("show", help="show the router's WCCP state (like `show ip wccp`)",
                              description=__doc__, formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1", help="router management address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="router management HTTP port (default 8080)")
    p.add_argument("--json", action="store_true", help="print the raw /status JSON")
    p.add_argument("--service", type=_service_arg, default=None, metavar="N",
                   help="one service group in detail (0 or web-cache, or a dynamic ID)")
    p.add_argument("--detail", action="store_true", help="every service group in detail")
    p.set_defaults(func=run)
