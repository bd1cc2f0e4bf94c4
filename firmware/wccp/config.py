"""Router configuration: JSON schema, validation, embedded default (docs/config.md).

``load(source)`` accepts a JSON text, bytes or an already-parsed dict and returns a
normalised dict (every optional field filled in with its default). Any problem raises
``ConfigError`` whose message names the field (``services[1].password``) and the reason.
Runs on MicroPython and CPython.
"""
import json

from wccp.admission import parse_prefix

MAX_GROUPS = 8          # data-plane slots (wccp.dataplane.MAX_GROUPS)
MAX_CACHES = 32         # WCCPv2 cache index space (0..31)

FORWARDING = ("gre", "l2")
ASSIGNMENT = ("hash", "mask")
RETURN = ("gre", "l2")
HASH_FUNCTIONS = ("wccp", "pearson")     # wccp.pearson.HASH_NAMES

DEFAULT_CONFIG = {
    "addresses": ["127.0.0.1"],
    "services": [
        {"id": 0, "type": "standard", "forwarding": ["gre"], "assignment": ["hash"],
         "return": ["gre"]},
    ],
}


class ConfigError(ValueError):
    def __init__(self, field, reason):
        super().__init__("config: %s: %s" % (field, reason))
        self.field = field
        self.reason = reason


def parse_ip(text, field):
    """Dotted quad -> int, or ConfigError naming field."""
    if not isinstance(text, str):
        raise ConfigError(field, "must be a dotted IPv4 address string")
    parts = text.split(".")
    if len(parts) != 4:
        raise ConfigError(field, "%r is not a dotted IPv4 address" % text)
    n = 0
    for p in parts:
        if not p or len(p) > 3 or not p.isdigit():
            raise ConfigError(field, "%r is not a dotted IPv4 address" % text)
        v = int(p)
        if v > 255:
            raise ConfigError(field, "%r is not a dotted IPv4 address" % text)
        n = (n << 8) | v
    return n


def parse_mac(text, field):
    if not isinstance(text, str):
        raise ConfigError(field, "must be a MAC address string aa:bb:cc:dd:ee:ff")
    parts = text.replace("-", ":").split(":")
    if len(parts) != 6:
        raise ConfigError(field, "%r is not a MAC address aa:bb:cc:dd:ee:ff" % text)
    out = bytearray(6)
    for i, p in enumerate(parts):
        try:
            if len(p) != 2:
                raise ValueError
            out[i] = int(p, 16)
        except ValueError:
            raise ConfigError(field, "%r is not a MAC address aa:bb:cc:dd:ee:ff" % text)
    return bytes(out)


def _int(d, key, field, default, lo, hi):
    v = d.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(field, "must be an integer %d..%d" % (lo, hi))
    if v < lo or v > hi:
        raise ConfigError(field, "%d out of range %d..%d" % (v, lo, hi))
    return v


def _check_keys(d, allowed, field):
    for k in d:
        if k not in allowed:
            raise ConfigError(field + "." + str(k) if field else str(k), "unknown field")


def _methods(svc, key, field, choices, default):
    v = svc.get(key, default)
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not v:
        raise ConfigError(field, "must be a non-empty list of %s" % "/".join(choices))
    out = []
    for m in v:
        if m not in choices:
            raise ConfigError(field, "%r is not one of %s" % (m, "/".join(choices)))
        if m not in out:
            out.append(m)
    return out


_TOP_KEYS = ("router_id", "addresses", "mac", "mtu", "http", "services", "timers", "limits",
             "watchdog_ms", "cache_subnets", "static", "comment")
_SVC_KEYS = ("id", "type", "password", "multicast", "forwarding", "assignment", "return",
             "max_caches", "l2_adjacent", "caches", "hash", "redirect_list", "service_list", "closed",
             "comment")
MAX_REDIRECT_ENTRIES = 8     # wccp.policy / wccp.dataplane: entries per group in the data plane


