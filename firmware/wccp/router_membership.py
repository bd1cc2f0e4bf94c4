"""Router membership (wccp.router): HERE_I_AM handling, admission of new caches, capabilities,
joining and leaving (member change number), and the timers (REMOVAL_QUERY at 2.5T, removal
at 3T, flush at 5T, multicast I_SEE_YOU). A mix-in of Router: methods use its state."""
from wccp.router_base import (
    ASSIGN_NAMES, B_ECHOED, B_MCAST, B_QUERY, B_USABLE, CAPS_MASK, C_ADDR, C_BITS, C_HIAS, C_JOINED,
    C_LAST_HIA, C_LAST_VALID, C_MASKS, C_REASON, C_REPLY, C_RID, C_RID_PREV, C_ROUTERS, C_SENT_TO,
    C_SERVICE, C_STATUS, C_WEIGHT, FLAGS_MASK, METHOD_NAMES, WCCP_PORT, _asg, _def_tuple, _fwd, _idflags,
    _new_cache, _ret, _setbit, _single_bit,
)


class Membership:
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
                c[C_BITS] = (c[C_BITS] & ~FLAGS_MASK) | ((fl & 0xFFFF) << 9)
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
                c[C_BITS] = (c[C_BITS] & ~CAPS_MASK) | (fwd << 3) | (ret << 5) | (asg << 7)
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
            self._unuse(g, c, now)

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
