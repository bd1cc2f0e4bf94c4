"""The router application: UDP sockets, timers, watchdog and the HTTP management endpoint.

    app = App(config, dataplane, storage, watchdog=None, log=print)
    asyncio.run(app.run())

* Datagrams are read with a buffer one byte longer than the largest message the router
  accepts (``router.max_message``); a longer one is counted (``oversize``) and dropped
  whole, never parsed cut.
* One non-blocking UDP socket per configured address, bound to port 2048 (plus one bound
  to each service group's multicast address, joined on the first configured address). A
  reader task per socket waits for readability through the asyncio I/O queue (MicroPython)
  or polls (CPython), drains every waiting datagram into ``Router.receive`` and sends the
  replies from the socket bound to the address the router asks for.
* A timer task calls ``Router.tick`` every min(T/10, 1 s, watchdog_ms/3), sends what it
  returns, feeds the board watchdog (tick() feeds the data plane's).
* HTTP (``http.address``:``http.port``, default 127.0.0.1:8080): ``GET /status`` returns
  the router's whole state as JSON (docs/status.md), ``GET /`` a one-line hint.

MicroPython asyncio has no datagram endpoint, so the sockets are plain non-blocking
sockets; this works on the unix port (raw sockaddr bytes) and on boards (lwIP tuples).
"""
import json
import socket
import struct
import sys
import time

try:
    import asyncio
except ImportError:  # pragma: no cover
    import uasyncio as asyncio

from wccp.router import Router, max_message

try:
    _IOQ = asyncio.core._io_queue           # MicroPython: wait on a socket without polling
except AttributeError:
    _IOQ = None

MICROPYTHON = sys.implementation.name == "micropython"
WCCP_PORT = 2048
MAX_HTTP_REQUEST = 2048


def ticks_ms():
    """Milliseconds since an arbitrary origin, never wrapping (Router needs a monotonic clock)."""
    return _clock.now()


class _Clock:
    def __init__(self):
        self.base = 0
        if hasattr(time, "ticks_ms"):
            self.last = time.ticks_ms()
        else:
            self.last = None

    def now(self):
        if self.last is None:
            return int(time.monotonic() * 1000)
        t = time.ticks_ms()
        self.base += time.ticks_diff(t, self.last)
        self.last = t
        return self.base


_clock = _Clock()


class Watchdog:
    """Watchdog feed behind an interface: machine.WDT on boards, nothing on the unix port."""

    def __init__(self, timeout_ms=0):
        self.wdt = None
        if timeout_ms and sys.platform not in ("linux", "darwin", "win32"):
            try:
                import machine
                self.wdt = machine.WDT(timeout=timeout_ms)
            except Exception:  # noqa: BLE001 - no WDT on this port: run without
                self.wdt = None

    def feed(self):
        if self.wdt is not None:
            self.wdt.feed()


def _sockaddr(ip, port):
    """Socket address for bind/sendto without allocating much (no getaddrinfo per datagram).

    The MicroPython unix port takes raw ``struct sockaddr_in`` bytes (Linux: family in host
    order, port and address in network order); other ports and CPython take (ip, port)."""
    if MICROPYTHON and sys.platform == "linux":
        p = ip.split(".")
        return struct.pack("<HHBBBB8x", socket.AF_INET, ((port & 0xFF) << 8) | (port >> 8),
                           int(p[0]), int(p[1]), int(p[2]), int(p[3]))
    if MICROPYTHON and sys.platform != "linux":
        return (ip, port)
    if MICROPYTHON:
        return socket.getaddrinfo(ip, port)[0][-1]
    return (ip, port)


def _peer(addr):
    """recvfrom address -> (dotted ip, port) on every port."""
    if isinstance(addr, tuple):
        return addr[0], addr[1]
    fam, ipb, port = socket.sockaddr(addr)
    return "%d.%d.%d.%d" % (ipb[0], ipb[1], ipb[2], ipb[3]), port


def _inet(ip):
    p = ip.split(".")
    return bytes([int(p[0]), int(p[1]), int(p[2]), int(p[3])])


