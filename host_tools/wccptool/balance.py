"""Load balance of a traffic mix over N caches: the engine behind `wccp balance` and the mask
advisor (``wccptool.maskadvisor``).

A capture is reduced to flows (protocol, source, destination, ports as captured; packets and
IP bytes each). Every flow goes to one cache, the way the data plane would send it:

* ``wccp-hash`` — the WCCP draft's bucket hash (XOR fold of the fields the hash flags select,
  ``wccp.fwdmodel``), buckets dealt to caches;
* ``pearson`` — RFC 3074's Pearson hash over the same fields' bytes (``wccp.pearson``),
  buckets dealt the same way;
* ``mask`` — the field ANDed with a mask, the masked values dealt round-robin (value with
  sequence number k -> cache k mod N; sequence bit i = the i-th set mask bit from the LSB, as
  Squid and the cache emulator do).

Buckets are dealt ``blocks`` (contiguous: bucket b -> cache b*N//256, Squid's assignment) or
``interleaved`` (b -> b mod N, the cache emulator's). The result gives per cache the share of
flows, packets and bytes and the max/mean ratio (1.00 = even), plus the load per bucket (or
mask value) for the plot (``svg``).
"""
import struct

from wccp.fwdmodel import fold, hash_key
from wccp.pearson import bucket as pearson_bucket
from wccptool import pcap

METHODS = ("wccp-hash", "pearson", "mask")
FIELDS = ("src_ip", "dst_ip", "src_port", "dst_port")      # hash flag bits 0x1 .. 0x8
WIDTH = {"src_ip": 32, "dst_ip": 32, "src_port": 16, "dst_port": 16}
DEALS = ("blocks", "interleaved")


class BalanceError(Exception):
    pass


def packet_fields(linktype, data):
    """{src_ip, dst_ip, src_port, dst_port, proto, len} of a captured IPv4 frame, or None.
    Non-TCP/UDP packets and later fragments have ports 0 (as the data plane hashes them)."""
    o = pcap.ip_offset(linktype, data)
    if o < 0 or len(data) < o + 20 or data[o] >> 4 != 4:
        return None
    ihl = (data[o] & 15) * 4
    if ihl < 20 or len(data) < o + ihl:
        return None
    src, dst = struct.unpack("!II", data[o + 12:o + 20])
    proto = data[o + 9]
    frag = ((data[o + 6] << 8) | data[o + 7]) & 0x1FFF
    sport = dport = 0
    u = o + ihl
    if proto in (6, 17) and frag == 0 and len(data) >= u + 4:
        sport, dport = struct.unpack("!HH", data[u:u + 4])
    return {"src_ip": src, "dst_ip": dst, "src_port": sport, "dst_port": dport, "proto": proto,
            "len": (data[o + 2] << 8) | data[o + 3]}


def read_packets(source):
    """packet_fields() of every IPv4 packet of a capture (path or binary stream; pcap or pcapng)."""
    for rec in pcap.read_pcap(source):
        f = packet_fields(rec.linktype, rec.data)
        if f is not None:
            yield f


def read_flows(source, dst_ports=()):
    """{(proto, src, dst, sport, dport): [packets, bytes]} and the packet count; with
    ``dst_ports`` only TCP/UDP packets to those ports (the traffic a service group redirects)."""
    flows = {}
    n = 0
    for f in read_packets(source):
        if dst_ports and (f["proto"] not in (6, 17) or f["dst_port"] not in dst_ports):
            continue
        k = (f["proto"], f["src_ip"], f["dst_ip"], f["src_port"], f["dst_port"])
        e = flows.get(k)
        if e is None:
            flows[k] = [1, f["len"]]
        else:
            e[0] += 1
            e[1] += f["len"]
        n += 1
    return flows, n


def flags_of(fields):
    fl = 0
    for f in fields:
        if f not in FIELDS:
            raise BalanceError("unknown field %r (one of %s)" % (f, ", ".join(FIELDS)))
        fl |= 1 << FIELDS.index(f)
    return fl


