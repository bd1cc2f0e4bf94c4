"""The data-plane interface: what the control plane programs into the forwarding hardware.

The control plane (router state machine) never touches registers or packets itself. It
programs *tables* through this interface; implementations are

* ``wccp.fwdmodel.ForwardingModel`` — the pure-Python reference model of forwarding
  decisions (given a frame: which cache, how, or forward normally). It is the control
  plane's data plane on the unix port and the scoreboard of the FPGA tests.
* ``wccp.fpga.FpgaDataPlane`` — writes the same tables into the FPGA's shadow bank through
  the register map (SPI on boards, a socket to the simulator on the unix port).

Cache locations (MAC + port) come from the caches' own frames (learnt by the data plane) and
from active discovery (``wccp.discovery``): the firmware sends an ARP probe for a cache out of
every port (``send_frame``), the data plane captures the ARP replies addressed to the
appliance (``arp_replies``) and the firmware sets the location by cache address (``learn``).
A location learnt that way follows its cache when the cache's index changes.

Model of the tables (mirrors the FPGA's):

* global: router_id (IPv4 as int; GRE outer source), mac (6 bytes; L2-rewrite source
  MAC), mtu (largest IP packet allowed after GRE encapsulation).
* up to ``MAX_GROUPS`` service-group slots, matched in slot order (the control plane puts
  them in priority order, highest first). Each slot holds
  - the service definition (dict, field names as the codec's Service Info):
    ``service_type``, ``service_id``, ``priority``, ``protocol`` (0 = any), ``service_flags``,
    ``ports`` (list of 8 ints, 0 = unused);
  - the cache table: list of at most ``MAX_CACHES`` dicts, list position = cache index:
    ``address`` (int), ``forward`` (FWD_GRE | FWD_L2), ``ret`` (RET_GRE | RET_L2),
    optionally ``mac`` (6 bytes) and/or ``port`` (int): the initial location of an entry
    whose address is new at that index, applied after the next commit() (ignored when the
    address there is unchanged: the learnt location stays); otherwise learnt from the
    cache's own frames.
    Locations are live state kept per (slot, index) while the address there is unchanged:
    see ``set_cache_location``;
  - the assignment: either ``set_hash`` (256 bucket bytes: cache index in the low 7 bits,
    0x80 = use the alternate hash, 0xFF = unassigned) or ``set_mask`` (ordered mask/value
    sets, see below). A slot with neither forwards everything normally.
* mask/value sets: list of dicts ``{"masks": (src_addr, dst_addr, src_port, dst_port),
  "values": [(src_addr, dst_addr, src_port, dst_port, cache_index), ...]}``; at most
  ``MAX_MASK_SETS`` sets, ``MAX_MASK_VALUES`` values and ``MAX_MASK_BITS`` mask bits per set.
* per slot policy (``set_policy``): ``closed`` (a frame the slot matches that no cache is
  assigned for — no assignment, an unassigned bucket or value — is dropped, reason
  ``closed``, instead of forwarded) and a redirect-list of at most ``MAX_ACL_ENTRIES``
  entries ``(permit, src_net, src_mask, dst_net, dst_mask)``: evaluated in order when the
  slot's service matches, the first entry whose prefixes contain the frame's source and
  destination decides; deny or no match = the slot does not take the frame (the next slots
  are tried). An empty list permits everything. Programmed with the slot (shadow, commit).

Every write goes to a shadow copy; ``commit()`` makes all writes since the last commit
live at once, between two frames. ``heartbeat()`` re-arms the fail-open watchdog.
"""
try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

MAX_GROUPS = const(8)
MAX_CACHES = const(32)
NUM_BUCKETS = const(256)
BUCKET_UNASSIGNED = const(0xFF)
BUCKET_ALT = const(0x80)

FWD_GRE = const(1)
FWD_L2 = const(2)
RET_GRE = const(1)
RET_L2 = const(2)

