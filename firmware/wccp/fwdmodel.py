"""Reference model of the forwarding data plane (the datapath spec in executable form).

One file of about 700 lines on purpose: ForwardingModel is the datapath's one decision
sequence (rx checks, learning, GRE return, classification, assignment, output bytes) and
reads top to bottom like the RTL it scores; the parts that stand alone are in wccp.frame,
wccp.fwdmodel_regs and docs/datapath.md.

``ForwardingModel`` implements ``wccp.dataplane.DataPlane``. It is the control plane's
data plane on the unix port and the byte-exact scoreboard for the FPGA (fpga/rtl): for a
received Ethernet frame (no preamble, WITH FCS) ``process()`` returns the frames that leave
and on which port, FCS included; ``decide()`` returns only the decision (no side effects).
Runs on MicroPython and CPython.

The decisions where the WCCP drafts say nothing about a data plane's behaviour (rx checks,
counting, learning, truncated datagrams, output bytes: D1–D16, cited in comments here, in the
FPGA driver and in fpga/rtl) and the counters are written out in docs/datapath.md; the RTL
implements the same.

Frame helpers (CRC-32/FCS, internet checksum, bucket fold, hash key) are in wccp.frame;
``wccp.fwdmodel_regs.ModelRegisterFile`` puts the FPGA register map in front of this model
(the digital twin's fast mode; not shipped to boards).
"""
import struct

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

import time

from wccp.dataplane import (
    BUCKET_ALT, BUCKET_UNASSIGNED, DEFAULT_WATCHDOG_MS, FWD_L2, MAX_CACHES, MAX_FRAME,
    DEFAULT_MTU, MAX_GROUPS, MAX_MTU, MIN_FRAME, MIN_MTU, NUM_BUCKETS, NUM_PORTS, RET_L2, ARPCAP_ENTRIES,
    SERVICE_DYNAMIC, SF_PORTS_DEFINED, SF_PORTS_SOURCE,
    DataPlane, check_buckets, check_caches, check_send,
    check_mac, check_mask, check_policy, check_slot, effective_service,
)
from wccp.pearson import HASH_PEARSON, HASH_WCCP
from wccp.pearson import bucket as pearson_bucket
from wccp.frame import fcs, fcs_ok, fold, hash_key, ip_checksum, with_fcs  # noqa: F401 (with_fcs, fcs_ok: also imported from here)

ETH_VLAN = const(0x8100)
ETH_IPV4 = const(0x0800)
ETH_ARP = const(0x0806)
OUTBOX_MAX = const(64)          # frames send_frame() keeps for take_sent() (oldest dropped)
R_PKTOUT_WORDS = const(16)      # PKTOUT_DATA words (regmap PKTOUT_DATA_COUNT)
GRE_PROTO_WCCP = const(0x883E)
GRE_OVERHEAD = const(28)        # outer IPv4 20 + GRE 4 + redirect header 4
MIN_PAYLOAD = const(60)         # Ethernet frame without FCS is padded to this
GRE_MIN_CLIP = const(1472)      # a GRE output carries at most max(MTU - 28, this) input bytes (D14)

# Redirect header flag bits (wccp2-reference.md 9: Wireshark numbering).
RH_DYNAMIC = const(0x01)
RH_ALT_USED = const(0x02)

# Cache entry tuple layout.
C_ADDR = const(0)
C_FWD = const(1)
C_RET = const(2)

ZERO_MAC = b"\x00" * 6


def _clock_ms():
    if hasattr(time, "ticks_ms"):
        return time.ticks_ms()
    return int(time.monotonic() * 1000)


if hasattr(time, "ticks_diff"):
    _tdiff = time.ticks_diff
else:
    def _tdiff(a, b):
        return a - b


# --- tables -----------------------------------------------------------------------------

_UNKNOWN = (None, None)


def _acl_permits(acl, src, dst):
    for permit, sn, sm, dn, dm in acl:
        if src & sm == sn and dst & dm == dn:
            return permit
    return False