def _udp_bound(ip):
    """A UDP socket bound to ip:2048 (SO_REUSEADDR where the port has it)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    except Exception:  # noqa: BLE001
        pass
    s.bind(_sockaddr(ip, WCCP_PORT))
    return s


async def _readable(sock):
    # MicroPython idiom (as in asyncio/stream.py): park the task until sock is readable.
    yield _IOQ.queue_read(sock)


class App:
    def __init__(self, config, dataplane, storage=None, watchdog=None, log=None, dataplane_name="?"):
        self.cfg = config
        self.dp = dataplane
        self.dp_name = dataplane_name
        self.log = log or (lambda *a: print(*a))
        self.watchdog = watchdog or Watchdog(config.get("watchdog_ms", 0))
        self.router = Router(config, dataplane, ticks_ms(), storage=storage)
        self.rx_max = max_message(config["limits"])   # one more byte read tells "longer"
        self.socks = {}          # local address -> socket (unicast)
        self.mcast_socks = []    # (group address, socket)
        self.stats = {"udp_rx": 0, "udp_tx": 0, "udp_tx_errors": 0, "udp_rx_errors": 0, "http_requests": 0,
                      "http_errors": 0, "ticks": 0}
        self.running = True
        self.http_server = None
        self.started = ticks_ms()

    # ------------------------------------------------------------ sockets
    def open_sockets(self):
        for a in self.cfg["addresses"]:
            s = _udp_bound(a)
            s.setblocking(False)
            self.socks[a] = s
        for svc in self.cfg["services"]:
            grp = svc.get("multicast")
            if not grp or any(g == grp for g, _ in self.mcast_socks):
                continue
            try:
                s = _udp_bound(grp)
                s.setsockopt(0, getattr(socket, "IP_ADD_MEMBERSHIP", 35),
                             _inet(grp) + _inet(self.cfg["addresses"][0]))
                s.setblocking(False)
                self.mcast_socks.append((grp, s))
            except Exception as e:  # noqa: BLE001 - unicast keeps working
                self.log("wccp: cannot join multicast group %s: %s" % (grp, e))
        if self.mcast_socks:
            # multicast I_SEE_YOUs leave from the first address's interface (Linux IP_MULTICAST_IF)
            try:
                self.socks[self.cfg["addresses"][0]].setsockopt(
                    0, getattr(socket, "IP_MULTICAST_IF", 32), _inet(self.cfg["addresses"][0]))
            except Exception as e:  # noqa: BLE001
                self.log("wccp: cannot set the multicast interface: %s" % e)

    def close(self):
        for s in self.socks.values():
            try:
                s.close()
            except Exception:  # noqa: BLE001
                pass
        for _, s in self.mcast_socks:
            try:
                s.close()
            except Exception:  # noqa: BLE001
                pass
        if self.http_server is not None:
            try:
                self.http_server.close()
            except Exception:  # noqa: BLE001
                pass

    def send(self, out):
        for dst, port, src, payload in out:
            try:
                s = self.socks.get(src)
                if s is None:
                    s = self.socks[self.cfg["addresses"][0]]
                s.sendto(payload, _sockaddr(dst, port))
                self.stats["udp_tx"] += 1
            except Exception:  # noqa: BLE001 - EAGAIN, unreachable, MemoryError: the protocol retries
                self.stats["udp_tx_errors"] += 1

    def drain(self, s, local):
        """Receive every waiting datagram on s. Returns the number handled."""
        n = 0
        while n < 64:
            try:
                data, addr = s.recvfrom(self.rx_max + 1)
            except OSError:
                break
            except MemoryError:
                # the heap cannot take the datagram now: count it, collect, and re-raise so that
                # the reader pauses (the socket stays readable: returning would wake it at once)
                self.stats["udp_rx_errors"] += 1
                try:
                    import gc
                    gc.collect()
                except ImportError:
                    pass
                raise
            except Exception:  # noqa: BLE001
                self.stats["udp_rx_errors"] += 1
                break
            n += 1
            self.stats["udp_rx"] += 1
            if len(data) > self.rx_max:
                self.router.oversize(len(data))
                continue
            try:
                src, sport = _peer(addr)
            except Exception:  # noqa: BLE001
                self.stats["udp_rx_errors"] += 1
                continue
            self.send(self.router.receive_view(data, src, sport, local, ticks_ms()))
        return n

    async def reader(self, s, local):
        while self.running:
            try:
                if _IOQ is not None:
                    await _readable(s)
                    self.drain(s, local)
                elif not self.drain(s, local):
                    await asyncio.sleep(0.002)
            except Exception:  # noqa: BLE001 - e.g. MemoryError: never lose the socket's reader
                self.stats["udp_rx_errors"] += 1
                try:
                    await asyncio.sleep(0.01)
                except Exception:  # noqa: BLE001
                    pass

    async def timers(self):
        wd = self.cfg.get("watchdog_ms", 0)
        while self.running:
            try:
                self.send(self.router.tick(ticks_ms()))
                self.stats["ticks"] += 1
                self.watchdog.feed()
            except Exception:  # noqa: BLE001 - keep ticking (and feeding the watchdog)
                self.stats["tick_errors"] = self.stats.get("tick_errors", 0) + 1
            # wait the timers' period, in slices: probes for caches sent meanwhile (after a
            # commit) want their replies read sooner (Router.next_deadline)
            # (and at most a third of the board watchdog's timeout, whatever T is)
            period = self.router.next_deadline(ticks_ms())
            if wd:
                period = max(10, min(period, wd // 3))
            until = ticks_ms() + period
            while self.running:
                now = ticks_ms()
                left = min(until - now, self.router.next_deadline(now))
                if left <= 0:
                    break
                await asyncio.sleep(min(left, 50) / 1000)

    # ------------------------------------------------------------ HTTP
    def status(self):
        st = self.router.status()
        st["app"] = {"dataplane": self.dp_name, "platform": sys.platform,
                     "implementation": sys.implementation.name,
                     "wccp_sockets": list(self.socks.keys()),
                     "multicast_groups": [g for g, _ in self.mcast_socks],
                     "http": "%s:%d" % (self.cfg["http"]["address"], self.cfg["http"]["port"]),
                     "uptime_ms": ticks_ms() - self.started}
        st["app"].update(self.stats)
        st["app"]["rx_max"] = self.rx_max
        try:
            import gc
            gc.collect()
            st["app"]["heap_free"] = gc.mem_free()      # MicroPython: live heap after a collection
            st["app"]["heap_used"] = gc.mem_alloc()
        except (ImportError, AttributeError):
            pass
        hook = getattr(self, "status_hook", None)    # main.py on boards: board, FPGA link, config errors
        if hook is not None:
            st.update(hook())
        return st

    def _status_doc(self):
        """The status dict, or None when the heap cannot hold it right now."""
        for _ in range(2):
            try:
                return self.status()
            except MemoryError:
                self.stats["http_errors"] += 1
                try:
                    import gc
                    gc.collect()
                except ImportError:
                    pass
        return None

    async def _send_status(self, writer, st):
        """Write the status document as JSON piece by piece (a cache, a group's other fields,
        a top-level field at a time): a board's fragmented heap need not hold the whole
        document in one block, and no piece stays alive after it is written."""
        def w(text):
            writer.write(text.encode())

        first = True
        for k, v in st.items():
            w(("{" if first else ", ") + json.dumps(k) + ": ")
            first = False
            if k != "groups":
                w(json.dumps(v))
                continue
            w("[")
            for i, g in enumerate(v):
                w("{" if i == 0 else ", {")
                sep = ""
                for gk, gv in g.items():
                    if gk != "caches":
                        w(sep + json.dumps(gk) + ": " + json.dumps(gv))
                        sep = ", "
                w(sep + '"caches": [')
                for j, c in enumerate(g.get("caches", ())):
                    w((", " if j else "") + json.dumps(c))
                    await writer.drain()
                w("]}")
            w("]")
            await writer.drain()
        w("}" if not first else "{}")

    async def http_client(self, reader, writer):
        self.stats["http_requests"] += 1
        try:
            line = await reader.readline()
            total = len(line)
            while True:
                h = await reader.readline()
                total += len(h)
                if not h or h in (b"\r\n", b"\n") or total > MAX_HTTP_REQUEST:
                    break
            parts = line.decode().split()
            if len(parts) < 2 or total > MAX_HTTP_REQUEST:
                code, ctype, body = "400 Bad Request", "text/plain", "bad request\n"
            elif parts[0] != "GET":
                code, ctype, body = "405 Method Not Allowed", "text/plain", "only GET\n"
            elif parts[1].split("?")[0] in ("/status", "/status.json"):
                st = self._status_doc()
                if st is not None:
                    # HTTP/1.0, Connection: close: the end of the body is the end of the stream
                    writer.write(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n")
                    await self._send_status(writer, st)
                    await writer.drain()
                    st = None
                    code = None
                else:
                    code, ctype, body = "503 Service Unavailable", "text/plain", "out of memory, retry\n"
            elif parts[1] == "/":
                code, ctype, body = "200 OK", "text/plain", "WCCPv2 router; GET /status for JSON state\n"
            else:
                code, ctype, body = "404 Not Found", "text/plain", "not found\n"
            if code is not None:
                data = body.encode()
                writer.write(("HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                              % (code, ctype, len(data))).encode())
                writer.write(data)
                await writer.drain()
        except Exception:  # noqa: BLE001 - a bad client never stops the router
            self.stats["http_errors"] += 1
        try:
            writer.close()
            await writer.wait_closed()
        except Exception:  # noqa: BLE001
            pass

    async def run(self):
        self.open_sockets()
        h = self.cfg["http"]
        if h["port"]:
            self.http_server = await asyncio.start_server(self.http_client, h["address"], h["port"])
        tasks = [asyncio.create_task(self.timers())]
        for a, s in self.socks.items():
            tasks.append(asyncio.create_task(self.reader(s, a)))
        for g, s in self.mcast_socks:
            tasks.append(asyncio.create_task(self.reader(s, g)))
        self.log("wccp: router %s, WCCP on %s:%d, HTTP on %s:%d, data plane %s, boot %d" % (
            self.cfg["router_id"], ",".join(self.cfg["addresses"]), WCCP_PORT, h["address"], h["port"],
            self.dp_name, self.router.boot))
        try:
            while self.running:
                await asyncio.sleep(1)
        finally:
            self.running = False
            self.close()
