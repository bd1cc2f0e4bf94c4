"""The emulated web cache's state machine (:class:`Member`, sans-io) for wccptool.cachesim.

Protocol behaviour (section numbers are those of the WCCP v2 draft, draft-wilson-wrec-wccp-v2-01):

* HERE_I_AM every ``T`` seconds (default 10 s; first one ``first_delay`` after
  start) to every configured router, unicast, from UDP 2048 (§4.1, §4.3).  Web-Cache
  View lists every configured router with the Receive ID last received from it
  (0 before the first I_SEE_YOU, as Squid does — Wireshark warns "Receive ID
  shouldn't be 0" on those; ``first_contact="absent"`` leaves a router out of
  the view until its first I_SEE_YOU instead, also allowed by rev1) under the Router ID learnt from its Router
  Identity (the configured address until then), and the caches learnt from
  Router Views (§5.6.6).  Change number starts at 1 and is bumped when that view
  changes.
* I_SEE_YOU is checked like a strict real cache does (Squid's src/wccp2.cc, Apache
  Traffic Server's src/wccp):
  source address must be a configured router and source port 2048, header
  version 0x0200, security option equal to ours, MD5 verified, whole service
  definition equal, our address in Received-From, Receive ID not 0,
  capabilities of types 1-3 containing our choice (absent = GRE/hash/GRE).
  Violations are recorded in ``Member.errors`` (the router's fault) and the
  message is dropped.
* "Usable": our address is listed in that router's Router View.
* Designated cache: among the caches listed in the Router Views of every router
  heard from, the lowest address — numeric order by default; ``election="squid"``
  mimics Squid on little-endian hosts (raw network-order words compared as host
  integers, i.e. last octet most significant; docs/squid.md).  Only a cache listed by every
  router it has heard from can be designated.  A router silent for 3 T no longer
  counts (views, election, RA router list) until it answers again; losing one
  reschedules the assignment.
* Assignment: when a router's member change number (or the set of caches seen
  by all routers) changes, the designated cache waits ``1.5 T`` and sends
  REDIRECT_ASSIGN to every router (§4.8).  Hash: Assignment Info (type 6), or
  Alternate Assignment type 0 with ``hash_as_alternate``; 256 buckets dealt
  weight-proportionally (weights from the Router View identity elements; all 0 →
  equal), interleaved, optional alternate flag (0x80) on chosen buckets.
  Mask: Alternate Assignment type 1, one mask/value set per configured mask,
  every combination of the mask bits as a value, dealt round-robin.  Caches are
  those seen by every router, ordered by address.  Key = (own address, counter
  from 1).  The RA is repeated after ``T`` while a router's view does not reflect
  the key.
* REMOVAL_QUERY naming us: 3 HERE_I_AMs to that router spaced ``T/10`` (§4.14).
* SHUTDOWN: a HERE_I_AM with Command Extension type 1 (data = our address), then
  silence; a SHUTDOWN_RESPONSE (type 2) in an I_SEE_YOU is recorded.
* Misbehaviour on demand (``Member.misbehave``): ``bad_md5`` (sign with a wrong
  password), ``wrong_receive_id`` (report receive ID + 1000), ``silent`` (send
  nothing, answer nothing), ``no_assign`` (a designated cache that never sends
  REDIRECT_ASSIGN: the router must flush 5 T after a membership change), capability
  mismatch via ``forwarding``/``return_method``/``capabilities``.

About 600 lines: Member is one cache's state machine, and the rules above (views, election,
assignment, removal, misbehaviour) read and change the same per-router state, so they are kept
in one class; the asyncio driver, sockets and capture are in wccptool.cachesim.
"""
from wccp import codec
from wccptool.cachesim_assign import (
    CAP_ASSIGNMENT, CAP_FORWARDING, CAP_RETURN, CMD_SHUTDOWN, CMD_SHUTDOWN_RESPONSE, ELECTION_KEYS,
    HERE_I_AM, I_SEE_YOU, MASK_FIELDS, REDIRECT_ASSIGN, REMOVAL_QUERY, WCCP_PORT, deal_buckets, int2ip,
    ip2int, mask_values, standard_service,
)


