"""WCCPv2 wire codec: decode/encode the four v2 messages and all their components.

Runs on CPython and MicroPython. Data model and every bit-layout decision:
docs/protocol.md. Summary of the API (the contract other modules use):

    decode(data, out=None) -> dict      raises WccpError(reason) on anything malformed
    encode(msg, buf=None, password=None) -> int (bytes written into buf) | bytes
    verify_md5(data, password) -> bool
    sign_md5(buf, length, password)     (in place, used by encode)
    ip2int("1.2.3.4") / int2ip(n)

Decoding does not copy: byte fields (digest, bucket bitmap, bucket table, unknown
data) are memoryview slices of ``data``; use plain(msg) to detach them. Passing the
previous result as ``out`` reuses its dicts/lists (no allocation in steady state
when consecutive messages have the same shape).
"""
import struct
import sys

from wccp.const import *  # noqa: F401,F403 - re-export the protocol numbers
from wccp.const import (
    HERE_I_AM, I_SEE_YOU, REDIRECT_ASSIGN, REMOVAL_QUERY,
    SECURITY_INFO, SERVICE_INFO, ROUTER_ID_INFO, WC_ID_INFO, RTR_VIEW_INFO, WC_VIEW_INFO,
    REDIRECT_ASSIGNMENT, QUERY_INFO, CAPABILITY_INFO, ALT_ASSIGNMENT, ASSIGN_MAP,
    COMMAND_EXTENSION, ALT_ASSIGNMENT_MAP, ADDRESS_TABLE,
    SECURITY_NONE, SECURITY_MD5, WCI_U, WCI_U_V201, MESSAGE_NAMES,
)

try:
    from hashlib import md5 as _md5
except ImportError:     # rp2 before MicroPython 1.27 builds hashlib without md5
    from wccp.md5 import md5 as _md5

pack_into = struct.pack_into
_CPY = sys.implementation.name != "micropython"
_ZERO32 = bytes(32)
_STRUCT_ERRORS = (ValueError, IndexError, OverflowError, TypeError, KeyError, struct.error) \
    if hasattr(struct, "error") else (ValueError, IndexError, OverflowError, TypeError, KeyError)
# what a too-small buffer raises: CPython struct.error / our IndexError, MicroPython ValueError
_SPACE_ERRORS = (ValueError, IndexError, struct.error) if hasattr(struct, "error") else (ValueError, IndexError)
_MAX_MESSAGE = 8 + 0xFFFF


