"""The router's state and constants (wccp.router): message and method numbers, limits, the
cache record (a 16-slot list per cache, C_* indices, B_* state bits), Group (one service
group: configuration, members, Receive ID and change number, assignment, I_SEE_YOU template),
counter names and max_message(). Shared by router.py and its router_* parts."""
try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

from wccp import codec
from wccp import dataplane as _dpmod
from wccp import policy as _policy
from wccp.admission import Prefixes

HERE_I_AM = const(10)
I_SEE_YOU = const(11)
REDIRECT_ASSIGN = const(12)
REMOVAL_QUERY = const(13)
VERSION = const(0x0200)
WCCP_PORT = const(2048)

SF_DST_IP_HASH = const(0x0002)
SF_PORTS_DEFINED = const(0x0010)

WCI_U = const(0x0001)
WCI_U_V201 = const(0x8000)

METHOD_BITS = {"gre": 1, "l2": 2, "hash": 1, "mask": 2}
METHOD_NAMES = {1: "gre", 2: "l2"}
ASSIGN_NAMES = {0: None, 1: "hash", 2: "mask"}

MAX_CACHES = const(32)
MAX_GROUPS = const(8)
# what the data plane can hold (wccp.dataplane); assignments beyond it are refused, counted
DP_MASK_SETS = getattr(_dpmod, "MAX_MASK_SETS", 4)
DP_MASK_VALUES = getattr(_dpmod, "MAX_MASK_VALUES", 128)
DP_MASK_BITS = getattr(_dpmod, "MAX_MASK_BITS", 7)
# the data-plane watchdog is armed with its default timeout; tick() feeds it 3 times per timeout
HEARTBEAT_MS = getattr(_dpmod, "DEFAULT_WATCHDOG_MS", 3000) // 3


def max_message(limits):
    """Largest datagram the router accepts (bytes) under these limits: receive buffers are
    sized from it; anything longer is dropped whole (``oversize``), never parsed cut."""
    r = limits["max_routers"]
    fixed = 8 + 24 + 28                         # header, MD5 security, Service Info
    ra_hash = 4 + 8 + 4 + 12 * r + 4 + 4 * MAX_CACHES + 256
    ra_mask = 4 + 4 + 8 + 4 + 12 * r + 4 + DP_MASK_SETS * 16 + 16 * limits["max_mask_values"]
    hia = (4 + 12 + 4 + 16 * (DP_MASK_SETS + DP_MASK_VALUES)) + (4 + 8 + 8 * r + 4 + 4 * MAX_CACHES)
    caps = 4 + 8 * 8 + 4 + 16                   # capabilities, command extension
    return fixed + max(ra_hash, ra_mask, hia) + caps


_popcount = _dpmod.popcount

# The effective definition of the well-known web-cache service (reference 4.2, 7.2).
WEB_CACHE_DEFINITION = {"service_type": 0, "service_id": 0, "priority": 240, "protocol": 6,
                        "service_flags": SF_DST_IP_HASH | SF_PORTS_DEFINED,
                        "ports": [80, 0, 0, 0, 0, 0, 0, 0]}

# Counter names (docs/status.md). Drops: the datagram was discarded. Events: it was answered
# or processed but something was refused.
DROP_REASONS = ("malformed", "bad_address", "own_packet", "address_table", "unexpected_type", "unconfigured_service",
                "security_mismatch", "md5_failure", "service_conflict", "service_not_permitted", "cache_not_allowed",
                "identity_mismatch",
                "bad_cache_address", "state_full", "ra_unknown_cache", "ra_stale_receive_id",
                "ra_stale_change_number", "ra_not_listed", "ra_wrong_sender", "ra_method_mismatch", "ra_too_large",
                "ra_unsupported", "ra_bad_caches", "ra_mask_too_wide", "ra_dataplane_refused", "internal_error",
                "no_memory", "rate_limited_source", "rate_limited_global", "oversize")


def _new_counters():
    return {"rx": 0, "hia_rx": 0, "ra_rx": 0, "isy_tx": 0, "rq_tx": 0, "hia_valid": 0,
            "hia_invalid_receive_id": 0, "capability_mismatch": 0, "group_full": 0, "joins": 0,
            "removals_timeout": 0, "removals_shutdown": 0, "removals_capability": 0,
            "pending_evicted": 0, "pending_expired": 0, "isy_stateless": 0, "ra_accepted": 0, "ra_unknown_cache_entries": 0,
            "flushes": 0, "dataplane_commits": 0, "dataplane_errors": 0}


# A cache (web-cache) known to a group is a list of 16 slots (compact on MicroPython), indexed by:
C_ADDR = const(0)        # its address (int; the dict key object, shared)
C_BITS = const(1)        # B_* state bits | forwarding << 3 | return << 5 | assignment << 7 | id flags << 9
C_RID = const(2)         # last Receive ID sent to it (0 = none yet)
C_RID_PREV = const(3)    # the one before (in-flight RA tolerance)
C_LAST_HIA = const(4)    # time of the last HERE_I_AM of any kind
C_LAST_VALID = const(5)  # time of the last valid HERE_I_AM (liveness)
C_JOINED = const(6)      # became usable at
C_REPLY = const(7)       # 0: answer (its address, 2048); else (source address int, source port)
C_SENT_TO = const(8)     # the address it sends HIAs to (int)
C_WEIGHT = const(9)
C_STATUS = const(10)
C_MASKS = const(11)      # first mask element of its mask identity (unassigned view shape) or None
C_ROUTERS = const(12)    # router IDs it reports (shared tuple)
C_SERVICE = const(13)    # the Service Info echoed to it
C_REASON = const(14)     # why it is not usable ("" when usable)
C_HIAS = const(15)       # HIAs received