class RouterState:
    """What one member knows about one configured router."""

    def __init__(self, address, me):
        self._me = me                   # the member's own address
        self.address = address          # configured address (where HIAs go)
        self.router_id = address        # learnt from Router Identity
        self.receive_id = 0             # last Receive ID received
        self.member_change_number = None
        self.view_caches = None         # list of identity elements from the last Router View
        self.view_key = None            # (address, change_number) reflected in the Router View
        self.view_routers = []
        self.capabilities = None        # list from the last I_SEE_YOU (None = absent)
        self.last_isy = None            # time of the last accepted I_SEE_YOU
        self.isy_count = 0
        self.rq_count = 0
        self.shutdown_response = False
        self.assignment_map = None

    @property
    def usable(self):
        return self.view_caches is not None and any(
            e.get("address") == self._me for e in self.view_caches)

    def view_addresses(self):
        return [e["address"] for e in (self.view_caches or [])]


class Member:
    """One emulated web cache in one service group (sans-io state machine)."""

    def __init__(self, address, routers, service=None, *, interval=10.0, weight=10000, status=0,
                 password=None, assignment="hash", forwarding=1, return_method=1,
                 capabilities="auto", send_capabilities=True, masks=None,
                 alt_buckets=(), hash_as_alternate=False, election="numeric",
                 first_delay=None, first_contact="zero", sink=None, wccp_port=WCCP_PORT):
        self.address = ip2int(address)
        self.service = dict(service or standard_service(0))
        self.service["ports"] = list(self.service.get("ports", []))[:8]
        self.service["ports"] += [0] * (8 - len(self.service["ports"]))
        self.T = float(interval)
        self.weight = weight
        self.status = status
        self.password = password
        if assignment not in ("hash", "mask"):
            raise ValueError("assignment must be hash or mask")
        self.assignment = assignment
        self.forwarding = forwarding
        self.return_method = return_method
        # capabilities: "auto" → [(1, fwd), (2, hash=1/mask=2), (3, ret)]; or an explicit list
        # of (type, value) sent verbatim (capability mismatch on demand).
        self.capabilities = capabilities
        self.send_capabilities = send_capabilities
        if masks is None:
            masks = [{"src_addr": 0, "dst_addr": 0x1741, "src_port": 0, "dst_port": 0}]
        self.masks = [dict({f: 0 for f in MASK_FIELDS}, **m) for m in masks]
        for m in self.masks:
            mask_values(m)      # validate early
        self.alt_buckets = tuple(alt_buckets)
        self.hash_as_alternate = hash_as_alternate
        if election not in ELECTION_KEYS:
            raise ValueError("election must be numeric or squid")
        self.election = election
        self.order = ELECTION_KEYS[election]
        self.wccp_port = wccp_port
        if first_contact not in ("zero", "absent"):
            raise ValueError("first_contact must be zero or absent")
        self.first_contact = first_contact
        self.routers = []
        for r in routers:
            self.routers.append(RouterState(ip2int(r), self.address))
        self.view_change_number = 1
        self.known_caches = []          # addresses learnt from Router Views (sent in WC View)
        self.misbehave = set()          # {"bad_md5", "wrong_receive_id", "silent", "no_assign"}
        self.shutting_down = False
        self.next_hia = None
        self.first_delay = first_delay
        self.pending_query = []         # [(due, router_state)] extra HIAs answering REMOVAL_QUERY
        self.ra_due = None
        self.ra_key_number = 0
        self.ra_sent = None             # dict describing the last assignment sent
        self.ra_count = 0
        self.ra_last_sent = None
        self.last_seen_change = {}      # router addr → member change number the RA schedule saw
        self.last_seen_caches = None
        self.assign_dirty = False       # a change happened that no RA has answered yet
        self.now = 0.0
        self.last_live = ()
        self.errors = []                # router misbehaviour observed (strict-cache checks)
        self.counters = {"hia_sent": 0, "isy_received": 0, "isy_dropped": 0, "ra_sent": 0,
                         "rq_received": 0, "other_received": 0, "decode_errors": 0}
        self.sink = sink                # callable(event_dict) or None

    # ----------------------------------------------------------------- helpers
    def _event(self, now, kind, **detail):
        if self.sink is not None:
            ev = {"t": now, "cache": int2ip(self.address),
                  "service": self.service["service_id"], "event": kind}
            ev.update(detail)
            self.sink(ev)

    def _error(self, now, reason, router=None):
        self.errors.append(reason)
        if len(self.errors) > 1000:
            del self.errors[:500]
        self._event(now, "router-error", reason=reason,
                    router=int2ip(router) if router is not None else None)

    def router_by_source(self, src_ip):
        for r in self.routers:
            if r.address == src_ip:
                return r
        return None

    def _security(self):
        if self.password is None:
            return {"option": 0}
        return {"option": 1, "digest": bytes(16)}

    def _encode(self, msg):
        pw = self.password
        if pw is not None and "bad_md5" in self.misbehave:
            pw = b"wrong!!!" if bytes(str(pw), "utf-8") != b"wrong!!!" else b"WRONG!!!"
        return codec.encode(msg, password=pw)

    def chosen_capabilities(self):
        if self.capabilities == "auto":
            return [(CAP_FORWARDING, self.forwarding),
                    (CAP_ASSIGNMENT, 2 if self.assignment == "mask" else 1),
                    (CAP_RETURN, self.return_method)]
        return list(self.capabilities)

    def identity(self):
        if self.assignment == "mask":
            return {"address": self.address, "hash_revision": 0, "flags": 0x0002,
                    "data_type": "mask",
                    "mask_value_sets": [{"masks": dict(m), "values": []} for m in self.masks],
                    "weight": self.weight, "status": self.status}
        return {"address": self.address, "hash_revision": 0, "flags": 0, "data_type": "hash",
                "bucket_bitmap": bytes(32), "weight": self.weight, "status": self.status}

    # ----------------------------------------------------------------- building
    def build_here_i_am(self, shutdown=False):
        routers = []
        for r in self.routers:
            rid = r.receive_id
            if r.isy_count == 0 and self.first_contact == "absent":
                continue
            if "wrong_receive_id" in self.misbehave:
                rid = (rid + 1000) & 0xFFFFFFFF
            routers.append({"router_id": r.router_id, "receive_id": rid})
        msg = {"type": HERE_I_AM, "version": 0x0200, "security": self._security(),
               "service": dict(self.service),
               "web_cache_identity": self.identity(),
               "web_cache_view": {"change_number": self.view_change_number, "routers": routers,
                                  "web_caches": list(self.known_caches)}}
        if self.send_capabilities:
            msg["capabilities"] = [{"type": t, "value": v} for t, v in self.chosen_capabilities()]
        if shutdown:
            msg["command_extension"] = [{"type": CMD_SHUTDOWN, "data": self.address}]
        return self._encode(msg)

    def assignment_caches(self):
        """Caches listed by every router heard from, ordered by address; with weights."""
        views = self.live_routers()
        if not views:
            return []
        common = None
        weights = {}
        for r in views:
            addrs = set()
            for e in r.view_caches:
                addrs.add(e["address"])
                weights.setdefault(e["address"], e.get("weight", 0))
            common = addrs if common is None else common & addrs
        ordered = sorted(common)
        return [(a, weights[a]) for a in ordered]

    def live_routers(self):
        """Routers heard from within the last 3 T (a silent router stops counting: its stale
        view no longer limits the caches assigned, and RAs no longer list it)."""
        horizon = self.now - 3 * self.T
        return [r for r in self.routers if r.view_caches is not None and r.last_isy is not None
                and r.last_isy >= horizon]

    def _check_router_liveness(self, now):
        live = tuple(r.address for r in self.live_routers())
        if live != self.last_live:
            gone = [int2ip(a) for a in self.last_live if a not in live]
            self.last_live = live
            if gone:
                self._event(now, "router-lost", routers=gone)
                caches = tuple(a for a, _w in self.assignment_caches())
                self.last_seen_caches = caches
                if caches:
                    self.assign_dirty = True
                    if self.is_designated():
                        self.ra_due = now + 1.5 * self.T
                        self._event(now, "assign-scheduled", at=self.ra_due, reason="router lost")

    def is_designated(self):
        heard = self.live_routers()
        if not heard:
            return False
        union = set()
        for r in heard:
            addrs = r.view_addresses()
            if self.address not in addrs:
                return False
            union.update(addrs)
        return min(union, key=self.order) == self.address

    def build_assignment(self):
        """Return (message bytes per router, description) for the current state, or None."""
        caches = self.assignment_caches()
        routers = self.live_routers()
        if not caches or not routers:
            return None
        key = {"address": self.address, "change_number": self.ra_key_number}
        relems = [{"router_id": r.router_id, "receive_id": r.receive_id,
                   "member_change_number": r.member_change_number or 0} for r in routers]
        addrs = [a for a, _w in caches]
        msg = {"type": REDIRECT_ASSIGN, "version": 0x0200, "security": self._security(),
               "service": dict(self.service)}
        if self.assignment == "hash":
            buckets = deal_buckets([w for _a, w in caches], self.alt_buckets)
            body = {"assignment_key": key, "routers": relems, "web_caches": addrs,
                    "buckets": bytes(buckets)}
            if self.hash_as_alternate:
                alt = {"assignment_type": 0}
                alt.update(body)
                msg["alternate_assignment"] = alt
            else:
                msg["assignment_info"] = body
            desc = {"method": "hash", "key": (self.address, self.ra_key_number), "caches": addrs,
                    "buckets": bytes(buckets)}
        else:
            sets = []
            for m in self.masks:
                vals = mask_values(m)
                values = []
                for i, v in enumerate(vals):
                    v = dict(v)
                    v["cache_address"] = addrs[i % len(addrs)]
                    values.append(v)
                sets.append({"masks": dict(m), "values": values})
            msg["alternate_assignment"] = {"assignment_type": 1, "assignment_key": key,
                                           "routers": relems, "mask_value_sets": sets}
            desc = {"method": "mask", "key": (self.address, self.ra_key_number), "caches": addrs,
                    "mask_value_sets": sets}
        return self._encode(msg), desc

    # ----------------------------------------------------------------- driving
    def start(self, now):
        d = self.first_delay if self.first_delay is not None else 0.0
        self.now = now
        self.next_hia = now + d

    def next_deadline(self):
        ds = [d for d in (self.next_hia, self.ra_due) if d is not None]
        ds += [d for d, _r in self.pending_query]
        return min(ds) if ds else None

    def _hia_to(self, router, now, why="periodic"):
        self.counters["hia_sent"] += 1
        self._event(now, "send-hia", router=int2ip(router.address), why=why,
                    receive_id=router.receive_id)
        return (router.address, self.build_here_i_am())

    def tick(self, now):
        self.now = now
        self._check_router_liveness(now)
        out = []
        if "silent" in self.misbehave or self.shutting_down:
            self.pending_query = []
            self.ra_due = None
            if self.next_hia is not None and now >= self.next_hia:
                self.next_hia = now + self.T
            return out
        if self.next_hia is not None and now >= self.next_hia:
            for r in self.routers:
                out.append(self._hia_to(r, now))
            # keep the cadence, but never fall behind by more than one period
            self.next_hia = max(self.next_hia + self.T, now + self.T * 0.5)
        if self.pending_query:
            keep = []
            for due, r in self.pending_query:
                if now >= due:
                    out.append(self._hia_to(r, now, why="removal-query"))
                else:
                    keep.append((due, r))
            self.pending_query = keep
        if self.ra_due is not None and now >= self.ra_due:
            self.ra_due = None
            out += self._send_assignment(now, repeat=False)
        return out

    def _send_assignment(self, now, repeat, only=None):
        if "no_assign" in self.misbehave:
            self._event(now, "assign-skip", reason="no_assign misbehaviour")
            return []
        if not self.is_designated():
            self._event(now, "assign-skip", reason="not designated")
            return []
        if not repeat:
            self.ra_key_number += 1
        built = self.build_assignment()
        if built is None:
            return []
        data, desc = built
        self.ra_sent = desc
        self.ra_last_sent = now
        self.ra_count += 1
        self.assign_dirty = False
        live = self.live_routers()
        out = []
        for r in self.routers:
            if r not in live or (only is not None and r is not only):
                continue
            self.counters["ra_sent"] += 1
            out.append((r.address, data))
        self._event(now, "send-ra", repeat=repeat, method=desc["method"],
                    key_change=self.ra_key_number, caches=[int2ip(a) for a in desc["caches"]])
        return out

    def shutdown(self, now):
        """Send SHUTDOWN (Command Extension type 1) to every router, then go silent."""
        out = []
        for r in self.routers:
            self.counters["hia_sent"] += 1
            out.append((r.address, self.build_here_i_am(shutdown=True)))
        self.shutting_down = True
        self._event(now, "send-shutdown")
        return out

    def on_message(self, src, msg, raw, now):
        """Process a decoded message from ``src`` = (ip_int, port). Returns sends."""
        self.now = now
        if "silent" in self.misbehave or self.shutting_down:
            # a shut-down cache still listens for SHUTDOWN_RESPONSE
            if self.shutting_down and msg.get("type") == I_SEE_YOU:
                r = self.router_by_source(src[0])
                for c in msg.get("command_extension", []) or []:
                    if r is not None and c.get("type") == CMD_SHUTDOWN_RESPONSE \
                            and c.get("data") == self.address:
                        r.shutdown_response = True
                        self._event(now, "shutdown-response", router=int2ip(r.address))
            return []
        t = msg.get("type")
        if t == I_SEE_YOU:
            return self._on_isy(src, msg, raw, now)
        if t == REMOVAL_QUERY:
            return self._on_rq(src, msg, raw, now)
        self.counters["other_received"] += 1
        return []

    def _check_common(self, src, msg, raw, now):
        r = self.router_by_source(src[0])
        if r is None:
            self._error(now, "message from unconfigured router address %s" % int2ip(src[0]))
            return None
        if src[1] != WCCP_PORT:
            self._error(now, "source port %d, not 2048" % src[1], r.address)
        if msg.get("version") != 0x0200:
            self._error(now, "header version 0x%04x, not 0x0200" % msg.get("version", 0), r.address)
            return None
        sec = msg.get("security")
        if sec is None:
            self._error(now, "no security component", r.address)
            return None
        want = 0 if self.password is None else 1
        if sec.get("option") != want:
            self._error(now, "security option %s, expected %d" % (sec.get("option"), want), r.address)
            return None
        if want == 1 and not codec.verify_md5(raw, self.password):
            self._error(now, "MD5 digest does not verify", r.address)
            return None
        svc = msg.get("service")
        if svc is None:
            self._error(now, "no service component", r.address)
            return None
        mine = self.service
        for k in ("service_type", "service_id", "priority", "protocol", "service_flags"):
            if svc.get(k) != mine.get(k):
                self._error(now, "service %s %r differs from ours %r" % (k, svc.get(k), mine.get(k)),
                            r.address)
                return None
        if list(svc.get("ports", [])) != mine["ports"]:
            self._error(now, "service ports differ from ours", r.address)
            return None
        return r

    def _capabilities_ok(self, r, caps, now):
        adv = {}
        for c in caps or []:
            if c.get("type") in (CAP_FORWARDING, CAP_ASSIGNMENT, CAP_RETURN):
                v = c.get("value")
                if not isinstance(v, int):
                    self._error(now, "capability %d value is not 4 bytes" % c["type"], r.address)
                    return False
                adv[c["type"]] = v
        mine = {CAP_FORWARDING: self.forwarding, CAP_ASSIGNMENT: 2 if self.assignment == "mask" else 1,
                CAP_RETURN: self.return_method}
        defaults = {CAP_FORWARDING: 1, CAP_ASSIGNMENT: 1, CAP_RETURN: 1}
        ok = True
        for t, bit in mine.items():
            have = adv.get(t, defaults[t])
            if not have & bit:
                ok = False
        return ok

    def _on_isy(self, src, msg, raw, now):
        self.counters["isy_received"] += 1
        r = self._check_common(src, msg, raw, now)
        if r is None:
            self.counters["isy_dropped"] += 1
            return []
        rid = msg.get("router_identity")
        view = msg.get("router_view")
        if rid is None or view is None:
            self._error(now, "I_SEE_YOU without router identity/view", r.address)
            self.counters["isy_dropped"] += 1
            return []
        if self.address not in list(rid.get("received_from", [])):
            self._error(now, "our address is not in Received-From", r.address)
            self.counters["isy_dropped"] += 1
            return []
        if rid.get("receive_id", 0) == 0:
            self._error(now, "Receive ID 0", r.address)
        if rid.get("sent_to") != r.address:
            self._error(now, "Sent-To %s is not where we sent the HERE_I_AM" %
                        int2ip(rid.get("sent_to", 0)), r.address)
        r.capabilities = msg.get("capabilities")
        r.cap_ok = self._capabilities_ok(r, r.capabilities, now)
        if not r.cap_ok:
            self._event(now, "capability-mismatch", router=int2ip(r.address))
        for c in msg.get("command_extension", []) or []:
            if c.get("type") == CMD_SHUTDOWN_RESPONSE and c.get("data") == self.address:
                r.shutdown_response = True
        was_usable = r.view_caches is not None and r.usable
        r.router_id = rid["router_id"]
        r.receive_id = rid["receive_id"]
        r.last_isy = now
        r.isy_count += 1
        mcn = view.get("member_change_number")
        r.view_caches = list(view.get("web_caches", []))
        r.view_routers = list(view.get("routers", []))
        key = view.get("assignment_key") or {}
        r.view_key = (key.get("address", 0), key.get("change_number", 0))
        if "assignment_map" in msg:
            r.assignment_map = msg["assignment_map"]
        old_mcn = r.member_change_number
        r.member_change_number = mcn
        if r.usable != was_usable:
            self._event(now, "usable" if r.usable else "not-usable", router=int2ip(r.address),
                        member_change_number=mcn)
        # learnt caches (our WC View)
        learnt = set()
        for x in self.routers:
            learnt.update(x.view_addresses())
        learnt = sorted(learnt)
        self.last_live = tuple(x.address for x in self.live_routers())
        if learnt != self.known_caches:
            self.known_caches = learnt
            self.view_change_number += 1
        return self._after_view_update(r, old_mcn, now)

    def _after_view_update(self, r, old_mcn, now):
        caches = tuple(a for a, _w in self.assignment_caches())
        changed = (r.member_change_number != old_mcn) or (caches != self.last_seen_caches)
        self.last_seen_caches = caches
        if changed and caches:
            self.assign_dirty = True
        if not self.is_designated():
            if self.ra_due is not None:
                self._event(now, "assign-cancel", reason="no longer designated")
            self.ra_due = None
            return []
        if self.assign_dirty and (changed or self.ra_due is None):
            # (re)start the 1.5 T wait after every change
            self.ra_due = now + 1.5 * self.T
            self._event(now, "assign-scheduled", at=self.ra_due,
                        member_change_number=r.member_change_number)
            return []
        # repeat (to this router) while its view does not reflect our key
        if self.ra_sent is not None and self.ra_due is None and r.view_key != self.ra_sent["key"] \
                and now - self.ra_last_sent >= self.T:
            return self._send_assignment(now, repeat=True, only=r)
        return []

    def _on_rq(self, src, msg, raw, now):
        self.counters["rq_received"] += 1
        r = self._check_common(src, msg, raw, now)
        if r is None:
            return []
        q = msg.get("router_query")
        if q is None:
            self._error(now, "REMOVAL_QUERY without Router Query Info", r.address)
            return []
        if q.get("target") != self.address:
            self._error(now, "REMOVAL_QUERY target %s is not us" % int2ip(q.get("target", 0)), r.address)
            return []
        if q.get("receive_id", 0) == 0:
            self._error(now, "REMOVAL_QUERY with Receive ID 0", r.address)
        r.rq_count += 1
        self._event(now, "removal-query", router=int2ip(r.address))
        step = self.T / 10.0
        self.pending_query += [(now + step * i, r) for i in (1, 2)]
        return [self._hia_to(r, now, why="removal-query")]

    # ----------------------------------------------------------------- state
    def state(self):
        live = self.live_routers()
        return {
            "address": int2ip(self.address),
            "service": self.service["service_id"],
            "service_type": self.service["service_type"],
            "designated": self.is_designated(),
            "shutting_down": self.shutting_down,
            "misbehave": sorted(self.misbehave),
            "routers": [{
                "address": int2ip(r.address), "router_id": int2ip(r.router_id),
                "receive_id": r.receive_id, "usable": bool(r.view_caches is not None and r.usable),
                "live": r in live,
                "member_change_number": r.member_change_number,
                "view_caches": [int2ip(a) for a in r.view_addresses()],
                "view_key": None if r.view_key is None else [int2ip(r.view_key[0]), r.view_key[1]],
                "capabilities_ok": getattr(r, "cap_ok", None),
                "isy_count": r.isy_count, "rq_count": r.rq_count,
                "shutdown_response": r.shutdown_response,
            } for r in self.routers],
            "assignment_sent": None if self.ra_sent is None else _desc_json(self.ra_sent),
            "ra_count": self.ra_count,
            "counters": dict(self.counters),
            "errors": list(self.errors[-20:]),
        }


def _desc_json(desc):
    out = {"method": desc["method"], "key": [int2ip(desc["key"][0]), desc["key"][1]],
           "caches": [int2ip(a) for a in desc["caches"]]}
    if desc["method"] == "hash":
        out["buckets"] = list(desc["buckets"])
    else:
        out["mask_value_sets"] = [{
            "masks": dict(s["masks"]),
            "values": [dict(v, cache_address=int2ip(v["cache_address"])) for v in s["values"]]}
            for s in desc["mask_value_sets"]]
    return out
