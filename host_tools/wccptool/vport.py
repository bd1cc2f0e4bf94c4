"""Emulated board hardware for the MicroPython unix port (runs INSIDE MicroPython).

``wccptool.vboard.VirtualBoard(board=NAME)`` loads this module into the interpreter before
the board's filesystem is mounted and calls ``install(profile_path)``: ``machine``,
``network`` and (where the port lacks MD5) ``hashlib`` are replaced by the modules below,
which accept the arguments, enforce the limits and raise the errors of that port's own
implementation (each rule names the MicroPython source it follows; wccptool.vboard.PORTS
holds the figures). The board's wiring comes from its definition (boards/<name>.json):

* ``machine.SPI`` on the FPGA bus with the board's pins, while the FPGA chip-select pin is
  low, clocks the bytes to the FPGA — the digital twin's SPI socket (the same MOSI bytes,
  the MISO bytes it returns). No FPGA (or CS high, or other pins): MISO reads 0xFF;
* ``network.LAN`` / ``network.WIZNET5K`` check their arguments and wiring as the port does;
  the link comes up and DHCP "leases" the profile's address (a host loopback address the
  unix port's sockets can bind);
* ``machine.WDT`` is enforced by the supervisor: this module reports the timeout and every
  feed on the terminal (escape sequences the supervisor strips); a missed feed resets the
  board (``machine.reset_cause() == machine.WDT_RESET`` on the next boot);
* input pins read the levels of the profile's ``inputs`` (e.g. a safe-mode button held).
"""
import sys

_P = {}
_LEVEL = {}          # pin id -> level driven or read
_RESET = [77, 78]


def _mark(s):
    sys.stdout.write("\x1b]vboard-%s\x07" % s)


def _port():
    return _P["port"]["name"]


# ------------------------------------------------------------------ machine

def _check_pin(pid):
    port = _port()
    valid = _P["port"]["pins"]
    if port == "stm32":
        name = pid if isinstance(pid, str) else None
        if name is not None and name.startswith("P"):
            name = name[1:]
        if name is None or name not in valid:
            # stm32/pin.c: "Pin(%s) doesn't exist"
            raise ValueError("Pin(%s) doesn't exist" % (pid,))
        return name
    if not isinstance(pid, int) or pid not in valid:
        # esp32/machine_pin.c, rp2/machine_pin.c: "invalid pin"
        raise ValueError("invalid pin")
    return pid


class Pin:
    IN = 1
    OUT = 3
    OPEN_DRAIN = 7
    PULL_UP = 1
    PULL_DOWN = 2
    IRQ_FALLING = 2
    IRQ_RISING = 1

    def __init__(self, id, mode=-1, pull=-1, *, value=None, drive=None, alt=None):
        self.id = _check_pin(id)
        self.mode = None
        self.pull = None
        self.init(mode, pull, value=value)

    def init(self, mode=-1, pull=-1, *, value=None, drive=None, alt=None):
        if mode == Pin.OUT and self.id in _P["port"].get("input_only", ()):
            raise ValueError("pin can only be input")      # esp32/machine_pin.c (GPIO34..39)
        if mode != -1:
            self.mode = mode
        if pull != -1:
            self.pull = pull
        if value is not None:
            self.value(value)

    def value(self, v=None):
        if v is None:
            if self.mode == Pin.OUT:
                return _LEVEL.get(self.id, 0)
            ins = _P.get("inputs", {})
            if str(self.id) in ins:
                return ins[str(self.id)]
            return 0 if self.pull == Pin.PULL_DOWN else 1 if self.pull == Pin.PULL_UP else _LEVEL.get(self.id, 0)
        _LEVEL[self.id] = 1 if v else 0
        return None

    __call__ = value

    def on(self):
        self.value(1)

    def off(self):
        self.value(0)

    def low(self):
        self.value(0)

    def high(self):
        self.value(1)

    def __repr__(self):
        return "Pin(%s)" % (self.id,)


def _pin_id(p):
    if p is None:
        return None
    return p.id if isinstance(p, Pin) else _check_pin(p)


class _FpgaWire:
    """The FPGA at the other end of the SPI wires: the twin's SPI socket (or nothing)."""

    def __init__(self, addr):
        self.addr = addr
        self.sock = None

    def xfer(self, tx):
        import socket
        import struct
        if self.addr is None:
            return None
        if self.sock is None:
            host, port = self.addr.rsplit(":", 1)
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.connect(socket.getaddrinfo(host, int(port))[0][-1])
            except OSError:
                s.close()
                return None
            self.sock = s
        try:
            self.sock.write(struct.pack(">I", len(tx)) + bytes(tx))
            rx = b""
            while len(rx) < len(tx):
                chunk = self.sock.read(len(tx) - len(rx))
                if not chunk:
                    raise OSError("closed")
                rx += chunk
            return rx
        except OSError:
            self.sock.close()
            self.sock = None
            return None