def _prefixes(v, field, what):
    """A list of "a.b.c.d" / "a.b.c.d/n" strings, or None."""
    if v is None:
        return None
    if not isinstance(v, list):
        raise ConfigError(field, "must be a list of %s (or absent)" % what)
    for j, c in enumerate(v):
        _prefix(c, "%s[%d]" % (field, j))
    return list(v)


def _prefix(text, field):
    try:
        parse_prefix(text)
    except ValueError as e:
        raise ConfigError(field, "must be an IPv4 address or prefix a.b.c.d/n: %s" % e)
    return text


def _redirect_list(v, f):
    if v is None:
        return None
    if not isinstance(v, list):
        raise ConfigError(f, "must be a list of {action, src, dst} entries")
    if len(v) > MAX_REDIRECT_ENTRIES:
        raise ConfigError(f, "%d entries, the data plane holds %d per group" % (len(v), MAX_REDIRECT_ENTRIES))
    out = []
    for j, e in enumerate(v):
        ff = "%s[%d]" % (f, j)
        if not isinstance(e, dict):
            raise ConfigError(ff, "must be an object {action, src, dst}")
        _check_keys(e, ("action", "src", "dst", "comment"), ff)
        if e.get("action") not in ("permit", "deny"):
            raise ConfigError(ff + ".action", "must be \"permit\" or \"deny\"")
        out.append({"action": e["action"], "src": _prefix(e.get("src", "0.0.0.0/0"), ff + ".src"),
                    "dst": _prefix(e.get("dst", "0.0.0.0/0"), ff + ".dst")})
    return out


def _service_list(v, f, stype):
    if v is None:
        return None
    if stype != "dynamic":
        raise ConfigError(f, "only dynamic services are defined by caches")
    if not isinstance(v, dict):
        raise ConfigError(f, "must be an object {protocols, ports, max_priority}")
    _check_keys(v, ("protocols", "ports", "max_priority", "comment"), f)
    out = {}
    for key, hi in (("protocols", 255), ("ports", 65535)):
        x = v.get(key)
        if x is None:
            continue
        if not isinstance(x, list) or not x:
            raise ConfigError(f + "." + key, "must be a non-empty list of integers 0..%d" % hi)
        for j, n in enumerate(x):
            if isinstance(n, bool) or not isinstance(n, int) or n < 0 or n > hi:
                raise ConfigError("%s.%s[%d]" % (f, key, j), "must be an integer 0..%d" % hi)
        out[key] = list(x)
    if "max_priority" in v:
        out["max_priority"] = _int(v, "max_priority", f + ".max_priority", 255, 0, 255)
    return out


