"""wccp.fpgaload: exact pin/SPI transaction sequences against a recording fake FPGA."""
from fwtest import raises, scratch_name
from wccp import fpgaload


class Rec:
    def __init__(self):
        self.log = []
        self.t = 0


class Pin:
    def __init__(self, rec, name, on_set=None, value=1):
        self.rec, self.name, self.on_set, self.v = rec, name, on_set, value

    def value(self, v=None):
        if v is None:
            return self.v
        self.rec.log.append(("pin", self.name, v))
        self.v = v
        if self.on_set is not None:
            self.on_set(v)


class FakeEcp5:
    """Records every transaction; answers READ_ID/LSC_READ_STATUS like an ECP5-25."""

    def __init__(self, idcode=0x41111043, busy_polls=1, fail=False):
        self.rec = Rec()
        self.idcode = idcode
        self.busy = 0
        self.busy_polls = busy_polls
        self.fail = fail
        self.burst = None
        self.configured = False
        self.cs = Pin(self.rec, "cs", self._cs)
        self.programn = Pin(self.rec, "programn", self._prog)
        self.initn = Pin(self.rec, "initn", value=1)
        self.done = Pin(self.rec, "done", value=0)
        self.last = None
        self.selected = False

    def _prog(self, v):
        self.initn.v = 0 if v == 0 else 1
        if v == 0:
            self.configured = False
            self.done.v = 0

    def _cs(self, v):
        self.selected = v == 0
        if v == 1 and self.burst is not None:
            data = bytes(self.burst)
            self.burst = None
            ok = data.find(b"\xff\xff\xbd\xb3") >= 0 and not self.fail
            self.configured = ok
            self.done.v = 1 if ok else 0
        if v == 0:
            self.last = None

    def write(self, buf):
        b = bytes(buf)
        self.rec.log.append(("spi", b if len(b) <= 8 else ("data", len(b))))
        assert self.selected, "SPI write with CS high"
        if self.burst is not None:
            self.burst += b
            return
        if self.last is None:
            self.last = b[0]
            if b[0] in (fpgaload.ISC_ENABLE, fpgaload.ISC_ERASE):
                self.busy = self.busy_polls
            if b[0] == fpgaload.LSC_BITSTREAM_BURST:
                self.burst = bytearray(b[4:])

    def readinto(self, buf, wb=0):
        self.rec.log.append(("read", len(buf)))
        if self.last == fpgaload.READ_ID:
            v = self.idcode
        elif self.last == fpgaload.LSC_READ_STATUS:
            v = 0
            if self.busy:
                self.busy -= 1
                v |= fpgaload.STATUS_BUSY
            if self.configured:
                v |= fpgaload.STATUS_DONE
            elif self.fail:
                v |= fpgaload.STATUS_FAIL | (3 << 23)
        else:
            v = 0xFFFFFFFF
        for i in range(4):
            buf[i] = (v >> (24 - 8 * i)) & 0xFF

    def sleep_ms(self, ms):
        self.rec.log.append(("sleep_ms", ms))
        self.rec.t += ms

    def sleep_us(self, us):
        self.rec.log.append(("sleep_us", us))

    def ticks_ms(self):
        return self.rec.t


class Stream:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def readinto(self, buf):
        n = min(len(buf), len(self.data) - self.pos)
        buf[:n] = self.data[self.pos:self.pos + n]
        self.pos += n
        return n

    def close(self):
        pass


BITSTREAM = b"\xff\x00Part: LFE5U-25F\x00\x00\xff" + b"\xff\xff\xbd\xb3" + bytes(range(256)) * 40  # 10264 bytes


def loader(fake, **kw):
    return fpgaload.Ecp5Loader(fake, fake.cs, fake.programn, fake.initn, fake.done, idcode=0x41111043,
                               sleep_ms=fake.sleep_ms, sleep_us=fake.sleep_us, ticks_ms=fake.ticks_ms,
                               chunk=4096, **kw)


def cmd(op, a=0, b=0, c=0):
    return [("pin", "cs", 0), ("spi", bytes([op, a, b, c])), ("pin", "cs", 1)]


def status():
    return [("pin", "cs", 0), ("spi", b"\x3c\x00\x00\x00"), ("read", 4), ("pin", "cs", 1)]


def test_ecp5_exact_sequence():
    fake = FakeEcp5(busy_polls=1)
    progress = []
    total, st = loader(fake, progress=progress.append).load(Stream(BITSTREAM))
    assert total == len(BITSTREAM)
    assert st & fpgaload.STATUS_DONE
    assert progress == [4096, 8192, len(BITSTREAM)]
    want = [("pin", "cs", 1), ("pin", "programn", 0), ("sleep_ms", 1), ("pin", "programn", 1)]
    want += [("pin", "cs", 0), ("spi", b"\xe0\x00\x00\x00"), ("read", 4), ("pin", "cs", 1)]
    want += cmd(0xC6) + status() + [("sleep_ms", 1)] + status()
    want += cmd(0x0E, 0x01) + status() + [("sleep_ms", 1)] + status()
    want += cmd(0x46)
    want += [("pin", "cs", 0), ("spi", b"\x7a\x00\x00\x00"),
             ("spi", ("data", 4096)), ("spi", ("data", 4096)), ("spi", ("data", len(BITSTREAM) - 8192)),
             ("pin", "cs", 1)]
    want += cmd(0x26) + cmd(0xFF, 0xFF, 0xFF, 0xFF) + status()
    assert fake.rec.log == want
    assert fake.done.v == 1


