"""Reference model of the forwarding data plane (the datapath spec in executable form).

``ForwardingModel`` implements ``wccp.dataplane.DataPlane``. It is the control plane's
data plane on the unix port and the byte-exact scoreboard for the FPGA (fpga/rtl): for a
received Ethernet frame (no preamble, WITH FCS) ``process()`` returns the frames that leave
and on which port, FCS included; ``decide()`` returns only the decision (no side effects).
Runs on MicroPython and CPython.

Decisions where the spec (briefs/datapath-spec.md) is silent or ambiguous — the RTL
implements the same:

 D1 Rx check precedence: runt (< 64) first, then bad FCS, then oversize (> 1522). A frame
    that is both oversize and has a bad FCS counts ``rx_bad_fcs``. Rx drop counters are per
    port (lists), like rx/tx frames and bytes.
 D2 Per-port rx frames/bytes count every received frame, dropped ones included, bytes
    incl. FCS. tx counts every emitted frame incl. FCS. Per-slot and per-cache byte
    counters count the RECEIVED frame length incl. FCS. ``learnt`` (per rx port) counts
    learn events: one per cache entry (slot, index) whose location a frame changed (D6).
    ``rx_overflow`` exists for parity with the FPGA (egress FIFO overflow) and is always 0
    in the model.
 D3 Decision order: rx checks; Ethernet (not IPv4: normal, uncounted); IPv4 validity
    (invalid: normal, ``not_redirectable`` only while redirection is enabled; a datagram
    longer than the frame: D15); learning;
    GRE return; watchdog (fail-open); slots; exclusions; assignment; cache resolution;
    method. While redirection is disabled no classification counter moves. Redirection
    needs arm() once and then heartbeats (D11): the control plane must call arm().
 D4 "Valid for redirect": version 4, IHL >= 5, total length (tl) >= IHL * 4, not a fragment
    (MF clear, offset 0; DF and the reserved bit are ignored), TCP/UDP ports inside the IP
    total length (Ethernet padding does not count), and the datagram inside the frame
    (l3 + tl <= n - 4; otherwise D15).
 D5 The port list is consulted only when the SLOT's protocol is 6 or 17 and PORTS_DEFINED
    is set; a slot with protocol 0 matches every protocol and ignores the port list. A
    packet port of 0 never matches (0 marks unused list entries).
 D6 Learning: every valid-for-redirect IPv4 frame (GRE return frames included, before
    decapsulation), also while redirection is disabled, sets MAC := src MAC and port := rx
    port of every LIVE cache entry, in any slot, whose address equals the source IP. Only
    entries that exist (index < number of caches of the slot) take part in learning and in
    the exclusions; the FPGA driver writes address 0 / method 0 into unused entries. A
    location that already holds that MAC and port (both known) is left alone and not
    counted: ``learnt`` counts changes (a cache learnt, moved or re-learnt after a clear),
    and a frame from a cache whose location is known does not wait for its own end (the
    FPGA commits a learn only with a good frame status, so a learning frame is never cut
    through; a steady cache's frames are).
 D7 Cache locations are live state per (slot, index), outside the shadow/live banks (the
    FPGA's CACHE_MAC registers): MAC and port, each known or not. Redirecting to a cache
    needs both; the L2-return MAC exclusion needs the MAC only. ``set_caches``: when the
    address at an index changes, that location is cleared AT ONCE (before commit: the old
    cache's traffic is forwarded normally meanwhile, never sent to a wrong MAC after the
    commit), location writes queued for that index are dropped, and the entry's own
    ``mac``/``port`` (if given) are queued; when the address is unchanged the location is
    kept (learnt state wins) and ``mac``/``port`` in the dict are ignored — the control
    plane re-sends static MACs on every reprogramming and must not wipe a learnt port.
    Explicit locations (those queued by set_caches, and ``set_cache_location``) are
    applied right AFTER the next commit(). commit() itself also clears the location of
    every (slot, index) whose LIVE address changes in the switch: the old cache may have
    been re-learnt at that index between set_caches and commit, and that location must
    not carry over to the new cache. (FPGA: the driver writes these clears right after
    the commit; RTL that clears them during the bank switch would close the remaining
    window of a few SPI transactions.)
    Carry-over: at commit() an index whose address changes takes the location its new
    cache had in the live tables before the switch (any slot, index; both known), so a
    cache that moves to another index keeps being redirected to. The FPGA keeps locations
    per index: its driver does the carry-over (wccp.fpga), so ``ModelRegisterFile`` turns
    it off (``carry_locations``). ``learn(address, mac, port)`` sets the location of every
    live entry with that address at once (the firmware's active discovery).
 D16 Packet out and ARP capture (active discovery, wccp.discovery): ``send_frame(ports,
    frame)`` emits frame (14..PKTOUT_MAX_LEN bytes, padded to 60, new FCS) on every port in
    the mask, port 0 first, counted in tx frames/bytes (``take_sent()`` hands them over). A
    received good frame whose destination MAC is the appliance's (live), ethertype ARP
    (after at most one 802.1Q tag), hardware type 1, protocol type IPv4, lengths 6/4,
    opcode 2 is captured: (sender IP, source MAC, receive port) go into a ring of
    ARPCAP_ENTRIES (``arp_replies``). It is forwarded normally like any other non-IPv4
    frame; capturing never changes a location by itself.
 D8 GRE return whose GRE header matches (0x0000, 0x883E) but whose inner packet is not
    contained (no payload byte, inner header cut, inner total length < 20 or beyond the
    outer IP packet) is DROPPED and counted ``gre_return_bad`` (extra counter). A GRE
    header that does not match means "not return traffic" (classified as usual). The inner
    version is not checked when a redirect header is present.
 D9 Hash: bucket hits count the PRIMARY bucket of every hash lookup (also when that entry
    is unassigned or refers to the alternate). A slot without assignment counts
    ``unassigned``. Mask values use cache_index 0..127; a mask set has at most 7 mask bits
    (the FPGA compiles a set into a 128-entry table); the redirect header carries
    buckets 0 and flags only the D bit for mask assignment.
 D9b A slot whose service has ``hash_fn`` HASH_PEARSON (register GROUP_FLAGS_PEARSON)
    computes its primary and alternate buckets with RFC 3074's Pearson hash over the key
    bytes the (alternate) hash flags select (``wccp.pearson``) instead of the XOR fold;
    everything else (bucket table, alternate bit, counters) is the same.
 D10 Standard service 0 (web-cache) is matched as TCP dst port 80, dst-IP hash
    (``dataplane.effective_service``); other standard services are used as given.
 D11 Watchdog: redirect enabled iff armed (CONTROL.REDIRECT_EN) and a heartbeat was given
    since arming and less than timeout_ms ago (timeout 0: never expires once a heartbeat
    was given). ``arm()`` from the disarmed state forgets earlier heartbeats (redirection
    starts at the next heartbeat); arm() while armed only changes the timeout. A
    heartbeat after expiry re-enables. Watchdog state is immediate (not shadowed); all
    tables, router_id/mac/mtu and next hops go through the shadow and commit().
 D12 mtu must be 68..1500, so a GRE frame never exceeds 1522 bytes (1518 untagged).
 D13 Frames are emitted on the paired port p ^ 1 for normal forwarding and decap; NUM_PORTS
    must be even.
 D14 Outputs (n = input length with FCS, l3 = 14 or 18 with an 802.1Q tag; every output
    gets a new FCS). Normal forwarding: the input unchanged. L2 redirect: the input with
    destination MAC := cache MAC and source MAC := router MAC (same length, padding and
    trailer kept). GRE redirect: MACs as for L2, the tag as received, ethertype IPv4, outer
    IPv4 (20 bytes, total length tl + 28, DF, TTL 64, protocol 47, router id -> cache),
    GRE (0x0000, 0x883E) and the redirect header, then input[l3 : n - 4]: the datagram AND
    whatever follows it up to the FCS (Ethernet padding, a trailer; receivers ignore bytes
    after the outer IP total length), clipped so the output without FCS is at most
    l3 + 1500 bytes (1514 untagged, 1518 tagged), i.e. at most 1472 input bytes; the MTU
    check is on the datagram only (tl + 28 > mtu: ``gre_too_big``). Decapsulation: an
    l3-byte Ethernet header (next-hop MAC of the egress port or the input's destination
    MAC, router MAC, the tag as received, ethertype IPv4), then input[inner : n - 4]: the
    inner datagram and everything after it up to the FCS (the rest of the outer datagram,
    padding, a trailer), padded to 60 bytes. (An output copies the input up to its frame
    end, never up to an IP length: the FPGA sends it cut-through, before the frame's end
    and status are known.)
 D15 Truncated datagram: the IPv4 header is otherwise valid for redirect (D4) but
    ip_end = l3 + tl lies beyond end = n - 4. Its *header point* is l4 + 12 for GRE
    (protocol 47) and l4 + 4 for every other protocol (l4 = l3 + IHL * 4). If the header
    point lies beyond end, the frame is not valid for redirect (D3: normal forwarding,
    ``not_redirectable`` while enabled, ``disabled`` otherwise). Otherwise it is decided as
    if it were complete (all the fields the decision reads lie before end) but WITHOUT
    learning: a decision to redirect (L2 or GRE), to decapsulate, or to drop
    (``gre_return_bad``) becomes a DROP counted ``truncated`` (a total) and nothing else (no
    slot, cache, bucket or tx counter; the FPGA has started the output and ends it with an
    inverted FCS and TX_ER); any forward decision (``from_cache``, ``unassigned``,
    ``cache_unknown``, ``gre_too_big``, ``no_match``, ``disabled``) is normal forwarding
    counted ``not_redirectable`` while enabled, ``disabled`` (uncounted) otherwise, exactly as
    an invalid frame. GRE return traffic is decided while redirection is disabled too, so a
    truncated GRE return is dropped in fail-open as well.

Counters (``counters()`` dict): per port lists ``rx_frames rx_bytes tx_frames tx_bytes
rx_runt rx_bad_fcs rx_oversize rx_overflow learnt``; totals ``not_redirectable gre_return
gre_return_bad from_cache unassigned cache_unknown redirect_l2 redirect_gre gre_too_big
truncated`` (decision counters: per receive port in the FPGA, summed by its driver); per slot lists
``slot_frames slot_bytes``; per slot x cache ``cache_frames cache_bytes cache_unknown_frames`` (8 lists of 32; the last:
frames that went to the origin because that cache's location was unknown);
per slot x bucket ``bucket_hits`` (8 lists of 256). ``wccp.fpga.FpgaDataPlane.counters()``
returns the same keys.

``ModelRegisterFile`` (end of this file) puts the FPGA register map (docs/regmap.md) in
front of a model: the firmware's FPGA driver can program the model exactly as it programs
the RTL (the digital twin's fast mode).
"""
import struct

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