def _service(svc, i, limits):
    f = "services[%d]" % i
    if not isinstance(svc, dict):
        raise ConfigError(f, "must be an object")
    _check_keys(svc, _SVC_KEYS, f)
    out = {}
    stype = svc.get("type", "dynamic" if svc.get("id", 0) else "standard")
    if stype not in ("standard", "dynamic"):
        raise ConfigError(f + ".type", "must be \"standard\" or \"dynamic\"")
    out["type"] = stype
    if "id" not in svc:
        raise ConfigError(f + ".id", "missing (service ID 0..255)")
    out["id"] = _int(svc, "id", f + ".id", 0, 0, 255)
    if stype == "standard" and out["id"] != 0:
        raise ConfigError(f + ".id", "only standard service 0 (web-cache) is defined; use type \"dynamic\"")
    pw = svc.get("password", None)
    if pw is not None:
        if not isinstance(pw, str):
            raise ConfigError(f + ".password", "must be a string of at most 8 characters")
        if len(pw.encode()) > 8:
            raise ConfigError(f + ".password", "longer than 8 octets (WCCP MD5 keys are at most 8)")
        if pw == "":
            pw = None
    out["password"] = pw
    mc = svc.get("multicast", None)
    if mc is not None:
        n = parse_ip(mc, f + ".multicast")
        if (n >> 28) != 0xE:
            raise ConfigError(f + ".multicast", "%s is not a multicast (224.0.0.0/4) address" % mc)
    out["multicast"] = mc
    out["forwarding"] = _methods(svc, "forwarding", f + ".forwarding", FORWARDING, ["gre"])
    out["assignment"] = _methods(svc, "assignment", f + ".assignment", ASSIGNMENT, ["hash"])
    out["return"] = _methods(svc, "return", f + ".return", RETURN, ["gre"])
    h = svc.get("hash", "wccp")
    if h not in HASH_FUNCTIONS:
        raise ConfigError(f + ".hash", "%r is not one of %s" % (h, "/".join(HASH_FUNCTIONS)))
    out["hash"] = h
    out["max_caches"] = _int(svc, "max_caches", f + ".max_caches", limits.get("max_caches", MAX_CACHES),
                             1, MAX_CACHES)
    l2 = svc.get("l2_adjacent", [])
    if not isinstance(l2, list):
        raise ConfigError(f + ".l2_adjacent", "must be a list of addresses or {address, mac} objects")
    l2out = []
    for j, e in enumerate(l2):
        ff = "%s.l2_adjacent[%d]" % (f, j)
        if isinstance(e, dict):
            _check_keys(e, ("address", "mac"), ff)
            parse_ip(e.get("address"), ff + ".address")
            mac = e.get("mac")
            if mac is not None:
                parse_mac(mac, ff + ".mac")
            l2out.append({"address": e["address"], "mac": mac})
        else:
            parse_ip(e, ff)
            l2out.append({"address": e, "mac": None})
    if l2out and "l2" not in out["forwarding"] and "l2" not in out["return"]:
        raise ConfigError(f + ".l2_adjacent", "lists caches but neither forwarding nor return allows \"l2\"")
    out["l2_adjacent"] = l2out
    out["caches"] = _prefixes(svc.get("caches", None), f + ".caches", "cache addresses or prefixes")
    out["redirect_list"] = _redirect_list(svc.get("redirect_list"), f + ".redirect_list")
    out["service_list"] = _service_list(svc.get("service_list"), f + ".service_list", stype)
    closed = svc.get("closed", False)
    if not isinstance(closed, bool):
        raise ConfigError(f + ".closed", "must be true or false")
    out["closed"] = closed
    return out