def test_ecp5_from_file_on_filesystem():
    import os
    name = scratch_name("fpgaload_test") + ".bit"
    with open(name, "wb") as f:
        f.write(BITSTREAM)
    try:
        fake = FakeEcp5(busy_polls=0)
        total, st = loader(fake).load(name)
        assert total == len(BITSTREAM) and fake.configured
    finally:
        os.remove(name)
    e = raises(fpgaload.LoadError, loader(FakeEcp5()).load, "/nonexistent/fpga.bit")
    assert "cannot open" in str(e)


def test_ecp5_wrong_idcode_stops_before_erase():
    fake = FakeEcp5(idcode=0x41112043)
    e = raises(fpgaload.LoadError, loader(fake).load, Stream(BITSTREAM))
    assert "IDCODE 0x41112043, expected 0x41111043" in str(e)
    assert ("spi", b"\x0e\x01\x00\x00") not in fake.rec.log


def test_ecp5_failure_reported_with_bse_code():
    fake = FakeEcp5(fail=True)
    e = raises(fpgaload.LoadError, loader(fake).load, Stream(BITSTREAM))
    assert "CRC error" in str(e)
    # a bitstream without the preamble does not configure either
    fake = FakeEcp5()
    e = raises(fpgaload.LoadError, loader(fake).load, Stream(b"\x00" * 100))
    assert "configuration failed" in str(e)
    e = raises(fpgaload.LoadError, loader(FakeEcp5()).load, Stream(b""))
    assert "empty" in str(e)


def test_ecp5_initn_stuck_times_out():
    fake = FakeEcp5()
    fake.programn.on_set = lambda v: None      # INITN never follows PROGRAMN
    fake.initn.v = 1
    e = raises(fpgaload.LoadError, loader(fake).load, Stream(BITSTREAM))
    assert "INITN did not go low" in str(e)
    assert fake.rec.t >= 50


def test_ecp5_busy_forever_times_out():
    fake = FakeEcp5(busy_polls=10 ** 6)
    e = raises(fpgaload.LoadError, loader(fake).load, Stream(BITSTREAM))
    assert "busy after ISC_ENABLE" in str(e)


class FakeIce40:
    def __init__(self, ok=True):
        self.rec = Rec()
        self.cs = Pin(self.rec, "ss", value=1)
        self.creset = Pin(self.rec, "creset", self._creset, value=1)
        self.cdone = Pin(self.rec, "cdone", value=1)
        self.ok = ok
        self.got = 0
        self.after = 0

    def _creset(self, v):
        if v == 0:
            self.cdone.v = 0
            self.got = 0

    def write(self, buf):
        b = bytes(buf)
        self.rec.log.append(("spi", ("ss", self.cs.v, len(b))))
        if self.cs.v == 0:
            self.got += len(b)
        elif self.got:
            self.after += len(b) * 8
            if self.ok and self.after >= 100:
                self.cdone.v = 1

    def sleep_us(self, us):
        self.rec.log.append(("sleep_us", us))

    def sleep_ms(self, ms):
        self.rec.log.append(("sleep_ms", ms))


def test_ice40_exact_sequence():
    fake = FakeIce40()
    ld = fpgaload.Ice40Loader(fake, fake.cs, fake.creset, fake.cdone, sleep_ms=fake.sleep_ms,
                              sleep_us=fake.sleep_us, ticks_ms=lambda: 0, chunk=4096)
    data = bytes(range(256)) * 20     # 5120 bytes
    assert ld.load(Stream(data)) == len(data)
    assert fake.rec.log == [
        ("pin", "ss", 0), ("pin", "creset", 0), ("sleep_us", 1), ("pin", "creset", 1), ("sleep_us", 1200),
        ("pin", "ss", 1), ("spi", ("ss", 1, 1)), ("pin", "ss", 0),
        ("spi", ("ss", 0, 4096)), ("spi", ("ss", 0, 1024)), ("pin", "ss", 1),
        ("spi", ("ss", 1, 13)), ("spi", ("ss", 1, 7))]
    assert fake.cdone.v == 1


def test_ice40_cdone_never_rises():
    fake = FakeIce40(ok=False)
    ld = fpgaload.Ice40Loader(fake, fake.cs, fake.creset, fake.cdone, sleep_ms=fake.sleep_ms,
                              sleep_us=fake.sleep_us, ticks_ms=lambda: 0)
    e = raises(fpgaload.LoadError, ld.load, Stream(b"\x7e\xaa\x99\x7e" * 10))
    assert "CDONE stayed low" in str(e)


def test_loader_for_board_definitions():
    import json
    with open("boards/olimex_esp32_poe.json") as f:
        b = json.loads(f.read())
    with open("boards/colorlight_5a75b.json") as f:
        fb = json.loads(f.read())
    fake = FakeEcp5()
    pins = {"cs": fake.cs, "programn": fake.programn, "initn": fake.initn, "done": fake.done}
    ld = fpgaload.loader_for(b, fb, fake, pins)
    assert isinstance(ld, fpgaload.Ecp5Loader) and ld.idcode == 0x41111043
    fi = FakeIce40()
    ld = fpgaload.loader_for(b, None, fi, {"cs": fi.cs, "creset": fi.creset, "cdone": fi.cdone})
    assert isinstance(ld, fpgaload.Ice40Loader)
    raises(fpgaload.LoadError, fpgaload.loader_for, b, fb, fake, {"cs": fake.cs})
