"""Configure the FPGA from a bitstream file on the MCU's filesystem.

Two flows, each streaming the file in fixed-size chunks through one preallocated
buffer (a 580 kB ECP5-25 bitstream never sits in RAM):

* ECP5 slave SPI (Lattice sysCONFIG, TN1260): PROGRAMN pulse, wait for INITN,
  READ_ID (0xE0) checked against the expected IDCODE, ISC_ENABLE (0xC6),
  ISC_ERASE (0x0E, SRAM), LSC_INIT_ADDRESS (0x46), LSC_BITSTREAM_BURST (0x7A)
  followed by the whole bitstream with chip select held low, ISC_DISABLE (0x26),
  ISC_NOOP; then the status register (LSC_READ_STATUS, 0x3C: DONE bit 8, BUSY
  bit 12, FAIL bit 13, error code bits 23-25) and the DONE pin must agree.
* iCE40 SPI slave (TN1248): SS low, CRESET_B low >= 200 ns then high, wait
  >= 1200 us, SS high, 8 dummy clocks, SS low, bitstream, SS high, >= 100 dummy
  clocks until CDONE is high, >= 49 more clocks.

Hardware sits behind small interfaces: ``spi`` needs ``write(buf)`` and
``readinto(buf, write_byte)`` (machine.SPI), pins need ``value([v])``
(machine.Pin); time functions are injected. Runs on MicroPython and CPython.
"""
try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

import time

READ_ID = const(0xE0)
ISC_ENABLE = const(0xC6)
ISC_ERASE = const(0x0E)
ISC_DISABLE = const(0x26)
ISC_NOOP = const(0xFF)
LSC_INIT_ADDRESS = const(0x46)
LSC_BITSTREAM_BURST = const(0x7A)
LSC_READ_STATUS = const(0x3C)
LSC_REFRESH = const(0x79)

STATUS_DONE = const(0x00000100)
STATUS_BUSY = const(0x00001000)
STATUS_FAIL = const(0x00002000)
STATUS_ERR_SHIFT = const(23)

CHUNK = const(4096)

# ECP5 IDCODEs by device (the board definitions name the device)
IDCODES = {"LFE5U-12F": 0x21111043, "LFE5U-25F": 0x41111043, "LFE5U-45F": 0x41112043,
           "LFE5U-85F": 0x41113043, "LFE5UM-25F": 0x01111043, "LFE5UM-45F": 0x01112043,
           "LFE5UM-85F": 0x01113043, "LFE5UM5G-25F": 0x81111043, "LFE5UM5G-45F": 0x81112043,
           "LFE5UM5G-85F": 0x81113043}

BSE_ERRORS = {1: "ID error", 2: "illegal command", 3: "CRC error", 4: "preamble error",
              5: "user abort", 6: "data overflow", 7: "SDM EOF"}


class LoadError(Exception):
    pass


def _default_sleep_ms(ms):
    f = getattr(time, "sleep_ms", None)
    if f is not None:
        f(ms)
    else:
        time.sleep(ms / 1000)


def _default_sleep_us(us):
    f = getattr(time, "sleep_us", None)
    if f is not None:
        f(us)
    else:
        time.sleep(us / 1000000)


def _default_ticks_ms():
    f = getattr(time, "ticks_ms", None)
    if f is not None:
        return f()
    return int(time.monotonic() * 1000)


def _ticks_diff(a, b):
    f = getattr(time, "ticks_diff", None)
    if f is not None:
        return f(a, b)
    return a - b