class _Slot:
    def __init__(self):
        self.enabled = False
        self.service = None     # effective service dict
        self.caches = []        # list of (address, forward, ret)
        self.hash = None        # 256 bytes or None
        self.mask = None        # [((ms, md, mps, mpd), [(s, d, sp, dp, idx), ...]), ...] or None
        self.closed = False     # policy (set_policy): drop instead of forward when unassigned
        self.acl = ()           # redirect-list [(permit, sn, sm, dn, dm)]

    def copy(self):
        s = _Slot()
        s.closed = self.closed
        s.acl = self.acl
        s.enabled = self.enabled
        s.service = self.service
        s.caches = self.caches
        s.hash = self.hash
        s.mask = self.mask
        return s


class _Tables:
    def __init__(self, num_ports):
        self.router_id = 0
        self.mac = ZERO_MAC
        self.mtu = DEFAULT_MTU
        self.next_hop = [None] * num_ports
        self.slots = [_Slot() for _ in range(MAX_GROUPS)]

    def copy(self):
        t = _Tables(len(self.next_hop))
        t.router_id = self.router_id
        t.mac = self.mac
        t.mtu = self.mtu
        t.next_hop = list(self.next_hop)
        t.slots = [s.copy() for s in self.slots]
        return t


class Decision:
    """What happens to one frame.

    action: 'drop' | 'forward' | 'redirect_gre' | 'redirect_l2' | 'decap'
    reason: the counter it bumps (rx_runt, rx_bad_fcs, rx_oversize, gre_return,
      gre_return_bad, truncated, not_redirectable, from_cache, unassigned, cache_unknown,
      gre_too_big, redirect_gre, redirect_l2; 'closed' counts closed_drop) or, for uncounted normal forwarding, 'not_ipv4',
      'disabled' (fail-open), 'no_match'.
    out_port: egress port (None for drop); slot/cache: matched slot and chosen cache index;
    bucket/alt_bucket: primary and alternate bucket (hash assignment); alt_used.
    """

    def __init__(self, action, reason, out_port=None):
        self.action = action
        self.reason = reason
        self.out_port = out_port
        self.slot = None
        self.cache = None
        self.bucket = None
        self.alt_bucket = None
        self.alt_used = False
        # parse results used to build the output
        self.l3 = 0
        self.ip_len = 0
        self.inner = 0
        self.inner_len = 0

    def as_dict(self):
        return {"action": self.action, "reason": self.reason, "out_port": self.out_port,
                "slot": self.slot, "cache": self.cache, "bucket": self.bucket,
                "alt_bucket": self.alt_bucket, "alt_used": self.alt_used}

    def __repr__(self):
        return "Decision(%s)" % ", ".join("%s=%r" % (k, v) for k, v in sorted(self.as_dict().items()))


# --- the model --------------------------------------------------------------------------