try:
    import binascii
    _crc32_lib = binascii.crc32
except (ImportError, AttributeError):  # pragma: no cover - both our ports have it
    _crc32_lib = None

import time

from wccp.dataplane import (
    BUCKET_ALT, BUCKET_UNASSIGNED, DEFAULT_WATCHDOG_MS, FWD_L2, MAX_CACHES, MAX_FRAME,
    MAX_GROUPS, MAX_MTU, MIN_FRAME, MIN_MTU, NUM_BUCKETS, NUM_PORTS, RET_L2, ARPCAP_ENTRIES,
    SERVICE_DYNAMIC, SF_DST_IP_HASH, SF_DST_PORT_HASH, SF_PORTS_DEFINED, SF_PORTS_SOURCE,
    SF_SRC_IP_HASH, SF_SRC_PORT_HASH, DataPlane, check_buckets, check_caches, check_send,
    check_mac, check_mask, check_policy, check_slot, effective_service,
)
from wccp.pearson import HASH_PEARSON, HASH_WCCP
from wccp.pearson import bucket as pearson_bucket

ETH_VLAN = const(0x8100)
ETH_IPV4 = const(0x0800)
ETH_ARP = const(0x0806)
OUTBOX_MAX = const(64)
R_PKTOUT_WORDS = const(16)      # PKTOUT_DATA words (regmap PKTOUT_DATA_COUNT)          # frames send_frame() keeps for take_sent() (oldest dropped)
GRE_PROTO_WCCP = const(0x883E)
GRE_OVERHEAD = const(28)        # outer IPv4 20 + GRE 4 + redirect header 4
MIN_PAYLOAD = const(60)         # Ethernet frame without FCS is padded to this
GRE_MAX_COPY = const(1472)      # input bytes a GRE output carries at most (MAX_MTU - 28)

