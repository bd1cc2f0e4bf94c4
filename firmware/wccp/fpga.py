"""FPGA data-plane driver: writes the DataPlane tables into the FPGA register map.

``FpgaDataPlane(transport)`` implements ``wccp.dataplane.DataPlane`` over a
``wccp.transport.RegisterTransport`` (SPI on boards, a socket to the simulator). Register
layout and semantics: docs/regmap.md (generated constants in ``wccp.regmap``). The
behaviour it programs is the one ``wccp.fwdmodel.ForwardingModel`` models; both validate
their input with the same helpers (``wccp.dataplane.check_*``), so a table either programs
both or raises ValueError in both.

What the driver does beyond plain register writes:

* keeps a mirror of what it wrote into the shadow bank (``tables()``), so GROUP_CTRL
  (enable, assignment type, number of caches and mask sets) is rewritten consistently and
  ``set_caches`` knows which cache entries changed address;
* unused cache entries (index >= number of caches) are written as address 0 / method 0;
* cache locations (MAC + port) are live registers: when ``set_caches`` changes the address
  at an index the location is cleared at once (before the commit); explicit locations
  (mac/port of a NEW entry in ``set_caches``, ``set_cache_location``) are queued and
  written right after the next commit (decision D7 in wccp.fwdmodel, docs/regmap.md
  CACHE_MAC_HI); mac/port of an entry whose address is unchanged are ignored;
* locations follow their cache to a new index: the FPGA keeps a location per (slot, index);
  the driver remembers the locations it wrote by address (``learn``: active discovery, and
  explicit ones) and, when a commit moves an address to a new index, writes its location
  there right after the commit instead of clearing it (D7 carry-over); an address that
  leaves every slot is forgotten;
* active discovery: ``send_frame`` fills PKTOUT_DATA and writes PKTOUT_CTRL (waiting while
  BUSY); ``arp_replies`` reads the ARPCAP ring;
* mask sets are compiled by ``wccp.regpack.compile_mask_set`` (<= 7 mask bits per set);
* group policies (``set_policy``): the closed flag and the redirect-list's entry count go into
  GROUP_CTRL, the entries into ACL_SRC/ACL_DST/ACL_CTRL (prefix lengths);
* the cache-source index (SRCIDX: the cache entries by address fold, and the run of the
  L2-return ones; ``wccp.regpack.srcidx_words`` of the mirrors) is written before COMMIT when
  a cache address, method or count changed since it was last written (a commit of an
  assignment alone leaves it as it is); when its write fails, ``commit()`` refuses
  (FpgaError, nothing published) until a commit writes it whole;
* the identity check (``check_id``) refuses an FPGA whose ID is not the datapath's or whose
  register-map major is not this firmware's (``wccp.regpack.version_problem``): a new major means
  registers the datapath needs written (2.0: SRCIDX), so no other major is driven;
* ``commit()`` writes COMMIT and polls STATUS until COMMIT_BUSY clears;
* transactions: when a register write fails, the part of the slot it belonged to (service,
  cache table, assignment) is marked unknown: the next call for that part rewrites all its
  registers, and ``commit()`` refuses (FpgaError, nothing published) while any part is
  unknown, so a failed transaction leaves the previous tables live and never publishes a
  mix of old and new entries;
* watchdog: ``arm(timeout_ms)`` writes WDT_TIMEOUT (microseconds) and CONTROL.REDIRECT_EN,
  ``heartbeat()`` writes HEARTBEAT;
* counters are 32-bit wrapping in hardware; ``counters()`` returns the model's keys (decision
  counters summed over receive ports) relative to the last ``clear_counters()``.
"""
try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

from wccp import regmap as R
from wccp.regpack import compile_mask_set, mac_words, pack_bytes, srcidx_words, version_problem
from wccp.dataplane import (
    ARPCAP_ENTRIES, DEFAULT_MTU, DEFAULT_WATCHDOG_MS, HASH_PEARSON, MAX_CACHES, MAX_GROUPS, MAX_MTU, MIN_MTU, NUM_BUCKETS,
    DataPlane, check_buckets, check_caches, check_send, check_mac, check_mask, check_policy, check_slot,
    effective_service, prefix_len,
)

COMMIT_POLLS = const(100000)
PKTOUT_POLLS = const(100)
MASK32 = const(0xFFFFFFFF)