class ForwardingModel(DataPlane):
    def __init__(self, num_ports=NUM_PORTS, clock=None):
        if num_ports < 2 or num_ports & 1:
            raise ValueError("num_ports must be even and >= 2")
        self.num_ports = num_ports
        self._shadow = _Tables(num_ports)
        self._live = _Tables(num_ports)
        self._clock = clock if clock is not None else _clock_ms
        self._manual_now = None
        self._armed = False
        self._timeout = DEFAULT_WATCHDOG_MS
        self._last_hb = None
        # live cache locations (mac or None, port or None) per slot and cache index, and
        # explicit location writes waiting for the next commit: [(slot, index, mac, port)]
        self._loc = [[_UNKNOWN] * MAX_CACHES for _ in range(MAX_GROUPS)]
        self._pending = []
        self.carry_locations = True     # D7 carry-over (off behind ModelRegisterFile)
        self._outbox = []               # [(port, frame with FCS)] from send_frame (D16)
        self._arpcap = [None] * ARPCAP_ENTRIES
        self._arpcap_n = 0
        self.pktout_sent = 0
        self.clear_counters()

    # -- table writes (shadow) --

    def configure(self, router_id, mac, mtu=1500):
        if not isinstance(router_id, int) or router_id < 0 or router_id > 0xFFFFFFFF:
            raise ValueError("router_id must be an IPv4 address as int")
        m = check_mac(mac)
        if not isinstance(mtu, int) or mtu < MIN_MTU or mtu > MAX_MTU:
            raise ValueError("mtu must be %d..%d" % (MIN_MTU, MAX_MTU))
        self._shadow.router_id = router_id
        self._shadow.mac = m if m is not None else ZERO_MAC
        self._shadow.mtu = mtu

    def set_group(self, slot, service):
        sl = self._shadow.slots[check_slot(slot)]
        sl.service = effective_service(service)
        sl.enabled = True

    def set_caches(self, slot, caches):
        sl = self._shadow.slots[check_slot(slot)]
        old = sl.caches
        new = []
        for i, c in enumerate(check_caches(caches, self.num_ports)):
            if i >= len(old) or old[i][C_ADDR] != c["address"]:
                self._loc[slot][i] = _UNKNOWN
                self._pending = [q for q in self._pending if q[0] != slot or q[1] != i]
                if c["mac"] is not None or c["port"] is not None:
                    self._pending.append((slot, i, c["mac"], c["port"]))
            new.append((c["address"], c["forward"], c["ret"]))
        sl.caches = new

    def set_hash(self, slot, buckets):
        sl = self._shadow.slots[check_slot(slot)]
        sl.hash = check_buckets(buckets)
        sl.mask = None

    def set_mask(self, slot, sets):
        sl = self._shadow.slots[check_slot(slot)]
        sl.mask = check_mask(sets)
        sl.hash = None

    def clear_assignment(self, slot):
        sl = self._shadow.slots[check_slot(slot)]
        sl.hash = None
        sl.mask = None

    def clear_group(self, slot):
        self._shadow.slots[check_slot(slot)] = _Slot()

    def set_next_hop(self, port, mac):
        self._check_port(port)
        self._shadow.next_hop[port] = check_mac(mac)

    def set_policy(self, slot, closed=False, redirect_list=()):
        sl = self._shadow.slots[check_slot(slot)]
        sl.closed, sl.acl = check_policy(closed, redirect_list)

    def set_cache_location(self, slot, index, mac, port):
        """Queue an explicit location (mac and/or port; None = unknown) for the next commit."""
        check_slot(slot)
        if not isinstance(index, int) or index < 0 or index >= MAX_CACHES:
            raise ValueError("cache index must be 0..%d" % (MAX_CACHES - 1))
        mac = check_mac(mac)
        if port is not None:
            self._check_port(port)
        self._pending.append((slot, index, mac, port))

    def commit(self):
        old = self._live
        carry = {}
        if self.carry_locations:
            for s in range(MAX_GROUPS):
                cs = old.slots[s].caches
                for i in range(len(cs)):
                    lc = self._loc[s][i]
                    if lc[0] is not None and lc[1] is not None:
                        carry[cs[i][C_ADDR]] = lc
        self._live = self._shadow.copy()
        for s in range(MAX_GROUPS):
            before = old.slots[s].caches
            after = self._live.slots[s].caches
            for i in range(len(after)):
                if i >= len(before) or before[i][C_ADDR] != after[i][C_ADDR]:
                    self._loc[s][i] = carry.get(after[i][C_ADDR], _UNKNOWN)
        for slot, index, mac, port in self._pending:
            self._loc[slot][index] = (mac, port)
        self._pending = []

    def learn(self, address, mac, port):
        mac = check_mac(mac)
        if mac is None:
            raise ValueError("mac required")
        self._check_port(port)
        loc = (mac, port)
        live = self._live.slots
        for s in range(MAX_GROUPS):
            caches = live[s].caches
            for i in range(len(caches)):
                if caches[i][C_ADDR] == address:
                    self._loc[s][i] = loc

    # -- packet out, ARP capture (D16) --

    def send_frame(self, ports, frame):
        check_send(ports, frame, self.num_ports)
        n = len(frame)
        buf = bytearray(max(n, MIN_PAYLOAD))
        buf[0:n] = frame
        data = bytes(buf) + fcs(buf)
        c = self._c
        for p in range(self.num_ports):
            if ports >> p & 1:
                c["tx_frames"][p] += 1
                c["tx_bytes"][p] += len(data)
                self._outbox.append((p, data))
                self.pktout_sent += 1
        if len(self._outbox) > OUTBOX_MAX:
            del self._outbox[:len(self._outbox) - OUTBOX_MAX]

    def take_sent(self):
        """The frames send_frame() emitted since the last call: [(port, frame with FCS)]."""
        out = self._outbox
        self._outbox = []
        return out

    def arp_replies(self, since):
        n = self._arpcap_n
        k = (n - since) & 0xFFFFFFFF
        if k >= ARPCAP_ENTRIES:
            k = ARPCAP_ENTRIES - 1      # the oldest entry may be overwritten while read
        return n, [self._arpcap[(n - k + j) % ARPCAP_ENTRIES] for j in range(k)]

    def _capture_arp(self, port, frame, l3):
        # n >= 64 (rx checks): the ARP fields (l3 + 28 <= 46) are in the frame
        if frame[0:6] != self._live.mac:
            return
        if frame[l3:l3 + 8] != b"\x00\x01\x08\x00\x06\x04\x00\x02":
            return
        sip = struct.unpack_from(">I", frame, l3 + 14)[0]
        self._arpcap[self._arpcap_n % ARPCAP_ENTRIES] = (sip, bytes(frame[6:12]), port)
        self._arpcap_n = (self._arpcap_n + 1) & 0xFFFFFFFF

    # -- reads --

    def cache_location(self, slot, index):
        check_slot(slot)
        if not isinstance(index, int) or index < 0 or index >= MAX_CACHES:
            return None
        lc = self._loc[slot][index]
        if lc[0] is None or lc[1] is None:
            return None
        return lc

    # -- watchdog --

    def _time(self, now):
        if now is not None:
            return now
        if self._manual_now is not None:
            return self._manual_now
        return self._clock()

    def arm(self, timeout_ms=None):
        if timeout_ms is not None:
            if not isinstance(timeout_ms, int) or timeout_ms < 0:
                raise ValueError("timeout_ms must be an int >= 0")
            self._timeout = timeout_ms
        if not self._armed:
            self._last_hb = None
        self._armed = True

    def disarm(self):
        self._armed = False

    def heartbeat(self, now=None):
        self._last_hb = self._time(now)

    def tick(self, now):
        """Advance the model's manual clock (tests); returns whether redirection is enabled."""
        self._manual_now = now
        return self.redirect_enabled()

    def redirect_enabled(self, now=None):
        if not self._armed or self._last_hb is None:
            return False
        if self._timeout == 0:
            return True
        return _tdiff(self._time(now), self._last_hb) < self._timeout

    # -- counters --

    def clear_counters(self):
        np_ = self.num_ports
        c = {}
        for k in ("rx_frames", "rx_bytes", "tx_frames", "tx_bytes", "rx_runt", "rx_bad_fcs",
                  "rx_oversize", "rx_overflow", "learnt"):
            c[k] = [0] * np_
        for k in ("not_redirectable", "gre_return", "gre_return_bad", "from_cache", "unassigned",
                  "cache_unknown", "redirect_l2", "redirect_gre", "gre_too_big", "truncated", "closed_drop"):
            c[k] = 0
        c["slot_frames"] = [0] * MAX_GROUPS
        c["slot_bytes"] = [0] * MAX_GROUPS
        c["cache_frames"] = [[0] * MAX_CACHES for _ in range(MAX_GROUPS)]
        c["cache_bytes"] = [[0] * MAX_CACHES for _ in range(MAX_GROUPS)]
        c["cache_unknown_frames"] = [[0] * MAX_CACHES for _ in range(MAX_GROUPS)]
        c["bucket_hits"] = [[0] * NUM_BUCKETS for _ in range(MAX_GROUPS)]
        self._c = c

    def counters(self):
        out = {}
        for k, v in self._c.items():
            if isinstance(v, list):
                if v and isinstance(v[0], list):
                    out[k] = [list(x) for x in v]
                else:
                    out[k] = list(v)
            else:
                out[k] = v
        return out

    # -- the datapath --

    def _check_port(self, port):
        if not isinstance(port, int) or port < 0 or port >= self.num_ports:
            raise ValueError("port must be 0..%d" % (self.num_ports - 1))

    def decide(self, port, frame, now=None):
        """The decision for one frame, without side effects (no counters, no learning)."""
        self._check_port(port)
        return self._decide(port, frame, now, False)

    def _learn(self, port, frame, src):
        live = self._live.slots
        loc = None
        for s in range(MAX_GROUPS):
            caches = live[s].caches
            for i in range(len(caches)):
                if caches[i][C_ADDR] == src:
                    if loc is None:
                        loc = (bytes(frame[6:12]), port)
                    if self._loc[s][i] != loc:
                        self._loc[s][i] = loc
                        self._c["learnt"][port] += 1

    def _decide(self, port, frame, now, learn):
        n = len(frame)
        if n < MIN_FRAME:
            return Decision("drop", "rx_runt")
        if not fcs_ok(frame):
            return Decision("drop", "rx_bad_fcs")
        if n > MAX_FRAME:
            return Decision("drop", "rx_oversize")
        out = port ^ 1
        end = n - 4
        # Ethernet, one optional 802.1Q tag
        l3 = 14
        et = (frame[12] << 8) | frame[13]
        if et == ETH_VLAN:
            et = (frame[16] << 8) | frame[17]
            l3 = 18
        if et != ETH_IPV4:
            if et == ETH_ARP and learn:
                self._capture_arp(port, frame, l3)
            return Decision("forward", "not_ipv4", out)
        enabled = self.redirect_enabled(now)
        # IPv4: n >= 64 guarantees the 20-byte base header is inside the frame
        vihl = frame[l3]
        ihl = (vihl & 0x0F) << 2
        tl = (frame[l3 + 2] << 8) | frame[l3 + 3]
        ip_end = l3 + tl
        proto = frame[l3 + 9]
        l4 = l3 + ihl
        valid = (vihl >> 4) == 4 and ihl >= 20 and tl >= ihl \
            and (((frame[l3 + 6] << 8) | frame[l3 + 7]) & 0x3FFF) == 0
        if valid and (proto == 6 or proto == 17) and l4 + 4 > ip_end:
            valid = False       # ports not inside the total length (D4)
        trunc = False
        if valid and ip_end > end:
            # truncated datagram (D15): decided only when its header point is in the frame
            if l4 + (12 if proto == 47 else 4) > end:
                valid = False
            else:
                trunc = True
        if not valid:
            return Decision("forward", "not_redirectable" if enabled else "disabled", out)
        d = self._decide_ip(port, frame, learn and not trunc, enabled, out, l3, l4, tl, proto)
        if d.reason == "unassigned" and self._live.slots[d.slot].closed:
            d.action = "drop"                   # closed service: no cache for it
            d.reason = "closed"
        if trunc:
            if d.action == "forward":
                return Decision("forward", "not_redirectable" if enabled else "disabled", out)
            return Decision("drop", "truncated")
        return d

    def _decide_ip(self, port, frame, learn, enabled, out, l3, l4, tl, proto):
        """The decision for a valid-for-redirect IPv4 frame (D3 from learning on)."""
        t = self._live
        ip_end = l3 + tl
        sport = dport = 0
        if proto == 6 or proto == 17:
            sport, dport = struct.unpack_from(">HH", frame, l4)
        src, dst = struct.unpack_from(">II", frame, l3 + 12)
        if learn:
            self._learn(port, frame, src)
        # GRE return traffic (also while redirection is disabled)
        if proto == 47 and dst == t.router_id and l4 + 4 <= ip_end \
                and frame[l4] == 0 and frame[l4 + 1] == 0 \
                and frame[l4 + 2] == 0x88 and frame[l4 + 3] == 0x3E:
            p = l4 + 4
            if p >= ip_end:
                return Decision("drop", "gre_return_bad")
            if (frame[p] >> 4) != 4:
                p += 4          # WCCPv2 redirect header present
            if p + 4 > ip_end:
                return Decision("drop", "gre_return_bad")
            il = (frame[p + 2] << 8) | frame[p + 3]
            if il < 20 or p + il > ip_end:
                return Decision("drop", "gre_return_bad")
            d = Decision("decap", "gre_return", out)
            d.l3 = l3
            d.inner = p
            d.inner_len = il
            return d
        if not enabled:
            return Decision("forward", "disabled", out)
        # service groups in slot order; the first match decides
        slot = None
        for s in range(MAX_GROUPS):
            sl = t.slots[s]
            if not sl.enabled:
                continue
            sv = sl.service
            sp = sv["protocol"]
            if sp != 0 and sp != proto:
                continue
            fl = sv["service_flags"]
            if (sp == 6 or sp == 17) and (fl & SF_PORTS_DEFINED):
                pp = sport if (fl & SF_PORTS_SOURCE) else dport
                if pp == 0 or pp not in sv["ports"]:
                    continue
            if sl.acl and not _acl_permits(sl.acl, src, dst):
                continue                    # redirect-list: not this service's traffic
            slot = s
            break
        if slot is None:
            return Decision("forward", "no_match", out)
        d = Decision("forward", "from_cache", out)
        d.slot = slot
        d.l3 = l3
        d.ip_len = tl
        caches = sl.caches
        # never redirect what comes from one of the group's caches
        locs = self._loc[slot]
        smac = None
        for i in range(len(caches)):
            c = caches[i]
            if c[C_ADDR] == src:
                return d
            if c[C_RET] == RET_L2 and locs[i][0] is not None:
                if smac is None:
                    smac = bytes(frame[6:12])
                if locs[i][0] == smac:
                    return d
        d.reason = "unassigned"
        idx = None
        if sl.hash is not None:
            pearson = sv.get("hash_fn", HASH_WCCP) == HASH_PEARSON     # D9b
            if pearson:
                b = pearson_bucket(fl, src, dst, sport, dport)
            else:
                b = fold(hash_key(fl, src, dst, sport, dport))
            d.bucket = b
            e = sl.hash[b]
            if e == BUCKET_UNASSIGNED:
                return d
            if e & BUCKET_ALT:
                if pearson:
                    ab = pearson_bucket(fl, src, dst, sport, dport, True)
                else:
                    ab = fold(hash_key(fl, src, dst, sport, dport, True))
                d.alt_bucket = ab
                d.alt_used = True
                e = sl.hash[ab]
                if e == BUCKET_UNASSIGNED:
                    return d
            idx = e & 0x7F
        elif sl.mask is not None:
            for masks, values in sl.mask:
                a = src & masks[0]
                b = dst & masks[1]
                c = sport & masks[2]
                e = dport & masks[3]
                for v in values:
                    if v[0] == a and v[1] == b and v[2] == c and v[3] == e:
                        idx = v[4]
                        break
                if idx is not None:
                    break
        if idx is None or idx >= len(caches):
            return d
        d.cache = idx
        c = caches[idx]
        lc = locs[idx]
        if lc[0] is None or lc[1] is None:
            d.reason = "cache_unknown"
            return d
        if c[C_FWD] == FWD_L2:
            d.action = d.reason = "redirect_l2"
            d.out_port = lc[1]
            return d
        if tl + GRE_OVERHEAD > t.mtu:
            d.reason = "gre_too_big"
            return d
        d.action = d.reason = "redirect_gre"
        d.out_port = lc[1]
        return d

    def process(self, port, frame, now=None):
        """Receive one frame on port; return [(out_port, frame_bytes_with_fcs), ...]."""
        self._check_port(port)
        c = self._c
        n = len(frame)
        c["rx_frames"][port] += 1
        c["rx_bytes"][port] += n
        d = self._decide(port, frame, now, True)
        reason = d.reason
        act = d.action
        if act == "drop":
            if reason == "closed":
                reason = "closed_drop"      # a closed service's unassigned frame
            if isinstance(c[reason], list):
                c[reason][port] += 1        # rx_runt, rx_bad_fcs, rx_oversize
            else:
                c[reason] += 1              # gre_return_bad, truncated
            return []
        if reason in c:
            c[reason] += 1
        s = d.slot
        if reason == "cache_unknown":
            c["cache_unknown_frames"][s][d.cache] += 1
        if s is not None:
            c["slot_frames"][s] += 1
            c["slot_bytes"][s] += n
            if d.bucket is not None:
                c["bucket_hits"][s][d.bucket] += 1
        if act == "forward":
            data = bytes(frame)
        elif act == "redirect_gre":
            data = self._build_gre(frame, d)
        elif act == "redirect_l2":
            data = self._build_l2(frame, d)
        else:
            data = self._build_decap(frame, d)
        if act == "redirect_gre" or act == "redirect_l2":
            c["cache_frames"][s][d.cache] += 1
            c["cache_bytes"][s][d.cache] += n
        o = d.out_port
        c["tx_frames"][o] += 1
        c["tx_bytes"][o] += len(data)
        return [(o, data)]

    # -- frame builders --

    def _build_l2(self, frame, d):
        t = self._live
        buf = bytearray(frame[:len(frame) - 4])
        buf[0:6] = self._loc[d.slot][d.cache][0]
        buf[6:12] = t.mac
        return bytes(buf) + fcs(buf)

    def _build_gre(self, frame, d):
        t = self._live
        sl = t.slots[d.slot]
        c = sl.caches[d.cache]
        l3 = d.l3
        tl = d.ip_len
        # the datagram and whatever follows it up to the FCS, at most MTU - 28 bytes and never
        # clipped below GRE_MIN_CLIP (D14)
        cl = min(len(frame) - 4 - l3, max(t.mtu - GRE_OVERHEAD, GRE_MIN_CLIP))
        total = l3 + GRE_OVERHEAD + cl     # l3 covers MACs, tag and ethertype
        buf = bytearray(max(total, MIN_PAYLOAD))
        buf[0:6] = self._loc[d.slot][d.cache][0]
        buf[6:12] = t.mac
        buf[12:l3] = frame[12:l3]     # the VLAN tag as received (if any) and ...
        buf[l3 - 2] = 0x08            # ... ethertype IPv4
        buf[l3 - 1] = 0x00
        struct.pack_into(">BBHHHBBHII", buf, l3, 0x45, 0, tl + GRE_OVERHEAD, 0, 0x4000, 64, 47, 0,
                         t.router_id, c[C_ADDR])
        struct.pack_into(">H", buf, l3 + 10, ip_checksum(memoryview(buf)[l3:l3 + 20]))
        o = l3 + 20
        struct.pack_into(">HH", buf, o, 0, GRE_PROTO_WCCP)
        flags = 0
        if sl.service["service_type"] == SERVICE_DYNAMIC:
            flags |= RH_DYNAMIC
        if d.alt_used:
            flags |= RH_ALT_USED
        buf[o + 4] = flags
        buf[o + 5] = sl.service["service_id"]
        buf[o + 6] = d.alt_bucket if d.alt_used else 0
        buf[o + 7] = d.bucket if d.bucket is not None else 0
        o += 8
        buf[o:o + cl] = frame[l3:l3 + cl]
        return bytes(buf) + fcs(buf)

    def _build_decap(self, frame, d):
        t = self._live
        l3 = d.l3
        il = len(frame) - 4 - d.inner     # inner datagram and everything after it (D14)
        buf = bytearray(max(l3 + il, MIN_PAYLOAD))
        nh = t.next_hop[d.out_port]
        buf[0:6] = nh if nh is not None else frame[0:6]
        buf[6:12] = t.mac
        buf[12:l3] = frame[12:l3]
        buf[l3 - 2] = 0x08
        buf[l3 - 1] = 0x00
        buf[l3:l3 + il] = frame[d.inner:d.inner + il]
        return bytes(buf) + fcs(buf)