# Redirect header flag bits (wccp2-reference.md 9: Wireshark numbering).
RH_DYNAMIC = const(0x01)
RH_ALT_USED = const(0x02)

# Cache entry tuple layout.
C_ADDR = const(0)
C_FWD = const(1)
C_RET = const(2)

ZERO_MAC = b"\x00" * 6


# --- CRC32 (IEEE 802.3 FCS) -------------------------------------------------------------

def _crc_table():
    t = []
    for n in range(256):
        c = n
        for _ in range(8):
            if c & 1:
                c = (c >> 1) ^ 0xEDB88320
            else:
                c >>= 1
        t.append(c)
    return t


_CRC_TABLE = _crc_table()


def crc32_py(data, crc=0):
    """Reflected CRC-32 (polynomial 0x04C11DB7), table driven; same as zlib/binascii."""
    t = _CRC_TABLE
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


if _crc32_lib is not None:
    def crc32(data):
        return _crc32_lib(data) & 0xFFFFFFFF
else:  # pragma: no cover
    crc32 = crc32_py


def fcs(data):
    """The 4 FCS bytes for a frame body (transmitted least significant byte first)."""
    return struct.pack("<I", crc32(data))


def with_fcs(data):
    return bytes(data) + fcs(data)


def fcs_ok(frame):
    n = len(frame)
    if n < 4:
        return False
    return crc32(memoryview(frame)[:n - 4]) == struct.unpack_from("<I", frame, n - 4)[0]