class WccpError(ValueError):
    """The only exception decode() raises; .reason says what is wrong."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason

    def __str__(self):
        return self.reason


# --------------------------------------------------------------------------------------------
# small helpers

def ip2int(s):
    """'1.2.3.4' -> 0x01020304 (WccpError on bad text)."""
    if not isinstance(s, str):
        raise WccpError("address must be a dotted string")
    parts = s.split(".")
    if len(parts) != 4:
        raise WccpError("bad IPv4 address %r" % s)
    n = 0
    for p in parts:
        if not p or not p.isdigit() or len(p) > 3:
            raise WccpError("bad IPv4 address %r" % s)
        v = int(p)
        if v > 255:
            raise WccpError("bad IPv4 address %r" % s)
        n = (n << 8) | v
    return n


def int2ip(n):
    return "%d.%d.%d.%d" % ((n >> 24) & 255, (n >> 16) & 255, (n >> 8) & 255, n & 255)


def _g32(b, o):
    return (b[o] << 24) | (b[o + 1] << 16) | (b[o + 2] << 8) | b[o + 3]


def _g16(b, o):
    return (b[o] << 8) | b[o + 1]


def identity_unassigned(el):
    """U flag of a Web-Cache Identity element; accepts both encodings (0x0001 and 0x8000)."""
    return bool(el.get("flags", 0) & (WCI_U | WCI_U_V201))


def bucket_bitmap(buckets):
    """Build the 32-byte identity bitmap (MSB-first per byte) from bucket numbers."""
    bm = bytearray(32)
    for n in buckets:
        bm[n >> 3] |= 0x80 >> (n & 7)
    return bm


def bitmap_has(bm, n):
    """Is bucket n set in a 32-byte identity bitmap (MSB-first per byte)?"""
    return bool(bm[n >> 3] & (0x80 >> (n & 7)))


def cisco_mask_view_element(address, unassigned, masks=None, weight=0, status=0):
    """A Router View cache element for mask mode in the shapes Squid (and Cisco) use.

    assigned -> 16 bytes: address, flags 0x0002 (mask data), 0 mask/value sets, weight, status.
    unassigned -> 32 bytes: flags word 0x00000003 (U + mask data), one set with `masks`, 0 values.
    Squid reads 16 bytes per element unless the 32-bit word after the address is exactly 3.
    """
    el = {"address": address, "hash_revision": 0, "data_type": "mask", "weight": weight, "status": status}
    if unassigned:
        m = masks or {"src_addr": 0, "dst_addr": 0, "src_port": 0, "dst_port": 0}
        el["flags"] = 0x0003
        el["mask_value_sets"] = [{"masks": m, "values": []}]
    else:
        el["flags"] = 0x0002
        el["mask_value_sets"] = []
    return el


def _bytes_out(v):
    return bytes(v) if isinstance(v, memoryview) else v


def plain(obj):
    """Deep copy of a decoded message with every memoryview turned into bytes."""
    if isinstance(obj, dict):
        d = {}
        for k in obj:
            d[k] = plain(obj[k])
        return d
    if isinstance(obj, list):
        return [plain(x) for x in obj]
    if isinstance(obj, memoryview):
        return bytes(obj)
    return obj


# --------------------------------------------------------------------------------------------
# decoding

_DATA_TYPE_NAMES = ("hash", "mask", "none", "extended")

_COMP_KEYS = {
    SECURITY_INFO: "security", SERVICE_INFO: "service", ROUTER_ID_INFO: "router_identity",
    WC_ID_INFO: "web_cache_identity", RTR_VIEW_INFO: "router_view", WC_VIEW_INFO: "web_cache_view",
    REDIRECT_ASSIGNMENT: "assignment_info", QUERY_INFO: "router_query", CAPABILITY_INFO: "capabilities",
    ALT_ASSIGNMENT: "alternate_assignment", ASSIGN_MAP: "assignment_map",
    COMMAND_EXTENSION: "command_extension", ALT_ASSIGNMENT_MAP: "alternate_assignment_map",
    ADDRESS_TABLE: "address_table",
}
COMPONENT_NAMES = {
    SECURITY_INFO: "Security Info", SERVICE_INFO: "Service Info", ROUTER_ID_INFO: "Router Identity Info",
    WC_ID_INFO: "Web-Cache Identity Info", RTR_VIEW_INFO: "Router View Info",
    WC_VIEW_INFO: "Web-Cache View Info", REDIRECT_ASSIGNMENT: "Assignment Info",
    QUERY_INFO: "Router Query Info", CAPABILITY_INFO: "Capabilities Info",
    ALT_ASSIGNMENT: "Alternate Assignment", ASSIGN_MAP: "Assignment Map",
    COMMAND_EXTENSION: "Command Extension", ALT_ASSIGNMENT_MAP: "Alternate Assignment Map",
    ADDRESS_TABLE: "Address Table",
}
# Wireshark's mandatory components (reference 10.2); RA needs one of 6/13/14/16 on top.
_MANDATORY = {
    HERE_I_AM: (SECURITY_INFO, SERVICE_INFO, WC_ID_INFO, WC_VIEW_INFO),
    I_SEE_YOU: (SECURITY_INFO, SERVICE_INFO, ROUTER_ID_INFO, RTR_VIEW_INFO),
    REDIRECT_ASSIGN: (SECURITY_INFO, SERVICE_INFO),
    REMOVAL_QUERY: (SECURITY_INFO, SERVICE_INFO, QUERY_INFO),
}
# Components that belong to the other direction / another message: rejected.
_FOREIGN = {
    HERE_I_AM: (ROUTER_ID_INFO, RTR_VIEW_INFO, REDIRECT_ASSIGNMENT, QUERY_INFO, ALT_ASSIGNMENT,
                ASSIGN_MAP, ALT_ASSIGNMENT_MAP),
    I_SEE_YOU: (WC_ID_INFO, WC_VIEW_INFO, QUERY_INFO),
    REDIRECT_ASSIGN: (ROUTER_ID_INFO, WC_ID_INFO, RTR_VIEW_INFO, WC_VIEW_INFO, QUERY_INFO),
    REMOVAL_QUERY: (ROUTER_ID_INFO, WC_ID_INFO, RTR_VIEW_INFO, WC_VIEW_INFO, REDIRECT_ASSIGNMENT,
                    ALT_ASSIGNMENT, ASSIGN_MAP, ALT_ASSIGNMENT_MAP),
}
_ALL_COMP_KEYS = tuple(_COMP_KEYS.values()) + ("unknown_components", "duplicate_components")


def _sub(p, k):
    d = p.get(k)
    if type(d) is not dict:
        d = {}
        p[k] = d
    return d


def _dict_list(p, k, n):
    """p[k] as a list of n dicts, reusing the old list/dicts when the length matches."""
    lst = p.get(k)
    if type(lst) is not list or len(lst) != n:
        lst = [{} for _ in range(n)]
        p[k] = lst
    return lst


def _int_list(p, k, n):
    lst = p.get(k)
    if type(lst) is not list or len(lst) != n:
        lst = [0] * n
        p[k] = lst
    return lst


def _need(o, n, end, what, suffix=""):
    # the reason string is only built on failure: no allocation on the good path
    if o + n > end:
        raise WccpError("%s%s truncated (%d bytes needed, %d left)" % (what, suffix, n, end - o))


def _count(b, o, end, size, what):
    """Read a 32-bit element count and check count*size bytes are present after it."""
    _need(o, 4, end, what, " count")
    n = _g32(b, o)
    if n * size > end - o - 4:
        raise WccpError("%s count %d exceeds the %d bytes present" % (what, n, end - o - 4))
    return n


def _dec_masks(b, o, d):
    d["src_addr"] = _g32(b, o)
    d["dst_addr"] = _g32(b, o + 4)
    d["src_port"] = _g16(b, o + 8)
    d["dst_port"] = _g16(b, o + 10)


def _dec_mvsets(b, o, end, p, k):
    """Mask/Value Set List at o -> p[k] (list); returns the new offset."""
    n = _count(b, o, end, 16, "mask/value set")
    o += 4
    sets = _dict_list(p, k, n)
    for s in sets:
        _need(o, 16, end, "mask/value set element")
        _dec_masks(b, o, _sub(s, "masks"))
        nv = _count(b, o + 12, end, 16, "value element")
        o += 16
        vals = _dict_list(s, "values", nv)
        for v in vals:
            v["src_addr"] = _g32(b, o)
            v["dst_addr"] = _g32(b, o + 4)
            v["src_port"] = _g16(b, o + 8)
            v["dst_port"] = _g16(b, o + 10)
            v["cache_address"] = _g32(b, o + 12)
            o += 16
    return o


def _dec_altsets(b, o, end, p, k):
    """rev1 Alternate Mask/Value Set List -> p[k]."""
    n = _count(b, o, end, 16, "alternate mask/value set")
    o += 4
    sets = _dict_list(p, k, n)
    for s in sets:
        _need(o, 16, end, "alternate mask/value set element")
        _dec_masks(b, o, _sub(s, "masks"))
        nc = _count(b, o + 12, end, 8, "web-cache value element")
        o += 16
        wcs = _dict_list(s, "web_cache_values", nc)
        for w in wcs:
            _need(o, 8, end, "web-cache value element")
            w["cache_address"] = _g32(b, o)
            nv = _count(b, o + 4, end, 4, "value sequence number")
            o += 8
            vs = _int_list(w, "vsns", nv)
            for i in range(nv):
                vs[i] = _g32(b, o)
                o += 4
    return o


def _dec_identity(b, o, end, el):
    """Web-Cache Identity Element at o into dict el; returns the new offset."""
    _need(o, 8, end, "web-cache identity element")
    el["address"] = _g32(b, o)
    el["hash_revision"] = _g16(b, o + 4)
    flags = _g16(b, o + 6)
    el["flags"] = flags
    dt = (flags >> 1) & 3
    el["data_type"] = _DATA_TYPE_NAMES[dt]
    o += 8
    if dt == 0:
        _need(o, 36, end, "hash assignment data")
        el["bucket_bitmap"] = b[o:o + 32]
        el["weight"] = _g16(b, o + 32)
        el["status"] = _g16(b, o + 34)
        o += 36
        for k in ("mask_value_sets", "extended_type", "extended_data"):
            if k in el:
                del el[k]
    elif dt == 1:
        o = _dec_mvsets(b, o, end, el, "mask_value_sets")
        _need(o, 4, end, "mask assignment weight/status")
        el["weight"] = _g16(b, o)
        el["status"] = _g16(b, o + 2)
        o += 4
        for k in ("bucket_bitmap", "extended_type", "extended_data"):
            if k in el:
                del el[k]
    else:
        for k in ("bucket_bitmap", "mask_value_sets", "weight", "status", "extended_type", "extended_data"):
            if k in el:
                del el[k]
        if dt == 3:
            _need(o, 4, end, "extended assignment data")
            el["extended_type"] = _g16(b, o)
            ln = _g16(b, o + 2)
            _need(o + 4, ln, end, "extended assignment data")
            el["extended_data"] = b[o + 4:o + 4 + ln]
            o += 4 + ln
    return o


def _dec_key(b, o, d):
    k = _sub(d, "assignment_key")
    k["address"] = _g32(b, o)
    k["change_number"] = _g32(b, o + 4)


def _dec_rtr_assign(b, o, end, d):
    """Router Assignment Elements (count + 12 each) -> d['routers']; returns offset."""
    n = _count(b, o, end, 12, "router assignment element")
    o += 4
    rs = _dict_list(d, "routers", n)
    for r in rs:
        r["router_id"] = _g32(b, o)
        r["receive_id"] = _g32(b, o + 4)
        r["member_change_number"] = _g32(b, o + 8)
        o += 12
    return o


def _dec_hash_buckets(b, o, end, d):
    """Hash Buckets Assignment Element: cache count + caches + 256 bucket bytes."""
    n = _count(b, o, end, 4, "web-cache")
    o += 4
    wc = _int_list(d, "web_caches", n)
    for i in range(n):
        wc[i] = _g32(b, o)
        o += 4
    _need(o, 256, end, "bucket table")
    d["buckets"] = b[o:o + 256]
    return o + 256


def _dec_security(b, o, end, d):
    if end - o < 4:
        raise WccpError("Security Info too short")
    opt = _g32(b, o)
    d["option"] = opt
    if opt == SECURITY_NONE:
        if end - o != 4:
            raise WccpError("Security Info (none) length must be 4, got %d" % (end - o))
        if "digest" in d:
            del d["digest"]
    elif opt == SECURITY_MD5:
        if end - o != 20:
            raise WccpError("Security Info (MD5) length must be 20, got %d" % (end - o))
        d["digest"] = b[o + 4:o + 20]
    else:
        raise WccpError("unknown security option %d" % opt)
    return end


def _dec_service(b, o, end, d):
    if end - o != 24:
        raise WccpError("Service Info length must be 24, got %d" % (end - o))
    d["service_type"] = b[o]
    d["service_id"] = b[o + 1]
    d["priority"] = b[o + 2]
    d["protocol"] = b[o + 3]
    d["service_flags"] = _g32(b, o + 4)
    ports = _int_list(d, "ports", 8)
    for i in range(8):
        ports[i] = _g16(b, o + 8 + 2 * i)
    return end


def _dec_router_identity(b, o, end, d):
    _need(o, 16, end, "Router Identity Info")
    d["router_id"] = _g32(b, o)
    d["receive_id"] = _g32(b, o + 4)
    d["sent_to"] = _g32(b, o + 8)
    n = _count(b, o + 12, end, 4, "received-from address")
    o += 16
    lst = _int_list(d, "received_from", n)
    for i in range(n):
        lst[i] = _g32(b, o)
        o += 4
    return o


def _dec_router_view(b, o, end, d):
    _need(o, 16, end, "Router View Info")
    d["member_change_number"] = _g32(b, o)
    _dec_key(b, o + 4, d)
    n = _count(b, o + 12, end, 4, "router")
    o += 16
    rs = _int_list(d, "routers", n)
    for i in range(n):
        rs[i] = _g32(b, o)
        o += 4
    m = _count(b, o, end, 8, "web-cache identity element")
    o += 4
    wcs = _dict_list(d, "web_caches", m)
    for el in wcs:
        o = _dec_identity(b, o, end, el)
    return o


def _dec_wc_view(b, o, end, d):
    _need(o, 8, end, "Web-Cache View Info")
    d["change_number"] = _g32(b, o)
    n = _count(b, o + 4, end, 8, "router ID element")
    o += 8
    rs = _dict_list(d, "routers", n)
    for r in rs:
        r["router_id"] = _g32(b, o)
        r["receive_id"] = _g32(b, o + 4)
        o += 8
    m = _count(b, o, end, 4, "web-cache")
    o += 4
    wc = _int_list(d, "web_caches", m)
    for i in range(m):
        wc[i] = _g32(b, o)
        o += 4
    return o


def _dec_assignment_info(b, o, end, d):
    _need(o, 8, end, "assignment key")
    _dec_key(b, o, d)
    o = _dec_rtr_assign(b, o + 8, end, d)
    return _dec_hash_buckets(b, o, end, d)


def _dec_query(b, o, end, d):
    if end - o != 16:
        raise WccpError("Router Query Info length must be 16, got %d" % (end - o))
    d["router_id"] = _g32(b, o)
    d["receive_id"] = _g32(b, o + 4)
    d["sent_to"] = _g32(b, o + 8)
    d["target"] = _g32(b, o + 12)
    return end


def _dec_tlv_list(b, o, end, p, k, vkey, what):
    """Capability / command elements: [{type, vkey: int (4-byte) or bytes}]."""
    n = 0
    q = o
    while q < end:
        _need(q, 4, end, what, " element header")
        ln = _g16(b, q + 2)
        _need(q + 4, ln, end, what, " element")
        q += 4 + ln
        n += 1
    lst = _dict_list(p, k, n)
    for e in lst:
        e["type"] = _g16(b, o)
        ln = _g16(b, o + 2)
        e[vkey] = _g32(b, o + 4) if ln == 4 else b[o + 4:o + 4 + ln]
        o += 4 + ln
    return o


def _assign_len_ok(alen, body):
    # exact, or "off by 4" either way (seen in the wild per Wireshark; reference 4.10 / 12.10)
    return alen == body or alen + 4 == body or alen == body + 4


def _dec_alt_assignment(b, o, end, d):
    _need(o, 4, end, "Alternate Assignment header")
    at = _g16(b, o)
    alen = _g16(b, o + 2)
    o += 4
    if not _assign_len_ok(alen, end - o):
        raise WccpError("Alternate Assignment length %d does not match %d body bytes" % (alen, end - o))
    d["assignment_type"] = at
    for k in ("web_caches", "buckets", "mask_value_sets", "alt_mask_value_sets"):
        if k in d:
            del d[k]
    _need(o, 8, end, "assignment key")
    _dec_key(b, o, d)
    o = _dec_rtr_assign(b, o + 8, end, d)
    if at == 0:
        return _dec_hash_buckets(b, o, end, d)
    if at == 1:
        return _dec_mvsets(b, o, end, d, "mask_value_sets")
    if at == 2:
        return _dec_altsets(b, o, end, d, "alt_mask_value_sets")
    raise WccpError("unknown alternate assignment type %d" % at)


def _dec_alt_map(b, o, end, d):
    _need(o, 4, end, "Alternate Assignment Map header")
    at = _g16(b, o)
    alen = _g16(b, o + 2)
    o += 4
    if not _assign_len_ok(alen, end - o):
        raise WccpError("Alternate Assignment Map length %d does not match %d body bytes" % (alen, end - o))
    d["assignment_type"] = at
    for k in ("web_caches", "buckets", "mask_value_sets", "alt_mask_value_sets"):
        if k in d:
            del d[k]
    if at == 0:
        return _dec_hash_buckets(b, o, end, d)
    if at == 1:
        return _dec_mvsets(b, o, end, d, "mask_value_sets")
    if at == 2:
        return _dec_altsets(b, o, end, d, "alt_mask_value_sets")
    raise WccpError("unknown alternate assignment map type %d" % at)


def _dec_assign_map(b, o, end, d):
    return _dec_mvsets(b, o, end, d, "mask_value_sets")


def _dec_address_table(b, o, end, d):
    _need(o, 8, end, "Address Table")
    fam = _g16(b, o)
    alen = _g16(b, o + 2)
    if alen == 0 or alen & 3:
        raise WccpError("Address Table address length %d is not a non-zero multiple of 4" % alen)
    if (fam == 1 and alen < 4) or (fam == 2 and alen < 16):   # longer entries: zero padded (rev1)
        raise WccpError("Address Table address length %d too short for family %d" % (alen, fam))
    d["family"] = fam
    d["address_length"] = alen
    n = _count(b, o + 4, end, alen, "address table entry")
    o += 8
    addrs = []
    for _ in range(n):
        addrs.append(b[o:o + alen])
        o += alen
    d["addresses"] = addrs
    return o


_DECODERS = {
    SECURITY_INFO: _dec_security, SERVICE_INFO: _dec_service, ROUTER_ID_INFO: _dec_router_identity,
    RTR_VIEW_INFO: _dec_router_view, WC_VIEW_INFO: _dec_wc_view,
    REDIRECT_ASSIGNMENT: _dec_assignment_info, QUERY_INFO: _dec_query,
    ALT_ASSIGNMENT: _dec_alt_assignment, ASSIGN_MAP: _dec_assign_map,
    ALT_ASSIGNMENT_MAP: _dec_alt_map, ADDRESS_TABLE: _dec_address_table,
}


def _dec_component(b, t, o, end, out):
    key = _COMP_KEYS[t]
    if t == CAPABILITY_INFO:
        return _dec_tlv_list(b, o, end, out, key, "value", "capability")
    if t == COMMAND_EXTENSION:
        return _dec_tlv_list(b, o, end, out, key, "data", "command")
    if t == WC_ID_INFO:
        return _dec_identity(b, o, end, _sub(out, key))
    return _DECODERS[t](b, o, end, _sub(out, key))


def decode(data, out=None):
    """Decode one WCCPv2 message (UDP payload). Raises WccpError only."""
    try:
        return _decode(data, out)
    except WccpError:
        raise
    except Exception as e:  # safety net: a codec bug must still surface as WccpError
        raise WccpError("internal decoder error: %s: %s" % (type(e).__name__, e))


def _decode(data, out):
    try:
        b = data if isinstance(data, memoryview) else memoryview(data)
    except TypeError:
        raise WccpError("data is not bytes-like")
    n = len(b)
    if n < 8:
        raise WccpError("truncated header: %d bytes" % n)
    mtype = _g32(b, 0)
    if mtype < HERE_I_AM or mtype > REMOVAL_QUERY:
        raise WccpError("unknown message type %d" % mtype)
    version = _g16(b, 4)
    if version >> 8 != 2:
        raise WccpError("unsupported WCCP version 0x%04x (major must be 2)" % version)
    length = _g16(b, 6)
    if length > n - 8:
        raise WccpError("header length %d exceeds the %d bytes received after the header" % (length, n - 8))
    if out is None:
        out = {}
    out["type"] = mtype
    out["version"] = version
    out["length"] = length
    end = 8 + length
    o = 8
    seen = 0  # bitmask of component types present
    unknown = None
    dups = None
    while o < end:
        if end - o < 4:
            raise WccpError("%d trailing bytes after the last component" % (end - o))
        t = _g16(b, o)
        cl = _g16(b, o + 2)
        cs = o + 4
        ce = cs + cl
        if ce > end:
            raise WccpError("component type %d length %d overruns the message (%d bytes left)" % (t, cl, end - cs))
        if t not in _COMP_KEYS:
            if unknown is None:
                unknown = []
            unknown.append({"type": t, "length": cl, "data": b[cs:ce]})
        elif seen & (1 << t):
            # Duplicate single-instance component: the first one wins (rev1 rule); recorded.
            if dups is None:
                dups = []
            dups.append({"type": t, "length": cl})
        else:
            seen |= 1 << t
            q = _dec_component(b, t, cs, ce, out)
            if q != ce:
                raise WccpError("%s has %d unexplained trailing bytes" % (COMPONENT_NAMES[t], ce - q))
        o = ce
    # remove components left over from a reused `out`
    for t in _COMP_KEYS:
        if not seen & (1 << t):
            k = _COMP_KEYS[t]
            if k in out:
                del out[k]
    if unknown is not None:
        out["unknown_components"] = unknown
    elif "unknown_components" in out:
        del out["unknown_components"]
    if dups is not None:
        out["duplicate_components"] = dups
    elif "duplicate_components" in out:
        del out["duplicate_components"]
    for t in _MANDATORY[mtype]:
        if not seen & (1 << t):
            raise WccpError("%s message without mandatory %s" % (MESSAGE_NAMES[mtype], COMPONENT_NAMES[t]))
    if mtype == REDIRECT_ASSIGN and not seen & ((1 << 6) | (1 << 13) | (1 << 14) | (1 << 16)):
        raise WccpError("REDIRECT_ASSIGN message without an assignment component")
    for t in _FOREIGN[mtype]:
        if seen & (1 << t):
            raise WccpError("%s message must not contain %s" % (MESSAGE_NAMES[mtype], COMPONENT_NAMES[t]))
    if seen & (1 << ADDRESS_TABLE) and version == 0x0200:
        raise WccpError("Address Table requires WCCP version 2.01")
    return out


# --------------------------------------------------------------------------------------------
# encoding: every writer takes (buf, offset, obj) and returns the new offset

def _put_bytes(buf, o, v, n, what):
    if v is None:
        for i in range(o, o + n):
            buf[i] = 0
        return o + n
    if len(v) != n:
        raise WccpError("%s must be %d bytes, got %d" % (what, n, len(v)))
    return _copy(buf, o, v)


def _copy(buf, o, v):
    """buf[o:o+len(v)] = v without ever growing a bytearray (CPython would extend it)."""
    n = len(v)
    if o + n > len(buf):
        raise IndexError("buffer too small")
    buf[o:o + n] = v
    return o + n


def _enc_masks(buf, o, m):
    pack_into(">IIHH", buf, o, m.get("src_addr", 0), m.get("dst_addr", 0),
              m.get("src_port", 0), m.get("dst_port", 0))
    return o + 12


def _enc_mvsets(buf, o, sets):
    pack_into(">I", buf, o, len(sets))
    o += 4
    for s in sets:
        o = _enc_masks(buf, o, s.get("masks", {}))
        vals = s.get("values", ())
        pack_into(">I", buf, o, len(vals))
        o += 4
        for v in vals:
            pack_into(">IIHHI", buf, o, v.get("src_addr", 0), v.get("dst_addr", 0), v.get("src_port", 0),
                      v.get("dst_port", 0), v["cache_address"])
            o += 16
    return o


def _enc_altsets(buf, o, sets):
    pack_into(">I", buf, o, len(sets))
    o += 4
    for s in sets:
        o = _enc_masks(buf, o, s.get("masks", {}))
        wcs = s.get("web_cache_values", ())
        pack_into(">I", buf, o, len(wcs))
        o += 4
        for w in wcs:
            vs = w.get("vsns", ())
            pack_into(">II", buf, o, w["cache_address"], len(vs))
            o += 8
            for v in vs:
                pack_into(">I", buf, o, v)
                o += 4
    return o


_DT_CODES = {"hash": 0, "mask": 1, "none": 2, "extended": 3}


def _enc_identity(buf, o, el):
    dt = el.get("data_type")
    if dt is None:
        dt = "mask" if "mask_value_sets" in el else "hash"
    code = _DT_CODES.get(dt)
    if code is None:
        raise WccpError("unknown identity data_type %r" % (dt,))
    flags = (el.get("flags", 0) & 0xFFF9) | (code << 1)
    if code == 0:
        # the common Router View case: one pack_into for the whole 44-byte element
        bm = el.get("bucket_bitmap")
        if bm is None:
            bm = _ZERO32
        elif len(bm) != 32:
            raise WccpError("bucket_bitmap must be 32 bytes, got %d" % len(bm))
        elif _CPY and type(bm) is memoryview:
            bm = bytes(bm)   # CPython's struct "s" wants bytes (MicroPython takes any buffer)
        pack_into(">IHH32sHH", buf, o, el["address"], el.get("hash_revision", 0), flags, bm,
                  el.get("weight", 0), el.get("status", 0))
        return o + 44
    pack_into(">IHH", buf, o, el["address"], el.get("hash_revision", 0), flags)
    o += 8
    if code == 1:
        o = _enc_mvsets(buf, o, el.get("mask_value_sets", ()))
        pack_into(">HH", buf, o, el.get("weight", 0), el.get("status", 0))
        o += 4
    elif code == 3:
        data = el.get("extended_data", b"")
        pack_into(">HH", buf, o, el.get("extended_type", 0), len(data))
        o = _copy(buf, o + 4, data)
    return o


def _enc_key(buf, o, d):
    k = d.get("assignment_key") or {}
    pack_into(">II", buf, o, k.get("address", 0), k.get("change_number", 0))
    return o + 8


def _enc_rtr_assign(buf, o, routers):
    pack_into(">I", buf, o, len(routers))
    o += 4
    for r in routers:
        pack_into(">III", buf, o, r["router_id"], r.get("receive_id", 0), r.get("member_change_number", 0))
        o += 12
    return o


def _enc_hash_buckets(buf, o, d):
    wc = d.get("web_caches", ())
    pack_into(">I", buf, o, len(wc))
    o += 4
    for a in wc:
        pack_into(">I", buf, o, a)
        o += 4
    bk = d.get("buckets")
    if bk is None:
        for i in range(o, o + 256):
            buf[i] = 0xFF
        return o + 256
    return _put_bytes(buf, o, bk, 256, "buckets")


def _enc_security(buf, o, d):
    opt = d.get("option", 0)
    pack_into(">I", buf, o, opt)
    o += 4
    if opt == SECURITY_MD5:
        o = _put_bytes(buf, o, d.get("digest"), 16, "digest")
    elif opt != SECURITY_NONE:
        raise WccpError("unknown security option %d" % opt)
    return o


def _enc_service(buf, o, d):
    pack_into(">BBBBI", buf, o, d.get("service_type", 0), d.get("service_id", 0), d.get("priority", 0),
              d.get("protocol", 0), d.get("service_flags", 0))
    ports = d.get("ports") or ()
    if len(ports) > 8:
        raise WccpError("at most 8 ports")
    for i in range(8):
        pack_into(">H", buf, o + 8 + 2 * i, ports[i] if i < len(ports) else 0)
    return o + 24


def _enc_router_identity(buf, o, d):
    rf = d.get("received_from", ())
    pack_into(">IIII", buf, o, d["router_id"], d.get("receive_id", 0), d.get("sent_to", 0), len(rf))
    o += 16
    for a in rf:
        pack_into(">I", buf, o, a)
        o += 4
    return o


def _enc_router_view(buf, o, d):
    pack_into(">I", buf, o, d.get("member_change_number", 0))
    o = _enc_key(buf, o + 4, d)
    rs = d.get("routers", ())
    pack_into(">I", buf, o, len(rs))
    o += 4
    for a in rs:
        pack_into(">I", buf, o, a)
        o += 4
    wcs = d.get("web_caches", ())
    pack_into(">I", buf, o, len(wcs))
    o += 4
    for el in wcs:
        o = _enc_identity(buf, o, el)
    return o


def _enc_wc_view(buf, o, d):
    rs = d.get("routers", ())
    pack_into(">II", buf, o, d.get("change_number", 0), len(rs))
    o += 8
    for r in rs:
        pack_into(">II", buf, o, r["router_id"], r.get("receive_id", 0))
        o += 8
    wc = d.get("web_caches", ())
    pack_into(">I", buf, o, len(wc))
    o += 4
    for a in wc:
        pack_into(">I", buf, o, a)
        o += 4
    return o


def _enc_assignment_info(buf, o, d):
    o = _enc_key(buf, o, d)
    o = _enc_rtr_assign(buf, o, d.get("routers", ()))
    return _enc_hash_buckets(buf, o, d)


def _enc_query(buf, o, d):
    pack_into(">IIII", buf, o, d["router_id"], d.get("receive_id", 0), d.get("sent_to", 0), d.get("target", 0))
    return o + 16


def _enc_tlv_list(buf, o, lst, vkey):
    for e in lst:
        v = e.get(vkey, 0)
        if isinstance(v, int):
            pack_into(">HHI", buf, o, e["type"], 4, v)
            o += 8
        else:
            pack_into(">HH", buf, o, e["type"], len(v))
            o = _copy(buf, o + 4, v)
    return o


def _enc_caps(buf, o, lst):
    return _enc_tlv_list(buf, o, lst, "value")


def _enc_cmds(buf, o, lst):
    return _enc_tlv_list(buf, o, lst, "data")


def _enc_alt_body(buf, o, d, with_key):
    at = d.get("assignment_type", 0)
    start = o + 4
    p = start
    if with_key:
        p = _enc_key(buf, p, d)
        p = _enc_rtr_assign(buf, p, d.get("routers", ()))
    if at == 0:
        p = _enc_hash_buckets(buf, p, d)
    elif at == 1:
        p = _enc_mvsets(buf, p, d.get("mask_value_sets", ()))
    elif at == 2:
        p = _enc_altsets(buf, p, d.get("alt_mask_value_sets", ()))
    else:
        raise WccpError("unknown assignment type %d" % at)
    pack_into(">HH", buf, o, at, p - start)
    return p


def _enc_alt_assignment(buf, o, d):
    return _enc_alt_body(buf, o, d, True)


def _enc_alt_map(buf, o, d):
    return _enc_alt_body(buf, o, d, False)


def _enc_assign_map(buf, o, d):
    return _enc_mvsets(buf, o, d.get("mask_value_sets", ()))


def _enc_address_table(buf, o, d):
    addrs = d.get("addresses", ())
    alen = d.get("address_length", 16)
    pack_into(">HHI", buf, o, d.get("family", 2), alen, len(addrs))
    o += 8
    for a in addrs:
        o = _put_bytes(buf, o, a, alen, "address table entry")
    return o


# (component type, dict key, writer) in wire order
_ENCODERS = (
    (SECURITY_INFO, "security", _enc_security),
    (SERVICE_INFO, "service", _enc_service),
    (ROUTER_ID_INFO, "router_identity", _enc_router_identity),
    (WC_ID_INFO, "web_cache_identity", _enc_identity),
    (RTR_VIEW_INFO, "router_view", _enc_router_view),
    (WC_VIEW_INFO, "web_cache_view", _enc_wc_view),
    (REDIRECT_ASSIGNMENT, "assignment_info", _enc_assignment_info),
    (QUERY_INFO, "router_query", _enc_query),
    (ALT_ASSIGNMENT, "alternate_assignment", _enc_alt_assignment),
    (ASSIGN_MAP, "assignment_map", _enc_assign_map),
    (ALT_ASSIGNMENT_MAP, "alternate_assignment_map", _enc_alt_map),
    (CAPABILITY_INFO, "capabilities", _enc_caps),
    (COMMAND_EXTENSION, "command_extension", _enc_cmds),
    (ADDRESS_TABLE, "address_table", _enc_address_table),
)


def _encode_into(msg, buf):
    o = 8
    for t, key, fn in _ENCODERS:
        v = msg.get(key)
        if v is None:
            continue
        q = fn(buf, o + 4, v)
        cl = q - o - 4
        if cl > 0xFFFF:
            raise WccpError("%s too long (%d bytes)" % (COMPONENT_NAMES[t], cl))
        pack_into(">HH", buf, o, t, cl)
        o = q
    for u in msg.get("unknown_components", ()):
        data = u.get("data")
        if data is None:
            continue
        pack_into(">HH", buf, o, u["type"], len(data))
        o = _copy(buf, o + 4, data)
    if o - 8 > 0xFFFF:
        raise WccpError("message too long (%d bytes)" % o)
    pack_into(">IHH", buf, 0, msg["type"], msg.get("version", 0x0200), o - 8)
    return o


def encode(msg, buf=None, password=None):
    """Encode msg into buf (returns the length) or, with buf None, return new bytes.

    With security option 1 and a password, the MD5 digest is computed and written in place.
    Raises WccpError on bad input or a too-small buffer.
    """
    if buf is None:
        size = 1500
        while True:
            tmp = bytearray(size)
            try:
                n = _encode_into(msg, tmp)
                break
            except WccpError:
                raise
            except _SPACE_ERRORS as e:
                if size > _MAX_MESSAGE:
                    raise WccpError("cannot encode: %s" % (e,))
                size = _MAX_MESSAGE + 64   # the largest possible message, then give up
            except _STRUCT_ERRORS as e:
                raise WccpError("cannot encode (bad or missing field): %s" % (e,))
        if password is not None:
            sign_md5(tmp, n, password)
        return bytes(tmp[:n])
    try:
        n = _encode_into(msg, buf)
    except WccpError:
        raise
    except _STRUCT_ERRORS as e:
        raise WccpError("cannot encode (buffer too small or bad field value): %s" % (e,))
    if password is not None:
        sign_md5(buf, n, password)
    return n


# --------------------------------------------------------------------------------------------
# MD5 security

def _pad_password(password):
    if isinstance(password, str):
        password = password.encode()
    if len(password) > 8:
        raise WccpError("password longer than 8 octets")
    return bytes(password) + bytes(8 - len(password))


def _find_digest(b, n):
    """Offset of the 16-byte MD5 digest in message b (first n bytes), or -1."""
    if n < 8:
        return -1
    end = 8 + _g16(b, 6)
    if end > n:
        return -1
    o = 8
    while o + 4 <= end:
        t = _g16(b, o)
        cl = _g16(b, o + 2)
        if o + 4 + cl > end:
            return -1
        if t == SECURITY_INFO:
            if cl == 20 and _g32(b, o + 4) == SECURITY_MD5:
                return o + 8
            return -1
        o += 4 + cl
    return -1


def sign_md5(buf, length, password):
    """Write the MD5 digest into an encoded message in place (no-op if not MD5)."""
    pw = _pad_password(password)
    d = _find_digest(buf, length)
    if d < 0:
        return False
    for i in range(d, d + 16):
        buf[i] = 0
    h = _md5(pw)
    h.update(memoryview(buf)[:length])
    buf[d:d + 16] = h.digest()
    return True


def verify_md5(data, password):
    """True when data (UDP payload as received) carries a valid MD5 digest for password.

    The digest covers password (zero-padded to 8) + the message (header + Length bytes)
    with the digest field zeroed. Messages without MD5 security give False.
    """
    try:
        pw = _pad_password(password)
        b = memoryview(data)
        d = _find_digest(b, len(b))
        if d < 0:
            return False
        end = 8 + _g16(b, 6)
        got = bytes(b[d:d + 16])
        tmp = bytearray(b[:end])
        for i in range(d, d + 16):
            tmp[i] = 0
        h = _md5(pw)
        h.update(tmp)
        want = h.digest()
    except WccpError:
        raise
    except Exception:
        return False
    diff = 0
    for i in range(16):
        diff |= got[i] ^ want[i]
    return diff == 0