B_USABLE = const(1)      # usable member (after a valid HIA with acceptable capabilities)
B_MCAST = const(2)       # it sends HIAs to the group's multicast address
B_QUERY = const(4)       # REMOVAL_QUERY sent since its last valid HIA
B_ECHOED = const(1 << 25)  # it has echoed a Receive ID we sent: it receives at its address
CAPS_MASK = const(0x1F8)        # the forwarding / return / assignment bits of C_BITS
FLAGS_MASK = const(0x1FFFE00)   # the identity flags bits of C_BITS
_INIT_BITS = const((1 << 3) | (1 << 5) | (1 << 7))      # GRE / GRE / hash


def _new_cache(addr, now):
    return [addr, _INIT_BITS, 0, 0, now, now, now, 0, 0, 0, 0, None, (), None, "first contact", 0]


def is_usable(c):
    return c[C_BITS] & B_USABLE


def _setbit(c, bit, on):
    if on:
        c[C_BITS] |= bit
    else:
        c[C_BITS] &= ~bit


def _fwd(c):
    return (c[C_BITS] >> 3) & 3


def _ret(c):
    return (c[C_BITS] >> 5) & 3


def _asg(c):
    return (c[C_BITS] >> 7) & 3


def _idflags(c):
    return (c[C_BITS] >> 9) & 0xFFFF


class Group:
    def __init__(self, scfg, router):
        self.cfg = scfg
        self.stype = 0 if scfg["type"] == "standard" else 1
        self.sid = scfg["id"]
        self.password = scfg["password"]
        self.mcast_ip = scfg["multicast"]
        self.mcast = codec.ip2int(self.mcast_ip) if self.mcast_ip else None
        fwd = 0
        for m in scfg["forwarding"]:
            fwd |= METHOD_BITS[m]
        ret = 0
        for m in scfg["return"]:
            ret |= METHOD_BITS[m]
        asg = 0
        for m in scfg["assignment"]:
            asg |= METHOD_BITS[m]
        self.fwd_mask = fwd
        self.ret_mask = ret
        self.assign_mask = asg
        self.l2 = {}
        for e in scfg["l2_adjacent"]:
            mac = e.get("mac")
            self.l2[codec.ip2int(e["address"])] = _mac_bytes(mac) if mac else None
        allowed = scfg.get("caches")
        if allowed is None:
            allowed = router.cfg.get("cache_subnets")
        self.allowed = Prefixes(allowed) if allowed is not None else None
        self.closed = scfg.get("closed", False)
        self.acl = _policy.acl(scfg.get("redirect_list"))
        self.service_list = scfg.get("service_list")
        self.max_caches = scfg["max_caches"]
        self.std_info = {"service_type": 0, "service_id": self.sid, "priority": 0, "protocol": 0,
                         "service_flags": 0, "ports": [0, 0, 0, 0, 0, 0, 0, 0]}
        if self.stype == 0:
            self.definition = WEB_CACHE_DEFINITION
        else:
            self.definition = None
        self.slot = -1
        if router.boot_persisted:
            seed = ((router.boot & 0xFFFF) << 16)
        else:
            seed = router._random32() & 0xFFFF0000   # the boot counter may repeat: random
        self.rid = router._random32()   # not guessable from the boot counter
        self.mcn = seed | 1
        self.key_addr = 0
        self.key_cn = 0
        self.locked_assign = 0
        self.caches = {}
        self.order = []            # usable cache addresses in join order
        self.assignment = None
        self.change_ms = None      # membership change awaiting a valid assignment
        self.next_mc = None
        self.template = None       # encoded unicast I_SEE_YOU to patch (None = rebuild)
        self.counters = _new_counters()
        self.drops = {}

    def key(self):
        return (self.stype, self.sid)

    def name(self):
        return "%s %d" % ("standard" if self.stype == 0 else "dynamic", self.sid)


def _find_component(b, ctype):
    """Offset of the body of component ctype in an encoded message, or -1."""
    end = 8 + ((b[6] << 8) | b[7])
    o = 8
    while o + 4 <= end:
        t = (b[o] << 8) | b[o + 1]
        ln = (b[o + 2] << 8) | b[o + 3]
        if t == ctype:
            return o + 4
        o += 4 + ln
    return -1


def _mac_bytes(text):
    out = bytearray(6)
    parts = text.replace("-", ":").split(":")
    for i in range(6):
        out[i] = int(parts[i], 16)
    return bytes(out)


def _def_tuple(s):
    return (s["priority"], s["protocol"], s["service_flags"], tuple(s["ports"]))


def _single_bit(v):
    return v in (1, 2)
