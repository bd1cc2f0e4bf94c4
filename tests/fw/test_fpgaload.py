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


def crc16(data, crc=0):
    """CRC-16/BUYPASS (polynomial 0x8005, no reflection), the ECP5 bitstream's CRC (prjtrellis
    docs/architecture/bitstream_format.rst)."""
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x8005) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


FRAME_BYTES = 8      # the model device's configuration frame (the LFE5U-25's is 592 bits, 74 bytes)


def check_bitstream(data, idcode, frame_bytes=FRAME_BYTES):
    """What the ECP5's configuration logic checks in a slave-SPI burst: 0 when it ends with DONE, else
    the BSE error code of LSC_READ_STATUS (1 ID, 2 illegal command, 3 CRC, 4 preamble, 7 end of data
    before ISC_PROGRAM_DONE). Uncompressed bitstreams: LSC_PROG_INCR_RTI with a CRC after every frame."""
    p = data.find(b"\xff\xff\xbd\xb3")
    if p < 0:
        return 4
    i, n, crc = p + 4, len(data), 0
    payload = {0xE2: 4, 0x22: 4, 0x02: 8, 0xC2: 4, 0x3B: 0, 0x46: 0, 0x5E: 0, 0xCE: 0}
    while i < n:
        op = data[i]
        if op == 0xFF:
            i += 1
            continue
        if i + 4 > n:
            return 7
        info = data[i + 1:i + 4]
        if op == 0x82:                              # LSC_PROG_INCR_RTI: frames, each with its CRC
            crc = crc16(data[i:i + 4], crc)
            frames = (info[1] << 8) | info[2]
            i += 4
            for _ in range(frames):
                frame = data[i:i + frame_bytes]
                got = data[i + frame_bytes:i + frame_bytes + 2]
                if len(got) < 2:
                    return 7
                if crc16(frame, crc) != (got[0] << 8 | got[1]):
                    return 3
                crc = 0
                i += frame_bytes + 2 + 1            # + one 0xFF dummy byte between frames
            continue
        if op not in payload:
            return 2
        body = data[i + 4:i + 4 + payload[op]]
        crc = crc16(data[i:i + 4 + payload[op]], crc)
        i += 4 + payload[op]
        if op == 0x3B:
            crc = 0
        if op == 0xE2 and (body[0] << 24 | body[1] << 16 | body[2] << 8 | body[3]) != idcode:
            return 1
        if info[0] & 0x80:                          # a CRC16 follows the command
            got = data[i:i + 2]
            if len(got) < 2 or crc != (got[0] << 8 | got[1]):
                return 3
            crc = 0
            i += 2
        if op == 0x5E:                              # ISC_PROGRAM_DONE
            return 0
    return 7


def make_bitstream(idcode=0x41111043, frames=40, frame_bytes=FRAME_BYTES, seed=1):
    """An uncompressed ECP5-style bitstream in the format check_bitstream() reads."""
    out = bytearray(b"\xff\x00Part: LFE5U-25F\x00\x00\xff" + b"\xff\xff\xbd\xb3" + b"\xff" * 4)
    out += bytes([0x3B, 0, 0, 0])                                   # LSC_RESET_CRC
    head = bytes([0xE2, 0, 0, 0]) + idcode.to_bytes(4, "big")       # VERIFY_ID
    head += bytes([0x22, 0, 0, 0, 0x40, 0, 0, 0]) + bytes([0x46, 0, 0, 0])
    head += bytes([0x82, 0x91, frames >> 8, frames & 0xFF])
    crc = crc16(head)
    out += head
    for k in range(frames):
        frame = bytes((seed * 31 + k * 7 + j * 13) & 0xFF for j in range(frame_bytes))
        c = crc16(frame, crc)
        out += frame + bytes([c >> 8, c & 0xFF]) + b"\xff"
        crc = 0
    uc = bytes([0xC2, 0x80, 0, 0]) + b"\x00\x00\x00\x00"            # ISC_PROGRAM_USERCODE with CRC
    c = crc16(uc)
    out += uc + bytes([c >> 8, c & 0xFF]) + bytes([0x5E, 0, 0, 0]) + b"\xff" * 4
    return bytes(out)


class FakeEcp5:
    """Records every transaction; answers READ_ID/LSC_READ_STATUS like an ECP5-25 and checks the
    burst as the device does (check_bitstream: preamble, VERIFY_ID, command CRCs, frame CRCs,
    ISC_PROGRAM_DONE)."""

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
            self.error = 3 if self.fail else check_bitstream(data, self.idcode)
            self.configured = self.error == 0
            self.done.v = 1 if self.configured else 0
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
            elif getattr(self, "error", 0):
                v |= fpgaload.STATUS_FAIL | (self.error << 23)
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


BITSTREAM = make_bitstream(frames=800)        # 8 KiB and more: three 4 KiB chunks


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


def test_ecp5_model_checks_what_the_device_checks():
    # a good bitstream configures; the same with one bit flipped in a frame, another device's
    # VERIFY_ID, no preamble, a truncated file or a bad command CRC does not, with the BSE code
    good = make_bitstream(frames=5)
    assert check_bitstream(good, 0x41111043) == 0
    frame0 = good.index(bytes([0x82, 0x91, 0, 5])) + 4
    flipped = bytearray(good)
    flipped[frame0 + 3] ^= 0x10
    assert check_bitstream(bytes(flipped), 0x41111043) == 3
    assert check_bitstream(make_bitstream(idcode=0x41112043, frames=5), 0x41111043) == 1
    assert check_bitstream(good.replace(b"\xff\xff\xbd\xb3", b"\xff\xff\xbd\xb2"), 0x41111043) == 4
    assert check_bitstream(good[:frame0 + 20], 0x41111043) == 7
    uc = good.index(bytes([0xC2, 0x80, 0, 0]))
    bad_uc = bytearray(good)
    bad_uc[uc + 5] ^= 1
    assert check_bitstream(bytes(bad_uc), 0x41111043) == 3


def test_ecp5_corrupt_frame_reported_as_crc_error():
    data = bytearray(BITSTREAM)
    data[data.index(bytes([0x82, 0x91])) + 4 + 100] ^= 0x01
    e = raises(fpgaload.LoadError, loader(FakeEcp5(busy_polls=0)).load, Stream(bytes(data)))
    assert "CRC error" in str(e)


def test_ecp5_bitstream_for_another_device_refused_before_erase():
    fake = FakeEcp5(busy_polls=0)
    e = raises(fpgaload.LoadError, loader(fake).load, Stream(make_bitstream(idcode=0x41112043, frames=5)))
    assert "built for IDCODE 0x41112043, the FPGA is 0x41111043" in str(e)
    assert ("spi", b"\x0e\x01\x00\x00") not in fake.rec.log and not fake.configured
    assert fpgaload.bitstream_idcode(BITSTREAM) == 0x41111043
    assert fpgaload.bitstream_idcode(b"\x00" * 64) is None
