"""Router assignments (wccp.router): REDIRECT_ASSIGN validation (hash and mask), the current
assignment (purge, flush), and programming the data plane: slots in priority order, each
group's cache table and assignment, one commit per change. A mix-in of Router."""
from wccp.router_base import (
    B_USABLE, C_BITS, C_RID, C_RID_PREV, DP_MASK_BITS, DP_MASK_SETS, DP_MASK_VALUES, MAX_CACHES, METHOD_BITS,
    _fwd, _popcount, _ret,
)


class Assignment:
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
                try:
                    self.dp.set_group(i, {"service_type": d["service_type"], "service_id": d["service_id"],
                                          "priority": d["priority"], "protocol": d["protocol"],
                                          "service_flags": d["service_flags"], "ports": list(d["ports"]),
                                          "hash_fn": g.cfg.get("hash", "wccp")})
                    self._program_tables(g)
                except ValueError as e:
                    # the data plane refuses this group's definition or tables (e.g. a hash or a
                    # policy its FPGA image lacks): it is not redirected, the other groups are
                    self._dp_error(g, e)
                    self.dp.clear_group(i)
            for i in range(len(defined), self.static.first_slot):
                self.dp.clear_group(i)
            self.static.program()       # static (HBA) groups: the top slots
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
