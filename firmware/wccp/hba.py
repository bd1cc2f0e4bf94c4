"""Static balancing without WCCP: RFC 3074 Hash Bucket Assignments (HBA) for servers that
send no WCCP messages, with health checks by the firmware (docs/config.md "static").

A static group is a data-plane slot programmed from the configuration alone: its service
(protocol, ports, hash fields, hash function), its servers (cache table: GRE or L2
forwarding) and its 256 buckets, written in the RFC's syntax::

    192.0.2.11: 0..127;
    192.0.2.12: 128..254 255;

Every line (an HBA) lists one or more servers, a colon, bucket numbers and ranges ``a..b``
and a semicolon. The data plane sends a bucket to ONE server: with several servers on one
HBA the first live one takes its buckets (the others stand by). A bucket no HBA names is
unassigned (forwarded normally).

Health: every ``interval_ms`` the firmware opens a TCP connection to each server's check
port (non-blocking; nothing is sent). ``fails`` failures in a row (refused, reset, no answer
within ``timeout_ms``) mark a server down; one success marks it up. Servers start down
until their first check passes (a group with ``health`` null has every server up). The
buckets of a down server go round-robin to the group's live servers (in configuration
order); with no live server the group's assignment is cleared: traffic passes unredirected
(fail-open, as for a WCCP group without caches). Runs on MicroPython and CPython.
"""
import time

try:
    import select
except ImportError:  # MicroPython without the alias
    import uselect as select
import socket

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

NUM_BUCKETS = const(256)
UNASSIGNED = const(0xFF)

HASH_FIELDS = ("src_ip", "dst_ip", "src_port", "dst_port")     # service flag bits 0x1..0x8
SF_PORTS_DEFINED = const(0x10)
SF_PORTS_SOURCE = const(0x20)
FWD_BITS = {"gre": 1, "l2": 2}      # wccp.dataplane FWD_GRE / FWD_L2 (= RET_GRE / RET_L2)
FIRST_SERVICE_ID = const(200)       # static groups show as dynamic services 200.. in the slot table


class HbaError(ValueError):
    pass


def ip2int(s):
    p = s.split(".")
    if len(p) != 4:
        raise HbaError("%r is not an IPv4 address" % s)
    n = 0
    for x in p:
        if not x.isdigit() or int(x) > 255:
            raise HbaError("%r is not an IPv4 address" % s)
        n = (n << 8) | int(x)
    return n


def int2ip(n):
    return "%d.%d.%d.%d" % ((n >> 24) & 255, (n >> 16) & 255, (n >> 8) & 255, n & 255)


def _bucket(tok, line):
    if not tok.isdigit() or int(tok) > 255:
        raise HbaError("HBA %d: %r is not a bucket 0..255" % (line, tok))
    return int(tok)


def parse(text):
    """RFC 3074 HBA text -> list of (servers [addresses as str], buckets [int]) in order.
    A bucket named twice is an error."""
    out = []
    seen = bytearray(NUM_BUCKETS)
    stmts = text.split(";")
    if stmts[-1].strip():
        raise HbaError("HBA %d: missing ';' after %r" % (len(stmts), stmts[-1].strip()))
    for n, st in enumerate(stmts[:-1]):
        st = st.strip()
        if not st:
            continue
        if st.count(":") != 1:
            raise HbaError("HBA %d: need 'server [server..]: buckets;', got %r" % (n + 1, st))
        left, right = st.split(":")
        servers = left.split()
        if not servers:
            raise HbaError("HBA %d: no server before ':'" % (n + 1))
        for s in servers:
            ip2int(s)
        buckets = []
        for tok in right.split():
            if ".." in tok:
                a, b = tok.split("..", 1)
                lo, hi = _bucket(a, n + 1), _bucket(b, n + 1)
                if lo > hi:
                    raise HbaError("HBA %d: empty range %s" % (n + 1, tok))
                rng = range(lo, hi + 1)
            else:
                rng = (_bucket(tok, n + 1),)
            for b in rng:
                if seen[b]:
                    raise HbaError("HBA %d: bucket %d assigned twice" % (n + 1, b))
                seen[b] = 1
                buckets.append(b)
        if not buckets:
            raise HbaError("HBA %d: no buckets after ':'" % (n + 1))
        out.append((servers, buckets))
    if not out:
        raise HbaError("no HBA (need at least one 'server: buckets;')")
    return out