class _Base:
    def __init__(self, spi, cs, sleep_ms=None, sleep_us=None, ticks_ms=None, chunk=CHUNK, progress=None):
        self.spi = spi
        self.cs = cs
        self.sleep_ms = sleep_ms or _default_sleep_ms
        self.sleep_us = sleep_us or _default_sleep_us
        self.ticks_ms = ticks_ms or _default_ticks_ms
        self.buf = bytearray(chunk)
        self.mv = memoryview(self.buf)
        self.cmd = bytearray(4)
        self.progress = progress

    def _wait_pin(self, pin, value, timeout_ms, what):
        t0 = self.ticks_ms()
        while pin.value() != value:
            if _ticks_diff(self.ticks_ms(), t0) >= timeout_ms:
                raise LoadError("%s did not go %s within %d ms" % (what, "high" if value else "low", timeout_ms))
            self.sleep_ms(1)

    def _stream(self, f, first=0):
        """Send the file through the SPI bus in chunks (the first `first` bytes are already in the
        buffer); returns the byte count."""
        total = 0
        mv = self.mv
        while True:
            n = first or f.readinto(self.buf)
            first = 0
            if not n:
                break
            self.spi.write(mv[:n] if n < len(self.buf) else self.buf)
            total += n
            if self.progress is not None:
                self.progress(total)
        return total


def _open(src):
    if isinstance(src, str):
        try:
            return open(src, "rb"), True
        except OSError as e:
            raise LoadError("cannot open bitstream %s: %s" % (src, e))
    return src, False


def bitstream_idcode(data):
    """The IDCODE an ECP5 bitstream's VERIFY_ID command (0xE2 000000 + 4 bytes, after the 0xFFFFBDB3
    preamble) names, or None when its first bytes hold none (prjtrellis, docs/architecture/
    bitstream_format.rst)."""
    p = bytes(data).find(b"\xff\xff\xbd\xb3")
    if p < 0:
        return None
    i = p + 4
    n = len(data)
    while i < n and data[i] == 0xFF:
        i += 1
    while i + 8 <= n:
        op = data[i]
        if op == 0xE2:
            return (data[i + 4] << 24) | (data[i + 5] << 16) | (data[i + 6] << 8) | data[i + 7]
        if op == 0x3B or op == 0x46:        # LSC_RESET_CRC, LSC_INIT_ADDRESS: no payload
            i += 4
        elif op == 0x22:                    # LSC_PROG_CNTRL0: 4 bytes
            i += 8
        elif op == 0xFF:
            i += 1
        else:
            return None
    return None