_FPGA = _FpgaWire(None)


class SPI:
    MSB = 0
    LSB = 1
    CONTROLLER = 0

    def __init__(self, id, baudrate=1000000, *, polarity=0, phase=0, bits=8, firstbit=0, sck=None, mosi=None,
                 miso=None, **kw):
        port = _port()
        buses = _P["port"]["spi"]
        if str(id) not in buses:
            raise ValueError("SPI(%s) doesn't exist" % (id,))         # rp2/stm32 machine_spi.c
        bus = buses[str(id)]
        if port == "stm32":
            if sck is not None or mosi is not None or miso is not None or kw:
                # stm32 SPI takes no pin arguments: the bus number fixes them (mpconfigboard.h)
                raise TypeError("unexpected keyword argument")
            pins = (bus["sck"], bus["mosi"], bus["miso"])
        else:
            sck, mosi, miso = _pin_id(sck), _pin_id(mosi), _pin_id(miso)
            if port == "rp2":
                # rp2/machine_spi.c IS_VALID_SCK/MOSI/MISO: GPIO function table
                n = int(id)
                if sck is not None and not (sck & 3 == 2 and (sck & 8) >> 3 == n):
                    raise ValueError("bad SCK pin")
                if mosi is not None and not (mosi & 3 == 3 and (mosi & 8) >> 3 == n):
                    raise ValueError("bad MOSI pin")
                if miso is not None and not (miso & 3 == 0 and (miso & 8) >> 3 == n):
                    raise ValueError("bad MISO pin")
            pins = (sck if sck is not None else bus["sck"], mosi if mosi is not None else bus["mosi"],
                    miso if miso is not None else bus["miso"])
        if bits != 8:
            raise ValueError("invalid bits")
        self.id = id
        self.pins = pins
        self.mode = (polarity, phase, firstbit)
        self.baudrate = min(baudrate, _P["port"]["spi_max_hz"])
        self.dev = None
        for dev in _P.get("wires", ()):
            if dev["bus"] == id and tuple(dev["pins"]) == pins:
                self.dev = dev

    def init(self, baudrate=None, **kw):
        if baudrate:
            self.baudrate = min(baudrate, _P["port"]["spi_max_hz"])

    def deinit(self):
        pass

    def _xfer(self, tx):
        dev = self.dev
        if dev is not None and dev["kind"] == "fpga" and self.mode == (0, 0, 0) \
                and _LEVEL.get(dev["cs"], 1) == 0:
            rx = _FPGA.xfer(tx)
            if rx is not None:
                return rx
        return b"\xff" * len(tx)        # nothing drives MISO

    def write_readinto(self, wbuf, rbuf):
        if len(wbuf) != len(rbuf):
            raise ValueError("buffers must be the same length")
        rbuf[:] = self._xfer(wbuf)

    def write(self, buf):
        self._xfer(buf)

    def read(self, n, write=0):
        return bytes(self._xfer(bytes([write]) * n))

    def readinto(self, buf, write=0):
        buf[:] = self._xfer(bytes([write]) * len(buf))


class WDT:
    def __init__(self, id=0, timeout=5000):
        port = _port()
        fam = _P["board"]["mcu"]["family"]
        if id != 0:
            raise ValueError("WDT(%d) doesn't exist" % id)
        if port == "rp2":
            mx = _P["port"]["wdt_max_ms"][fam]
            if timeout > mx:
                raise ValueError("timeout exceeds %d" % mx)           # rp2/machine_wdt.c
        elif timeout <= 0:
            raise ValueError("WDT timeout too short")                 # esp32, stm32 machine_wdt.c
        elif port == "stm32":
            t = timeout
            pre = 0
            while pre < 6 and t >= 512:                               # stm32 make_iwdt()
                pre += 1
                t //= 2
            if t * 8 > 0xFFF:
                raise ValueError("WDT timeout too long")
        self.timeout = timeout
        _mark("wdt:%d" % timeout)

    def feed(self):
        _mark("feed")


PWRON_RESET = 1
HARD_RESET = 2
WDT_RESET = 3
DEEPSLEEP_RESET = 4
SOFT_RESET = 5


def reset():
    _mark("reset")
    raise SystemExit(_RESET[0])


def soft_reset():
    _mark("reset")
    raise SystemExit(_RESET[1])


def reset_cause():
    return _P.get("reset_cause", PWRON_RESET)


def unique_id():
    return b"vb" + _P["board"]["name"].encode()[:6]


def freq(*a):
    return _P["port"]["freq"]


def idle():
    pass


def disable_irq():
    return 0


def enable_irq(state=0):
    pass


# ------------------------------------------------------------------ network