# Further hardware limits and frame sizes (see docs: datapath spec).
NUM_PORTS = const(2)            # default number of Ethernet ports; port p pairs with p ^ 1
MAX_MASK_SETS = const(4)        # mask/value sets per group
MAX_MASK_VALUES = const(128)    # value elements per set
MAX_MASK_BITS = const(7)        # mask bits per set (the FPGA compiles a set into a 2**7 table)
MAX_ACL_ENTRIES = const(8)      # redirect-list entries per group
MIN_FRAME = const(64)           # incl. FCS
MAX_FRAME = const(1522)         # incl. FCS, with or without an 802.1Q tag
MIN_MTU = const(68)
DEFAULT_MTU = const(1500)
# the longest frame a port receives (MAX_FRAME) holds a datagram of at most 1504 bytes; 1532
# carries it after GRE's 28 bytes: a larger MTU changes nothing
MAX_MTU = const(1532)
PKTOUT_MAX_LEN = const(64)     # packet-out buffer (send_frame): frame bytes without FCS
ARPCAP_ENTRIES = const(8)      # ARP replies the capture ring holds (arp_replies)
DEFAULT_WATCHDOG_MS = const(3000)

# Service Info: service types and flags (wccp2-reference.md 4.2), from the codec's constants.
from wccp.const import (  # noqa: E402,F401 - re-exported for data-plane users
    SERVICE_STANDARD, SERVICE_DYNAMIC, SF_SRC_IP_HASH, SF_DST_IP_HASH, SF_SRC_PORT_HASH,
    SF_DST_PORT_HASH, SF_PORTS_DEFINED, SF_PORTS_SOURCE, SF_SRC_IP_ALT_HASH, SF_DST_IP_ALT_HASH,
    SF_SRC_PORT_ALT_HASH, SF_DST_PORT_ALT_HASH,
)
from wccp.pearson import HASH_WCCP, HASH_PEARSON, check_hash_fn  # noqa: E402,F401


def _check_int(name, v, lo, hi):
    if not isinstance(v, int) or isinstance(v, bool) or v < lo or v > hi:
        raise ValueError("%s out of range [%d, %d]: %r" % (name, lo, hi, v))
    return v


def check_slot(slot):
    return _check_int("slot", slot, 0, MAX_GROUPS - 1)


def check_mac(mac, name="mac"):
    """Return mac as 6 bytes, or None for None / all-zero."""
    if mac is None:
        return None
    if not isinstance(mac, (bytes, bytearray, memoryview)) or len(mac) != 6:
        raise ValueError("%s must be 6 bytes: %r" % (name, mac))
    mac = bytes(mac)
    if mac == b"\x00" * 6:
        return None
    return mac


def effective_service(service):
    """Validate a service definition and return the definition the data plane matches on.

    Dict with service_type, service_id, protocol, service_flags, ports (8 ints). The
    standard service 0 (web-cache) carries no definition on the wire; it means TCP,
    destination port 80, hashed on the destination IP (wccp2-reference.md 4.2, 7.2).
    Other standard services are used as given. ``hash_fn`` (optional): the bucket hash,
    "wccp" (default) or "pearson" (RFC 3074, ``wccp.pearson``); returned as 0 or 1.
    """
    if not isinstance(service, dict):
        raise ValueError("service must be a dict")
    stype = _check_int("service_type", service.get("service_type", SERVICE_DYNAMIC), 0, 1)
    sid = _check_int("service_id", service.get("service_id", 0), 0, 255)
    prio = _check_int("priority", service.get("priority", 0), 0, 255)
    hfn = check_hash_fn(service.get("hash_fn", HASH_WCCP))
    if stype == SERVICE_STANDARD and sid == 0:
        return {"service_type": stype, "service_id": 0, "priority": 240, "protocol": 6,
                "service_flags": SF_DST_IP_HASH | SF_PORTS_DEFINED, "ports": [80, 0, 0, 0, 0, 0, 0, 0],
                "hash_fn": hfn}
    proto = _check_int("protocol", service.get("protocol", 0), 0, 255)
    flags = _check_int("service_flags", service.get("service_flags", 0), 0, 0xFFFFFFFF)
    ports = list(service.get("ports", ()))
    if len(ports) > 8:
        raise ValueError("at most 8 ports")
    for p in ports:
        _check_int("port", p, 0, 0xFFFF)
    ports = ports + [0] * (8 - len(ports))
    return {"service_type": stype, "service_id": sid, "priority": prio, "protocol": proto,
            "service_flags": flags, "ports": ports, "hash_fn": hfn}


