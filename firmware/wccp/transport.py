"""Register transports: how the firmware reaches the FPGA's register map.

``RegisterTransport`` is the small interface the data-plane driver (wccp.fpga) uses:
``write(addr, words)`` writes 32-bit words at consecutive word addresses, ``read(addr, n)``
returns n words. Both are carried as SPI transactions in the format of docs/regmap.md:

    write: 0x02, addr[23:16], addr[15:8], addr[7:0], then 4 bytes per word (big-endian)
    read:  0x03, addr[23:16], addr[15:8], addr[7:0], one dummy byte, then 4 bytes per word
           clocked out by the FPGA (MOSI sends zeros)

one transaction per chip-select low period; the address auto-increments per word.

* ``SpiTransport(spi, cs)``: a ``machine.SPI`` (mode 0, MSB first) and a CS ``machine.Pin``
  (active low) on the boards.
* ``SocketTransport(host, port)`` / ``SocketTransport(path=...)``: the same SPI byte
  transactions over a local TCP (or UNIX) stream socket to the simulator. Framing: the
  client sends a 4-byte big-endian length N then the N MOSI bytes of one transaction (one
  CS-low period); the server answers with exactly N MISO bytes (full duplex, byte for
  byte, as the SPI wires would carry them).

Long transfers are split into transactions of at most ``MAX_WORDS`` words. One-word writes
and reads (the heartbeat, status polls, the ARP capture count) use transaction buffers the
transport keeps: on ``SpiTransport`` a one-word write allocates nothing, a one-word read only
the one-element list it returns.
"""
import struct

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

SPI_CMD_WRITE = const(0x02)
SPI_CMD_READ = const(0x03)
MAX_WORDS = const(256)
MAX_ADDR = const(0xFFFFFF)


class TransportError(OSError):
    pass


class RegisterTransport:
    """Interface: 32-bit word registers at 24-bit word addresses."""

    def write(self, addr, words):
        raise NotImplementedError

    def read(self, addr, n):
        raise NotImplementedError

    def close(self):
        pass


def write_transaction(addr, words):
    """MOSI bytes of one write transaction."""
    n = len(words)
    buf = bytearray(4 + 4 * n)
    buf[0] = SPI_CMD_WRITE
    buf[1] = (addr >> 16) & 0xFF
    buf[2] = (addr >> 8) & 0xFF
    buf[3] = addr & 0xFF
    for i in range(n):
        struct.pack_into(">I", buf, 4 + 4 * i, words[i] & 0xFFFFFFFF)
    return buf


def read_transaction(addr, n):
    """MOSI bytes of one read transaction (command, address, dummy byte, 4n zeros)."""
    buf = bytearray(5 + 4 * n)
    buf[0] = SPI_CMD_READ
    buf[1] = (addr >> 16) & 0xFF
    buf[2] = (addr >> 8) & 0xFF
    buf[3] = addr & 0xFF
    return buf


def _put_addr(buf, cmd, addr):
    buf[0] = cmd
    buf[1] = (addr >> 16) & 0xFF
    buf[2] = (addr >> 8) & 0xFF
    buf[3] = addr & 0xFF


class SpiFramedTransport(RegisterTransport):
    """Builds the SPI transactions; subclasses move the bytes: ``_xfer(tx) -> rx``, and
    optionally ``_xfer_write(tx)`` (MISO not needed) and ``_xfer_into(tx, rx)`` (MISO into a
    buffer of len(tx)) when they can do those without allocating."""

    _w1 = None      # one-word write transaction (8 bytes), made on first use
    _r1 = None      # one-word read transaction (9 bytes) and its MISO buffer
    _r1rx = None

    def _xfer(self, tx):
        raise NotImplementedError

    def _xfer_write(self, tx):
        self._xfer(tx)

    def _xfer_into(self, tx, rx):
        got = self._xfer(tx)
        if len(got) != len(rx):
            raise TransportError("short SPI read")
        rx[:] = got

    def _check(self, addr, n):
        if not isinstance(addr, int) or addr < 0 or addr + max(n, 1) - 1 > MAX_ADDR:
            raise ValueError("register address out of range: %r" % (addr,))

    def write(self, addr, words):
        if len(words) == 1:
            self._check(addr, 1)
            tx = self._w1
            if tx is None:
                tx = self._w1 = bytearray(8)
            _put_addr(tx, SPI_CMD_WRITE, addr)
            struct.pack_into(">I", tx, 4, words[0] & 0xFFFFFFFF)
            self._xfer_write(tx)
            return
        words = list(words)
        self._check(addr, len(words))
        i = 0
        while i < len(words):
            chunk = words[i:i + MAX_WORDS]
            self._xfer(write_transaction(addr + i, chunk))
            i += len(chunk)

    def read(self, addr, n):
        self._check(addr, n)
        if n == 1:
            tx = self._r1
            if tx is None:
                tx = self._r1 = bytearray(9)
                self._r1rx = bytearray(9)
            _put_addr(tx, SPI_CMD_READ, addr)
            rx = self._r1rx
            self._xfer_into(tx, rx)
            return [(rx[5] << 24) | (rx[6] << 16) | (rx[7] << 8) | rx[8]]
        out = []
        i = 0
        while i < n:
            k = min(MAX_WORDS, n - i)
            rx = self._xfer(read_transaction(addr + i, k))
            if len(rx) != 5 + 4 * k:
                raise TransportError("short SPI read")
            for j in range(k):
                out.append(struct.unpack_from(">I", rx, 5 + 4 * j)[0])
            i += k
        return out


