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

Where the code is: this module holds Router's state, entry points and the datagram checks
common to every message; its methods are in mix-ins, one module per concern:
router_membership (HERE_I_AM, joins and removals, timers), router_assign (REDIRECT_ASSIGN,
programming the data plane), router_view (I_SEE_YOU and REMOVAL_QUERY), router_status
(status()); router_base holds the constants, the cache record and Group.
"""
from wccp import codec
from wccp import policy as _policy
from wccp.admission import Admission, Prefixes
from wccp.dataplane import MAX_MTU
from wccp.discovery import Discovery
from wccp.router_assign import Assignment
from wccp.router_base import (  # noqa: F401 - re-exported: the router's API and record layout
    B_ECHOED, B_MCAST, B_QUERY, B_USABLE, C_ADDR, C_BITS, C_HIAS, C_JOINED, C_LAST_HIA, C_LAST_VALID, C_MASKS,
    C_REASON, C_REPLY, C_RID, C_RID_PREV, C_ROUTERS, C_SENT_TO, C_SERVICE, C_STATUS, C_WEIGHT, DROP_REASONS,
    HEARTBEAT_MS, HERE_I_AM, MAX_CACHES, MAX_GROUPS, REDIRECT_ASSIGN, WEB_CACHE_DEFINITION, Group, _def_tuple,
    _mac_bytes, _new_counters, is_usable, max_message,
)
from wccp.router_membership import Membership
from wccp.router_status import Status
from wccp.router_view import View
from wccp.storage import MemStorage, next_boot


class _NoStatic:
    """StaticGroups without groups: every slot is WCCP's, nothing to program, check or discover."""
    first_slot = MAX_GROUPS

    def program(self):
        pass

    def targets(self):
        return ()

    def tick(self, now=None):
        return False

    def status(self):
        return []


_NO_STATIC = _NoStatic()


class Router(Membership, Assignment, View, Status):
    def __init__(self, config, dataplane, now_ms=0, storage=None, seed=None, probe=None):
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
            self.dp.configure(self.router_id, _mac_bytes(config["mac"]), min(config["mtu"], MAX_MTU))
        except Exception as e:  # noqa: BLE001
            self._dp_error(None, e)
        self.discovery = Discovery(self.dp, _mac_bytes(config["mac"]), getattr(self.dp, "num_ports", 2))
        st = config.get("static", [])
        if st:
            from wccp.hba import StaticGroups
            self.static = StaticGroups(st, dataplane, MAX_GROUPS - len(st), probe=probe)
        else:
            self.static = _NO_STATIC    # wccp.hba is imported only for static groups (heap on boards)
        self._reprogram_slots()
        arm = getattr(self.dp, "arm", None)   # fail-open watchdog: armed once, fed by tick()
        if arm is not None:
            try:
                arm()
                self.dp.heartbeat()
            except Exception as e:  # noqa: BLE001
                self._dp_error(None, e)

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
            if self.static.tick(now_ms):
                self.targets = None     # a static group changed: discovery's targets are rebuilt
        except Exception as e:  # noqa: BLE001
            self._dp_error(None, e)
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
        """Active discovery (wccp.discovery) of the usable caches in the data plane and of the
        static groups' servers without a configured location. Never raises. The set of their
        addresses is kept until membership, slots or a static group change."""
        targets = self.targets
        if targets is None:
            targets = set()
            for g in self.groups:
                if g.slot >= 0:
                    targets.update(g.order)
            targets.update(self.static.targets())
            self.targets = targets
        try:
            self.discovery.run(self.now, targets)
        except Exception as e:  # noqa: BLE001
            self._dp_error(None, e)

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