def check_caches(caches, num_ports=NUM_PORTS):
    """Validate a cache table; return a list of dicts address, forward, ret, mac, port."""
    caches = list(caches)
    if len(caches) > MAX_CACHES:
        raise ValueError("at most %d caches per group" % MAX_CACHES)
    out = []
    for c in caches:
        if not isinstance(c, dict):
            raise ValueError("cache must be a dict")
        addr = _check_int("cache address", c.get("address"), 0, 0xFFFFFFFF)
        fwd = c.get("forward", FWD_GRE)
        if fwd not in (FWD_GRE, FWD_L2):
            raise ValueError("forward method must be FWD_GRE or FWD_L2: %r" % (fwd,))
        ret = c.get("ret", RET_GRE)
        if ret not in (RET_GRE, RET_L2):
            raise ValueError("return method must be RET_GRE or RET_L2: %r" % (ret,))
        mac = check_mac(c.get("mac"))
        port = c.get("port")
        if port is not None:
            _check_int("cache port", port, 0, num_ports - 1)
        out.append({"address": addr, "forward": fwd, "ret": ret, "mac": mac, "port": port})
    return out


def check_buckets(buckets):
    """Validate 256 bucket entries; return them as bytes."""
    if not isinstance(buckets, (bytes, bytearray)):
        buckets = list(buckets)
        for v in buckets:
            _check_int("bucket entry", v, 0, 255)
    b = bytes(buckets)
    if len(b) != NUM_BUCKETS:
        raise ValueError("need exactly %d buckets, got %d" % (NUM_BUCKETS, len(b)))
    return b


def check_policy(closed, redirect_list):
    """Validate a slot policy; return (closed, [(permit, sn, sm, dn, dm), ...])."""
    if not isinstance(closed, bool):
        raise ValueError("closed must be a bool")
    acl = list(redirect_list or ())
    if len(acl) > MAX_ACL_ENTRIES:
        raise ValueError("at most %d redirect-list entries per group" % MAX_ACL_ENTRIES)
    out = []
    for e in acl:
        e = tuple(e)
        if len(e) != 5 or not isinstance(e[0], bool):
            raise ValueError("redirect-list entry must be (permit, src_net, src_mask, dst_net, dst_mask)")
        for i in range(1, 5):
            _check_int("redirect-list word", e[i], 0, 0xFFFFFFFF)
        if e[1] & ~e[2] or e[3] & ~e[4]:
            raise ValueError("redirect-list prefix has bits outside its mask")
        prefix_len(e[2])
        prefix_len(e[4])
        out.append(e)
    return bool(closed), out


def netmask(n):
    """The 32-bit netmask of prefix length n (0..32)."""
    return (0xFFFFFFFF << (32 - n)) & 0xFFFFFFFF


def prefix_len(mask):
    """The prefix length (0..32) of a 32-bit netmask; ValueError unless its ones lead."""
    n = 0
    while n < 32 and mask & (0x80000000 >> n):
        n += 1
    if mask != netmask(n):
        raise ValueError("redirect-list mask 0x%08x is not a prefix" % mask)
    return n


def popcount(x):
    """Set bits of a non-negative int."""
    n = 0
    while x:
        x &= x - 1
        n += 1
    return n


def check_mask(sets):
    """Validate mask/value sets; return [(masks4, [values5...]), ...] as tuples."""
    sets = list(sets)
    if len(sets) > MAX_MASK_SETS:
        raise ValueError("at most %d mask/value sets" % MAX_MASK_SETS)
    out = []
    for s in sets:
        if not isinstance(s, dict):
            raise ValueError("mask set must be a dict with masks and values")
        m = tuple(s.get("masks", ()))
        if len(m) != 4:
            raise ValueError("masks must be (src_addr, dst_addr, src_port, dst_port)")
        _check_int("src_addr mask", m[0], 0, 0xFFFFFFFF)
        _check_int("dst_addr mask", m[1], 0, 0xFFFFFFFF)
        _check_int("src_port mask", m[2], 0, 0xFFFF)
        _check_int("dst_port mask", m[3], 0, 0xFFFF)
        if popcount(m[0]) + popcount(m[1]) + popcount(m[2]) + popcount(m[3]) > MAX_MASK_BITS:
            raise ValueError("a mask set may have at most %d mask bits" % MAX_MASK_BITS)
        vals = list(s.get("values", ()))
        if len(vals) > MAX_MASK_VALUES:
            raise ValueError("at most %d values per mask set" % MAX_MASK_VALUES)
        vout = []
        for v in vals:
            v = tuple(v)
            if len(v) != 5:
                raise ValueError("value must be (src_addr, dst_addr, src_port, dst_port, cache_index)")
            _check_int("src_addr value", v[0], 0, 0xFFFFFFFF)
            _check_int("dst_addr value", v[1], 0, 0xFFFFFFFF)
            _check_int("src_port value", v[2], 0, 0xFFFF)
            _check_int("dst_port value", v[3], 0, 0xFFFF)
            _check_int("cache_index", v[4], 0, 0x7F)
            vout.append(v)
        out.append((m, vout))
    return out


