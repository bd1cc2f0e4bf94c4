"""WCCPv2 router control plane: a pure state machine (no sockets, clock injected).

    r = Router(config, dataplane, now_ms, storage=None)
    out = r.receive(data, src_ip, src_port, dst_ip, now_ms)   # one UDP datagram in
    out = r.tick(now_ms)                                      # timers
    # out: list of (dst_ip, dst_port, src_ip, payload) datagrams to send (from UDP 2048)
    r.status()                                                # whole state as a JSON-able dict

Addresses at this interface are dotted strings; inside they are ints (codec convention).
``config`` is a normalised dict from ``wccp.config.load``. ``dataplane`` implements
``wccp.dataplane.DataPlane``; every accepted assignment reaches it as one transaction
(set_caches + set_hash/set_mask/clear_assignment, then one commit). ``storage``
(``wccp.storage``) persists the boot counter that seeds the member change numbers, so a
rebooted router never repeats a change number caches have already seen; when it cannot be
read or written the change numbers start at a random value instead and /status says so
(boot_persisted false, storage_error).

Behaviour (reference §6, §12, §13; docs/status.md lists the counters):
* Service groups from config; the standard web-cache service (0) is programmed as TCP dst
  port 80 hashed on destination IP, dynamic services are defined by the first cache that
  becomes usable and forgotten when the last one leaves. Conflicting definitions and
  unconfigured services are dropped and counted.
* A HERE_I_AM must come from the address in its Web-Cache Identity (the allowed-cache list
  is checked against that sender); others are dropped (identity_mismatch).
* HERE_I_AM -> unicast I_SEE_YOU from the address the cache sent to; every HERE_I_AM gets
  an answer (first contact, stale Receive ID), but a cache becomes usable only after a HIA
  echoing the last Receive ID sent to it (per group counter, never 0) and carrying
  capabilities the group supports (L2 only for caches configured as L2-adjacent; the first
  usable cache fixes the group's assignment method until the group empties). HIAs sent to
  the group's multicast address are answered by the multicast I_SEE_YOU every 9 s +-10 %.
* Router View: member change number (bumped on every membership change), key of the last
  accepted assignment, routers reported by the caches, usable caches as 44-byte hash
  identity elements or Cisco-shaped mask elements; mask groups also get an Assignment Map.
* REDIRECT_ASSIGN: Assignment Info (6) or Alternate Assignment (13, hash or mask) from a
  usable cache, sent from the address in its Assignment Key (the designated cache speaks
  for itself), whose Router Assignment Element for us carries the Receive ID last sent to it
  (or the one before, for the in-flight race) and the current member change number. An RA
  from that cache that does not list this router starts the 5T flush timer (v2-01/v2-03
  section 4.8; docs/protocol.md). Receive IDs start at a random value per group.
* tick() feeds the data plane's fail-open watchdog; next_deadline() asks for a tick at least
  every min(T/10, watchdog/3) = 1 s with the defaults, independently of T.
* Timers (T = timers.here_i_am_ms, default 10 s): REMOVAL_QUERY at 2.5T of silence, removal
  at 3T (purged from the assignment at once), flush 5T after a membership change without a
  valid assignment. SHUTDOWN (command extension 1) removes the cache at once and is
  answered with SHUTDOWN_RESPONSE.
* Hostile input: caches per group bounded (max_caches), unvalidated ("pending") caches
  bounded per group (limits.max_pending) and overall (limits.max_total_caches). HIAs that do
  not echo a Receive ID we sent (possibly forged) are answered at most
  limits.unverified_per_source times per T per source and limits.unverified_per_second
  overall (wccp.admission). A first contact while the pending table is full is answered
  without state (cookie Receive ID); only a sender echoing it may evict, and only an entry
  that never echoed. Every dropped datagram is counted by reason; nothing raises out of
  receive()/tick().
"""
try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

import struct

from wccp import codec
from wccp import dataplane as _dpmod
from wccp.admission import Admission, Prefixes
from wccp import policy as _policy
from wccp.discovery import Discovery
from wccp.storage import MemStorage, next_boot

_pack_into = struct.pack_into

HERE_I_AM = const(10)
I_SEE_YOU = const(11)
REDIRECT_ASSIGN = const(12)
REMOVAL_QUERY = const(13)
VERSION = const(0x0200)
WCCP_PORT = const(2048)

SF_DST_IP_HASH = const(0x0002)
SF_PORTS_DEFINED = const(0x0010)

WCI_U = const(0x0001)
WCI_U_V201 = const(0x8000)

METHOD_BITS = {"gre": 1, "l2": 2, "hash": 1, "mask": 2}
METHOD_NAMES = {1: "gre", 2: "l2"}
ASSIGN_NAMES = {0: None, 1: "hash", 2: "mask"}

MAX_CACHES = const(32)
MAX_GROUPS = const(8)
# what the data plane can hold (wccp.dataplane); assignments beyond it are refused, counted
DP_MASK_SETS = getattr(_dpmod, "MAX_MASK_SETS", 4)
DP_MASK_VALUES = getattr(_dpmod, "MAX_MASK_VALUES", 128)
DP_MASK_BITS = getattr(_dpmod, "MAX_MASK_BITS", 7)
# the data-plane watchdog is armed with its default timeout; tick() feeds it 3 times per timeout
HEARTBEAT_MS = getattr(_dpmod, "DEFAULT_WATCHDOG_MS", 3000) // 3


def max_message(limits):
    """Largest datagram the router accepts (bytes) under these limits: receive buffers are
    sized from it; anything longer is dropped whole (``oversize``), never parsed cut."""
    r = limits["max_routers"]
    fixed = 8 + 24 + 28                         # header, MD5 security, Service Info
    ra_hash = 4 + 8 + 4 + 12 * r + 4 + 4 * MAX_CACHES + 256
    ra_mask = 4 + 4 + 8 + 4 + 12 * r + 4 + DP_MASK_SETS * 16 + 16 * limits["max_mask_values"]
    hia = (4 + 12 + 4 + 16 * (DP_MASK_SETS + DP_MASK_VALUES)) + (4 + 8 + 8 * r + 4 + 4 * MAX_CACHES)
    caps = 4 + 8 * 8 + 4 + 16                   # capabilities, command extension
    return fixed + max(ra_hash, ra_mask, hia) + caps


def _popcount(x):
    n = 0
    while x:
        x &= x - 1
        n += 1
    return n

# The effective definition of the well-known web-cache service (reference 4.2, 7.2).
WEB_CACHE_DEFINITION = {"service_type": 0, "service_id": 0, "priority": 240, "protocol": 6,
                        "service_flags": SF_DST_IP_HASH | SF_PORTS_DEFINED,
                        "ports": [80, 0, 0, 0, 0, 0, 0, 0]}

# Counter names (docs/status.md). Drops: the datagram was discarded. Events: it was answered
# or processed but something was refused.
DROP_REASONS = ("malformed", "bad_address", "own_packet", "address_table", "unexpected_type", "unconfigured_service",
                "security_mismatch", "md5_failure", "service_conflict", "service_not_permitted", "cache_not_allowed",
                "identity_mismatch",
                "bad_cache_address", "state_full", "ra_unknown_cache", "ra_stale_receive_id",
                "ra_stale_change_number", "ra_not_listed", "ra_wrong_sender", "ra_method_mismatch", "ra_too_large",
                "ra_unsupported", "ra_bad_caches", "ra_mask_too_wide", "ra_dataplane_refused", "internal_error",
                "no_memory", "rate_limited_source", "rate_limited_global", "oversize")