def load(source=None):
    """Validate and normalise a configuration (JSON text/bytes, dict, or None = default)."""
    if source is None:
        source = DEFAULT_CONFIG
    if isinstance(source, (bytes, bytearray)):
        source = bytes(source).decode()
    if isinstance(source, str):
        try:
            source = json.loads(source)
        except ValueError as e:
            raise ConfigError("(file)", "not valid JSON: %s" % e)
    if not isinstance(source, dict):
        raise ConfigError("(top level)", "must be a JSON object")
    _check_keys(source, _TOP_KEYS, "")
    cfg = {}
    if "router_id" in source:
        cfg["router_id"] = source["router_id"]
        parse_ip(cfg["router_id"], "router_id")
        addrs = source.get("addresses", [cfg["router_id"]])
    else:
        addrs = source.get("addresses", ["127.0.0.1"])
        cfg["router_id"] = addrs[0] if isinstance(addrs, list) and addrs else None
    if not isinstance(addrs, list) or not addrs:
        raise ConfigError("addresses", "must be a non-empty list of IPv4 addresses to listen on (UDP 2048)")
    for j, a in enumerate(addrs):
        parse_ip(a, "addresses[%d]" % j)
        if addrs.index(a) != j:
            raise ConfigError("addresses[%d]" % j, "duplicate address %s" % a)
    cfg["addresses"] = list(addrs)
    parse_ip(cfg["router_id"], "router_id")
    cfg["mac"] = source.get("mac", "02:00:00:00:00:01")
    parse_mac(cfg["mac"], "mac")
    cfg["mtu"] = _int(source, "mtu", "mtu", 1500, 576, 9216)
    http = source.get("http", {})
    if not isinstance(http, dict):
        raise ConfigError("http", "must be an object {address, port}")
    _check_keys(http, ("address", "port"), "http")
    cfg["http"] = {"address": http.get("address", "127.0.0.1"),
                   "port": _int(http, "port", "http.port", 8080, 0, 65535)}
    parse_ip(cfg["http"]["address"], "http.address")
    timers = source.get("timers", {})
    if not isinstance(timers, dict):
        raise ConfigError("timers", "must be an object")
    _check_keys(timers, ("here_i_am_ms",), "timers")
    cfg["timers"] = {"here_i_am_ms": _int(timers, "here_i_am_ms", "timers.here_i_am_ms", 10000, 100, 600000)}
    limits = source.get("limits", {})
    if not isinstance(limits, dict):
        raise ConfigError("limits", "must be an object")
    _check_keys(limits, ("max_caches", "max_pending", "max_total_caches", "max_routers", "max_mask_values",
                         "unverified_per_source", "unverified_per_second", "unverified_burst"), "limits")
    lim = {}
    lim["max_caches"] = _int(limits, "max_caches", "limits.max_caches", MAX_CACHES, 1, MAX_CACHES)
    lim["max_pending"] = _int(limits, "max_pending", "limits.max_pending", 32, 1, 1024)
    lim["max_total_caches"] = _int(limits, "max_total_caches", "limits.max_total_caches", 512, 1, 8192)
    lim["max_routers"] = _int(limits, "max_routers", "limits.max_routers", 32, 1, 32)
    lim["max_mask_values"] = _int(limits, "max_mask_values", "limits.max_mask_values", 256, 1, 4096)
    lim["unverified_per_source"] = _int(limits, "unverified_per_source", "limits.unverified_per_source", 4, 2, 100)
    lim["unverified_per_second"] = _int(limits, "unverified_per_second", "limits.unverified_per_second",
                                        20, 1, 1000)
    lim["unverified_burst"] = _int(limits, "unverified_burst", "limits.unverified_burst", 40, 1, 10000)
    cfg["limits"] = lim
    cfg["watchdog_ms"] = _int(source, "watchdog_ms", "watchdog_ms", 0, 0, 3600000)
    cfg["cache_subnets"] = _prefixes(source.get("cache_subnets"), "cache_subnets", "IPv4 prefixes")
    svcs = source.get("services", None)
    if not isinstance(svcs, list) or not svcs:
        raise ConfigError("services", "must be a non-empty list of service groups")
    if len(svcs) > MAX_GROUPS:
        raise ConfigError("services", "%d groups configured, the data plane has %d slots" % (len(svcs), MAX_GROUPS))
    out = []
    seen = []
    for i, s in enumerate(svcs):
        n = _service(s, i, lim)
        key = (n["type"], n["id"])
        if key in seen:
            raise ConfigError("services[%d].id" % i, "%s service %d configured twice" % key)
        seen.append(key)
        out.append(n)
    cfg["services"] = out
    cfg["static"] = _static(source.get("static", []), len(out))
    return cfg


def _static(groups, nwccp):
    """The static (RFC 3074 HBA, no WCCP) groups: wccp.hba validates them (imported only when
    there are some: a board without static groups keeps its code off the heap)."""
    if not isinstance(groups, list):
        raise ConfigError("static", "must be a list of static groups")
    if not groups:
        return []
    from wccp import hba
    if nwccp + len(groups) > MAX_GROUPS:
        raise ConfigError("static", "%d service + %d static groups, the data plane has %d slots"
                          % (nwccp, len(groups), MAX_GROUPS))
    out = []
    for i, g in enumerate(groups):
        try:
            out.append(hba.check(g, i))
        except hba.HbaError as e:
            msg = str(e)
            field, _, reason = msg.partition(": ")
            raise ConfigError(field, reason or msg)
    return out


def load_file(path):
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise ConfigError("(file)", "cannot read %s: %s" % (path, e))
    return load(text)