class _Nic:
    def __init__(self, kind):
        self.kind = kind
        self._active = False
        self._addr = None

    def active(self, v=None):
        if v is None:
            return self._active
        self._active = bool(v)
        return None

    def ifconfig(self, cfg=None):
        if cfg is None:
            a = self._addr or ("0.0.0.0", "0.0.0.0", "0.0.0.0", "0.0.0.0")
            return a
        if cfg == "dhcp":
            ip = _P["lease"]
            self._addr = (ip, "255.0.0.0", ip, ip)
        else:
            if len(cfg) != 4:
                raise ValueError("invalid arguments")
            self._addr = tuple(cfg)
        return None

    def isconnected(self):
        return self._active and self._addr is not None

    def status(self, *a):
        return 1 if self.isconnected() else 0

    def config(self, *a, **kw):
        if a and a[0] == "mac":
            return b"\x02vb\x00\x00\x01"
        if a:
            raise ValueError("unknown config param")
        return None


class _Network:
    PHY_LAN8710 = 0
    PHY_LAN8720 = 1
    PHY_IP101 = 2
    PHY_RTL8201 = 3
    PHY_DP83848 = 4
    PHY_KSZ8041 = 5
    PHY_KSZ8081 = 6
    PHY_LAN8742 = 7     # stm32 names the PHY in mpconfigboard.h; kept for the board files

    def LAN(self, *a, **kw):
        port = _port()
        net = _P["board"]["network"]
        if net["driver"] != "LAN":
            raise AttributeError("'module' object has no attribute 'LAN'")
        if port == "stm32":
            if a or kw:
                raise TypeError("function doesn't take keyword arguments")
            return _Nic("LAN")
        # esp32/network_lan.c get_lan(): mdc and mdio required, phy_addr 0..31, a known PHY type
        if "mdc" not in kw or "mdio" not in kw:
            raise ValueError("mdc and mdio must be specified")
        if not 0 <= kw.get("phy_addr", 0) <= 31:
            raise ValueError("invalid phy address")
        if kw.get("phy_type") not in (0, 1, 2, 3, 4, 5, 6):
            raise ValueError("invalid phy type")
        pins = net.get("pins", {})
        for k in ("mdc", "mdio", "power", "ref_clk"):
            v = pins.get(k)
            got = kw.get(k)
            if v is not None and (got is None or "GPIO%d" % _pin_id(got) != v):
                # the PHY is wired to these pins: anything else and it never answers on MDIO
                raise OSError("esp_eth_driver_install failed (no PHY answers with %s=%r)" % (k, got))
        return _Nic("LAN")

    def WIZNET5K(self, *a, **kw):
        net = _P["board"]["network"]
        if net["driver"] != "WIZNET5K":
            raise AttributeError("'module' object has no attribute 'WIZNET5K'")
        if not a and not kw:
            return _Nic("WIZNET5K")      # the board's built-in wiring (mpconfigboard.h)
        # extmod/network_wiznet5k.c: (spi, pin_cs, pin_rst[, pin_intn])
        if len(a) < 3 or len(a) > 4:
            raise TypeError("function takes 3 positional arguments")
        spi, cs, rst = a[0], a[1], a[2]
        w = net["spi"]
        ok = (isinstance(spi, SPI) and spi.id == w["bus"] and "GP%d" % spi.pins[0] == w["pins"]["sck"]
              and "GP%d" % spi.pins[1] == w["pins"]["mosi"] and "GP%d" % spi.pins[2] == w["pins"]["miso"]
              and "GP%d" % _pin_id(cs) == net["pins"]["cs"] and "GP%d" % _pin_id(rst) == net["pins"]["rst"])
        if not ok:
            # the driver reads the chip's version register and gets nothing back
            raise OSError(5)
        return _Nic("WIZNET5K")

    def hostname(self, *a):
        return "wccp"


class _Hashlib:
    """The port's hashlib: the unix port's own functions, without the ones the port lacks."""

    def __init__(self, real, names):
        for n in names:
            setattr(self, n, getattr(real, n))


def install(path, reset_codes=(77, 78)):
    import json
    with open(path) as f:
        _P.update(json.loads(f.read()))
    _RESET[0], _RESET[1] = reset_codes
    _FPGA.addr = _P.get("fpga")
    mod = sys.modules[__name__]
    globals()["VBOARD"] = _P["board"]["name"]      # `wccp flash` recognises an emulated board by it
    sys.modules["machine"] = mod
    sys.modules["network"] = _Network()
    lack = _P["port"].get("hashlib_lacks", ())
    if lack:
        import hashlib
        sys.modules["hashlib"] = _Hashlib(hashlib, [n for n in ("sha256", "sha1", "md5")
                                                    if n not in lack and hasattr(hashlib, n)])
