"""The twin's outside world: sockets, pcap files and TAP devices, shared by both backends.

A backend (the RTL under cocotb, or the Python model) owns the simulation loop and calls:

* ``poll(timeout)``: wait up to ``timeout`` seconds for input; accepts connections, reads
  SPI transactions into ``spi_queue`` and frames into ``rx[port]`` (FCS included);
* ``spi_reply(client, miso)``: answer one SPI transaction;
* ``tx(port, frame)``: a frame the FPGA transmitted on ``port`` (FCS included): written to
  every output of that port (pcap file, TAP device, frame-socket clients);
* ``barriers`` / ``barrier_done(client, token)``: frame-socket barriers (see below).

Sockets (TCP on 127.x or a UNIX path):

* SPI socket: exactly ``wccp.transport.SocketTransport``'s framing — 4-byte big-endian
  length N, N MOSI bytes (one chip-select period); the answer is N MISO bytes.
* Frame socket: messages of a 4-byte big-endian length N and N bytes whose first byte is a
  kind: 0..15 = a frame (FCS included) on that port — client to twin: inject it as received
  on the port; twin to client: transmitted on the port (every client sees every port).
  0xFE + 4-byte token = barrier: the twin answers with the same message once every frame
  injected before it has been processed and every resulting output sent. 0xFD = statistics
  request, answered by 0xFD + JSON.

``spi_log``: every SPI transaction received is appended to this file (4-byte length, MOSI
bytes), in the order the FPGA executes them: ``read_spi_log`` + ``replay`` rebuild the
register state in a model (tests predict the twin's output from the firmware's writes).

pcap: ``pcap_in`` frames are injected at start (``pcap_in_delay`` later); pcap files hold
frames without FCS (as Linux captures them): the FCS is added on input (after padding to
60 bytes) and checked/stripped on output. TAP devices likewise carry frames without FCS.
"""
import fcntl
import json
import os
import select
import socket
import struct
import time

from wccp.fwdmodel import fcs_ok, with_fcs
from wccptool.pcap import PcapWriter, read_pcap

KIND_BARRIER = 0xFE
KIND_STATS = 0xFD
MAX_SPI = 2048                  # the RTL wrapper's transaction buffer (SPI_WORDS = 512 words)
MAX_FRAME_MSG = 16384
TUNSETIFF = 0x400454CA
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000


def parse_addr(spec):
    """'HOST:PORT' -> ('tcp', (host, port)); a path -> ('unix', path)."""
    if spec is None:
        return None
    if isinstance(spec, (tuple, list)):
        return ("tcp", (spec[0], int(spec[1])))
    if ":" in spec and not spec.startswith("/") and not spec.startswith("."):
        h, p = spec.rsplit(":", 1)
        return ("tcp", (h, int(p)))
    return ("unix", spec)


def listen(spec):
    kind, addr = parse_addr(spec)
    if kind == "tcp":
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    else:
        try:
            os.unlink(addr)
        except FileNotFoundError:
            pass
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.bind(addr)
    except OSError as e:
        s.close()
        raise OSError(e.errno, "cannot listen on %s: %s (another twin running?)" % (spec, e.strerror)) from None
    s.listen(8)
    s.setblocking(False)
    return s


def pad_fcs(frame):
    """A frame as captured on Linux (no FCS, maybe < 60 bytes) -> wire frame with FCS."""
    frame = bytes(frame)
    if len(frame) < 60:
        frame += bytes(60 - len(frame))
    return with_fcs(frame)


def open_tap(name):
    """Create/attach TAP device `name` (no packet info header); returns a non-blocking fd."""
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    try:
        fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TAP | IFF_NO_PI))
    except OSError:
        os.close(fd)
        raise
    return fd


class _Client:
    def __init__(self, sock, kind):
        self.sock = sock
        self.kind = kind        # "spi" | "frames"
        self.buf = bytearray()
        self.dead = False