def ip_checksum(hdr):
    """Internet checksum (ones' complement sum of 16-bit words) of an even-length buffer."""
    s = 0
    for i in range(0, len(hdr), 2):
        s += (hdr[i] << 8) | hdr[i + 1]
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def fold(key):
    """WCCP bucket index: XOR of the 4 octets of a 32-bit key."""
    return (key ^ (key >> 8) ^ (key >> 16) ^ (key >> 24)) & 0xFF


def hash_key(flags, src, dst, sport, dport, alt=False):
    """Primary (or alternate) hash key: XOR of the fields the service flags select."""
    if alt:
        flags >>= 8     # SF_*_ALT_HASH (0x100 .. 0x800) line up with SF_*_HASH (0x1 .. 0x8)
    k = 0
    if flags & SF_SRC_IP_HASH:
        k ^= src
    if flags & SF_DST_IP_HASH:
        k ^= dst
    if flags & SF_SRC_PORT_HASH:
        k ^= sport
    if flags & SF_DST_PORT_HASH:
        k ^= dport
    return k


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
        self.mtu = MAX_MTU
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
      gre_too_big, redirect_gre, redirect_l2) or, for uncounted normal forwarding, 'not_ipv4',
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
                  "cache_unknown", "redirect_l2", "redirect_gre", "gre_too_big", "truncated"):
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
            pearson = sv.get("hash_fn", HASH_WCCP) == HASH_PEARSON
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
                reason = "unassigned"       # a closed service's unassigned frame (no own counter yet)
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
        # the datagram and whatever follows it up to the FCS, at most GRE_MAX_COPY bytes (D14)
        cl = min(len(frame) - 4 - l3, GRE_MAX_COPY)
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


# --- the model behind the FPGA register map -------------------------------------------

class ModelRegisterFile:
    """The FPGA's register map (docs/regmap.md) in front of a ForwardingModel.

    An SPI slave: ``transaction(mosi) -> miso`` takes the bytes of one chip-select period
    (format of wccp.transport). Shadow registers are stored as written; a COMMIT decodes
    the shadow image into the model's tables and commits them; CONTROL, WDT_TIMEOUT,
    HEARTBEAT and the CACHE_MAC registers act on the model at once; reads return the
    model's counters. With ``wccp.fpga.FpgaDataPlane`` over ``wccp.transport.LoopbackTransport``
    (or a socket) this is the digital twin's fast mode: the real driver, the model in place
    of the RTL. Decision counters are totals in the model; they read on port 0 (the driver
    sums over ports). Reads of CACHE_MAC_* return 0, as in register map 1.0. The PROBE
    block drives ``send_frame`` (PKTOUT; never BUSY: the model sends at once) and reads the
    ARP capture ring; locations are kept per index as in the FPGA (no carry-over: D7).
    """

    def __init__(self, model=None):
        from wccp import regmap
        self.R = regmap
        self.model = model if model is not None else ForwardingModel()
        self.shadow = {regmap.MTU: 1500}
        self.staging = {}
        self.live = {regmap.WDT_TIMEOUT: 1000000, regmap.CONTROL: 0}
        self.commits = 0
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

    def write_word(self, a, v):
        R = self.R
        m = self.model
        if self._is_shadow(a):
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
            hi, lo = R.mac_words(e[1])
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
                      R.CNT_GRE_RETURN_BAD: "gre_return_bad", R.CNT_TRUNCATED: "truncated"}
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
            assign = (ctrl >> 1) & 3
            if assign == R.ASSIGN_HASH:
                bb = R.BUCKET_BASE + R.BUCKET_STRIDE * s
                sl.hash = bytes(b for w in range(NUM_BUCKETS // 4) for b in struct.pack(">I", g(bb + w, 0)))
            elif assign == R.ASSIGN_MASK:
                sl.mask = [self._decode_set(s, k) for k in range(min((ctrl >> 8) & 7, R.MAX_MASK_SETS))]
        m._shadow = t
        m.commit()
        self.commits += 1

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