def set_bits(mask):
    return [i for i in range(32) if (mask >> i) & 1]


def value_index(masked, bits):
    """Sequence number of a masked value: bit i <- the i-th set mask bit (LSB first)."""
    k = 0
    for i, b in enumerate(bits):
        if (masked >> b) & 1:
            k |= 1 << i
    return k


def deal(caches, how="blocks"):
    """256 bucket -> cache index entries."""
    if how == "blocks":
        return [b * caches // 256 for b in range(256)]
    if how == "interleaved":
        return [b % caches for b in range(256)]
    raise BalanceError("unknown bucket dealing %r (%s)" % (how, "/".join(DEALS)))


def slot_of(method, flags, key, mask=0, bits=()):
    """Bucket (hash methods) or mask value sequence number of a flow key (proto, src, dst,
    sport, dport). For ``mask`` the mask applies to the one field ``flags`` selects."""
    _p, src, dst, sport, dport = key
    if method == "wccp-hash":
        return fold(hash_key(flags, src, dst, sport, dport))
    if method == "pearson":
        return pearson_bucket(flags, src, dst, sport, dport)
    if method == "mask":
        v = (src, dst, sport, dport)[set_bits(flags)[0]]
        return value_index(v & mask, bits)
    raise BalanceError("unknown method %r (%s)" % (method, "/".join(METHODS)))


def ratio(loads):
    mean = sum(loads) / len(loads) if loads else 0
    return max(loads) / mean if mean else 0.0


def assign(flows, caches, method="wccp-hash", fields=("src_ip",), mask=None, how="blocks"):
    """Spread ``flows`` ({key: [packets, bytes]}) over ``caches``; the result dict."""
    if caches < 1:
        raise BalanceError("--caches must be at least 1")
    flags = flags_of(fields)
    if not flags:
        raise BalanceError("no hash field selected")
    bits = ()
    if method == "mask":
        if len(fields) != 1:
            raise BalanceError("mask assignment: name exactly one field (--fields)")
        if mask is None or mask <= 0 or mask >= (1 << WIDTH[fields[0]]):
            raise BalanceError("mask assignment needs --mask, a non-zero %d-bit mask for %s"
                               % (WIDTH[fields[0]], fields[0]))
        bits = set_bits(mask)
        if len(bits) > 12:
            raise BalanceError("mask 0x%X has %d bits; WCCP masks use at most 7 (12 for analysis)"
                               % (mask, len(bits)))
        nslots = 1 << len(bits)
        table = [k % caches for k in range(nslots)]
    else:
        nslots = 256
        table = deal(caches, how)
    slot_flows = [0] * nslots
    slot_bytes = [0] * nslots
    fl = [0] * caches
    pk = [0] * caches
    by = [0] * caches
    for key, (p, b) in flows.items():
        s = slot_of(method, flags, key, mask or 0, bits)
        c = table[s]
        slot_flows[s] += 1
        slot_bytes[s] += b
        fl[c] += 1
        pk[c] += p
        by[c] += b
    tf, tb = sum(fl), sum(by)
    return {"method": method, "fields": list(fields), "mask": mask, "deal": how if method != "mask" else None,
            "caches": caches, "flows": tf, "packets": sum(pk), "bytes": tb,
            "per_cache": [{"cache": i, "flows": fl[i], "packets": pk[i], "bytes": by[i],
                           "flow_share": fl[i] / tf if tf else 0.0, "byte_share": by[i] / tb if tb else 0.0}
                          for i in range(caches)],
            "flow_ratio": ratio(fl), "byte_ratio": ratio(by),
            "idle_caches": sum(1 for x in fl if x == 0),
            "slot_kind": "mask value" if method == "mask" else "bucket",
            "slot_flows": slot_flows, "slot_bytes": slot_bytes, "slot_cache": table}


def _esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def svg(result, title=""):
    """An SVG document: flow and byte share per cache (bars, the even share dashed) and the
    flows per bucket / mask value, coloured by the cache it goes to."""
    n = result["caches"]
    W, H = 900, 520
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
           'font-family="sans-serif" font-size="12">' % (W, H, W, H),
           '<rect width="%d" height="%d" fill="white"/>' % (W, H),
           '<text x="20" y="24" font-size="15">%s</text>' % _esc(title or "load balance"),
           '<text x="20" y="44">%s on %s, %d caches: flows max/mean %.2f, bytes max/mean %.2f</text>' % (
               _esc(result["method"]), _esc(",".join(result["fields"])), n, result["flow_ratio"],
               result["byte_ratio"])]
    # panel 1: shares per cache
    x0, y0, pw, ph = 60, 70, W - 90, 200
    top = max([c["flow_share"] for c in result["per_cache"]] + [c["byte_share"] for c in result["per_cache"]]
              + [1.0 / n]) * 1.1 or 1.0
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (x0, y0 + ph, x0 + pw, y0 + ph))
    out.append('<text x="%d" y="%d" text-anchor="end">%.0f%%</text>' % (x0 - 4, y0 + 10, 100 * top))
    out.append('<text x="%d" y="%d" text-anchor="end">0</text>' % (x0 - 4, y0 + ph))
    slot = pw / n
    bw = max(1.0, slot * 0.38)
    for c in result["per_cache"]:
        i = c["cache"]
        for j, (k, col) in enumerate((("flow_share", "#3b6fb6"), ("byte_share", "#e08a2c"))):
            h = ph * c[k] / top
            out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>cache %d %s %.1f%%'
                       '</title></rect>' % (x0 + i * slot + slot * 0.1 + j * bw, y0 + ph - h, bw, h, col, i,
                                             k.replace("_", " "), 100 * c[k]))
        if n <= 32:
            out.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' % (x0 + (i + 0.5) * slot,
                                                                                   y0 + ph + 14, i))
    ym = y0 + ph - ph * (1.0 / n) / top
    out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="gray" stroke-dasharray="4 3"/>' % (
        x0, ym, x0 + pw, ym))
    out.append('<rect x="%d" y="52" width="10" height="10" fill="#3b6fb6"/><text x="%d" y="61">flows</text>'
               '<rect x="%d" y="52" width="10" height="10" fill="#e08a2c"/><text x="%d" y="61">bytes</text>'
               '<text x="%d" y="61">(dashed: even share; x: cache index)</text>'
               % (W - 330, W - 316, W - 270, W - 256, W - 210))
    # panel 2: flows per bucket / mask value
    y1, ph2 = 330, 150
    sf = result["slot_flows"]
    m = max(sf) or 1
    out.append('<text x="20" y="%d">flows per %s (colour: cache)</text>' % (y1 - 10, result["slot_kind"]))
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (x0, y1 + ph2, x0 + pw, y1 + ph2))
    out.append('<text x="%d" y="%d" text-anchor="end">%d</text>' % (x0 - 4, y1 + 10, m))
    sw = pw / len(sf)
    for s, v in enumerate(sf):
        if not v:
            continue
        h = ph2 * v / m
        hue = (result["slot_cache"][s] * 360 // max(1, n)) % 360
        out.append('<rect x="%.2f" y="%.1f" width="%.2f" height="%.1f" fill="hsl(%d,60%%,50%%)"/>'
                   % (x0 + s * sw, y1 + ph2 - h, max(0.5, sw * 0.9), h, hue))
    out.append('<text x="%d" y="%d">0</text><text x="%d" y="%d" text-anchor="end">%d</text>'
               % (x0, y1 + ph2 + 14, x0 + pw, y1 + ph2 + 14, len(sf) - 1))
    out.append("</svg>")
    return "\n".join(out) + "\n"