# Per-port counter registers -> model counter names (per-port lists).
_PORT_LISTS = (
    ("rx_frames", R.CNT_RX_FRAMES), ("rx_bytes", R.CNT_RX_BYTES),
    ("tx_frames", R.CNT_TX_FRAMES), ("tx_bytes", R.CNT_TX_BYTES),
    ("rx_runt", R.CNT_RX_RUNT), ("rx_bad_fcs", R.CNT_RX_BAD_FCS),
    ("rx_oversize", R.CNT_RX_OVERSIZE), ("rx_overflow", R.CNT_RX_OVERFLOW),
    ("learnt", R.CNT_LEARNT),
)
# Decision counters, counted per receive port in hardware, totals in the model.
_PORT_TOTALS = (
    ("not_redirectable", R.CNT_NOT_REDIRECTABLE), ("from_cache", R.CNT_FROM_CACHE),
    ("unassigned", R.CNT_UNASSIGNED), ("cache_unknown", R.CNT_CACHE_UNKNOWN),
    ("gre_too_big", R.CNT_GRE_TOO_BIG), ("gre_return", R.CNT_GRE_RETURN),
    ("redirect_l2", R.CNT_REDIRECT_L2), ("redirect_gre", R.CNT_REDIRECT_GRE),
    ("gre_return_bad", R.CNT_GRE_RETURN_BAD), ("truncated", R.CNT_TRUNCATED),
    ("closed_drop", R.CNT_CLOSED_DROP),
)
_ONE = (1,)
_PORTCNT_WORDS = R.CNT_CLOSED_DROP + 1    # offsets 0 .. the last port counter (register map)


class FpgaError(OSError):
    pass


def method_word(forward, ret):
    """The cache table's METHOD word: forward and return method fields (register map)."""
    return ((forward & R.METHOD_FIELD_MASK) << R.METHOD_FWD_SHIFT) | \
        ((ret & R.METHOD_FIELD_MASK) << R.METHOD_RET_SHIFT)


def acl_words(acl):
    """The ACL_SRC, ACL_DST, ACL_CTRL words of a validated redirect-list, entry after entry."""
    words = []
    for permit, sn, sm, dn, dm in acl:
        words += [sn, dn, prefix_len(sm) << R.ACL_SRC_LEN_SHIFT | prefix_len(dm) << R.ACL_DST_LEN_SHIFT
                  | (R.ACL_PERMIT if permit else 0)]
    return words


def group_addr(slot, off):
    return R.GROUP_BASE + R.GROUP_STRIDE * slot + off


def cache_addr(slot, index, off):
    return R.CACHE_BASE + R.CACHE_STRIDE * slot + 4 * index + off


STALE_SERVICE = const(1)
STALE_CACHES = const(2)
STALE_ASSIGN = const(4)
STALE_POLICY = const(8)


class _SlotMirror:
    def __init__(self):
        self.enabled = False
        self.service = None
        self.caches = []            # [(address, forward, ret)]
        self.assign = R.ASSIGN_NONE
        self.hash = None
        self.mask = None            # validated sets
        self.closed = False
        self.acl = []               # validated redirect-list
        self.stale = 0              # STALE_* parts whose shadow registers are unknown (a write failed)

    def ctrl(self):
        nsets = len(self.mask) if (self.assign == R.ASSIGN_MASK and self.mask) else 0
        return ((1 if self.enabled else 0) | (self.assign << 1) | (R.GROUP_CTRL_CLOSED if self.closed else 0)
                | (nsets << 8) | (len(self.caches) << 16) | (len(self.acl) << R.GROUP_CTRL_NUM_ACL_SHIFT))


