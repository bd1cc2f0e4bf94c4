"""WCCPv2 encoding (wccp.codec.encode): a message dict to bytes, into a preallocated buffer
when one is given (no allocation on that path)."""
import struct
import sys

from wccp.const import (
    SECURITY_INFO, SERVICE_INFO, ROUTER_ID_INFO, WC_ID_INFO, RTR_VIEW_INFO, WC_VIEW_INFO,
    REDIRECT_ASSIGNMENT, QUERY_INFO, CAPABILITY_INFO, ALT_ASSIGNMENT, ASSIGN_MAP,
    COMMAND_EXTENSION, ALT_ASSIGNMENT_MAP, ADDRESS_TABLE,
    SECURITY_NONE, SECURITY_MD5,
)
from wccp.codec_base import COMPONENT_NAMES, WccpError, pack_into
from wccp.codec_security import sign_md5

_CPY = sys.implementation.name != "micropython"
_ZERO32 = bytes(32)
_STRUCT_ERRORS = (ValueError, IndexError, OverflowError, TypeError, KeyError, struct.error) \
    if hasattr(struct, "error") else (ValueError, IndexError, OverflowError, TypeError, KeyError)
# what a too-small buffer raises: CPython struct.error / our IndexError, MicroPython ValueError
_SPACE_ERRORS = (ValueError, IndexError, struct.error) if hasattr(struct, "error") else (ValueError, IndexError)
_MAX_MESSAGE = 8 + 0xFFFF


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


def _enc_u32s(buf, o, lst):
    """A 32-bit count and lst's values, 32 bits each; returns the new offset."""
    pack_into(">I", buf, o, len(lst))
    o += 4
    for a in lst:
        pack_into(">I", buf, o, a)
        o += 4
    return o


def _enc_list(buf, o, lst, enc_el):
    """A 32-bit count and lst's elements, each written by enc_el; returns the new offset."""
    pack_into(">I", buf, o, len(lst))
    o += 4
    for e in lst:
        o = enc_el(buf, o, e)
    return o


def _enc_masks(buf, o, m):
    pack_into(">IIHH", buf, o, m.get("src_addr", 0), m.get("dst_addr", 0),
              m.get("src_port", 0), m.get("dst_port", 0))
    return o + 12


def _enc_value(buf, o, v):
    pack_into(">IIHHI", buf, o, v.get("src_addr", 0), v.get("dst_addr", 0), v.get("src_port", 0),
              v.get("dst_port", 0), v["cache_address"])
    return o + 16


def _enc_wc_value(buf, o, w):
    pack_into(">I", buf, o, w["cache_address"])
    return _enc_u32s(buf, o + 4, w.get("vsns", ()))


def _enc_sets(buf, o, sets, ekey, enc_el):
    """A set list: count, then per set its masks and the counted list s[ekey] written by enc_el."""
    pack_into(">I", buf, o, len(sets))
    o += 4
    for s in sets:
        o = _enc_masks(buf, o, s.get("masks", {}))
        o = _enc_list(buf, o, s.get(ekey, ()), enc_el)
    return o


def _enc_mvsets(buf, o, sets):
    return _enc_sets(buf, o, sets, "values", _enc_value)


def _enc_altsets(buf, o, sets):
    return _enc_sets(buf, o, sets, "web_cache_values", _enc_wc_value)


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
    o = _enc_u32s(buf, o, d.get("web_caches", ()))
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
    pack_into(">III", buf, o, d["router_id"], d.get("receive_id", 0), d.get("sent_to", 0))
    return _enc_u32s(buf, o + 12, d.get("received_from", ()))


def _enc_router_view(buf, o, d):
    pack_into(">I", buf, o, d.get("member_change_number", 0))
    o = _enc_key(buf, o + 4, d)
    o = _enc_u32s(buf, o, d.get("routers", ()))
    return _enc_list(buf, o, d.get("web_caches", ()), _enc_identity)


def _enc_wc_view(buf, o, d):
    rs = d.get("routers", ())
    pack_into(">II", buf, o, d.get("change_number", 0), len(rs))
    o += 8
    for r in rs:
        pack_into(">II", buf, o, r["router_id"], r.get("receive_id", 0))
        o += 8
    return _enc_u32s(buf, o, d.get("web_caches", ()))


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
