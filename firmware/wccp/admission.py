"""Admission of unverified senders: who may talk to the router, and how often it answers.

    adm = Admission(here_i_am_ms, per_source, per_second, burst)
    reason = adm.limit(src, now)        # None: answer; else the drop reason (a counter name)
    rid = adm.cookie(addr, now)         # stateless Receive ID for a sender without state
    adm.cookie_ok(addr, rid, now)       # did it echo one of ours (this or the last period)?
    Prefixes("10.1.0.0/16", ...).match(addr)

An unverified sender is one that has not yet echoed a Receive ID the router sent to it: on
a hostile network its source address may be forged. Answers to such senders are bounded
per source (``per_source`` per HERE_I_AM period T) and in total (a token bucket of
``per_second`` answers per second, ``burst`` deep), so a flood cannot make the router
send more bytes than it receives to addresses nobody has shown to be caches, nor starve
the CPU. When the pending table is full the router answers a first contact without
keeping state: the Receive ID is a keyed hash of the address and the period (``cookie``);
a sender that echoes it has shown it receives at that address and is admitted. A forged
flood therefore can neither evict a joining cache nor keep one out.
"""
try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

import os

from wccp.dataplane import netmask

_TABLE = const(64)          # per-source entries tracked per period (beyond: global bucket only)
_SCALE = const(1000)


def _sha256():
    try:
        import hashlib
        return hashlib.sha256
    except (ImportError, AttributeError):  # pragma: no cover - ports without hashlib
        return None


class Prefixes:
    """IPv4 prefixes ("a.b.c.d" or "a.b.c.d/n", as ints (net, mask)): ``match(addr_int)``."""

    def __init__(self, texts):
        self.nets = []
        for t in texts:
            self.nets.append(parse_prefix(t))

    def match(self, addr):
        for net, mask in self.nets:
            if addr & mask == net:
                return True
        return False


def parse_prefix(text):
    """"a.b.c.d[/n]" -> (net, mask) ints; ValueError when malformed or host bits are set."""
    if not isinstance(text, str):
        raise ValueError("not a prefix string")
    if "/" in text:
        a, n = text.split("/", 1)
        if not n.isdigit() or int(n) > 32:
            raise ValueError("%r: prefix length must be 0..32" % text)
        n = int(n)
    else:
        a, n = text, 32
    parts = a.split(".")
    if len(parts) != 4:
        raise ValueError("%r is not an IPv4 prefix" % text)
    v = 0
    for p in parts:
        if not p.isdigit() or len(p) > 3 or int(p) > 255:
            raise ValueError("%r is not an IPv4 prefix" % text)
        v = (v << 8) | int(p)
    mask = netmask(n)
    if v & ~mask & 0xFFFFFFFF:
        raise ValueError("%r has host bits set (prefix length %d)" % (text, n))
    return v, mask


class Admission:
    def __init__(self, period_ms, per_source, per_second, burst):
        self.period = max(1, period_ms)
        self.per_source = per_source
        self.rate = per_second
        self.cap = burst * _SCALE
        self.tokens = self.cap
        self.last = None
        self.window = None
        self.seen = {}
        self.secret = os.urandom(16)
        self._h = _sha256()

    def limit(self, src, now):
        w = now // self.period
        if w != self.window:
            self.window = w
            self.seen = {}
        n = self.seen.get(src, 0)
        if n >= self.per_source:
            return "rate_limited_source"
        if self.last is None:
            self.last = now
        el = now - self.last
        if el > 0:
            self.last = now
            self.tokens = min(self.cap, self.tokens + el * self.rate)
        if self.tokens < _SCALE:
            return "rate_limited_global"
        self.tokens -= _SCALE
        if n or len(self.seen) < _TABLE:
            self.seen[src] = n + 1
        return None

    def _mac(self, addr, epoch):
        msg = bytes(((addr >> 24) & 255, (addr >> 16) & 255, (addr >> 8) & 255, addr & 255,
                     (epoch >> 24) & 255, (epoch >> 16) & 255, (epoch >> 8) & 255, epoch & 255))
        if self._h is not None:
            d = self._h(self.secret + msg).digest()
            v = (d[0] << 24) | (d[1] << 16) | (d[2] << 8) | d[3]
        else:  # pragma: no cover - keyed FNV-1a fallback
            v = 0x811C9DC5
            for b in self.secret + msg:
                v = ((v ^ b) * 0x01000193) & 0xFFFFFFFF
        return v or 1

    def cookie(self, addr, now):
        return self._mac(addr, (now // self.period) & 0xFFFFFFFF)

    def cookie_ok(self, addr, rid, now):
        e = now // self.period
        return rid == self._mac(addr, e & 0xFFFFFFFF) or rid == self._mac(addr, (e - 1) & 0xFFFFFFFF)