def _new_counters():
    return {"rx": 0, "hia_rx": 0, "ra_rx": 0, "isy_tx": 0, "rq_tx": 0, "hia_valid": 0,
            "hia_invalid_receive_id": 0, "capability_mismatch": 0, "group_full": 0, "joins": 0,
            "removals_timeout": 0, "removals_shutdown": 0, "removals_capability": 0,
            "pending_evicted": 0, "pending_expired": 0, "isy_stateless": 0, "ra_accepted": 0, "ra_unknown_cache_entries": 0,
            "flushes": 0, "dataplane_commits": 0, "dataplane_errors": 0}


# A cache (web-cache) known to a group is a list of 16 slots (compact on MicroPython), indexed by:
C_ADDR = const(0)        # its address (int; the dict key object, shared)
C_BITS = const(1)        # B_* state bits | forwarding << 3 | return << 5 | assignment << 7 | id flags << 9
C_RID = const(2)         # last Receive ID sent to it (0 = none yet)
C_RID_PREV = const(3)    # the one before (in-flight RA tolerance)
C_LAST_HIA = const(4)    # time of the last HERE_I_AM of any kind
C_LAST_VALID = const(5)  # time of the last valid HERE_I_AM (liveness)
C_JOINED = const(6)      # became usable at
C_REPLY = const(7)       # 0: answer (its address, 2048); else (source address int, source port)
C_SENT_TO = const(8)     # the address it sends HIAs to (int)
C_WEIGHT = const(9)
C_STATUS = const(10)
C_MASKS = const(11)      # first mask element of its mask identity (unassigned view shape) or None
C_ROUTERS = const(12)    # router IDs it reports (shared tuple)
C_SERVICE = const(13)    # the Service Info echoed to it
C_REASON = const(14)     # why it is not usable ("" when usable)
C_HIAS = const(15)       # HIAs received

B_USABLE = const(1)      # usable member (after a valid HIA with acceptable capabilities)
B_MCAST = const(2)       # it sends HIAs to the group's multicast address
B_QUERY = const(4)       # REMOVAL_QUERY sent since its last valid HIA
B_ECHOED = const(1 << 25)  # it has echoed a Receive ID we sent: it receives at its address
_CAPS_MASK = const(0x1F8)
_FLAGS_MASK = const(0x1FFFE00)
_INIT_BITS = const((1 << 3) | (1 << 5) | (1 << 7))      # GRE / GRE / hash


def _new_cache(addr, now):
    return [addr, _INIT_BITS, 0, 0, now, now, now, 0, 0, 0, 0, None, (), None, "first contact", 0]


def is_usable(c):
    return c[C_BITS] & B_USABLE


def _setbit(c, bit, on):
    if on:
        c[C_BITS] |= bit
    else:
        c[C_BITS] &= ~bit


def _fwd(c):
    return (c[C_BITS] >> 3) & 3


def _ret(c):
    return (c[C_BITS] >> 5) & 3


def _asg(c):
    return (c[C_BITS] >> 7) & 3


def _idflags(c):
    return (c[C_BITS] >> 9) & 0xFFFF


class Group:
    def __init__(self, scfg, router):
        self.cfg = scfg
        self.stype = 0 if scfg["type"] == "standard" else 1
        self.sid = scfg["id"]
        self.password = scfg["password"]
        self.mcast_ip = scfg["multicast"]
        self.mcast = codec.ip2int(self.mcast_ip) if self.mcast_ip else None
        fwd = 0
        for m in scfg["forwarding"]:
            fwd |= METHOD_BITS[m]
        ret = 0
        for m in scfg["return"]:
            ret |= METHOD_BITS[m]
        asg = 0
        for m in scfg["assignment"]:
            asg |= METHOD_BITS[m]
        self.fwd_mask = fwd
        self.ret_mask = ret
        self.assign_mask = asg
        self.l2 = {}
        for e in scfg["l2_adjacent"]:
            mac = e.get("mac")
            self.l2[codec.ip2int(e["address"])] = _mac_bytes(mac) if mac else None
        allowed = scfg.get("caches")
        if allowed is None:
            allowed = router.cfg.get("cache_subnets")
        self.allowed = Prefixes(allowed) if allowed is not None else None
        self.closed = scfg.get("closed", False)
        self.acl = _policy.acl(scfg.get("redirect_list"))
        self.service_list = scfg.get("service_list")
        self.max_caches = scfg["max_caches"]
        self.std_info = {"service_type": 0, "service_id": self.sid, "priority": 0, "protocol": 0,
                         "service_flags": 0, "ports": [0, 0, 0, 0, 0, 0, 0, 0]}
        if self.stype == 0:
            self.definition = WEB_CACHE_DEFINITION
        else:
            self.definition = None
        self.slot = -1
        if router.boot_persisted:
            seed = ((router.boot & 0xFFFF) << 16)
        else:
            seed = router._random32() & 0xFFFF0000   # the boot counter may repeat: random
        self.rid = router._random32()   # not guessable from the boot counter
        self.mcn = seed | 1
        self.key_addr = 0
        self.key_cn = 0
        self.locked_assign = 0
        self.caches = {}
        self.order = []            # usable cache addresses in join order
        self.assignment = None
        self.change_ms = None      # membership change awaiting a valid assignment
        self.next_mc = None
        self.template = None       # encoded unicast I_SEE_YOU to patch (None = rebuild)
        self.counters = _new_counters()
        self.drops = {}

    def key(self):
        return (self.stype, self.sid)

    def name(self):
        return "%s %d" % ("standard" if self.stype == 0 else "dynamic", self.sid)


def _find_component(b, ctype):
    """Offset of the body of component ctype in an encoded message, or -1."""
    end = 8 + ((b[6] << 8) | b[7])
    o = 8
    while o + 4 <= end:
        t = (b[o] << 8) | b[o + 1]
        ln = (b[o + 2] << 8) | b[o + 3]
        if t == ctype:
            return o + 4
        o += 4 + ln
    return -1


def _mac_bytes(text):
    out = bytearray(6)
    parts = text.replace("-", ":").split(":")
    for i in range(6):
        out[i] = int(parts[i], 16)
    return bytes(out)


def _def_tuple(s):
    return (s["priority"], s["protocol"], s["service_flags"], tuple(s["ports"]))


def _single_bit(v):
    return v in (1, 2)


