"""Names for the enumerated fields of a decoded WCCPv2 message, and bucket tables as ranges.

``annotate(msg)`` takes the JSON form of a decoded message (``cmd_decode.to_jsonable``) and
adds, next to every number it keeps, its name: ``security.option_name``,
``service.service_type_name`` / ``protocol_name`` / ``service_flags_names`` /
``service_name`` (standard services), ``capabilities[].name`` / ``value_name``,
``assignment_type_name``, ``command_extension[].name``, identity ``flags_names``,
``address_table.family_name``, ``unknown_components[].name``. Hash assignments get
``bucket_ranges``: the buckets of each cache as ranges (``{"cache_index": 0, "cache":
"10.0.0.2", "alternate": false, "count": 128, "buckets": "0-127"}``; buckets marked for the
alternate hash separately, unassigned ones last with cache null); an identity's
``bucket_bitmap`` gets ``buckets`` ("0-41 45").
Names follow the WCCP v2 draft and Wireshark's WCCP dissector.
"""
from wccp import codec
from wccp.hba import format_ranges
from wccp import const as C

MESSAGE_NAMES = C.MESSAGE_NAMES
SECURITY_NAMES = {C.SECURITY_NONE: "None", C.SECURITY_MD5: "MD5"}
SERVICE_TYPE_NAMES = {C.SERVICE_STANDARD: "standard", C.SERVICE_DYNAMIC: "dynamic"}
STANDARD_SERVICES = {0: "web-cache"}
PROTOCOL_NAMES = {0: "any", 1: "ICMP", 6: "TCP", 17: "UDP", 47: "GRE"}
SERVICE_FLAG_NAMES = (
    (C.SF_SRC_IP_HASH, "Source IP hash"), (C.SF_DST_IP_HASH, "Destination IP hash"),
    (C.SF_SRC_PORT_HASH, "Source port hash"), (C.SF_DST_PORT_HASH, "Destination port hash"),
    (C.SF_PORTS_DEFINED, "Ports defined"), (C.SF_PORTS_SOURCE, "Ports refer to source"),
    (C.SF_REDIRECT_ONLY_PROTOCOL_0, "Redirect only protocol 0"),
    (C.SF_SRC_IP_ALT_HASH, "Source IP alternative hash"), (C.SF_DST_IP_ALT_HASH, "Destination IP alternative hash"),
    (C.SF_SRC_PORT_ALT_HASH, "Source port alternative hash"),
    (C.SF_DST_PORT_ALT_HASH, "Destination port alternative hash"))
CAPABILITY_NAMES = {C.CAP_FORWARDING_METHOD: "Forwarding Method", C.CAP_ASSIGNMENT_METHOD: "Assignment Method",
                    C.CAP_RETURN_METHOD: "Packet Return Method", C.CAP_TRANSMIT_T: "Transmit t",
                    C.CAP_TIMER_SCALE: "Timer scale"}
# method capability values are bit sets
_METHOD_BITS = {C.CAP_FORWARDING_METHOD: ((C.FORWARD_GRE, "GRE"), (C.FORWARD_L2, "L2")),
                C.CAP_ASSIGNMENT_METHOD: ((C.ASSIGN_HASH, "Hash"), (C.ASSIGN_MASK, "Mask")),
                C.CAP_RETURN_METHOD: ((C.RETURN_GRE, "GRE"), (C.RETURN_L2, "L2"))}
ASSIGNMENT_TYPE_NAMES = {C.ASSIGNMENT_HASH: "Hash", C.ASSIGNMENT_MASK: "Mask",
                         C.ASSIGNMENT_ALT_MASK: "Extended mask"}
COMMAND_NAMES = {C.CMD_SHUTDOWN: "Cache shutdown", C.CMD_SHUTDOWN_RESPONSE: "Cache shutdown response"}
IDENTITY_FLAG_NAMES = ((C.WCI_U, "U (historical/unassigned)"), (C.WCI_V, "V (version request)"),
                       (C.WCI_U_V201, "U (v2-01 bit)"))
FAMILY_NAMES = {1: "IPv4", 2: "IPv6"}        # IANA address family numbers


def _bits(value, table):
    return [n for b, n in table if value & b]