class FpgaDataPlane(DataPlane):
    def __init__(self, transport, check_id=True):
        self.t = transport
        caps = 0
        if check_id:
            ident, version, caps = self.t.read(R.ID, 3)
            if ident != R.ID_VALUE:
                raise FpgaError("no WCCP datapath at the other end (ID 0x%08x)" % ident)
            why = version_problem(version)
            if why:
                raise FpgaError(why)
        self.caps = caps if check_id else None     # None: not read (features not checked)
        n = caps & 0xFF
        self.num_ports = n if n >= 2 else R.NUM_PORTS
        self.router_id = 0
        self.mac = None
        self.mtu = DEFAULT_MTU
        self.next_hop = [None] * self.num_ports
        self.slots = [_SlotMirror() for _ in range(MAX_GROUPS)]
        self._timeout_ms = DEFAULT_WATCHDOG_MS
        self._base = None
        self._pending = []          # explicit locations for after the next commit
        self._live_addrs = [[] for _ in range(MAX_GROUPS)]   # cache addresses as last committed
        self._where = {}            # address -> (mac, port) the driver wrote (carried over)
        self._srcidx_dirty = True   # SRCIDX may not hold the mirrors' index (never written, changed, failed)

    # -- helpers --

    def _w(self, addr, words):
        self.t.write(addr, words)

    def _write_ctrl(self, slot):
        self._w(group_addr(slot, R.GROUP_CTRL), [self.slots[slot].ctrl()])

    def _write_location(self, slot, index, mac, port):
        hi, lo = 0, 0
        if mac is not None:
            hi, lo = mac_words(mac)
            hi |= R.CACHE_MAC_KNOWN
        if port is not None:
            hi |= R.CACHE_PORT_KNOWN | ((port & 0xF) << R.CACHE_PORT_SHIFT)
        # LO is staging; the HI write updates the learnt state atomically
        self._w(cache_addr(slot, index, R.CACHE_MAC_LO), [lo])
        self._w(cache_addr(slot, index, R.CACHE_MAC_HI), [hi])

    def _check_port(self, port):
        if not isinstance(port, int) or port < 0 or port >= self.num_ports:
            raise ValueError("port must be 0..%d" % (self.num_ports - 1))

    # -- DataPlane: tables (shadow) --

    def configure(self, router_id, mac, mtu=DEFAULT_MTU):
        if not isinstance(router_id, int) or router_id < 0 or router_id > MASK32:
            raise ValueError("router_id must be an IPv4 address as int")
        m = check_mac(mac)
        if not isinstance(mtu, int) or mtu < MIN_MTU or mtu > MAX_MTU:
            raise ValueError("mtu must be %d..%d" % (MIN_MTU, MAX_MTU))
        hi, lo = mac_words(m if m is not None else b"\x00" * 6)
        self._w(R.ROUTER_ID, [router_id, hi, lo, mtu])
        self.router_id, self.mac, self.mtu = router_id, m, mtu

    def _failed(self, sl, part):
        sl.stale |= part

    def _write_part(self, slot, part, writes):
        """Write [(address, words), ...] and the slot's GROUP_CTRL as one part of the slot:
        when a write fails the part is marked unknown (commit refuses until it is rewritten)."""
        sl = self.slots[slot]
        try:
            for addr, words in writes:
                self._w(addr, words)
            self._write_ctrl(slot)
        except Exception:
            self._failed(sl, part)
            raise
        sl.stale &= ~part

    def set_group(self, slot, service):
        sl = self.slots[check_slot(slot)]
        sv = effective_service(service)
        p = sv["ports"]
        flags = sv["service_flags"] & 0xFFFF
        if sv["hash_fn"] == HASH_PEARSON:
            if self.caps is not None and not self.caps & R.CAPS_PEARSON:
                # a table this FPGA cannot hold (like any out-of-range table): the router leaves
                # this group unredirected and programs the others
                raise ValueError("this FPGA image has no Pearson hash (CAPS 0x%08x)" % self.caps)
            flags |= R.GROUP_FLAGS_PEARSON
        words = [sv["service_type"] | (sv["service_id"] << 8) | (sv["priority"] << 16) | (sv["protocol"] << 24),
                 flags]
        for i in range(4):
            words.append((p[2 * i] << 16) | p[2 * i + 1])
        sl.service = sv
        sl.enabled = True
        self._write_part(slot, STALE_SERVICE, [(group_addr(slot, R.GROUP_SERVICE), words)])

    def set_caches(self, slot, caches):
        sl = self.slots[check_slot(slot)]
        new = check_caches(caches, self.num_ports)
        old = sl.caches
        rewrite = sl.stale & STALE_CACHES
        sl.caches = [(c["address"], c["forward"], c["ret"]) for c in new]
        if sl.caches != old:
            self._srcidx_dirty = True
        try:
            for i in range(MAX_CACHES):
                if i < len(new):
                    c = new[i]
                    entry = sl.caches[i]
                else:
                    c = None
                    entry = (0, 0, 0)
                prev = old[i] if i < len(old) else (0, 0, 0)
                if entry != prev or rewrite:
                    self._w(cache_addr(slot, i, R.CACHE_ADDRESS), [entry[0], method_word(entry[1], entry[2])])
                if c is not None and entry[0] != prev[0]:
                    self._write_location(slot, i, None, None)
                    self._pending = [q for q in self._pending if q[0] != slot or q[1] != i]
                    if c["mac"] is not None or c["port"] is not None:
                        self._pending.append((slot, i, c["mac"], c["port"]))
            self._write_ctrl(slot)
        except Exception:
            self._failed(sl, STALE_CACHES)
            raise
        sl.stale &= ~STALE_CACHES

    def set_hash(self, slot, buckets):
        sl = self.slots[check_slot(slot)]
        b = check_buckets(buckets)
        sl.hash = b
        sl.mask = None
        sl.assign = R.ASSIGN_HASH
        self._write_part(slot, STALE_ASSIGN, [(R.BUCKET_BASE + R.BUCKET_STRIDE * slot, pack_bytes(b))])

    def set_mask(self, slot, sets):
        sl = self.slots[check_slot(slot)]
        sets = check_mask(sets)
        pos = []
        tabs = []
        for masks, values in sets:
            w0, w1, table = compile_mask_set(masks, values)
            pos += [w0, w1]
            tabs += pack_bytes(table)
        sl.mask = sets
        sl.hash = None
        sl.assign = R.ASSIGN_MASK
        self._write_part(slot, STALE_ASSIGN, [(R.MASKSET_BASE + R.MASKSET_STRIDE * slot, pos),
                                              (R.MASKTAB_BASE + R.MASKTAB_STRIDE * slot, tabs)] if sets else [])

    def clear_assignment(self, slot):
        sl = self.slots[check_slot(slot)]
        sl.assign = R.ASSIGN_NONE
        sl.hash = None
        sl.mask = None
        self._write_part(slot, STALE_ASSIGN, [])

    def clear_group(self, slot):
        check_slot(slot)
        sl = self.slots[slot]
        n = MAX_CACHES if sl.stale & STALE_CACHES else len(sl.caches)
        if sl.caches:
            self._srcidx_dirty = True
        try:
            for i in range(n):
                self._w(cache_addr(slot, i, R.CACHE_ADDRESS), [0, 0])
            self.slots[slot] = _SlotMirror()
            self._write_ctrl(slot)
        except Exception:
            self._failed(self.slots[slot], STALE_SERVICE | STALE_CACHES | STALE_ASSIGN)
            raise

    def set_policy(self, slot, closed=False, redirect_list=()):
        check_slot(slot)
        closed, acl = check_policy(closed, redirect_list)
        words = acl_words(acl)
        sl = self.slots[slot]
        sl.closed, sl.acl = closed, acl
        self._write_part(slot, STALE_POLICY, [(group_addr(slot, R.ACL_SRC), words)] if words else [])

    def set_next_hop(self, port, mac):
        self._check_port(port)
        m = check_mac(mac)
        hi, lo = mac_words(m if m is not None else b"\x00" * 6)
        self._w(R.NEXTHOP_MAC_HI + R.NEXTHOP_MAC_HI_STRIDE * port, [hi, lo])
        self.next_hop[port] = m

    def stale_slots(self):
        """Slots with a part whose shadow registers are unknown after a failed write."""
        return [s for s in range(MAX_GROUPS) if self.slots[s].stale]

    def commit(self):
        bad = self.stale_slots()
        if bad:
            raise FpgaError("not committed: slot(s) %s not rewritten since a failed register write" % bad)
        if self._srcidx_dirty:
            self._write_srcidx()
        self._w(R.COMMIT, [1])
        for _ in range(COMMIT_POLLS):
            if not (self.t.read(R.STATUS, 1)[0] & R.STATUS_COMMIT_BUSY):
                break
        else:
            raise FpgaError("commit did not complete (STATUS.COMMIT_BUSY stuck)")
        # a location re-learnt for the OLD cache between set_caches and the commit must not
        # survive into the new cache at that index; the new cache's own location, when the
        # driver knows it, is carried over
        present = set()
        for s in range(MAX_GROUPS):
            before = self._live_addrs[s]
            after = [c[0] for c in self.slots[s].caches]
            for i in range(len(after)):
                if i >= len(before) or before[i] != after[i]:
                    lc = self._where.get(after[i])
                    if lc is None:
                        self._write_location(s, i, None, None)
                    else:
                        self._write_location(s, i, lc[0], lc[1])
            self._live_addrs[s] = after
            present.update(after)
        for a in [a for a in self._where if a not in present]:
            del self._where[a]
        pending = self._pending
        self._pending = []
        for slot, index, mac, port in pending:
            self._write_location(slot, index, mac, port)
            if mac is not None and port is not None and index < len(self._live_addrs[slot]):
                self._where[self._live_addrs[slot][index]] = (mac, port)

    def _write_srcidx(self):
        """Write the cache-source index of the mirrors' cache tables into SRCIDX (shadow): the
        head words and the list words they point to."""
        head, entries = srcidx_words([[(c[0], method_word(c[1], c[2])) for c in sl.caches] for sl in self.slots])
        try:
            if entries:
                self._w(R.SRCIDX_LIST, entries)
            self._w(R.SRCIDX_HEAD, head)
        except Exception as e:
            # still dirty: every commit refuses until one writes the index whole
            raise FpgaError("not committed: writing the cache-source index failed (%s)" % (e,))
        self._srcidx_dirty = False

    # -- cache locations (live) --

    def set_cache_location(self, slot, index, mac, port):
        check_slot(slot)
        if not isinstance(index, int) or index < 0 or index >= MAX_CACHES:
            raise ValueError("cache index must be 0..%d" % (MAX_CACHES - 1))
        m = check_mac(mac)
        if port is not None:
            self._check_port(port)
        self._pending.append((slot, index, m, port))

    def learn(self, address, mac, port):
        m = check_mac(mac)
        if m is None:
            raise ValueError("mac required")
        self._check_port(port)
        for s in range(MAX_GROUPS):
            addrs = self._live_addrs[s]
            for i in range(len(addrs)):
                if addrs[i] == address:
                    self._write_location(s, i, m, port)
                    self._where[address] = (m, port)

    # -- active discovery: packet out, ARP capture --

    def send_frame(self, ports, frame):
        check_send(ports, frame, self.num_ports)
        n = len(frame)
        for _ in range(PKTOUT_POLLS):
            if not (self.t.read(R.PKTOUT_CTRL, 1)[0] & R.PKTOUT_BUSY):
                break
        else:
            raise FpgaError("packet out did not complete (PKTOUT_CTRL.BUSY stuck)")
        buf = bytearray((n + 3) & ~3)
        buf[0:n] = frame
        self._w(R.PKTOUT_DATA, pack_bytes(buf))
        self._w(R.PKTOUT_CTRL, [n | (ports << R.PKTOUT_PORTS_SHIFT)])

    def arp_replies(self, since):
        n = self.t.read(R.ARPCAP_COUNT, 1)[0]
        k = (n - since) & MASK32
        if k == 0:
            return n, []
        if k >= ARPCAP_ENTRIES:
            k = ARPCAP_ENTRIES - 1      # the oldest entry may be overwritten while read
        ring = self.t.read(R.ARPCAP_SIP, 4 * ARPCAP_ENTRIES)
        out = []
        for j in range(k):
            e = ((n - k + j) % ARPCAP_ENTRIES) * 4
            hi, lo = ring[e + 1], ring[e + 2]
            mac = bytes(((hi >> 8) & 0xFF, hi & 0xFF, (lo >> 24) & 0xFF, (lo >> 16) & 0xFF,
                         (lo >> 8) & 0xFF, lo & 0xFF))
            out.append((ring[e], mac, (hi >> R.ARPCAP_PORT_SHIFT) & 0xF))
        return n, out

    def cache_location(self, slot, index):
        """Learnt/set location read back from CACHE_MAC_HI/LO (None unless MAC and port known).

        The register map reads these registers as 0 (docs/regmap.md), so on an FPGA this is None:
        the FPGA keeps what it learns to itself."""
        check_slot(slot)
        if not isinstance(index, int) or index < 0 or index >= MAX_CACHES:
            return None
        hi, lo = self.t.read(cache_addr(slot, index, R.CACHE_MAC_HI), 2)
        if (hi & (R.CACHE_MAC_KNOWN | R.CACHE_PORT_KNOWN)) != (R.CACHE_MAC_KNOWN | R.CACHE_PORT_KNOWN):
            return None
        mac = bytes(((hi >> 8) & 0xFF, hi & 0xFF, (lo >> 24) & 0xFF, (lo >> 16) & 0xFF,
                     (lo >> 8) & 0xFF, lo & 0xFF))
        return (mac, (hi >> R.CACHE_PORT_SHIFT) & 0xF)

    # -- watchdog (live) --

    def arm(self, timeout_ms=None):
        if timeout_ms is not None:
            if not isinstance(timeout_ms, int) or timeout_ms < 0 or timeout_ms * 1000 > MASK32:
                raise ValueError("timeout_ms must be 0..%d" % (MASK32 // 1000))
            self._timeout_ms = timeout_ms
        self._w(R.WDT_TIMEOUT, [self._timeout_ms * 1000])
        self._w(R.CONTROL, [R.CONTROL_REDIRECT_EN])

    def disarm(self):
        self._w(R.CONTROL, [0])

    def heartbeat(self, now=None):
        self._w(R.HEARTBEAT, _ONE)      # a constant: the heartbeat allocates nothing

    def redirect_enabled(self, now=None):
        return bool(self.t.read(R.STATUS, 1)[0] & R.STATUS_ACTIVE)

    def status(self):
        s = self.t.read(R.STATUS, 1)[0]
        return {"active": bool(s & R.STATUS_ACTIVE), "wdt_expired": bool(s & R.STATUS_WDT_EXPIRED),
                "commit_busy": bool(s & R.STATUS_COMMIT_BUSY),
                "commits": self.t.read(R.COMMIT, 1)[0]}

    # -- counters --

    def _raw_counters(self):
        np_ = self.num_ports
        ports = [self.t.read(R.PORTCNT_BASE + R.PORTCNT_STRIDE * p, _PORTCNT_WORDS) for p in range(np_)]
        slots = [self.t.read(R.SLOTCNT_BASE + R.SLOTCNT_STRIDE * s, 2 * np_) for s in range(MAX_GROUPS)]
        caches = [self.t.read(R.CACHECNT_BASE + R.CACHECNT_STRIDE * s, 2 * MAX_CACHES) for s in range(MAX_GROUPS)]
        buckets = [self.t.read(R.BUCKETCNT_BASE + R.BUCKETCNT_STRIDE * s, NUM_BUCKETS) for s in range(MAX_GROUPS)]
        unknown = [self.t.read(R.UNKCNT_BASE + R.UNKCNT_STRIDE * s, MAX_CACHES) for s in range(MAX_GROUPS)]
        return ports, slots, caches, buckets, unknown

    def clear_counters(self):
        self._base = self._raw_counters()

    def counters(self):
        raw = self._raw_counters()
        base = self._base
        np_ = self.num_ports

        def d(grp, a, i):
            v = raw[grp][a][i]
            if base is not None:
                v = (v - base[grp][a][i]) & MASK32
            return v

        c = {}
        for name, off in _PORT_LISTS:
            c[name] = [d(0, p, off) for p in range(np_)]
        for name, off in _PORT_TOTALS:
            c[name] = sum(d(0, p, off) for p in range(np_))
        c["slot_frames"] = [sum(d(1, s, 2 * p) for p in range(np_)) for s in range(MAX_GROUPS)]
        c["slot_bytes"] = [sum(d(1, s, 2 * p + 1) for p in range(np_)) for s in range(MAX_GROUPS)]
        c["cache_frames"] = [[d(2, s, 2 * i) for i in range(MAX_CACHES)] for s in range(MAX_GROUPS)]
        c["cache_bytes"] = [[d(2, s, 2 * i + 1) for i in range(MAX_CACHES)] for s in range(MAX_GROUPS)]
        c["bucket_hits"] = [[d(3, s, b) for b in range(NUM_BUCKETS)] for s in range(MAX_GROUPS)]
        c["cache_unknown_frames"] = [[d(4, s, i) for i in range(MAX_CACHES)] for s in range(MAX_GROUPS)]
        return c

    # -- introspection --

    def tables(self):
        """What the driver has written into the shadow bank (for tests and the UI)."""
        slots = []
        for sl in self.slots:
            slots.append({"enabled": sl.enabled, "service": sl.service, "caches": list(sl.caches),
                          "assign": sl.assign, "hash": sl.hash, "mask": sl.mask, "closed": sl.closed,
                          "redirect_list": list(sl.acl)})
        return {"router_id": self.router_id, "mac": self.mac, "mtu": self.mtu,
                "next_hop": list(self.next_hop), "slots": slots}
