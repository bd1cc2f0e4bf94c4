"""Router messages out (wccp.router): I_SEE_YOU (Router Identity, Router View with the usable
caches, capabilities; the unicast answer is patched into the group's last encoded one when
nothing changed), the stateless and multicast I_SEE_YOU, REMOVAL_QUERY. A mix-in of Router."""
from struct import pack_into as _pack_into

from wccp import codec
from wccp.router_base import (
    B_MCAST, C_ADDR, C_BITS, C_MASKS, C_REPLY, C_RID, C_RID_PREV, C_ROUTERS, C_SENT_TO, C_SERVICE, C_STATUS,
    C_WEIGHT, I_SEE_YOU, REMOVAL_QUERY, VERSION, WCCP_PORT, WCI_U, WCI_U_V201, _find_component, _idflags,
    _new_cache,
)


class View:
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

    def _dirty(self, g):
        g.template = None

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