class Ecp5Loader(_Base):
    """ECP5 slave-SPI configuration (pins: cs, programn, initn, done)."""

    def __init__(self, spi, cs, programn, initn, done, idcode=None, **kw):
        _Base.__init__(self, spi, cs, **kw)
        self.programn = programn
        self.initn = initn
        self.done = done
        self.idcode = idcode
        self.rx = bytearray(4)

    def _command(self, op, a=0, b=0, c=0):
        cmd = self.cmd
        cmd[0] = op
        cmd[1] = a
        cmd[2] = b
        cmd[3] = c
        self.cs.value(0)
        self.spi.write(cmd)
        self.cs.value(1)

    def _read32(self, op):
        cmd = self.cmd
        cmd[0] = op
        cmd[1] = cmd[2] = cmd[3] = 0
        self.cs.value(0)
        self.spi.write(cmd)
        self.spi.readinto(self.rx, 0x00)
        self.cs.value(1)
        r = self.rx
        return (r[0] << 24) | (r[1] << 16) | (r[2] << 8) | r[3]

    def read_id(self):
        return self._read32(READ_ID)

    def read_status(self):
        return self._read32(LSC_READ_STATUS)

    def _wait_not_busy(self, timeout_ms, what):
        t0 = self.ticks_ms()
        while True:
            st = self.read_status()
            if not st & STATUS_BUSY:
                return st
            if _ticks_diff(self.ticks_ms(), t0) >= timeout_ms:
                raise LoadError("FPGA busy after %s (status 0x%08x)" % (what, st))
            self.sleep_ms(1)

    def reset(self):
        """PROGRAMN pulse: the FPGA clears its configuration and waits (INITN high) for a new one."""
        self.cs.value(1)
        self.programn.value(0)
        self._wait_pin(self.initn, 0, 50, "INITN")
        self.sleep_ms(1)
        self.programn.value(1)
        self._wait_pin(self.initn, 1, 100, "INITN")

    def load(self, src):
        """Configure from a file name or a binary stream; returns (bytes sent, status word)."""
        f, close = _open(src)
        try:
            first = f.readinto(self.buf) or 0
            want = bitstream_idcode(self.mv[:first])
            self.reset()
            ident = self.read_id()
            if self.idcode is not None and ident != self.idcode:
                raise LoadError("IDCODE 0x%08x, expected 0x%08x (wrong FPGA or no SPI link)" % (ident, self.idcode))
            if want is not None and want != ident:
                raise LoadError("the bitstream is built for IDCODE 0x%08x, the FPGA is 0x%08x: not loaded"
                                % (want, ident))
            self._command(ISC_ENABLE)
            self._wait_not_busy(100, "ISC_ENABLE")
            self._command(ISC_ERASE, 0x01)
            self._wait_not_busy(1000, "ISC_ERASE")
            self._command(LSC_INIT_ADDRESS)
            cmd = self.cmd
            cmd[0] = LSC_BITSTREAM_BURST
            cmd[1] = cmd[2] = cmd[3] = 0
            self.cs.value(0)
            try:
                self.spi.write(cmd)
                total = self._stream(f, first)
            finally:
                self.cs.value(1)
            if total == 0:
                raise LoadError("bitstream is empty")
            self._command(ISC_DISABLE)
            self._command(ISC_NOOP, 0xFF, 0xFF, 0xFF)
            st = self.read_status()
            if st & STATUS_FAIL or not st & STATUS_DONE:
                code = (st >> STATUS_ERR_SHIFT) & 7
                raise LoadError("configuration failed: status 0x%08x%s" % (
                    st, (" (" + BSE_ERRORS[code] + ")") if code in BSE_ERRORS else ""))
            self._wait_pin(self.done, 1, 100, "DONE")
            return total, st
        finally:
            if close:
                f.close()


class Ice40Loader(_Base):
    """iCE40 SPI-slave configuration (pins: cs = SPI_SS_B, creset = CRESET_B, cdone = CDONE)."""

    def __init__(self, spi, cs, creset, cdone, **kw):
        _Base.__init__(self, spi, cs, **kw)
        self.creset = creset
        self.cdone = cdone
        self.dummy = bytearray(b"\x00" * 13)

    def load(self, src):
        f, close = _open(src)
        try:
            self.cs.value(0)
            self.creset.value(0)
            self.sleep_us(1)                 # >= 200 ns
            self.creset.value(1)
            self.sleep_us(1200)              # internal configuration memory clear
            if self.cdone.value():
                raise LoadError("CDONE high after CRESET_B (FPGA not in reset?)")
            self.cs.value(1)
            self.spi.write(self.dummy[:1])   # 8 dummy clocks with SS high
            self.cs.value(0)
            total = self._stream(f)
            self.cs.value(1)
            if total == 0:
                raise LoadError("bitstream is empty")
            # >= 100 clocks until CDONE, then >= 49 more to start the user I/O
            tries = 0
            self.spi.write(self.dummy)
            while not self.cdone.value():
                tries += 1
                if tries > 100:
                    raise LoadError("CDONE stayed low after the bitstream")
                self.spi.write(self.dummy)
            self.spi.write(self.dummy[:7])
            return total
        finally:
            if close:
                f.close()


def loader_for(board, fpga_board, spi, pins, **kw):
    """Build the loader a board definition's wiring supports (pins from wccp.board.fpga_pins)."""
    if "programn" in pins:
        dev = fpga_board.get("fpga", {}).get("device") if fpga_board else None
        return Ecp5Loader(spi, pins["cs"], pins["programn"], pins["initn"], pins["done"],
                          idcode=IDCODES.get(dev), **kw)
    if "creset" in pins:
        return Ice40Loader(spi, pins["cs"], pins["creset"], pins["cdone"], **kw)
    raise LoadError("board %s has no FPGA configuration pins" % board.get("name"))