def format_ranges(buckets, sep=".."):
    """Bucket numbers -> 'a..b c e..f' (the RFC's syntax; ``sep`` between a range's ends)."""
    out = []
    bs = sorted(buckets)
    i = 0
    while i < len(bs):
        j = i
        while j + 1 < len(bs) and bs[j + 1] == bs[j] + 1:
            j += 1
        out.append(str(bs[i]) if i == j else "%d%s%d" % (bs[i], sep, bs[j]))
        i = j + 1
    return " ".join(out)


def _int(d, k, field, default, lo, hi):
    v = d.get(k, default)
    if not isinstance(v, int) or isinstance(v, bool) or v < lo or v > hi:
        raise HbaError("%s.%s must be an integer %d..%d" % (field, k, lo, hi))
    return v


_KEYS = ("name", "protocol", "ports", "port_type", "hash_fields", "hash", "forwarding", "assignment",
         "servers", "health", "comment")


def check(cfg, i):
    """Validate one static group of the configuration; return it normalised."""
    f = "static[%d]" % i
    if not isinstance(cfg, dict):
        raise HbaError("%s: must be an object" % f)
    for k in cfg:
        if k not in _KEYS:
            raise HbaError("%s: unknown field %r" % (f, k))
    out = {"name": cfg.get("name", "static%d" % i)}
    out["protocol"] = _int(cfg, "protocol", f, 6, 0, 255)
    ports = cfg.get("ports", [])
    if not isinstance(ports, list) or len(ports) > 8:
        raise HbaError("%s.ports: must be a list of at most 8 ports" % f)
    for p in ports:
        if not isinstance(p, int) or p < 1 or p > 65535:
            raise HbaError("%s.ports: %r is not a port 1..65535" % (f, p))
    out["ports"] = ports
    pt = cfg.get("port_type", "destination")
    if pt not in ("destination", "source"):
        raise HbaError("%s.port_type: must be \"destination\" or \"source\"" % f)
    out["port_type"] = pt
    hf = cfg.get("hash_fields", ["src_ip"])
    if not isinstance(hf, list) or not hf or any(x not in HASH_FIELDS for x in hf):
        raise HbaError("%s.hash_fields: must be a non-empty list of %s" % (f, "/".join(HASH_FIELDS)))
    out["hash_fields"] = hf
    h = cfg.get("hash", "pearson")
    if h not in ("wccp", "pearson"):
        raise HbaError("%s.hash: must be \"wccp\" or \"pearson\"" % f)
    out["hash"] = h
    fw = cfg.get("forwarding", "gre")
    if fw not in FWD_BITS:
        raise HbaError("%s.forwarding: must be \"gre\" or \"l2\"" % f)
    out["forwarding"] = fw
    a = cfg.get("assignment")
    if not isinstance(a, str):
        raise HbaError("%s.assignment: must be RFC 3074 HBA text ('192.0.2.11: 0..127;')" % f)
    try:
        hbas = parse(a)
    except HbaError as e:
        raise HbaError("%s.assignment: %s" % (f, e))
    out["assignment"] = a
    servers = []
    for ss, _b in hbas:
        for s in ss:
            if s not in servers:
                servers.append(s)
    if len(servers) > 32:
        raise HbaError("%s.assignment: %d servers, a group has at most 32" % (f, len(servers)))
    loc = {}
    sv = cfg.get("servers", [])
    if not isinstance(sv, list):
        raise HbaError("%s.servers: must be a list of {address, mac, port}" % f)
    for j, e in enumerate(sv):
        ff = "%s.servers[%d]" % (f, j)
        if not isinstance(e, dict) or e.get("address") not in servers:
            raise HbaError("%s: must be {address, mac, port} with an address of the assignment" % ff)
        mac = e.get("mac")
        if mac is not None:
            p = mac.split(":") if isinstance(mac, str) else []
            if len(p) != 6 or any(len(x) != 2 for x in p):
                raise HbaError("%s.mac: %r is not a MAC address" % (ff, mac))
            try:
                mac = bytes(int(x, 16) for x in p)
            except ValueError:
                raise HbaError("%s.mac: %r is not a MAC address" % (ff, e.get("mac")))
        port = e.get("port")
        if port is not None:
            _int(e, "port", ff, 0, 0, 15)
        loc[e["address"]] = (mac, port)
    out["servers"] = [{"address": s, "mac": loc.get(s, (None, None))[0], "port": loc.get(s, (None, None))[1]}
                      for s in servers]
    hc = cfg.get("health", {})
    if hc is None:
        out["health"] = None
    else:
        if not isinstance(hc, dict):
            raise HbaError("%s.health: must be an object or null" % f)
        for k in hc:
            if k not in ("tcp_port", "interval_ms", "timeout_ms", "fails"):
                raise HbaError("%s.health: unknown field %r" % (f, k))
        out["health"] = {"tcp_port": _int(hc, "tcp_port", f + ".health", (ports or [80])[0], 1, 65535),
                         "interval_ms": _int(hc, "interval_ms", f + ".health", 2000, 100, 600000),
                         "timeout_ms": _int(hc, "timeout_ms", f + ".health", 1000, 50, 60000),
                         "fails": _int(hc, "fails", f + ".health", 2, 1, 100)}
        if out["health"]["timeout_ms"] > out["health"]["interval_ms"]:
            raise HbaError("%s.health: timeout_ms longer than interval_ms" % f)
    return out


