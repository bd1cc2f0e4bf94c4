"""The FPGA register map (docs/regmap.md) in front of a ForwardingModel: the digital twin's
fast mode, and the register-level FPGA of the firmware and driver tests (also under
MicroPython). Host and test code only: ``wccp flash`` leaves it off the boards
(wccptool.flash.HOST_ONLY)."""
import struct

from wccp.dataplane import MAX_ACL_ENTRIES, MAX_CACHES, MAX_GROUPS, NUM_BUCKETS, netmask
from wccp.pearson import HASH_PEARSON, HASH_WCCP
from wccp.regpack import mac_words, srcidx_words
from wccp.fwdmodel import R_PKTOUT_WORDS, ZERO_MAC, ForwardingModel, _Tables, _tdiff


class ModelRegisterFile:
    """The FPGA's register map (docs/regmap.md) in front of a ForwardingModel.

    An SPI slave: ``transaction(mosi) -> miso`` takes the bytes of one chip-select period
    (format of wccp.transport). Shadow registers are stored as written; a COMMIT decodes
    the shadow image into the model's tables and commits them; CONTROL, WDT_TIMEOUT,
    HEARTBEAT and the CACHE_MAC registers act on the model at once; reads return the
    model's counters. With ``wccp.fpga.FpgaDataPlane`` over ``wccp.transport.LoopbackTransport``
    (or a socket) this is the digital twin's fast mode: the real driver, the model in place
    of the RTL. Decision counters are totals in the model; they read on port 0 (the driver
    sums over ports). Reads of CACHE_MAC_* return 0, as the register map says. The PROBE
    block drives ``send_frame`` (PKTOUT; never BUSY: the model sends at once) and reads the
    ARP capture ring; locations are kept per index as in the FPGA (no carry-over: D7).
    The cache-source index (SRCIDX, shadow, write-only) is checked at each COMMIT against the
    committed cache tables (``wccp.regpack.srcidx_words``: the head words and the list words
    they point to): ``srcidx_mismatch`` counts the commits whose index did not match (the FPGA
    would then miss frames from caches); the model decides from the tables either way.
    """

    def __init__(self, model=None):
        from wccp import regmap
        self.R = regmap
        self.model = model if model is not None else ForwardingModel()
        self.shadow = {regmap.MTU: 1500}
        self.staging = {}
        self.live = {regmap.WDT_TIMEOUT: 1000000, regmap.CONTROL: 0}
        self.commits = 0
        self.srcidx_mismatch = 0    # commits whose SRCIDX did not match the committed cache tables
        self.pktout = [0] * R_PKTOUT_WORDS
        self.model.carry_locations = False      # the FPGA's driver carries locations (D7)
        self.model.arm(1000)        # timeout from WDT_TIMEOUT's reset value ...
        self.model.disarm()         # ... CONTROL.REDIRECT_EN resets to 0

    # -- SPI --

    def transaction(self, mosi):
        R = self.R
        n = len(mosi)
        miso = bytearray(n)
        if n < 4:
            return miso
        addr = (mosi[1] << 16) | (mosi[2] << 8) | mosi[3]
        if mosi[0] == R.SPI_CMD_WRITE:
            for i in range((n - 4) // 4):
                self.write_word(addr + i, struct.unpack_from(">I", mosi, 4 + 4 * i)[0])
        elif mosi[0] == R.SPI_CMD_READ:
            for i in range(max(0, (n - 5) // 4)):
                struct.pack_into(">I", miso, 5 + 4 * i, self.read_word(addr + i) & 0xFFFFFFFF)
        return miso

    def _is_shadow(self, a):
        R = self.R
        if R.ROUTER_ID <= a <= R.MTU or R.NEXTHOP_MAC_HI <= a < R.NEXTHOP_MAC_HI + 16:
            return True
        if R.GROUP_BASE <= a < R.GROUP_BASE + MAX_GROUPS * R.GROUP_STRIDE:
            return True
        if R.CACHE_BASE <= a < R.CACHE_BASE + MAX_GROUPS * R.CACHE_STRIDE:
            return (a - R.CACHE_BASE) % 4 < 2
        return (R.BUCKET_BASE <= a < R.BUCKET_BASE + MAX_GROUPS * R.BUCKET_STRIDE
                or R.MASKSET_BASE <= a < R.MASKSET_BASE + MAX_GROUPS * R.MASKSET_STRIDE
                or R.MASKTAB_BASE <= a < R.MASKTAB_BASE + MAX_GROUPS * R.MASKTAB_STRIDE)

    def _is_srcidx(self, a):
        R = self.R
        return (R.SRCIDX_HEAD <= a < R.SRCIDX_HEAD + R.SRCIDX_HEAD_COUNT
                or R.SRCIDX_LIST <= a < R.SRCIDX_LIST + R.SRCIDX_LIST_COUNT)

    def write_word(self, a, v):
        R = self.R
        m = self.model
        if self._is_shadow(a) or self._is_srcidx(a):      # SRCIDX: shadow, reads return 0
            self.shadow[a] = v
        elif R.CACHE_BASE <= a < R.CACHE_BASE + MAX_GROUPS * R.CACHE_STRIDE:
            slot = (a - R.CACHE_BASE) // R.CACHE_STRIDE
            idx = ((a - R.CACHE_BASE) % R.CACHE_STRIDE) // 4
            if (a - R.CACHE_BASE) % 4 == R.CACHE_MAC_LO:
                self.staging[(slot, idx)] = v
            else:
                lo = self.staging.get((slot, idx), 0)
                mac = bytes(((v >> 8) & 0xFF, v & 0xFF, (lo >> 24) & 0xFF, (lo >> 16) & 0xFF,
                             (lo >> 8) & 0xFF, lo & 0xFF)) if v & R.CACHE_MAC_KNOWN else None
                port = (v >> R.CACHE_PORT_SHIFT) & 0xF if v & R.CACHE_PORT_KNOWN else None
                if port is not None and port >= m.num_ports:
                    port = None
                m._loc[slot][idx] = (mac, port)
        elif R.PKTOUT_DATA <= a < R.PKTOUT_DATA + R_PKTOUT_WORDS:
            self.pktout[a - R.PKTOUT_DATA] = v & 0xFFFFFFFF
        elif a == R.PKTOUT_CTRL:
            n = v & R.PKTOUT_LEN_MASK
            ports = (v >> R.PKTOUT_PORTS_SHIFT) & ((1 << m.num_ports) - 1)
            if 14 <= n <= R.PKTOUT_MAX_LEN and ports:
                data = b"".join(struct.pack(">I", w) for w in self.pktout)
                m.send_frame(ports, data[:n])
        elif a == R.COMMIT:
            if v & 1:
                self._commit()
        elif a == R.CONTROL:
            self.live[a] = v
            if v & R.CONTROL_REDIRECT_EN:
                m.arm()
            else:
                m.disarm()
        elif a == R.WDT_TIMEOUT:
            self.live[a] = v
            m._timeout = (v + 999) // 1000
        elif a == R.HEARTBEAT:
            m.heartbeat()

    def read_word(self, a):
        R = self.R
        m = self.model
        if a == R.ID:
            return R.ID_VALUE
        if a == R.VERSION:
            return R.REGMAP_VERSION
        if a == R.CAPS:
            return (m.num_ports | (MAX_GROUPS << 8) | (MAX_CACHES << 16) | (R.MAX_MASK_SETS << 24)
                    | R.CAPS_PEARSON)
        if a == R.STATUS:
            on = m.redirect_enabled()
            return (R.STATUS_ACTIVE if on else 0) | (0 if on else R.STATUS_WDT_EXPIRED)
        if a == R.COMMIT:
            return self.commits
        if a == R.HEARTBEAT:
            if not m.redirect_enabled() or m._timeout == 0:
                return 0
            return max(0, m._timeout - _tdiff(m._time(None), m._last_hb)) * 1000
        if a in self.live:
            return self.live[a]
        if a == R.PKTOUT_CTRL:
            return (m.pktout_sent & 0xFFFF) << R.PKTOUT_SENT_SHIFT
        if a == R.ARPCAP_COUNT:
            return m._arpcap_n
        if R.ARPCAP_SIP <= a < R.ARPCAP_SIP + 4 * R.ARPCAP_ENTRIES:
            e = m._arpcap[(a - R.ARPCAP_SIP) // 4]
            off = (a - R.ARPCAP_SIP) % 4
            if e is None or off == 3:
                return 0
            if off == 0:
                return e[0]
            hi, lo = mac_words(e[1])
            return lo if off == 2 else hi | (e[2] << R.ARPCAP_PORT_SHIFT)
        if self._is_shadow(a):
            return self.shadow.get(a, 0)
        return self._read_counter(a)

    def _read_counter(self, a):
        R = self.R
        c = self.model._c
        np_ = self.model.num_ports
        if R.PORTCNT_BASE <= a < R.PORTCNT_BASE + R.PORTCNT_STRIDE * np_:
            p = (a - R.PORTCNT_BASE) // R.PORTCNT_STRIDE
            off = (a - R.PORTCNT_BASE) % R.PORTCNT_STRIDE
            lists = {R.CNT_RX_FRAMES: "rx_frames", R.CNT_RX_BYTES: "rx_bytes", R.CNT_TX_FRAMES: "tx_frames",
                     R.CNT_TX_BYTES: "tx_bytes", R.CNT_RX_RUNT: "rx_runt", R.CNT_RX_BAD_FCS: "rx_bad_fcs",
                     R.CNT_RX_OVERSIZE: "rx_oversize", R.CNT_RX_OVERFLOW: "rx_overflow", R.CNT_LEARNT: "learnt"}
            totals = {R.CNT_NOT_REDIRECTABLE: "not_redirectable", R.CNT_FROM_CACHE: "from_cache",
                      R.CNT_UNASSIGNED: "unassigned", R.CNT_CACHE_UNKNOWN: "cache_unknown",
                      R.CNT_GRE_TOO_BIG: "gre_too_big", R.CNT_GRE_RETURN: "gre_return",
                      R.CNT_REDIRECT_L2: "redirect_l2", R.CNT_REDIRECT_GRE: "redirect_gre",
                      R.CNT_GRE_RETURN_BAD: "gre_return_bad", R.CNT_TRUNCATED: "truncated",
                      R.CNT_CLOSED_DROP: "closed_drop"}
            if off in lists:
                return c[lists[off]][p] & 0xFFFFFFFF
            if off in totals:
                return c[totals[off]] & 0xFFFFFFFF if p == 0 else 0
            return 0
        if R.SLOTCNT_BASE <= a < R.SLOTCNT_BASE + R.SLOTCNT_STRIDE * MAX_GROUPS:
            s = (a - R.SLOTCNT_BASE) // R.SLOTCNT_STRIDE
            off = (a - R.SLOTCNT_BASE) % R.SLOTCNT_STRIDE
            if off == 0:
                return c["slot_frames"][s] & 0xFFFFFFFF
            if off == 1:
                return c["slot_bytes"][s] & 0xFFFFFFFF
            return 0
        if R.CACHECNT_BASE <= a < R.CACHECNT_BASE + R.CACHECNT_STRIDE * MAX_GROUPS:
            s = (a - R.CACHECNT_BASE) // R.CACHECNT_STRIDE
            off = (a - R.CACHECNT_BASE) % R.CACHECNT_STRIDE
            k = "cache_frames" if off % 2 == 0 else "cache_bytes"
            return c[k][s][off // 2] & 0xFFFFFFFF
        if R.UNKCNT_BASE <= a < R.UNKCNT_BASE + R.UNKCNT_STRIDE * MAX_GROUPS:
            s = (a - R.UNKCNT_BASE) // R.UNKCNT_STRIDE
            return c["cache_unknown_frames"][s][(a - R.UNKCNT_BASE) % R.UNKCNT_STRIDE] & 0xFFFFFFFF
        if R.BUCKETCNT_BASE <= a < R.BUCKETCNT_BASE + R.BUCKETCNT_STRIDE * MAX_GROUPS:
            s = (a - R.BUCKETCNT_BASE) // R.BUCKETCNT_STRIDE
            return c["bucket_hits"][s][(a - R.BUCKETCNT_BASE) % R.BUCKETCNT_STRIDE] & 0xFFFFFFFF
        return 0

    # -- COMMIT: decode the shadow image into the model's tables --

    def _commit(self):
        R = self.R
        g = self.shadow.get
        m = self.model
        t = _Tables(m.num_ports)
        index = []                  # per slot, (address, method word) of the entries NUM_CACHES counts
        t.router_id = g(R.ROUTER_ID, 0)
        t.mac = _mac_of(g(R.MAC_HI, 0), g(R.MAC_LO, 0))
        t.mtu = g(R.MTU, 0) & 0xFFFF
        for p in range(m.num_ports):
            nh = _mac_of(g(R.NEXTHOP_MAC_HI + 2 * p, 0), g(R.NEXTHOP_MAC_LO + 2 * p, 0))
            t.next_hop[p] = None if nh == ZERO_MAC else nh
        for s in range(MAX_GROUPS):
            base = R.GROUP_BASE + R.GROUP_STRIDE * s
            ctrl = g(base + R.GROUP_CTRL, 0)
            sl = t.slots[s]
            sl.enabled = bool(ctrl & 1)
            svc = g(base + R.GROUP_SERVICE, 0)
            ports = []
            for i in range(4):
                w = g(base + R.GROUP_PORTS + i, 0)
                ports.append(w >> 16)
                ports.append(w & 0xFFFF)
            gf = g(base + R.GROUP_FLAGS, 0)
            sl.service = {"service_type": svc & 0xFF, "service_id": (svc >> 8) & 0xFF,
                          "priority": (svc >> 16) & 0xFF, "protocol": (svc >> 24) & 0xFF,
                          "service_flags": gf & 0xFFFF, "ports": ports,
                          "hash_fn": HASH_PEARSON if gf & R.GROUP_FLAGS_PEARSON else HASH_WCCP}
            ncache = min((ctrl >> 16) & 0x3F, MAX_CACHES)
            cb = R.CACHE_BASE + R.CACHE_STRIDE * s
            fm = R.METHOD_FIELD_MASK
            sl.caches = [(g(cb + 4 * i, 0), (g(cb + 4 * i + 1, 0) >> R.METHOD_FWD_SHIFT) & fm,
                          (g(cb + 4 * i + 1, 0) >> R.METHOD_RET_SHIFT) & fm)
                         for i in range(ncache)]
            index.append([(g(cb + 4 * i, 0), g(cb + 4 * i + 1, 0)) for i in range(ncache)])
            assign = (ctrl >> 1) & 3
            if assign == R.ASSIGN_HASH:
                bb = R.BUCKET_BASE + R.BUCKET_STRIDE * s
                sl.hash = bytes(b for w in range(NUM_BUCKETS // 4) for b in struct.pack(">I", g(bb + w, 0)))
            elif assign == R.ASSIGN_MASK:
                sl.mask = [self._decode_set(s, k) for k in range(min((ctrl >> 8) & 7, R.MAX_MASK_SETS))]
            sl.closed = bool(ctrl & R.GROUP_CTRL_CLOSED)
            sl.acl = [self._decode_acl(base, e)
                      for e in range(min((ctrl >> R.GROUP_CTRL_NUM_ACL_SHIFT) & 0xF, MAX_ACL_ENTRIES))]
        if not self._srcidx_matches(index):
            self.srcidx_mismatch += 1
        m._shadow = t
        m.commit()
        self.commits += 1

    def _srcidx_matches(self, tables):
        """SRCIDX (the fields the FPGA keeps) is the index of the cache tables: its head words,
        and the list words they point to (the others are never read)."""
        R = self.R
        g = self.shadow.get
        head, entries = srcidx_words(tables)
        hmask = R.SRCIDX_FIELD_MASK | (R.SRCIDX_FIELD_MASK << R.SRCIDX_COUNT_SHIFT)
        for f in range(R.SRCIDX_HEAD_COUNT):
            if g(R.SRCIDX_HEAD + f, 0) & hmask != head[f]:
                return False
        for k in range(len(entries)):
            if g(R.SRCIDX_LIST + k, 0) & R.SRCIDX_ENTRY_MASK != entries[k]:
                return False
        return True

    def _decode_acl(self, base, e):
        """Redirect-list entry e of the group at base as the model's (permit, sn, sm, dn, dm)."""
        R = self.R
        g = self.shadow.get
        c = g(base + R.ACL_CTRL + R.ACL_CTRL_STRIDE * e, 0)
        # lengths above 32 act as 32, as in the hardware
        sm = netmask(min((c >> R.ACL_SRC_LEN_SHIFT) & R.ACL_LEN_MASK, 32))
        dm = netmask(min((c >> R.ACL_DST_LEN_SHIFT) & R.ACL_LEN_MASK, 32))
        return (bool(c & R.ACL_PERMIT), g(base + R.ACL_SRC + R.ACL_SRC_STRIDE * e, 0) & sm, sm,
                g(base + R.ACL_DST + R.ACL_DST_STRIDE * e, 0) & dm, dm)

    def _decode_set(self, s, k):
        """(masks, values) equivalent to the compiled set k of slot s."""
        R = self.R
        g = self.shadow.get
        w0 = g(R.MASKSET_BASE + R.MASKSET_STRIDE * s + 2 * k, 0)
        w1 = g(R.MASKSET_BASE + R.MASKSET_STRIDE * s + 2 * k + 1, 0)
        pos = []
        for j in range(7):
            b = ((w0 >> (8 * j)) if j < 4 else (w1 >> (8 * (j - 4)))) & 0xFF
            if b & R.BITPOS_VALID and (b & 0x7F) < 96:
                pos.append(b & 0x7F)
        mask = 0
        for p in pos:
            mask |= 1 << p
        tb = R.MASKTAB_BASE + R.MASKTAB_STRIDE * s + 32 * k
        values = []
        for idx in range(1 << len(pos)):
            e = (g(tb + idx // 4, 0xFFFFFFFF) >> (8 * (3 - idx % 4))) & 0xFF
            if e == 0xFF:
                continue
            key = 0
            for j in range(len(pos)):
                if (idx >> j) & 1:
                    key |= 1 << pos[j]
            values.append(_split_key(key) + (e & 0x7F,))
        return (_split_key(mask), values)


def _split_key(k):
    return ((k >> 64) & 0xFFFFFFFF, (k >> 32) & 0xFFFFFFFF, (k >> 16) & 0xFFFF, k & 0xFFFF)


def _mac_of(hi, lo):
    return bytes(((hi >> 8) & 0xFF, hi & 0xFF, (lo >> 24) & 0xFF, (lo >> 16) & 0xFF, (lo >> 8) & 0xFF, lo & 0xFF))
