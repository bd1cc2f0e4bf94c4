"""WCCPv2 decoding (wccp.codec.decode): one message's bytes to the dict of docs/protocol.md.

Byte fields are memoryview slices of the input (no copies); passing the previous result as
``out`` reuses its dicts and lists."""
from wccp.const import (
    HERE_I_AM, I_SEE_YOU, REDIRECT_ASSIGN, REMOVAL_QUERY,
    SECURITY_INFO, SERVICE_INFO, ROUTER_ID_INFO, WC_ID_INFO, RTR_VIEW_INFO, WC_VIEW_INFO,
    REDIRECT_ASSIGNMENT, QUERY_INFO, CAPABILITY_INFO, ALT_ASSIGNMENT, ASSIGN_MAP,
    COMMAND_EXTENSION, ALT_ASSIGNMENT_MAP, ADDRESS_TABLE,
    SECURITY_NONE, SECURITY_MD5, MESSAGE_NAMES,
)
from wccp.codec_base import _COMP_KEYS, COMPONENT_NAMES, WccpError, _g16, _g32

_DATA_TYPE_NAMES = ("hash", "mask", "none", "extended")
# Wireshark's mandatory components (packet-wccp.c); RA needs one of 6/13/14/16 on top.
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


def _drop(d, keys):
    """Delete what a reused dict still holds of keys."""
    for k in keys:
        if k in d:
            del d[k]


def _dec_u32s(b, o, end, p, k, what):
    """A 32-bit count at o and that many 32-bit values -> p[k] (int list); returns the new offset."""
    n = _count(b, o, end, 4, what)
    o += 4
    lst = _int_list(p, k, n)
    for i in range(n):
        lst[i] = _g32(b, o)
        o += 4
    return o


def _dec_list(b, o, end, p, k, size, what, dec_el):
    """A 32-bit count at o and that many elements (size bytes at least each), each decoded by
    dec_el into a dict of the list p[k]; returns the new offset."""
    n = _count(b, o, end, size, what)
    o += 4
    for e in _dict_list(p, k, n):
        o = dec_el(b, o, end, e)
    return o


def _dec_masks(b, o, d):
    d["src_addr"] = _g32(b, o)
    d["dst_addr"] = _g32(b, o + 4)
    d["src_port"] = _g16(b, o + 8)
    d["dst_port"] = _g16(b, o + 10)


def _dec_value(b, o, end, v):
    """Value Element (the mask fields and a cache address, 16 bytes; its count was checked)."""
    _dec_masks(b, o, v)
    v["cache_address"] = _g32(b, o + 12)
    return o + 16


def _dec_wc_value(b, o, end, w):
    """rev1 Web-Cache Value Element: cache address and its value sequence numbers."""
    _need(o, 8, end, "web-cache value element")
    w["cache_address"] = _g32(b, o)
    return _dec_u32s(b, o + 4, end, w, "vsns", "value sequence number")


def _dec_sets(b, o, end, p, k, what, ekey, esize, ewhat, dec_el):
    """A set list at o -> p[k]: count, then per set its masks and a counted list of elements
    (esize bytes at least each) decoded by dec_el into s[ekey]; returns the new offset."""
    n = _count(b, o, end, 16, what)
    o += 4
    for s in _dict_list(p, k, n):
        _need(o, 16, end, what, " element")
        _dec_masks(b, o, _sub(s, "masks"))
        o = _dec_list(b, o + 12, end, s, ekey, esize, ewhat, dec_el)
    return o


def _dec_mvsets(b, o, end, p, k):
    """Mask/Value Set List at o -> p[k] (list); returns the new offset."""
    return _dec_sets(b, o, end, p, k, "mask/value set", "values", 16, "value element", _dec_value)


def _dec_altsets(b, o, end, p, k):
    """rev1 Alternate Mask/Value Set List -> p[k]."""
    return _dec_sets(b, o, end, p, k, "alternate mask/value set", "web_cache_values", 8,
                     "web-cache value element", _dec_wc_value)