class Router:
    def __init__(self, config, dataplane, now_ms=0, storage=None, seed=None):
        self.cfg = config
        self.dp = dataplane
        self.storage = storage if storage is not None else MemStorage()
        self.boot, self.boot_persisted = next_boot(self.storage)
        self.started = now_ms
        self.now = now_ms
        self.router_id = codec.ip2int(config["router_id"])
        self.router_ip = config["router_id"]
        self.addresses = list(config["addresses"])
        self.addr_set = set(self.addresses)
        self.my_ids = set(codec.ip2int(a) for a in self.addresses)
        self.my_ids.add(self.router_id)
        self.addr_ints = {}      # int -> the one int object for each of our addresses (shared)
        self.addr_strs = {}      # int -> our address string
        for a in self.addresses:
            n = codec.ip2int(a)
            self.addr_ints[n] = n
            self.addr_strs[n] = a
        self.rtuples = {}
        self._dp_retry = False
        self.T = config["timers"]["here_i_am_ms"]
        lim = config["limits"]
        self.max_pending = lim["max_pending"]
        self.max_total = lim["max_total_caches"]
        self.max_routers = lim["max_routers"]
        self.max_values = lim["max_mask_values"]
        self.adm = Admission(self.T, lim["unverified_per_source"], lim["unverified_per_second"],
                             lim["unverified_burst"])
        self.total = 0
        self.counters = _new_counters()
        self.drops = {}
        self.last_malformed = ""
        self.last_error = ""
        if seed is None:
            try:
                import os
                b = os.urandom(4)
                seed = (b[0] << 24) | (b[1] << 16) | (b[2] << 8) | b[3]
            except Exception:  # noqa: BLE001
                seed = 12345
        self._rng = (seed & 0x7FFFFFFF) or 1
        self.buf = bytearray(4096)
        self.bufmv = memoryview(self.buf)
        self.msg = {}            # decode() output, reused for every datagram (nothing keeps parts of it)
        self.targets = None      # usable caches' addresses in groups with a slot (_discover)
        self.out1 = [None]       # receive_view()'s answer to a HERE_I_AM (reused)
        self.why = ""
        self.groups = []
        self.by_key = {}
        for s in config["services"]:
            g = Group(s, self)
            self.groups.append(g)
            self.by_key[g.key()] = g
            if g.mcast is not None:
                g.next_mc = now_ms + self._jitter()
        # when every group has a group-list, senders outside all of them are dropped unparsed
        self.senders = None
        if all(g.allowed is not None for g in self.groups):
            nets = []
            for g in self.groups:
                nets += g.allowed.nets
            self.senders = Prefixes(())
            self.senders.nets = nets
        try:
            self.dp.configure(self.router_id, _mac_bytes(config["mac"]), min(config["mtu"], 1500))
        except Exception as e:  # noqa: BLE001
            self._dp_error(None, e)
        self.discovery = Discovery(self.dp, _mac_bytes(config["mac"]), getattr(self.dp, "num_ports", 2))
        self._reprogram_slots()
        arm = getattr(self.dp, "arm", None)   # fail-open watchdog: armed once, fed by tick()
        if arm is not None:
            try:
                arm()
                self.dp.heartbeat()
            except Exception as e:  # noqa: BLE001
                self._dp_error(None, e)

    # ---------------------------------------------------------------- helpers
    def _random32(self):
        try:
            import os
            b = os.urandom(4)
            return (b[0] << 24) | (b[1] << 16) | (b[2] << 8) | b[3]
        except Exception:  # noqa: BLE001 - no entropy source: the jitter generator
            self._jitter()
            return self._rng

    def _jitter(self):
        # 9 s +-10 % scaled to T (0.9 T): uniform in [0.81 T, 0.99 T]
        self._rng = (self._rng * 1103515245 + 12345) & 0x7FFFFFFF
        base = self.T * 9 // 10
        return base - base // 10 + (self._rng % (base // 5 + 1))

    def _drop(self, g, reason):
        self.drops[reason] = self.drops.get(reason, 0) + 1
        if g is not None:
            g.drops[reason] = g.drops.get(reason, 0) + 1
        return []

    def _count(self, g, name, n=1):
        self.counters[name] += n
        if g is not None:
            g.counters[name] += n

    def _dp_error(self, g, e):
        if not isinstance(e, ValueError):
            self._dp_retry = True   # I/O trouble: tick() rewrites every table until a commit succeeds
        self._count(g, "dataplane_errors")
        self.last_error = "dataplane: %s: %s" % (type(e).__name__, e)

    def _encode(self, msg, g):
        pw = g.password
        try:
            n = codec.encode(msg, self.buf, pw)
            return bytes(self.buf[:n])
        except codec.WccpError:
            return codec.encode(msg, None, pw)

    def _security(self, g):
        if g.password:
            return {"option": 1, "digest": None}
        return {"option": 0}

    def _reply(self, c):
        """(ip, port) to answer the cache at: where its HIAs come from."""
        r = c[C_REPLY]
        if not r:
            return (codec.int2ip(c[C_ADDR]), WCCP_PORT)
        return (codec.int2ip(r[0]), r[1])

    def _local_ip(self, c):
        """Our address the cache talks to (unicast source of our replies)."""
        if c[C_BITS] & B_MCAST:
            return self.addresses[0]
        s = self.addr_strs.get(c[C_SENT_TO])
        return s if s is not None else codec.int2ip(c[C_SENT_TO])

    def _view_ids(self, view):
        """Router IDs a cache reports (its Web-Cache View), ours as our router ID, no
        duplicates, at most max_routers."""
        routers = []
        for r in view:
            rid = r["router_id"]
            if rid in self.my_ids:
                rid = self.router_id
            if rid not in routers and len(routers) < self.max_routers:
                routers.append(rid)
        return routers

    def _same_routers(self, view, t):
        """_view_ids(view) == list(t), without building the list (steady state: equal)."""
        i = 0
        n = len(t)
        for r in view:
            rid = r["router_id"]
            if rid in self.my_ids:
                rid = self.router_id
            if i < n and t[i] == rid:
                i += 1
                continue
            j = 0
            while j < i and t[j] != rid:
                j += 1
            if j < i or i >= self.max_routers:
                continue            # a repeat, or beyond max_routers: not listed
            return False
        return i == n

    def _rtuple(self, routers):
        """Shared tuple of router IDs (most caches report the same list)."""
        t = tuple(routers)
        r = self.rtuples.get(t)
        if r is None:
            if len(self.rtuples) > 64:
                self.rtuples = {}
            self.rtuples[t] = t
            r = t
        return r

    def _dirty(self, g):
        g.template = None

    # ---------------------------------------------------------------- data plane
    def _reprogram_slots(self):
        """Give every defined group a slot (priority order) and reprogram everything."""
        defined = [(-g.definition["priority"], i, g) for i, g in enumerate(self.groups)
                   if g.definition is not None]
        # priority order, highest first; config order breaks ties (explicit: MicroPython's sort
        # is not stable)
        defined.sort(key=lambda e: (e[0], e[1]))
        defined = [e[2] for e in defined]
        # learnt cache locations are kept per (slot, index): carry them to a group's new slot
        locs = self._locations(defined)
        self.targets = None
        for g in self.groups:
            g.slot = -1
        try:
            for i, g in enumerate(defined):
                g.slot = i
                d = g.definition
                self.dp.set_group(i, {"service_type": d["service_type"], "service_id": d["service_id"],
                                      "priority": d["priority"], "protocol": d["protocol"],
                                      "service_flags": d["service_flags"], "ports": list(d["ports"])})
                try:
                    self._program_tables(g)
                except ValueError as e:
                    # the data plane refuses this group's tables (e.g. a policy it cannot hold):
                    # it is not redirected, the other groups are
                    self._dp_error(g, e)
                    self.dp.clear_assignment(i)
            for i in range(len(defined), MAX_GROUPS):
                self.dp.clear_group(i)
            for g, old, found in locs:
                if g.slot != old:
                    for i, loc in found:
                        self.dp.set_cache_location(g.slot, i, loc[0], loc[1])
            self.dp.commit()
            self._dp_retry = False
            self._count(None, "dataplane_commits")
        except Exception as e:  # noqa: BLE001
            self._dp_error(None, e)
        self.targets = None

    def _locations(self, groups):
        """[(group, its current slot, [(index, (mac, port)), ...])] for groups with a slot."""
        get = getattr(self.dp, "cache_location", None)
        out = []
        if get is None:
            return out
        for g in groups:
            if g.slot < 0:
                continue
            found = []
            try:
                for i in range(len(self._dp_addrs(g))):
                    loc = get(g.slot, i)
                    if loc is not None:
                        found.append((i, loc))
            except Exception as e:  # noqa: BLE001 - relearnt from the caches' frames
                self._dp_error(g, e)
            out.append((g, g.slot, found))
        return out

    def _dp_cache(self, g, addr):
        c = g.caches.get(addr)
        if c is not None and c[C_BITS] & B_USABLE:
            fwd, ret = _fwd(c), _ret(c)
        else:
            fwd, ret = 1, 1
        return {"address": addr, "forward": fwd, "ret": ret, "mac": g.l2.get(addr)}

    def _program_tables(self, g):
        """set_caches + assignment for g's slot (no commit)."""
        a = g.assignment
        addrs = self._dp_addrs(g)
        self.dp.set_caches(g.slot, [self._dp_cache(g, x) for x in addrs])
        sp = getattr(self.dp, "set_policy", None)
        if sp is not None:
            sp(g.slot, g.closed, g.acl)
        elif g.closed or g.acl:
            raise ValueError("this data plane cannot enforce closed services or redirect-lists")
        if a is None:
            self.dp.clear_assignment(g.slot)
        elif a["type"] == "hash":
            self.dp.set_hash(g.slot, bytes(a["buckets"]))
        else:
            idx = {}
            for i, x in enumerate(a["caches"]):
                idx[x] = i
            sets = []
            for s in a["sets"]:
                m = s["masks"]
                vals = []
                for v in s["values"]:
                    vals.append((v["src_addr"], v["dst_addr"], v["src_port"], v["dst_port"],
                                 idx[v["cache_address"]]))
                sets.append({"masks": (m["src_addr"], m["dst_addr"], m["src_port"], m["dst_port"]),
                             "values": vals})
            self.dp.set_mask(g.slot, sets)

    def _apply(self, g):
        """Program g's tables and commit them as one transaction. False if the data plane refused."""
        if g.slot < 0:
            return True
        try:
            self._program_tables(g)
            self.dp.commit()
            self._count(g, "dataplane_commits")
            self._discover()
            return True
        except Exception as e:  # noqa: BLE001
            self._dp_error(g, e)
            return False

    # ---------------------------------------------------------------- entry points
    def receive(self, data, src_ip, src_port, dst_ip, now_ms):
        """Handle one datagram received on UDP 2048. Never raises. Payloads are bytes."""
        return [(d[0], d[1], d[2], bytes(d[3])) if isinstance(d[3], memoryview) else d
                for d in self.receive_view(data, src_ip, src_port, dst_ip, now_ms)]

    def receive_view(self, data, src_ip, src_port, dst_ip, now_ms):
        """receive(), but a payload may be a memoryview of the router's send buffer, valid
        until the next call into the router (the app sends it at once): the steady-state
        I_SEE_YOU is answered without copying it."""
        self.now = now_ms
        try:
            return self._receive(data, src_ip, src_port, dst_ip, now_ms)
        except MemoryError:
            return self._drop(None, "no_memory")
        except Exception as e:  # noqa: BLE001 - nothing escapes the receive loop
            self.last_error = "%s: %s" % (type(e).__name__, e)
            return self._drop(None, "internal_error")

    def tick(self, now_ms):
        """Run the timers. Never raises."""
        self.now = now_ms
        out = []
        for g in self.groups:
            try:
                self._tick_group(g, now_ms, out)
            except MemoryError:
                self._drop(g, "no_memory")
            except Exception as e:  # noqa: BLE001
                self.last_error = "tick: %s: %s" % (type(e).__name__, e)
                self._drop(g, "internal_error")
        if self._dp_retry:
            self._reprogram_slots()
        try:
            self.dp.heartbeat()
        except Exception as e:  # noqa: BLE001
            self._dp_error(None, e)
        self._discover()
        return out

    def oversize(self, n):
        """A datagram longer than max_message() arrived (not parsed): count it."""
        self.counters["rx"] += 1
        self.last_malformed = "datagram longer than %d bytes" % (n - 1)
        self._drop(None, "oversize")

    def next_deadline(self, now_ms):
        """Milliseconds until tick() must run again: at most T/10 (timers), at most a third of
        the data plane's fail-open watchdog timeout (tick() feeds it) whatever T is, and sooner
        when active discovery waits for probe replies."""
        d = max(10, min(self.T // 10, HEARTBEAT_MS))
        p = self.discovery.next_ms(now_ms)
        return d if p is None else max(1, min(d, p))

    def _discover(self):
        """Active discovery (wccp.discovery) of the usable caches in the data plane. Never raises.
        The set of their addresses is kept until membership or slots change."""
        targets = self.targets
        if targets is None:
            targets = set()
            for g in self.groups:
                if g.slot >= 0:
                    targets.update(g.order)
            self.targets = targets
        try:
            self.discovery.run(self.now, targets)
        except Exception as e:  # noqa: BLE001
            self._dp_error(None, e)

    # ---------------------------------------------------------------- receive path
    def _receive(self, data, src_ip, src_port, dst_ip, now):
        self.counters["rx"] += 1
        if src_ip in self.addr_set:
            return self._drop(None, "own_packet")
        try:
            dst = codec.ip2int(dst_ip)
            src = codec.ip2int(src_ip)
        except (codec.WccpError, TypeError, AttributeError):
            return self._drop(None, "bad_address")
        if self.senders is not None and not self.senders.match(src):
            return self._drop(None, "cache_not_allowed")
        try:
            msg = codec.decode(data, self.msg)
        except codec.WccpError as e:
            self.last_malformed = e.reason
            return self._drop(None, "malformed")
        if "address_table" in msg or "alternate_assignment_map" in msg:
            return self._drop(None, "address_table")
        t = msg["type"]
        if t != HERE_I_AM and t != REDIRECT_ASSIGN:
            return self._drop(None, "unexpected_type")
        svc = msg["service"]
        g = self.by_key.get((svc["service_type"], svc["service_id"]))
        if g is None:
            return self._drop(None, "unconfigured_service")
        g.counters["rx"] += 1
        sec = msg["security"]["option"]
        if g.password:
            if sec != 1:
                return self._drop(g, "security_mismatch")
            if not codec.verify_md5(data, g.password):
                return self._drop(g, "md5_failure")
        elif sec != 0:
            return self._drop(g, "security_mismatch")
        if g.stype == 1 and g.definition is not None and _def_tuple(svc) != _def_tuple(g.definition):
            return self._drop(g, "service_conflict")
        if t == HERE_I_AM and g.stype == 1 and g.definition is None and g.service_list is not None:
            why = _policy.definition_permitted(g.service_list, svc)
            if why is not None:
                self.last_error = "service %d: %s" % (g.sid, why)
                return self._drop(g, "service_not_permitted")
        if t == HERE_I_AM:
            self._count(g, "hia_rx")
            return self._hia(g, msg, src, src_ip, src_port, dst, now)
        self._count(g, "ra_rx")
        return self._ra(g, msg, src, now)

    def _make_room(self, g, evict):
        """Room for one more pending cache in g. Only a sender that has echoed a Receive ID
        (evict true) may evict, and only the oldest entry that has never echoed one."""
        pend = 0
        oldest = None
        for c in g.caches.values():
            if not c[C_BITS] & B_USABLE:
                pend += 1
                if not c[C_BITS] & B_ECHOED and (oldest is None or c[C_LAST_HIA] < oldest[C_LAST_HIA]):
                    oldest = c
        if pend < self.max_pending and self.total < self.max_total:
            return True
        if not evict or oldest is None:
            return False
        del g.caches[oldest[C_ADDR]]
        self.total -= 1
        self._count(g, "pending_evicted")
        return True

    def _caps(self, g, msg, addr):
        """The HIA's Capabilities (absent: GRE/hash/GRE) as forwarding | assignment << 4 |
        return << 8, or -1 when the group cannot accept them (the reason in self.why)."""
        fwd = asg = ret = 1
        for e in msg.get("capabilities", ()):
            t = e["type"]
            if t < 1 or t > 3:
                continue
            v = e["value"]
            if not isinstance(v, int) or not _single_bit(v):
                return self._refuse("capability %d value not a single known method" % t)
            if t == 1:
                fwd = v
            elif t == 2:
                asg = v
            else:
                ret = v
        if not fwd & g.fwd_mask:
            return self._refuse("forwarding method %s not supported" % METHOD_NAMES[fwd])
        if not ret & g.ret_mask:
            return self._refuse("return method %s not supported" % METHOD_NAMES[ret])
        if not asg & g.assign_mask:
            return self._refuse("assignment method %s not supported" % ASSIGN_NAMES[asg])
        if (fwd == 2 or ret == 2) and addr not in g.l2:
            return self._refuse("L2 requested by a cache not configured as L2-adjacent")
        if g.locked_assign and asg != g.locked_assign:
            return self._refuse("group uses %s assignment" % ASSIGN_NAMES[g.locked_assign])
        return fwd | (asg << 4) | (ret << 8)

    def _refuse(self, why):
        self.why = why
        return -1

    def _hia(self, g, msg, src, src_ip, src_port, dst, now):
        ident = msg["web_cache_identity"]
        addr = ident["address"]
        if addr == 0 or addr == 0xFFFFFFFF or (addr >> 28) == 0xE or addr in self.my_ids:
            return self._drop(g, "bad_cache_address")
        if addr != src:
            # a cache speaks from its own address (the one GRE/L2 redirection goes to):
            # anything else claims another host's identity
            return self._drop(g, "identity_mismatch")
        if g.allowed is not None and not g.allowed.match(addr):
            return self._drop(g, "cache_not_allowed")
        seen = None
        for r in msg["web_cache_view"]["routers"]:
            if r["router_id"] in self.my_ids:
                seen = r["receive_id"]
                break
        c = g.caches.get(addr)
        if c is None:
            if seen and self.adm.cookie_ok(addr, seen, now):
                # echoes a stateless answer: it receives at this address
                if not self._make_room(g, True):
                    return self._drop(g, "state_full")
                c = self._add_cache(g, addr, now)
                c[C_RID] = seen
                c[C_BITS] |= B_ECHOED
            else:
                why = self.adm.limit(src, now)
                if why is not None:
                    return self._drop(g, why)
                if not self._make_room(g, False):
                    if g.mcast is not None and dst == g.mcast:
                        return self._drop(g, "state_full")
                    return [self._isy_stateless(g, msg, addr, src_port, dst, now)]
                c = self._add_cache(g, addr, now)
        elif not (seen and (seen == c[C_RID] or seen == c[C_RID_PREV])):
            why = self.adm.limit(src, now)     # not echoing what we sent: maybe forged
            if why is not None:
                return self._drop(g, why)
        addr = c[C_ADDR]                     # the shared int object
        if src == addr and src_port == WCCP_PORT:
            c[C_REPLY] = 0
        elif not c[C_REPLY] or c[C_REPLY][0] != src or c[C_REPLY][1] != src_port:
            c[C_REPLY] = (src, src_port)
        c[C_SENT_TO] = self.addr_ints.get(dst, dst)
        _setbit(c, B_MCAST, g.mcast is not None and dst == g.mcast)
        c[C_LAST_HIA] = now
        c[C_HIAS] += 1
        valid = seen is not None and c[C_RID] != 0 and seen == c[C_RID]
        if valid:
            c[C_BITS] |= B_ECHOED
        if valid or not c[C_BITS] & B_USABLE:
            # identity data (weight/status opaque, re-advertised unchanged)
            w = ident.get("weight", 0)
            st = ident.get("status", 0)
            fl = ident["flags"]
            masks = None
            if ident["data_type"] == "mask" and ident.get("mask_value_sets"):
                m = ident["mask_value_sets"][0]["masks"]
                masks = (m["src_addr"], m["dst_addr"], m["src_port"], m["dst_port"])
            rt = c[C_ROUTERS]
            view = msg["web_cache_view"]["routers"]
            if not self._same_routers(view, rt):
                rt = self._rtuple(self._view_ids(view))
            if w != c[C_WEIGHT] or st != c[C_STATUS] or fl != _idflags(c) or masks != c[C_MASKS] or \
                    rt is not c[C_ROUTERS]:
                c[C_WEIGHT] = w
                c[C_STATUS] = st
                c[C_BITS] = (c[C_BITS] & ~_FLAGS_MASK) | ((fl & 0xFFFF) << 9)
                c[C_MASKS] = masks
                c[C_ROUTERS] = rt
                if c[C_BITS] & B_USABLE:
                    self._dirty(g)
        svc = msg["service"]
        self._set_service(g, c, svc)
        shutdown = False
        for e in msg.get("command_extension", ()):
            if e["type"] == 1:
                shutdown = True
        if shutdown:
            if seen is not None and seen != 0 and (seen == c[C_RID] or seen == c[C_RID_PREV]):
                if c[C_BITS] & B_USABLE:
                    self._count(g, "removals_shutdown")
                self._remove(g, c, now)
                return [self._isy_unicast(g, c, shutdown_ack=True)]
            self._count(g, "hia_invalid_receive_id")
            c[C_REASON] = "SHUTDOWN with stale receive ID"
        elif valid:
            self._count(g, "hia_valid")
            caps = self._caps(g, msg, addr)
            if caps < 0:
                self._count(g, "capability_mismatch")
                c[C_REASON] = "capability mismatch: " + self.why
                if c[C_BITS] & B_USABLE:
                    self._count(g, "removals_capability")
                    self._unuse(g, c, now)
            else:
                fwd = caps & 15
                asg = (caps >> 4) & 15
                ret = caps >> 8
                moved = (c[C_BITS] & B_USABLE) and (fwd != _fwd(c) or ret != _ret(c))
                c[C_BITS] = (c[C_BITS] & ~_CAPS_MASK) | (fwd << 3) | (ret << 5) | (asg << 7)
                c[C_LAST_VALID] = now
                c[C_BITS] &= ~B_QUERY
                if moved:
                    self._apply(g)          # the data plane forwards/accepts by the new method
                if not c[C_BITS] & B_USABLE:
                    if len(g.order) >= g.max_caches:
                        self._count(g, "group_full")
                        c[C_REASON] = "group full (%d caches)" % g.max_caches
                    else:
                        self._join(g, c, svc, now)
        else:
            self._count(g, "hia_invalid_receive_id")
            if not c[C_BITS] & B_USABLE:
                c[C_REASON] = "first contact" if c[C_RID] == 0 else "stale receive ID"
        if c[C_BITS] & B_MCAST:
            return []   # answered by the scheduled multicast I_SEE_YOU
        # the answer goes where this HIA came from (C_REPLY was just set from it)
        out = self.out1
        out[0] = self._isy_unicast(g, c, False, src_ip, src_port)
        return out

    def _add_cache(self, g, addr, now):
        c = _new_cache(addr, now)
        g.caches[addr] = c
        self.total += 1
        return c

    def _set_service(self, g, c, svc):
        if g.stype == 0:
            c[C_SERVICE] = g.std_info       # a standard service carries only its ID (reference 4.2)
        elif g.definition is not None:
            c[C_SERVICE] = g.definition
        elif c[C_SERVICE] is None or _def_tuple(c[C_SERVICE]) != _def_tuple(svc):
            c[C_SERVICE] = {"service_type": svc["service_type"], "service_id": svc["service_id"],
                            "priority": svc["priority"], "protocol": svc["protocol"],
                            "service_flags": svc["service_flags"], "ports": list(svc["ports"])}

    def _isy_stateless(self, g, msg, addr, src_port, dst, now):
        """Answer a first contact while the pending table is full, keeping no state: the
        Receive ID is the admission cookie of its address (wccp.admission)."""
        c = _new_cache(addr, now)
        if src_port != WCCP_PORT:
            c[C_REPLY] = (addr, src_port)
        c[C_SENT_TO] = self.addr_ints.get(dst, dst)
        self._set_service(g, c, msg["service"])
        self._count(g, "isy_stateless")
        payload = self._isy(g, [c], c[C_SENT_TO], c[C_SERVICE], None, self._caps_adv(g, (c,)),
                            self.adm.cookie(addr, now))
        return self._reply(c) + (self._local_ip(c), payload)

    def _join(self, g, c, svc, now):
        redefined = False
        if g.definition is None:
            g.definition = c[C_SERVICE]
            redefined = True
        c[C_BITS] |= B_USABLE
        c[C_REASON] = ""
        c[C_JOINED] = now
        g.order.append(c[C_ADDR])
        if not g.locked_assign:
            g.locked_assign = _asg(c)
        self._count(g, "joins")
        self._membership_changed(g, now)
        if redefined:
            self._reprogram_slots()
        else:
            self._apply(g)

    def _membership_changed(self, g, now):
        self.targets = None
        g.mcn = (g.mcn + 1) & 0xFFFFFFFF or 1
        g.change_ms = now
        self._dirty(g)

    def _unuse(self, g, c, now):
        """A usable cache stops being usable (kept as a pending entry)."""
        c[C_BITS] &= ~B_USABLE
        if c[C_ADDR] in g.order:
            g.order.remove(c[C_ADDR])
        self._purge(g, c[C_ADDR])
        self._membership_changed(g, now)
        self._after_leave(g)

    def _remove(self, g, c, now):
        was = c[C_BITS] & B_USABLE
        if g.caches.get(c[C_ADDR]) is c:
            del g.caches[c[C_ADDR]]
            self.total -= 1
        if was:
            c[C_BITS] &= ~B_USABLE
            if c[C_ADDR] in g.order:
                g.order.remove(c[C_ADDR])
            self._purge(g, c[C_ADDR])
            self._membership_changed(g, now)
            self._after_leave(g)

    def _after_leave(self, g):
        if g.order:
            self._apply(g)
            return
        # group empty: forget the dynamic definition and the assignment lock (rev1)
        g.locked_assign = 0
        g.assignment = None
        g.key_addr = g.key_cn = 0
        g.change_ms = None
        if g.stype == 1 and not g.closed:
            g.definition = None
            self._reprogram_slots()
        else:
            self._apply(g)      # a closed service keeps its definition: its traffic stays dropped

    def _purge(self, g, addr):
        """Take addr out of the current assignment (its buckets/values become unassigned)."""
        a = g.assignment
        if a is None or addr not in a["caches"]:
            return
        i = a["caches"].index(addr)
        if a["type"] == "hash":
            b = a["buckets"]
            for n in range(256):
                v = b[n]
                # an alternate-flagged entry also names a cache when it is reached by the
                # secondary lookup (whose own alt flag is ignored): purge those too
                if v != 0xFF and (v & 0x7F) == i:
                    b[n] = 0xFF
        else:
            for s in a["sets"]:
                s["values"] = [v for v in s["values"] if v["cache_address"] != addr]
        a["gone"].append(addr)
        self._dirty(g)

    # ---------------------------------------------------------------- I_SEE_YOU
    def _next_rid(self, g):
        g.rid = (g.rid + 1) & 0xFFFFFFFF
        if g.rid == 0:
            g.rid = 1
        return g.rid

    def _view_elements(self, g):
        """Router View cache elements, built when needed (not kept: they would cost ~170 bytes
        per cache; the encoded unicast I_SEE_YOU template is kept instead)."""
        a = g.assignment
        els = []
        mask = (g.locked_assign or (2 if g.assign_mask == 2 else 1)) == 2
        bms = None
        if a is not None and a["type"] == "hash":
            bms = self._bitmaps(a)      # transient: only built when the template is rebuilt
        for addr in g.order:
            c = g.caches[addr]
            assigned = a is not None and addr in a["caches"] and addr not in a["gone"]
            if mask:
                m = c[C_MASKS]
                if m is not None:
                    m = {"src_addr": m[0], "dst_addr": m[1], "src_port": m[2], "dst_port": m[3]}
                els.append(codec.cisco_mask_view_element(addr, not assigned, m, c[C_WEIGHT], c[C_STATUS]))
            else:
                if assigned and a["type"] == "hash":
                    i = a["caches"].index(addr)
                    bm = bms[i * 32:i * 32 + 32]
                else:
                    bm = None
                uflag = 0
                if not assigned:
                    uflag = WCI_U_V201 if _idflags(c) & WCI_U_V201 else WCI_U
                els.append({"address": addr, "hash_revision": 0, "flags": uflag, "data_type": "hash",
                            "bucket_bitmap": bm, "weight": c[C_WEIGHT], "status": c[C_STATUS]})
        return els

    def _bitmaps(self, a):
        n = len(a["caches"])
        bm = bytearray(32 * n)
        b = a["buckets"]
        for k in range(256):
            v = b[k]
            if v & 0x80:
                continue
            if v < n:
                bm[v * 32 + (k >> 3)] |= 0x80 >> (k & 7)
        return bm

    def _view_routers(self, g):
        out = []
        for addr in g.order:
            for r in g.caches[addr][C_ROUTERS]:
                if r not in out and len(out) < self.max_routers:
                    out.append(r)
        return out

    def _caps_adv(self, g, caches):
        """Capabilities to advertise to these caches (_caps_word)."""
        l2 = True
        for c in caches:
            if c[C_ADDR] not in g.l2:
                l2 = False
        return self._caps_word(g, l2)

    def _caps_word(self, g, l2):
        """The group's capabilities as forwarding | assignment << 4 | return << 8 (one int:
        compared with the template's without allocating); L2 only if l2 (every cache
        addressed is L2-adjacent)."""
        fwd = g.fwd_mask
        ret = g.ret_mask
        if not l2:
            fwd &= ~2
            ret &= ~2
        return fwd | ((g.locked_assign or g.assign_mask) << 4) | (ret << 8)

    def _isy(self, g, caches, sent_to, service, shutdown_ack=None, caps=None, rid=None):
        if caps is None:
            caps = self._caps_adv(g, caches)
        if rid is None:
            rid = self._next_rid(g)
        for c in caches:
            c[C_RID_PREV] = c[C_RID]
            c[C_RID] = rid
        msg = {"type": I_SEE_YOU, "version": VERSION, "security": self._security(g),
               "service": service,
               "router_identity": {"router_id": self.router_id, "receive_id": rid, "sent_to": sent_to,
                                   "received_from": [c[C_ADDR] for c in caches]},
               "router_view": {"member_change_number": g.mcn,
                               "assignment_key": {"address": g.key_addr, "change_number": g.key_cn},
                               "routers": self._view_routers(g),
                               "web_caches": self._view_elements(g)},
               "capabilities": [{"type": 1, "value": caps & 15}, {"type": 2, "value": (caps >> 4) & 15},
                                {"type": 3, "value": caps >> 8}]}
        a = g.assignment
        if a is not None and a["type"] == "mask":
            msg["assignment_map"] = {"mask_value_sets": a["sets"]}
        if shutdown_ack is not None:
            msg["command_extension"] = [{"type": 2, "data": shutdown_ack}]
        self._count(g, "isy_tx")
        return self._encode(msg, g)

    def _isy_unicast(self, g, c, shutdown_ack=False, to_ip=None, to_port=0):
        """(ip, port, our ip, payload) of an I_SEE_YOU to cache c, sent to (to_ip, to_port)
        if given, else to where its HIAs come from."""
        svc = c[C_SERVICE] or (g.std_info if g.stype == 0 else g.definition)
        caps = self._caps_word(g, c[C_ADDR] in g.l2)
        t = g.template
        if shutdown_ack:
            payload = self._isy(g, [c], c[C_SENT_TO], svc, c[C_ADDR], caps)
        elif t is not None and t[0] is svc and t[1] == caps:
            # fast path: the group's last unicast I_SEE_YOU with only the per-cache fields patched
            buf = self.buf
            tb = t[2]
            n = len(tb)
            self.bufmv[:n] = tb
            o = t[3]
            rid = self._next_rid(g)
            c[C_RID_PREV] = c[C_RID]
            c[C_RID] = rid
            _pack_into(">II", buf, o + 4, rid, c[C_SENT_TO])
            _pack_into(">I", buf, o + 16, c[C_ADDR])
            if g.password:
                codec.sign_md5(buf, n, g.password)
            self._count(g, "isy_tx")
            payload = self.bufmv[:n]
        else:
            payload = self._isy(g, [c], c[C_SENT_TO], svc, None, caps)
            o = _find_component(payload, 2)
            if o > 0 and len(payload) <= len(self.buf):
                g.template = (svc, caps, payload, o)
        if to_ip is None:
            return self._reply(c) + (self._local_ip(c), payload)
        return (to_ip, to_port, self._local_ip(c), payload)

    # ---------------------------------------------------------------- REDIRECT_ASSIGN
    def _ra(self, g, msg, src, now):
        if "assignment_info" in msg:
            a = msg["assignment_info"]
            kind = "hash"
        elif "alternate_assignment" in msg:
            a = msg["alternate_assignment"]
            at = a["assignment_type"]
            if at == 0:
                kind = "hash"
            elif at == 1:
                kind = "mask"
            else:
                return self._drop(g, "ra_unsupported")
        else:
            return self._drop(g, "ra_unsupported")
        key = a["assignment_key"]
        if key["address"] != src:
            # only the designated cache assigns, from its own address (docs/protocol.md)
            return self._drop(g, "ra_wrong_sender")
        d = g.caches.get(src)
        if d is None or not d[C_BITS] & B_USABLE:
            return self._drop(g, "ra_unknown_cache")
        mine = None
        for r in a["routers"]:
            if r["router_id"] in self.my_ids:
                mine = r
                break
        if mine is None:
            # v2-01/v2-03 4.8: an assignment that does not list this router ends ours. It
            # carries no Receive ID to authenticate it, so it only starts the flush timer:
            # a valid assignment within 5T keeps traffic flowing (docs/protocol.md).
            if g.assignment is not None and g.change_ms is None:
                g.change_ms = now
            return self._drop(g, "ra_not_listed")
        rid = mine["receive_id"]
        if rid == 0 or (rid != d[C_RID] and rid != d[C_RID_PREV]):
            return self._drop(g, "ra_stale_receive_id")
        if mine["member_change_number"] != g.mcn:
            return self._drop(g, "ra_stale_change_number")
        want = g.locked_assign or 0
        if not METHOD_BITS[kind] & g.assign_mask or (want and METHOD_BITS[kind] != want):
            return self._drop(g, "ra_method_mismatch")
        if kind == "hash":
            new = self._ra_hash(g, a)
        else:
            new = self._ra_mask(g, a)
        if new is None:
            return []
        old = g.assignment
        g.assignment = new
        if not self._apply(g):
            g.assignment = old          # the data plane refused it: keep (and re-program) the old one
            self._apply(g)
            return self._drop(g, "ra_dataplane_refused")
        g.key_addr = key["address"]
        g.key_cn = key["change_number"]
        g.change_ms = None
        self._dirty(g)
        self._count(g, "ra_accepted")
        return []

    def _ra_hash(self, g, a):
        wcs = a["web_caches"]
        if len(wcs) > MAX_CACHES:
            self._drop(g, "ra_too_large")
            return None
        caches = []
        ok = []
        for x in wcs:
            if x in caches:
                self._drop(g, "ra_bad_caches")
                return None
            caches.append(x)
            c = g.caches.get(x)
            ok.append(c is not None and c[C_BITS] & B_USABLE)
        unknown = 0
        for v in ok:
            if not v:
                unknown += 1
        if unknown:
            self._count(g, "ra_unknown_cache_entries", unknown)
        raw = a["buckets"]
        n = len(caches)
        b = bytearray(256)
        for k in range(256):
            v = raw[k]
            if v == 0xFF:
                b[k] = 0xFF
            elif v & 0x80:
                # kept only if the index is also a usable cache (secondary-lookup role)
                j = v & 0x7F
                b[k] = (0x80 | j) if (j < n and ok[j]) else 0xFF
            elif v < n and ok[v]:
                b[k] = v
            else:
                b[k] = 0xFF
        gone = [caches[i] for i in range(n) if not ok[i]]
        return {"type": "hash", "caches": caches, "buckets": b, "gone": gone,
                "sets": None}

    def _ra_mask(self, g, a):
        sets_in = a["mask_value_sets"]
        if len(sets_in) > DP_MASK_SETS:
            self._drop(g, "ra_too_large")
            return None
        total = 0
        for s in sets_in:
            if len(s["values"]) > DP_MASK_VALUES:
                self._drop(g, "ra_too_large")
                return None
            m = s["masks"]
            if _popcount(m["src_addr"]) + _popcount(m["dst_addr"]) + _popcount(m["src_port"]) + \
                    _popcount(m["dst_port"]) > DP_MASK_BITS:
                self._drop(g, "ra_mask_too_wide")
                return None
            total += len(s["values"])
        if total > self.max_values:
            self._drop(g, "ra_too_large")
            return None
        caches = []
        sets = []
        dropped = 0
        for s in sets_in:
            m = s["masks"]
            vals = []
            for v in s["values"]:
                x = v["cache_address"]
                c = g.caches.get(x)
                if c is None or not c[C_BITS] & B_USABLE:
                    dropped += 1
                    continue
                if x not in caches:
                    if len(caches) >= MAX_CACHES:
                        self._drop(g, "ra_too_large")
                        return None
                    caches.append(x)
                vals.append({"src_addr": v["src_addr"], "dst_addr": v["dst_addr"], "src_port": v["src_port"],
                             "dst_port": v["dst_port"], "cache_address": x})
            sets.append({"masks": {"src_addr": m["src_addr"], "dst_addr": m["dst_addr"],
                                   "src_port": m["src_port"], "dst_port": m["dst_port"]},
                         "values": vals})
        if dropped:
            self._count(g, "ra_unknown_cache_entries", dropped)
        return {"type": "mask", "caches": caches, "buckets": None, "gone": [],
                "sets": sets}

    def _flush(self, g):
        g.assignment = None
        g.key_addr = g.key_cn = 0
        g.change_ms = None
        self._dirty(g)
        self._count(g, "flushes")
        self._apply(g)

    # ---------------------------------------------------------------- timers
    def _tick_group(self, g, now, out):
        T = self.T
        if self._tick_due(g, now):
            self._expire(g, now, out)
        if g.change_ms is not None and now - g.change_ms >= 5 * T:
            g.change_ms = None
            if g.assignment is not None:
                self._flush(g)
            else:
                g.key_addr = g.key_cn = 0
                self._dirty(g)
        if g.next_mc is not None and now - g.next_mc >= 0:
            g.next_mc = now + self._jitter()
            mc = [c for c in g.caches.values() if c[C_BITS] & B_MCAST]
            if mc:
                out.append(self._isy_multicast(g, mc))

    def _tick_due(self, g, now):
        """Whether a cache of g is due for a REMOVAL_QUERY or removal (scanned in place: the
        usual tick finds nothing and allocates nothing: keys, not a values() view)."""
        T = self.T
        caches = g.caches
        for a in caches:
            c = caches[a]
            if c[C_BITS] & B_USABLE:
                quiet = now - c[C_LAST_VALID]
                if quiet >= 3 * T or (quiet * 2 >= 5 * T and not c[C_BITS] & B_QUERY):
                    return True
            elif now - c[C_LAST_HIA] >= 3 * T:
                return True
        return False

    def _expire(self, g, now, out):
        T = self.T
        for c in list(g.caches.values()):
            if c[C_BITS] & B_USABLE:
                quiet = now - c[C_LAST_VALID]
                if quiet >= 3 * T:
                    self._count(g, "removals_timeout")
                    self._remove(g, c, now)
                elif quiet * 2 >= 5 * T and not c[C_BITS] & B_QUERY:
                    c[C_BITS] |= B_QUERY
                    out.append(self._removal_query(g, c))
            elif now - c[C_LAST_HIA] >= 3 * T:
                self._count(g, "pending_expired")
                self._remove(g, c, now)

    def _isy_multicast(self, g, caches):
        svc = g.std_info if g.stype == 0 else (g.definition or caches[0][C_SERVICE])
        payload = self._isy(g, caches, g.mcast, svc)
        return (g.mcast_ip, WCCP_PORT, self.addresses[0], payload)

    def _removal_query(self, g, c):
        msg = {"type": REMOVAL_QUERY, "version": VERSION, "security": self._security(g),
               "service": c[C_SERVICE] or (g.std_info if g.stype == 0 else g.definition),
               "router_query": {"router_id": self.router_id, "receive_id": c[C_RID],
                                "sent_to": c[C_SENT_TO], "target": c[C_ADDR]}}
        self._count(g, "rq_tx")
        return self._reply(c) + (self._local_ip(c), self._encode(msg, g))

    # ---------------------------------------------------------------- status
    def status(self):
        ip = codec.int2ip
        now = self.now
        groups = []
        for g in self.groups:
            caches = []
            a = g.assignment
            counts = {}
            if a is not None and a["type"] == "hash":
                for v in a["buckets"]:
                    if v != 0xFF and not v & 0x80:
                        x = a["caches"][v]
                        counts[x] = counts.get(x, 0) + 1
            elif a is not None:
                for s in a["sets"]:
                    for v in s["values"]:
                        x = v["cache_address"]
                        counts[x] = counts.get(x, 0) + 1
            for c in list(g.caches.values()):
                caches.append({
                    "address": ip(c[C_ADDR]), "state": "usable" if c[C_BITS] & B_USABLE else "pending",
                    "reason": c[C_REASON], "forwarding": METHOD_NAMES.get(_fwd(c), "?"),
                    "return": METHOD_NAMES.get(_ret(c), "?"), "assignment": ASSIGN_NAMES.get(_asg(c)),
                    "weight": c[C_WEIGHT], "status": c[C_STATUS], "receive_id_sent": c[C_RID],
                    "heard_ms_ago": now - c[C_LAST_HIA], "valid_ms_ago": now - c[C_LAST_VALID],
                    "connected_ms": (now - c[C_JOINED]) if c[C_BITS] & B_USABLE else 0,
                    "sent_to": ip(c[C_SENT_TO]), "multicast": bool(c[C_BITS] & B_MCAST), "query_sent": bool(c[C_BITS] & B_QUERY),
                    "routers": [ip(r) for r in c[C_ROUTERS]], "hia_count": c[C_HIAS],
                    "l2_adjacent": c[C_ADDR] in g.l2, "assigned": counts.get(c[C_ADDR], 0),
                    "location": self._location(g, c[C_ADDR]) if c[C_BITS] & B_USABLE else None})
            asg = None
            if a is not None:
                asg = {"type": a["type"], "caches": [ip(x) for x in a["caches"]]}
                if a["type"] == "hash":
                    asg["buckets"] = list(a["buckets"])
                else:
                    asg["sets"] = [{"masks": dict(s["masks"]),
                                    "values": [{"src_addr": ip(v["src_addr"]), "dst_addr": ip(v["dst_addr"]),
                                                "src_port": v["src_port"], "dst_port": v["dst_port"],
                                                "cache_address": ip(v["cache_address"])} for v in s["values"]]}
                                   for s in a["sets"]]
            d = g.definition
            groups.append({
                "service_type": "standard" if g.stype == 0 else "dynamic", "service_id": g.sid,
                "slot": g.slot,
                "definition": None if d is None else {
                    "priority": d["priority"], "protocol": d["protocol"], "service_flags": d["service_flags"],
                    "ports": [p for p in d["ports"] if p]},
                "md5": bool(g.password), "multicast": g.mcast_ip, "receive_id": g.rid,
                "policy": {"caches": g.cfg.get("caches") or self.cfg.get("cache_subnets"), "closed": g.closed,
                           "redirect_list": g.cfg.get("redirect_list"), "service_list": g.service_list},
                "member_change_number": g.mcn,
                "assignment_key": {"address": ip(g.key_addr), "change_number": g.key_cn},
                "capabilities": {"forwarding": [METHOD_NAMES[b] for b in (1, 2) if g.fwd_mask & b],
                                 "assignment": [ASSIGN_NAMES[b] for b in (1, 2) if g.assign_mask & b],
                                 "return": [METHOD_NAMES[b] for b in (1, 2) if g.ret_mask & b],
                                 "assignment_locked": ASSIGN_NAMES.get(g.locked_assign)},
                "routers": [ip(r) for r in self._view_routers(g)],
                "usable": len(g.order), "caches": caches, "assignment": asg,
                "flush_in_ms": None if g.change_ms is None else max(0, 5 * self.T - (now - g.change_ms)),
                "counters": dict(g.counters), "drops": dict(g.drops)})
        try:
            dpc = self.dp.counters()
        except Exception as e:  # noqa: BLE001
            dpc = {"error": "%s: %s" % (type(e).__name__, e)}
        unk = dpc.get("cache_unknown_frames")
        for g, gd in zip(self.groups, groups):
            total = 0
            for cd in gd["caches"]:
                i = self._dp_index(g, codec.ip2int(cd["address"]))
                n = unk[g.slot][i] if unk is not None and g.slot >= 0 and i is not None else 0
                cd["to_origin"] = n
                total += n
            gd["to_origin"] = total
        disc = self.discovery.status()
        disc["unanswered"] = [ip(a) for a in disc["unanswered"]]
        return {"router_id": self.router_ip, "addresses": list(self.addresses), "boot": self.boot,
                "boot_persisted": bool(self.boot_persisted),
                "storage_error": getattr(self.storage, "error", None),
                "uptime_ms": now - self.started, "here_i_am_ms": self.T, "version": "2.00",
                "total_caches": self.total,
                "counters": dict(self.counters), "drops": dict(self.drops),
                "last_malformed": self.last_malformed, "last_error": self.last_error,
                "groups": groups, "dataplane": dpc, "discovery": disc}

    def _dp_addrs(self, g):
        """g's data-plane cache table (list position = cache index): the assignment's caches,
        then the usable caches outside it (known, never redirected-from)."""
        a = g.assignment
        addrs = list(a["caches"]) if a is not None else []
        for addr in g.order:
            if addr not in addrs and len(addrs) < MAX_CACHES:
                addrs.append(addr)
        return addrs

    def _dp_index(self, g, addr):
        """addr's cache index in g's data-plane table, or None."""
        addrs = self._dp_addrs(g)
        return addrs.index(addr) if addr in addrs else None

    def _location(self, g, addr):
        """Where the data plane sends a usable cache's traffic: {mac, port, source} or None."""
        lc = self.discovery.location(addr)
        src = "probe"
        if lc is None and g.slot >= 0:
            src = "dataplane"
            i = self._dp_index(g, addr)
            try:
                lc = self.dp.cache_location(g.slot, i) if i is not None else None
            except Exception:  # noqa: BLE001 - status never raises
                lc = None
        if lc is None:
            return None
        return {"mac": ":".join("%02x" % b for b in lc[0]), "port": lc[1], "source": src}