class SpiTransport(SpiFramedTransport):
    """machine.SPI + chip-select pin (active low)."""

    def __init__(self, spi, cs):
        self.spi = spi
        self.cs = cs
        cs.value(1)

    def _xfer(self, tx):
        rx = bytearray(len(tx))
        self._xfer_into(tx, rx)
        return rx

    def _xfer_into(self, tx, rx):
        self.cs.value(0)
        try:
            self.spi.write_readinto(tx, rx)
        finally:
            self.cs.value(1)

    def _xfer_write(self, tx):
        self.cs.value(0)
        try:
            self.spi.write(tx)
        finally:
            self.cs.value(1)


def unix_sockaddr(path, af_unix=1):
    """The address ``connect()`` takes for a UNIX socket: the path on CPython; on MicroPython
    the raw ``struct sockaddr_un`` (the unix port's socket module passes a bytes address to
    connect(2) as it is, and answers a str with EINVAL): sun_family in host byte order, the
    path, a terminating NUL (sun_path holds 108 bytes)."""
    import sys
    if sys.implementation.name != "micropython":
        return path
    p = path.encode() if isinstance(path, str) else bytes(path)
    if not p or len(p) > 107:
        raise ValueError("UNIX socket path empty or longer than 107 bytes: %r" % (path,))
    return struct.pack("H", af_unix) + p + b"\0"


class SocketTransport(SpiFramedTransport):
    """SPI transactions over a local stream socket (the simulator), see the module doc."""

    def __init__(self, host="127.0.0.1", port=None, path=None, timeout=10.0):
        import socket
        if path is not None:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            addr = unix_sockaddr(path, socket.AF_UNIX)
        else:
            if port is None:
                raise ValueError("SocketTransport needs port or path")
            ai = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)[0]
            s = socket.socket(ai[0], socket.SOCK_STREAM)
            addr = ai[-1]
        if timeout is not None and hasattr(s, "settimeout"):
            s.settimeout(timeout)
        s.connect(addr)
        self.sock = s

    def _send(self, data):
        mv = memoryview(data)
        while len(mv):
            n = self.sock.send(mv)
            if not n:
                raise TransportError("simulator closed the connection")
            mv = mv[n:]

    def _recv(self, n):
        buf = bytearray(n)
        got = 0
        while got < n:
            chunk = self.sock.recv(n - got)
            if not chunk:
                raise TransportError("simulator closed the connection")
            buf[got:got + len(chunk)] = chunk
            got += len(chunk)
        return buf

    def _xfer(self, tx):
        self._send(struct.pack(">I", len(tx)) + bytes(tx))
        return self._recv(len(tx))

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None


class LoopbackTransport(SpiFramedTransport):
    """SPI transactions handed to an in-process slave (``slave.transaction(mosi) -> miso``),
    e.g. ``wccp.fwdmodel_regs.ModelRegisterFile``: the driver and a register-level FPGA model in
    one interpreter."""

    def __init__(self, slave):
        self.slave = slave

    def _xfer(self, tx):
        return self.slave.transaction(tx)


class RecordingTransport(RegisterTransport):
    """Records writes as [(addr, [words...]), ...]; reads return zeros (or ``read_fn``).

    For testbenches that cannot call the synchronous driver directly (cocotb): run
    ``FpgaDataPlane(RecordingTransport(), check_id=False)``, then replay ``writes`` over
    the simulated SPI/register bus — the RTL gets exactly the firmware's register writes
    (a read of STATUS as 0 lets commit() complete at once)."""

    def __init__(self, read_fn=None):
        self.writes = []
        self.read_fn = read_fn

    def write(self, addr, words):
        self.writes.append((addr, list(words)))

    def read(self, addr, n):
        if self.read_fn is not None:
            return list(self.read_fn(addr, n))
        return [0] * n

    def take(self):
        """Return and forget the writes recorded so far."""
        w = self.writes
        self.writes = []
        return w