def service_of(g, index):
    """The data-plane service definition of static group g (slot table entry)."""
    flags = 0
    for j, name in enumerate(HASH_FIELDS):
        if name in g["hash_fields"]:
            flags |= 1 << j
    if g["ports"]:
        flags |= SF_PORTS_DEFINED
        if g["port_type"] == "source":
            flags |= SF_PORTS_SOURCE
    return {"service_type": 1, "service_id": FIRST_SERVICE_ID + index, "priority": 0,
            "protocol": g["protocol"], "service_flags": flags, "ports": list(g["ports"]),
            "hash_fn": g["hash"]}


def buckets_for(hbas, servers, up):
    """256 bucket entries (cache index or UNASSIGNED) for the HBAs given which servers are up.
    ``servers``: addresses in cache-table order; ``up``: set of live addresses."""
    idx = {}
    for i, s in enumerate(servers):
        idx[s] = i
    live = [i for i, s in enumerate(servers) if s in up]
    tab = bytearray(b"\xff" * NUM_BUCKETS)
    orphans = []
    for ss, bs in hbas:
        owner = None
        for s in ss:
            if s in up:
                owner = idx[s]
                break
        for b in bs:
            if owner is None:
                orphans.append(b)
            else:
                tab[b] = owner
    if live:
        for k, b in enumerate(orphans):
            tab[b] = live[k % len(live)]
    return bytes(tab)


class TcpProbe:
    """Non-blocking TCP connect checks: start() -> handle, result(handle) -> None while
    pending, True (connected) or False (refused/reset/unreachable); close(handle)."""

    def start(self, addr, port):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect(socket.getaddrinfo(addr, port)[0][-1])
        except OSError:
            pass            # EINPROGRESS; a refusal shows in result()
        p = select.poll()
        p.register(s, select.POLLOUT | select.POLLERR | select.POLLHUP)
        return (s, p)

    def result(self, h):
        s, p = h
        ev = p.poll(0)
        if not ev:
            return None
        e = ev[0][1]
        if e & (select.POLLERR | select.POLLHUP):
            return False
        try:
            s.send(b"")         # connected sockets accept an empty send; a failed connect raises
        except OSError:
            return False
        return True

    def close(self, h):
        try:
            h[0].close()
        except Exception:  # noqa: BLE001
            pass


def _ticks():
    if hasattr(time, "ticks_ms"):
        return time.ticks_ms()
    return int(time.monotonic() * 1000)