def capability_value_name(ctype, value):
    bits = _METHOD_BITS.get(ctype)
    if bits is not None:
        names = _bits(value, bits)
        rest = value & ~sum(b for b, _n in bits)
        if rest:
            names.append("0x%x" % rest)
        return "+".join(names) if names else "none"
    if ctype == C.CAP_TIMER_SCALE:
        return "timers x%d, retransmit x%d" % ((value >> 16) & 0xFFFF, value & 0xFFFF)
    if ctype == C.CAP_TRANSMIT_T:
        return "%d ms" % value
    return None


def ranges(numbers):
    """Ints -> '0-41 45 50-52'."""
    return format_ranges(numbers, "-")


def bucket_ranges(buckets, caches):
    """A 256-entry bucket table per cache: [{cache_index, cache, alternate, count, buckets}] in
    cache-index order (buckets as ranges '0-127 200'); unassigned buckets last, cache null."""
    groups = {}
    for b in range(256):
        e = buckets[b]
        key = (1 << 9) if e == C.BUCKET_UNASSIGNED else ((e & C.BUCKET_INDEX_MASK) << 1) | (1 if e & C.BUCKET_ALT else 0)
        groups.setdefault(key, []).append(b)
    out = []
    for key in sorted(groups):
        idx = None if key == 1 << 9 else key >> 1
        out.append({"cache_index": idx, "cache": caches[idx] if idx is not None and idx < len(caches) else None,
                    "alternate": idx is not None and bool(key & 1), "count": len(groups[key]),
                    "buckets": ranges(groups[key])})
    return out


def bitmap_buckets(bitmap_hex):
    """An identity's 256-bit bucket bitmap (hex, bucket 0 = most significant bit of the first
    octet, as Squid and Wireshark read it) -> the buckets it holds as ranges."""
    bm = bytes.fromhex(bitmap_hex)
    return ranges(b for b in range(len(bm) * 8) if codec.bitmap_has(bm, b))


def _identity(el):
    if isinstance(el, dict):
        if isinstance(el.get("flags"), int):
            el["flags_names"] = _bits(el["flags"], IDENTITY_FLAG_NAMES)
        if isinstance(el.get("bucket_bitmap"), str):
            el["buckets"] = bitmap_buckets(el["bucket_bitmap"])


def _assignment(d):
    if not isinstance(d, dict):
        return
    if "assignment_type" in d:
        d["assignment_type_name"] = ASSIGNMENT_TYPE_NAMES.get(d["assignment_type"], "unknown")
    if isinstance(d.get("buckets"), str) and len(d["buckets"]) == 512:
        d["bucket_ranges"] = bucket_ranges(bytes.fromhex(d["buckets"]), d.get("web_caches", []))


def annotate(msg):
    """Add names next to the numbers of a decoded message (JSON form); returns msg."""
    sec = msg.get("security")
    if isinstance(sec, dict) and "option" in sec:
        sec["option_name"] = SECURITY_NAMES.get(sec["option"], "unknown")
    svc = msg.get("service")
    if isinstance(svc, dict):
        st = svc.get("service_type")
        svc["service_type_name"] = SERVICE_TYPE_NAMES.get(st, "unknown")
        if st == C.SERVICE_STANDARD:
            svc["service_name"] = STANDARD_SERVICES.get(svc.get("service_id"), "unknown standard service")
        else:
            svc["protocol_name"] = PROTOCOL_NAMES.get(svc.get("protocol"), str(svc.get("protocol")))
            svc["service_flags_names"] = _bits(svc.get("service_flags", 0), SERVICE_FLAG_NAMES)
    for cap in msg.get("capabilities") or []:
        cap["name"] = CAPABILITY_NAMES.get(cap.get("type"), "unknown")
        vn = capability_value_name(cap.get("type"), cap.get("value", 0))
        if vn is not None:
            cap["value_name"] = vn
    for ce in msg.get("command_extension") or []:
        ce["name"] = COMMAND_NAMES.get(ce.get("type"), "unknown")
    _identity(msg.get("web_cache_identity"))
    rv = msg.get("router_view")
    if isinstance(rv, dict):
        for el in rv.get("web_caches") or []:
            _identity(el)
    for k in ("assignment_info", "alternate_assignment", "alternate_assignment_map"):
        _assignment(msg.get(k))
    at = msg.get("address_table")
    if isinstance(at, dict) and "family" in at:
        at["family_name"] = FAMILY_NAMES.get(at["family"], "unknown")
    for u in msg.get("unknown_components") or []:
        u["name"] = "unknown component %d" % u.get("type", -1)
    return msg
