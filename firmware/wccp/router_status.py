"""Router status (wccp.router): the whole state as a JSON-able dict for /status
(docs/status.md), with the data plane's counters and learnt cache locations. A mix-in of
Router."""
from wccp import codec
from wccp.router_base import (
    ASSIGN_NAMES, B_MCAST, B_QUERY, B_USABLE, C_ADDR, C_BITS, C_HIAS, C_JOINED, C_LAST_HIA, C_LAST_VALID,
    C_REASON, C_RID, C_ROUTERS, C_SENT_TO, C_STATUS, C_WEIGHT, METHOD_NAMES, _asg, _fwd, _ret,
)


class Status:
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
                "slot": g.slot, "hash": g.cfg.get("hash", "wccp"),
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
                "groups": groups, "static": self.static.status(), "dataplane": dpc,
                "discovery": disc}

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