def check_send(ports, frame, num_ports=NUM_PORTS):
    """Validate a send_frame() request: a non-empty port mask and a 14..PKTOUT_MAX_LEN byte frame."""
    if not isinstance(ports, int) or ports <= 0 or ports >> num_ports:
        raise ValueError("ports must be a non-empty mask of ports 0..%d" % (num_ports - 1))
    if len(frame) < 14 or len(frame) > PKTOUT_MAX_LEN:
        raise ValueError("frame must be 14..%d bytes" % PKTOUT_MAX_LEN)


class DataPlane:
    """Abstract data plane. Subclasses implement every method."""

    def configure(self, router_id, mac, mtu=1500):
        raise NotImplementedError

    def set_group(self, slot, service):
        """Program slot's service definition and enable it (shadow)."""
        raise NotImplementedError

    def set_caches(self, slot, caches):
        raise NotImplementedError

    def set_hash(self, slot, buckets):
        raise NotImplementedError

    def set_mask(self, slot, sets):
        raise NotImplementedError

    def clear_assignment(self, slot):
        """Flush the slot's assignment (hash and mask): everything forwarded normally."""
        raise NotImplementedError

    def clear_group(self, slot):
        """Disable the slot entirely."""
        raise NotImplementedError

    def set_policy(self, slot, closed=False, redirect_list=()):
        """Slot policy (shadow): closed service, redirect-list (see the module text)."""
        raise NotImplementedError

    def set_next_hop(self, port, mac):
        """Destination MAC for decapsulated GRE-return frames leaving on port (None/zero = keep)."""
        raise NotImplementedError

    def set_cache_location(self, slot, index, mac, port):
        """Set cache index's MAC and/or port (None = unknown), as if learnt, after the next commit()."""
        raise NotImplementedError

    def cache_location(self, slot, index):
        """Live (mac, port) of a cache, learnt or set; None while unknown."""
        raise NotImplementedError

    def commit(self):
        raise NotImplementedError

    # -- active discovery (wccp.discovery): packet out, ARP replies in --

    def send_frame(self, ports, frame):
        """Send frame (bytes from the destination MAC on, no FCS, 14..PKTOUT_MAX_LEN long; padded
        to 60 bytes, FCS appended) out of every port whose bit is set in the mask ports."""
        raise NotImplementedError

    def arp_replies(self, since):
        """(count, [(sender_ip, src_mac, port), ...]): count = ARP replies to the appliance's MAC
        captured so far (wrapping 32 bits); the list holds the captures since..count-1, at most the
        newest ARPCAP_ENTRIES - 1 of them (older ones are lost)."""
        raise NotImplementedError

    def learn(self, address, mac, port):
        """Set the location of every live cache entry (any slot) whose address is address, now;
        the location also follows the cache to a new index at a later commit()."""
        raise NotImplementedError

    def arm(self, timeout_ms=None):
        """Allow redirection under the fail-open watchdog (timeout_ms 0 = never expires).

        Redirection is active while armed and the last heartbeat() since arming is younger
        than the timeout (arming from the disarmed state waits for the next heartbeat)."""
        raise NotImplementedError

    def disarm(self):
        """Disable redirection (everything forwarded normally; GRE return still decapsulated)."""
        raise NotImplementedError

    def heartbeat(self, now=None):
        raise NotImplementedError

    def redirect_enabled(self, now=None):
        raise NotImplementedError

    def counters(self):
        """Return a dict of counters (implementation-defined keys, documented per implementation)."""
        raise NotImplementedError

    def clear_counters(self):
        raise NotImplementedError


class NullDataPlane:
    """Accepts and counts table writes, keeps nothing (running without any data plane; the
    router's heap benchmark)."""

    def __init__(self):
        self.c = {"commits": 0, "writes": 0}

    def _w(self, *a):
        self.c["writes"] += 1

    configure = set_group = set_caches = set_hash = set_mask = clear_assignment = clear_group = _w

    def commit(self):
        self.c["commits"] += 1

    def heartbeat(self):
        pass

    def counters(self):
        return dict(self.c)