# what a reused identity element must not keep, by assignment data type
_NOT_HASH = ("mask_value_sets", "extended_type", "extended_data")
_NOT_MASK = ("bucket_bitmap", "extended_type", "extended_data")
_NO_DATA = ("bucket_bitmap", "mask_value_sets", "weight", "status", "extended_type", "extended_data")


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
        _drop(el, _NOT_HASH)
    elif dt == 1:
        o = _dec_mvsets(b, o, end, el, "mask_value_sets")
        _need(o, 4, end, "mask assignment weight/status")
        el["weight"] = _g16(b, o)
        el["status"] = _g16(b, o + 2)
        o += 4
        _drop(el, _NOT_MASK)
    else:
        _drop(el, _NO_DATA)
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


def _dec_routers(b, o, end, d, size, what):
    """Router ID Elements (count + 8 each) or Router Assignment Elements (count + 12 each,
    with the member change number) -> d['routers']; returns the new offset."""
    n = _count(b, o, end, size, what)
    o += 4
    for r in _dict_list(d, "routers", n):
        r["router_id"] = _g32(b, o)
        r["receive_id"] = _g32(b, o + 4)
        if size == 12:
            r["member_change_number"] = _g32(b, o + 8)
        o += size
    return o


def _dec_key_routers(b, o, end, d):
    """Assignment key and Router Assignment Elements; returns the new offset."""
    _need(o, 8, end, "assignment key")
    _dec_key(b, o, d)
    return _dec_routers(b, o + 8, end, d, 12, "router assignment element")


def _dec_hash_buckets(b, o, end, d):
    """Hash Buckets Assignment Element: cache count + caches + 256 bucket bytes."""
    o = _dec_u32s(b, o, end, d, "web_caches", "web-cache")
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
    return _dec_u32s(b, o + 12, end, d, "received_from", "received-from address")


def _dec_router_view(b, o, end, d):
    _need(o, 16, end, "Router View Info")
    d["member_change_number"] = _g32(b, o)
    _dec_key(b, o + 4, d)
    o = _dec_u32s(b, o + 12, end, d, "routers", "router")
    return _dec_list(b, o, end, d, "web_caches", 8, "web-cache identity element", _dec_identity)


def _dec_wc_view(b, o, end, d):
    _need(o, 8, end, "Web-Cache View Info")
    d["change_number"] = _g32(b, o)
    o = _dec_routers(b, o + 4, end, d, 8, "router ID element")
    return _dec_u32s(b, o, end, d, "web_caches", "web-cache")


def _dec_assignment_info(b, o, end, d):
    return _dec_hash_buckets(b, _dec_key_routers(b, o, end, d), end, d)


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


_ALT_BODIES = ("web_caches", "buckets", "mask_value_sets", "alt_mask_value_sets")


def _dec_alt_body(b, o, end, d, with_key, what):
    """Alternate Assignment (with_key: key and router elements first) or Alternate Assignment
    Map: type, length, then the body of that type."""
    _need(o, 4, end, what, " header")
    at = _g16(b, o)
    alen = _g16(b, o + 2)
    o += 4
    if not _assign_len_ok(alen, end - o):
        raise WccpError("%s length %d does not match %d body bytes" % (what, alen, end - o))
    d["assignment_type"] = at
    _drop(d, _ALT_BODIES)
    if with_key:
        o = _dec_key_routers(b, o, end, d)
    if at == 0:
        return _dec_hash_buckets(b, o, end, d)
    if at == 1:
        return _dec_mvsets(b, o, end, d, "mask_value_sets")
    if at == 2:
        return _dec_altsets(b, o, end, d, "alt_mask_value_sets")
    raise WccpError("unknown %s type %d" % (what.lower(), at))


def _dec_alt_assignment(b, o, end, d):
    return _dec_alt_body(b, o, end, d, True, "Alternate Assignment")


def _dec_alt_map(b, o, end, d):
    return _dec_alt_body(b, o, end, d, False, "Alternate Assignment Map")


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
