"""Active discovery: the appliance finds its caches itself.

The data plane learns a cache's location (MAC, port) from the cache's own frames crossing it,
but in a usual deployment (caches beside the gateway, talking to the router directly) they
never do, and a cache whose location is unknown gets no traffic (``cache_unknown``).
``Discovery`` closes that gap without help from the cache:

* for every usable cache whose location it has not learnt, it sends an ARP probe out of every
  data-plane port (``DataPlane.send_frame``): RFC 5227 style, sender IP 0.0.0.0 (no peer's
  ARP cache changes), sender MAC = the appliance's MAC, target IP = the cache. A Linux cache
  answers with a unicast ARP reply to the appliance's MAC;
* the data plane captures ARP replies addressed to the appliance (``DataPlane.arp_replies``;
  the reply itself is forwarded normally) and, for a reply whose sender IP is a usable cache,
  Discovery sets that cache's location by address (``DataPlane.learn``), in every slot and at
  whatever index the cache has; the driver carries it over when the index changes;
* only solicited replies count: one read at most REPLY_WINDOW_MS after a probe for its
  address (an unsolicited ARP reply claiming a cache's address is counted and ignored; a
  forged reply must also be timed to a probe, and moves nothing the cache's own frames could
  not move anyway);
* a cache is probed again RETRY_MS after an unanswered probe (doubling up to MAX_RETRY_MS),
  and every REFRESH_MS once found (it may have moved; the old location stays in use until a
  reply says otherwise).

``run(now, targets)`` does both steps; the router calls it after every commit and on every
tick, and ``next_ms`` says when replies to probes just sent are worth reading (POLL_MS).
"""
try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

from wccp.arp import ARP_TPA, arp_probe, put_ipv4

RETRY_MS = const(250)           # first re-probe of an unanswered cache
MAX_RETRY_MS = const(8000)      # re-probe interval cap for a cache that never answers
REFRESH_MS = const(30000)       # re-probe of a found cache (it may have moved)
POLL_MS = const(20)             # read the replies this long after a probe
REPLY_WINDOW_MS = const(3000)   # a reply counts only this long after a probe for its address

_W_MAC = const(0)
_W_PORT = const(1)
_W_MS = const(2)


def _tdiff(a, b):
    return a - b


def _prune(d, keep):
    """Delete d's keys not in keep."""
    for a in [a for a in d if a not in keep]:
        del d[a]


class Discovery:
    def __init__(self, dp, mac, num_ports=2):
        self.dp = dp
        self.mac = bytes(mac)
        self.ports = (1 << num_ports) - 1
        self.frame = arp_probe(self.mac)    # the target IP is set per probe
        self.where = {}     # address -> [mac, port, ms learnt]
        self.probes = {}    # address -> [ms of the last probe, retry interval]
        self.seen = 0       # ARP captures consumed
        self.due = None     # ms at which replies to the last probes are worth reading
        self.enabled = True
        self.pruned = None  # the targets where and probes were last pruned to
        self.counters = {"probes": 0, "replies": 0, "learnt": 0, "moved": 0, "unsolicited": 0, "errors": 0}

    def location(self, address):
        """(mac, port) learnt for address, or None."""
        w = self.where.get(address)
        return None if w is None else (w[_W_MAC], w[_W_PORT])

    def next_ms(self, now):
        """Milliseconds until run() should be called again to read replies (None: no hurry)."""
        if not self.enabled or self.due is None:
            return None
        return max(0, _tdiff(self.due, now))

    def run(self, now, targets):
        """Read captured replies, then probe the caches of targets (addresses) that need it."""
        if not self.enabled:
            return
        try:
            self._read(now, targets)
            self._probe(now, targets)
        except NotImplementedError:
            self.enabled = False        # a data plane without packet out / ARP capture
        if targets is not self.pruned:
            # entries are only made for targets: pruned once per targets object (the router
            # passes the same set until its caches change; it never mutates it)
            _prune(self.where, targets)
            _prune(self.probes, targets)
            self.pruned = targets

    def _read(self, now, targets):
        if self.due is not None and _tdiff(now, self.due) >= 0:
            self.due = None
        n, replies = self.dp.arp_replies(self.seen)
        self.seen = n
        for sip, mac, port in replies:
            self.counters["replies"] += 1
            if sip not in targets:
                continue
            p = self.probes.get(sip)
            if p is None or _tdiff(now, p[0]) > REPLY_WINDOW_MS:
                self.counters["unsolicited"] += 1
                continue
            w = self.where.get(sip)
            self.dp.learn(sip, mac, port)
            if w is None:
                self.counters["learnt"] += 1
                self.where[sip] = [mac, port, now]
            else:
                if w[_W_MAC] != mac or w[_W_PORT] != port:
                    self.counters["moved"] += 1
                    w[_W_MAC] = mac
                    w[_W_PORT] = port
                w[_W_MS] = now
            p[1] = RETRY_MS

    def _probe(self, now, targets):
        for a in targets:
            w = self.where.get(a)
            if w is not None and _tdiff(now, w[_W_MS]) < REFRESH_MS:
                continue
            p = self.probes.get(a)
            if p is not None and _tdiff(now, p[0]) < p[1]:
                continue
            f = self.frame
            put_ipv4(f, ARP_TPA, a)
            try:
                self.dp.send_frame(self.ports, f)
            except NotImplementedError:
                raise
            except Exception:  # noqa: BLE001 - a failed probe is retried at its next turn
                self.counters["errors"] += 1
            self.counters["probes"] += 1
            if p is None:
                self.probes[a] = [now, RETRY_MS]
            else:
                p[0] = now
                if w is None:
                    p[1] = min(p[1] * 2, MAX_RETRY_MS)
            self.due = now + POLL_MS

    def status(self):
        return {"enabled": self.enabled, "counters": dict(self.counters),
                "unanswered": sorted(a for a in self.probes if a not in self.where)}