class Hub:
    def __init__(self, spi=None, frames=None, num_ports=2, pcap_in=None, pcap_out=None, taps=None,
                 pcap_in_delay=0.0, log=None, spi_log=None):
        self.num_ports = num_ports
        self.log = log or (lambda msg: None)
        self.clients = {}
        self.spi_queue = []             # [(client, mosi bytes)]
        self.rx = [[] for _ in range(num_ports)]
        self.barriers = []              # [(client, token, injected-count snapshot)]
        self.stats = {"spi_transactions": 0, "spi_bytes": 0, "rx_frames": [0] * num_ports,
                      "tx_frames": [0] * num_ports, "bad_input": 0, "tx_bad_fcs": 0}
        self.listeners = {}
        self._listen_all(spi, frames)
        self.pcap_out = {}
        for p, path in (pcap_out or {}).items():
            self.pcap_out[int(p)] = PcapWriter(path)
        self.taps = {}
        for p, name in (taps or {}).items():
            self.taps[int(p)] = (name, open_tap(name))
        self._pcap_in = []
        for p, path in (pcap_in or {}).items():
            for rec in read_pcap(path):
                self._pcap_in.append((int(p), pad_fcs(rec.data)))
        self._pcap_at = time.monotonic() + float(pcap_in_delay or 0)
        self.spi_log = open(spi_log, "ab") if spi_log else None
        self.stopped = False

    def _listen_all(self, spi, frames):
        self.spi_sock = listen(spi) if spi else None
        self.frames_sock = listen(frames) if frames else None
        if self.spi_sock is not None:
            self.listeners[self.spi_sock.fileno()] = (self.spi_sock, "spi")
        if self.frames_sock is not None:
            self.listeners[self.frames_sock.fileno()] = (self.frames_sock, "frames")

    # -- input --

    def pending_input(self):
        return bool(self.spi_queue) or any(self.rx) or bool(self._pcap_in)

    def poll(self, timeout):
        if self._pcap_in and time.monotonic() >= self._pcap_at:
            for p, fr in self._pcap_in:
                self._inject(p, fr)
            self._pcap_in = []
        fds = list(self.listeners) + list(self.clients) + [fd for _n, fd in self.taps.values()]
        try:
            r, _w, _x = select.select(fds, [], [], max(0.0, timeout))
        except InterruptedError:
            return
        for fd in r:
            if fd in self.listeners:
                sock, kind = self.listeners[fd]
                try:
                    c, _a = sock.accept()
                except OSError:
                    continue
                c.setblocking(True)
                c.settimeout(10.0)
                if c.family == socket.AF_INET:
                    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self.clients[c.fileno()] = _Client(c, kind)
            elif fd in self.clients:
                self._read_client(self.clients[fd])
            else:
                for p, (_n, tfd) in self.taps.items():
                    if tfd == fd:
                        self._read_tap(p, tfd)
        for fd in [fd for fd, c in self.clients.items() if c.dead]:
            self._drop(fd)

    def _drop(self, fd):
        c = self.clients.pop(fd, None)
        if c is None:
            return
        self.spi_queue = [q for q in self.spi_queue if q[0] is not c]
        self.barriers = [b for b in self.barriers if b[0] is not c]
        try:
            c.sock.close()
        except OSError:
            pass

    def _read_client(self, c):
        try:
            data = c.sock.recv(65536)
        except (BlockingIOError, socket.timeout):
            return
        except OSError:
            data = b""
        if not data:
            c.dead = True
            return
        c.buf += data
        while len(c.buf) >= 4:
            n = struct.unpack_from(">I", c.buf, 0)[0]
            limit = MAX_SPI if c.kind == "spi" else MAX_FRAME_MSG
            if n > limit or (c.kind == "frames" and n == 0):
                self.stats["bad_input"] += 1
                self.log("%s client sent a bad length %d: closed" % (c.kind, n))
                c.dead = True
                return
            if len(c.buf) < 4 + n:
                return
            msg = bytes(c.buf[4:4 + n])
            del c.buf[:4 + n]
            if c.kind == "spi":
                if self.spi_log is not None:
                    self.spi_log.write(struct.pack(">I", n) + msg)
                    self.spi_log.flush()
                self.spi_queue.append((c, msg))
                self.stats["spi_transactions"] += 1
                self.stats["spi_bytes"] += n
            else:
                self._frame_msg(c, msg)

    def _frame_msg(self, c, msg):
        kind = msg[0]
        if kind < self.num_ports:
            self._inject(kind, msg[1:])
        elif kind == KIND_BARRIER and len(msg) == 5:
            self.barriers.append((c, msg[1:5]))
        elif kind == KIND_STATS:
            self._send(c, bytes([KIND_STATS]) + json.dumps(self.stats).encode())
        else:
            self.stats["bad_input"] += 1

    def _inject(self, port, frame):
        self.rx[port].append(bytes(frame))
        self.stats["rx_frames"][port] += 1

    def _read_tap(self, port, fd):
        for _ in range(64):
            try:
                fr = os.read(fd, 65536)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            if not fr:
                return
            self._inject(port, pad_fcs(fr))

    # -- output --

    def _send(self, c, payload):
        try:
            c.sock.sendall(struct.pack(">I", len(payload)) + payload)
        except OSError:
            c.dead = True

    def spi_reply(self, c, miso):
        if not c.dead:
            try:
                c.sock.sendall(bytes(miso))
            except OSError:
                c.dead = True

    def tx(self, port, frame):
        self.stats["tx_frames"][port] += 1
        frame = bytes(frame)
        good = len(frame) >= 8 and fcs_ok(frame)
        if not good:
            self.stats["tx_bad_fcs"] += 1
        po = self.pcap_out.get(port)
        if po is not None:
            po.write(frame[:-4] if good else frame)
        tap = self.taps.get(port)
        if tap is not None and good:
            try:
                os.write(tap[1], frame[:-4])
            except OSError:
                pass
        msg = bytes([port]) + frame
        for c in list(self.clients.values()):
            if c.kind == "frames" and not c.dead:
                self._send(c, msg)

    def barrier_done(self, c, token):
        if not c.dead:
            self._send(c, bytes([KIND_BARRIER]) + bytes(token))

    def close(self):
        for fd in list(self.clients):
            self._drop(fd)
        for sock, _k in self.listeners.values():
            try:
                sock.close()
            except OSError:
                pass
        self.listeners = {}
        for po in self.pcap_out.values():
            po.close()
        if self.spi_log is not None:
            self.spi_log.close()
        for _n, fd in self.taps.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self.taps = {}


def write_ready(path, info):
    """Atomically write the service's ready file (JSON)."""
    if not path:
        return
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(info, f)
    os.replace(tmp, path)


def read_spi_log(path):
    """The MOSI bytes of every transaction in an spi_log file, in order."""
    out = []
    with open(path, "rb") as f:
        data = f.read()
    i = 0
    while i + 4 <= len(data):
        n = struct.unpack_from(">I", data, i)[0]
        if i + 4 + n > len(data):
            break
        out.append(data[i + 4:i + 4 + n])
        i += 4 + n
    return out


def replay(transactions, regfile=None):
    """Apply the WRITE transactions to a ModelRegisterFile (new one by default); returns it."""
    from wccp import regmap as R
    from wccp.fwdmodel_regs import ModelRegisterFile
    rf = regfile or ModelRegisterFile()
    for t in transactions:
        if t and t[0] == R.SPI_CMD_WRITE:
            rf.transaction(t)
    return rf