class StaticGroups:
    """The configuration's static groups on the data plane's top slots.

    ``program()`` writes every static slot into the shadow (the caller commits);
    ``tick(now)`` runs the health checks and returns True when it changed (and committed) the
    data plane. ``probe``: TcpProbe (default) or an object with the same three methods."""

    def __init__(self, groups, dp, first_slot, probe=None):
        self.dp = dp
        self.first_slot = first_slot
        self.probe = probe if probe is not None else TcpProbe()
        self.groups = []
        for i, g in enumerate(groups):
            servers = [s["address"] for s in g["servers"]]
            st = {"cfg": g, "slot": first_slot + i, "hbas": parse(g["assignment"]), "servers": servers,
                  "up": set(servers) if g["health"] is None else set(),
                  "fails": {}, "next": {}, "pending": {}, "checks": 0, "changes": 0, "last_error": ""}
            for s in servers:
                st["fails"][s] = 0
                st["next"][s] = None
            self.groups.append(st)

    def program(self):
        """set_group/set_caches/set_hash (or clear_assignment) of every static slot."""
        for i, st in enumerate(self.groups):
            g = st["cfg"]
            slot = st["slot"]
            fw = FWD_BITS[g["forwarding"]]
            self.dp.set_group(slot, service_of(g, i))
            self.dp.set_caches(slot, [{"address": ip2int(s["address"]), "forward": fw, "ret": fw,
                                       "mac": s["mac"], "port": s["port"]} for s in g["servers"]])
            if st["up"]:
                self.dp.set_hash(slot, buckets_for(st["hbas"], st["servers"], st["up"]))
            else:
                self.dp.clear_assignment(slot)

    def targets(self):
        """Addresses of the servers whose location is not configured: active discovery finds them."""
        return [ip2int(s["address"]) for st in self.groups for s in st["cfg"]["servers"] if s["mac"] is None]

    def tick(self, now=None):
        if now is None:
            now = _ticks()
        changed = False
        for st in self.groups:
            hc = st["cfg"]["health"]
            if hc is None:
                continue
            for s in st["servers"]:
                changed |= self._check(st, s, hc, now)
        if changed:
            self.program()
            self.dp.commit()
        return changed

    def _check(self, st, s, hc, now):
        h = st["pending"].get(s)
        if h is None:
            nxt = st["next"][s]
            if nxt is not None and now - nxt < 0:
                return False
            st["next"][s] = now + hc["interval_ms"]
            try:
                st["pending"][s] = (self.probe.start(s, hc["tcp_port"]), now)
            except Exception as e:  # noqa: BLE001 - e.g. no route: a failed check
                st["last_error"] = "%s: %s" % (s, e)
                return self._result(st, s, hc, False)
            return False
        handle, t0 = h
        try:
            ok = self.probe.result(handle)
        except Exception as e:  # noqa: BLE001
            st["last_error"] = "%s: %s" % (s, e)
            ok = False
        if ok is None and now - t0 < hc["timeout_ms"]:
            return False
        self.probe.close(handle)
        del st["pending"][s]
        return self._result(st, s, hc, bool(ok))

    def _result(self, st, s, hc, ok):
        st["checks"] += 1
        if ok:
            st["fails"][s] = 0
            if s not in st["up"]:
                st["up"].add(s)
                st["changes"] += 1
                return True
            return False
        st["fails"][s] += 1
        if s in st["up"] and st["fails"][s] >= hc["fails"]:
            st["up"].discard(s)
            st["changes"] += 1
            return True
        return False

    def status(self):
        out = []
        for i, st in enumerate(self.groups):
            g = st["cfg"]
            tab = buckets_for(st["hbas"], st["servers"], st["up"]) if st["up"] else bytes([UNASSIGNED]) * 256
            per = {}
            for b in range(NUM_BUCKETS):
                if tab[b] != UNASSIGNED:
                    per.setdefault(st["servers"][tab[b]], []).append(b)
            out.append({"name": g["name"], "slot": st["slot"], "service_id": FIRST_SERVICE_ID + i,
                        "hash": g["hash"], "forwarding": g["forwarding"],
                        "servers": [{"address": s, "up": s in st["up"], "fails": st["fails"][s],
                                     "buckets": format_ranges(per.get(s, []))} for s in st["servers"]],
                        "checks": st["checks"], "changes": st["changes"], "last_error": st["last_error"]})
        return out
