"""A spec-conformant WCCPv2 web-cache emulator (cache side), for tests and benches.

Two layers:

* :class:`Member` — one web cache in one service group talking to one or more
  routers.  Pure state machine ("sans-io"): ``on_message(src, msg, raw, now)``
  and ``tick(now)`` return lists of ``(dst_ip, bytes)`` datagrams to send.
  No sockets, injected clock, so it is unit-testable against any responder.
* :class:`CacheSim` — the asyncio (CPython) driver: one UDP socket per cache
  address (each cache binds its own loopback address on UDP 2048), one
  scheduler task for every member, optional capture of every datagram for a
  pcap file (:func:`write_pcap`).

The parts: wccptool.cachesim_member (the Member state machine and the protocol behaviour it
implements), wccptool.cachesim_assign (services, mask values, bucket dealing); this module
holds the asyncio driver and re-exports both, so ``from wccptool import cachesim`` is the API.
"""
import asyncio
import socket
import time

from wccp import codec
from wccptool import pcap
from wccptool.cachesim_assign import (  # noqa: F401 - the API
    BUCKET_ALT, BUCKET_UNASSIGNED, CAP_ASSIGNMENT, CAP_FORWARDING, CAP_RETURN, CMD_SHUTDOWN,
    CMD_SHUTDOWN_RESPONSE, ELECTION_KEYS, HERE_I_AM, I_SEE_YOU, MASK_FIELDS, MASK_WIDTHS, MAX_MASK_BITS,
    REDIRECT_ASSIGN, REMOVAL_QUERY, WCCP_PORT, bucket_counts, deal_buckets, dynamic_service, int2ip, ip2int,
    mask_values, numeric_key, squid_key, standard_service,
)
from wccptool.cachesim_member import Member, RouterState, _desc_json  # noqa: F401 - the API


# --------------------------------------------------------------------- capture / pcap
def write_pcap(path, records):
    """Write (time, (src_ip, sport), (dst_ip, dport), payload) records (addresses as integers)
    as a raw-IPv4 pcap (LINKTYPE_RAW 101), each payload in a synthetic IPv4 + UDP header."""
    frames = []
    for ident, (t, src, dst, payload) in enumerate(records, 1):
        frames.append((t, pcap.ipv4_udp(payload, int2ip(src[0]), int2ip(dst[0]), src[1], dst[1],
                                        ip_id=ident, dont_fragment=True)))
    pcap.write_pcap(path, frames, linktype=pcap.LINKTYPE_RAW)


# --------------------------------------------------------------------- asyncio driver
class _Endpoint(asyncio.DatagramProtocol):
    def __init__(self, sim, address):
        self.sim = sim
        self.address = address
        self.members = []
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        self.sim._on_datagram(self, data, addr)

    def error_received(self, exc):
        self.sim.counters["socket_errors"] += 1


class CacheSim:
    """Drive several :class:`Member` objects over real UDP sockets (CPython asyncio).

    Members sharing an address share one socket (one cache in several service
    groups).  ``capture=True`` records every datagram received (and sent) in
    ``self.received`` / ``self.sent`` as (wall time, (src_ip, port), (dst_ip, port), bytes)."""

    def __init__(self, members=(), capture=False, sink=None, router_port=WCCP_PORT):
        self.members = []
        self.endpoints = {}
        self.capture = capture
        self.received = []
        self.sent = []
        self.sink = sink
        self.router_port = router_port
        self.counters = {"datagrams_in": 0, "datagrams_out": 0, "decode_errors": 0,
                         "unmatched_service": 0, "socket_errors": 0}
        self.decode_failures = []
        self._wake = None
        self._task = None
        self._running = False
        for m in members:
            self.add(m)

    def add(self, member):
        if member.sink is None:
            member.sink = self.sink
        self.members.append(member)
        return member

    def member(self, address, service_id=None):
        a = ip2int(address)
        for m in self.members:
            if m.address == a and (service_id is None or m.service["service_id"] == service_id):
                return m
        raise KeyError(address)

    async def start(self):
        loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        for m in self.members:
            ep = self.endpoints.get(m.address)
            if ep is None:
                ep = _Endpoint(self, m.address)
                # no SO_REUSEADDR: a second emulator on the same address must fail loudly
                # instead of silently sharing the datagrams
                sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                sock.setblocking(False)
                sock.bind((int2ip(m.address), m.wccp_port))
                await loop.create_datagram_endpoint(lambda ep=ep: ep, sock=sock)
                self.endpoints[m.address] = ep
            ep.members.append(m)
        now = loop.time()
        for m in self.members:
            m.start(now)
        self._running = True
        self._task = asyncio.ensure_future(self._scheduler())

    async def stop(self):
        self._running = False
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        for ep in self.endpoints.values():
            if ep.transport is not None:
                ep.transport.close()
        self.endpoints = {}

    async def __aenter__(self):
        await self.start()
        return self

    async def __aexit__(self, *exc):
        await self.stop()

    def _send(self, member, sends):
        ep = self.endpoints.get(member.address)
        if ep is None or ep.transport is None:
            return
        for dst, data in sends:
            ep.transport.sendto(data, (int2ip(dst), self.router_port))
            self.counters["datagrams_out"] += 1
            if self.capture:
                self.sent.append((time.time(), (member.address, member.wccp_port),
                                  (dst, self.router_port), bytes(data)))

    def _on_datagram(self, ep, data, addr):
        self.counters["datagrams_in"] += 1
        src = (ip2int(addr[0]), addr[1])
        if self.capture:
            self.received.append((time.time(), src, (ep.address, WCCP_PORT), bytes(data)))
        try:
            msg = codec.decode(data)
        except codec.WccpError as e:
            self.counters["decode_errors"] += 1
            self.decode_failures.append((addr, e.reason))
            return
        svc = msg.get("service") or {}
        now = asyncio.get_running_loop().time()
        matched = False
        for m in ep.members:
            if m.service["service_id"] == svc.get("service_id") and \
                    m.service["service_type"] == svc.get("service_type"):
                matched = True
                self._send(m, m.on_message(src, msg, data, now))
        if not matched:
            self.counters["unmatched_service"] += 1
        if self._wake is not None:
            self._wake.set()

    def shutdown(self, address, service_id=None):
        """Make one cache send SHUTDOWN now (then it stays silent)."""
        now = asyncio.get_running_loop().time()
        for m in self.members:
            if m.address == ip2int(address) and (service_id is None or
                                                  m.service["service_id"] == service_id):
                self._send(m, m.shutdown(now))

    def kick(self):
        if self._wake is not None:
            self._wake.set()

    async def _scheduler(self):
        loop = asyncio.get_running_loop()
        while self._running:
            now = loop.time()
            nxt = None
            for m in self.members:
                d = m.next_deadline()
                if d is not None and d <= now:
                    self._send(m, m.tick(now))
                    d = m.next_deadline()
                if d is not None and (nxt is None or d < nxt):
                    nxt = d
            self._wake.clear()
            timeout = 1.0 if nxt is None else max(0.0, nxt - loop.time())
            try:
                await asyncio.wait_for(self._wake.wait(), timeout)
            except asyncio.TimeoutError:
                pass

    async def wait_for(self, predicate, timeout, poll=0.02):
        """Poll ``predicate()`` until true; return True, or False after ``timeout`` s."""
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while True:
            if predicate():
                return True
            if loop.time() >= end:
                return False
            await asyncio.sleep(poll)

    def state(self):
        return {"caches": [m.state() for m in self.members], "counters": dict(self.counters)}
