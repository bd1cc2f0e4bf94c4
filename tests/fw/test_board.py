"""wccp.board: pin names, network bring-up with recording fakes of network/machine."""
import json

from fwtest import raises, scratch_name
from wccp import board


class FakePin:
    OUT = 1
    IN = 0

    def __init__(self, pid, mode=None):
        self.pid = pid
        self.mode = mode
        self.v = None

    def value(self, v=None):
        if v is not None:
            self.v = v
        return self.v


class FakeMachine:
    Pin = FakePin

    def __init__(self):
        self.spis = []

    def SPI(self, bus, **kw):
        self.spis.append((bus, kw))
        return ("spi", bus)


class FakeNic:
    def __init__(self, calls):
        self.calls = calls
        self.polls = 0

    def active(self, v):
        self.calls.append(("active", v))

    def ifconfig(self, arg=None):
        self.calls.append(("ifconfig", arg))
        return ("10.0.0.5", "255.255.255.0", "10.0.0.1", "10.0.0.1")

    def isconnected(self):
        self.polls += 1
        return self.polls > 3


class FakeNetwork:
    PHY_LAN8720 = 7

    def __init__(self):
        self.calls = []

    def LAN(self, **kw):
        self.calls.append(("LAN", kw))
        return FakeNic(self.calls)

    def WIZNET5K(self, spi, cs, rst):
        self.calls.append(("WIZNET5K", spi, cs.pid, rst.pid))
        return FakeNic(self.calls)


def _board(name):
    with open("boards/%s.json" % name) as f:
        return json.loads(f.read())


def test_pin_ids():
    assert board.pin_id("GPIO23", "esp32") == 23
    assert board.pin_id("GP17", "rp2") == 17
    assert board.pin_id("PB3", "stm32") == "B3"
    raises(board.BoardError, board.pin_id, "PB3", "esp32")
    raises(board.BoardError, board.pin_id, 5, "rp2")


def test_lan_esp32_poe():
    net, mach = FakeNetwork(), FakeMachine()
    slept = []
    nic = board.bring_up(_board("olimex_esp32_poe"), None, net, mach, slept.append, log=lambda s: None)
    assert nic is not None
    kind, kw = net.calls[0]
    assert kind == "LAN"
    assert kw["mdc"].pid == 23 and kw["mdio"].pid == 18 and kw["power"].pid == 12
    assert kw["ref_clk"].pid == 17 and kw["ref_clk_mode"] == FakePin.OUT
    assert kw["phy_type"] == 7 and kw["phy_addr"] == 0
    assert net.calls[1] == ("active", True)
    assert net.calls[2] == ("ifconfig", "dhcp")
    assert slept == [100, 100, 100]


def test_wiznet_static():
    net, mach = FakeNetwork(), FakeMachine()
    board.bring_up(_board("w5500_evb_pico"), {"ip": "10.1.2.3", "netmask": "255.255.0.0", "gateway": "10.1.0.1"},
                   net, mach, lambda ms: None, log=lambda s: None)
    assert mach.spis[0][0] == 0
    assert mach.spis[0][1]["sck"].pid == 18 and mach.spis[0][1]["miso"].pid == 16
    assert net.calls[0] == ("WIZNET5K", ("spi", 0), 17, 20)
    assert net.calls[2] == ("ifconfig", ("10.1.2.3", "255.255.0.0", "10.1.0.1", "10.1.0.1"))


def test_stm32_lan_and_fpga_pins():
    net, mach = FakeNetwork(), FakeMachine()
    d = _board("nucleo_f429zi")
    board.bring_up(d, None, net, mach, lambda ms: None, log=lambda s: None)
    assert net.calls[0] == ("LAN", {})
    pins = board.fpga_pins(mach, d)
    assert pins["cs"].pid == "A4" and pins["cs"].v == 1 and pins["cs"].mode == FakePin.OUT
    assert pins["programn"].v == 1
    assert pins["done"].mode == FakePin.IN
    board.fpga_spi(mach, d)
    assert mach.spis[-1] == (1, {"baudrate": 10500000, "polarity": 0, "phase": 0})


def test_link_timeout_does_not_hang():
    class DeadNic(FakeNic):
        def isconnected(self):
            return False

    class Net(FakeNetwork):
        def LAN(self, **kw):
            return DeadNic(self.calls)

    slept = []
    logs = []
    nic = board.bring_up(_board("olimex_esp32_poe"), None, Net(), FakeMachine(), slept.append,
                         timeout_ms=500, log=logs.append)
    assert nic is not None and len(slept) == 5 and "not up" in logs[0]


def test_unix_and_missing():
    assert board.bring_up(None) is None
    assert board.bring_up({"kind": "mcu", "micropython": {"port": "unix"}}) is None
    assert board.load("/nonexistent/board.json") is None
    assert board.load("boards/olimex_esp32_poe.json")["name"] == "olimex_esp32_poe"


def test_start_on_unix_is_harmless():
    logs = []
    d, nic, ok = board.start(path="boards/olimex_esp32_poe.json", log=logs.append)
    # on the unix port / CPython: definition read, no network or FPGA touched
    assert d["name"] == "olimex_esp32_poe" and nic is None and ok is False
    assert board.start(path="/nonexistent.json", log=logs.append) == (None, None, False)


def test_load_bitstream_with_fakes():
    from wccp import fpgaload

    class Spi:
        def __init__(self):
            self.n = 0

        def write(self, b):
            self.n += len(b)

        def readinto(self, buf, wb=0):
            for i in range(len(buf)):
                buf[i] = 0

    spi = Spi()

    class M(FakeMachine):
        def SPI(self, bus, **kw):
            return spi

    d = _board("olimex_esp32_poe")
    name = scratch_name("board_test_fpga") + ".bit"
    with open(name, "wb") as f:
        f.write(b"\xff\xff\xbd\xb3" + bytes(100))
    try:
        # INITN never rises on the fake pins (value None): the loader reports it, start() would log it
        e = raises(fpgaload.LoadError, board.load_bitstream, d, M(), name, lambda s: None)
        assert "INITN" in str(e)
        assert board.load_bitstream(d, M(), "missing.bit") is False
        # an FPGA board that boots from its own flash (configuration pins not wired): nothing is sent
        fbp = scratch_name("board_test_fpga_board") + ".json"
        with open("boards/colorlight_5a75b.json") as src, open(fbp, "w") as dst:
            dst.write(src.read())
        logs = []
        spi.n = 0
        try:
            assert board.load_bitstream(d, M(), name, logs.append, fpga_board_path=fbp) is False
        finally:
            import os
            os.remove(fbp)
        assert spi.n == 0 and "boots from its own flash" in logs[0]
    finally:
        import os
        os.remove(name)


def test_network_settings_checked():
    assert board.check_net(None) == [] and board.check_net({"dhcp": True}) == []
    assert board.check_net({"dhcp": False, "ip": "10.0.0.2", "netmask": "255.255.255.0", "gateway": "10.0.0.1"}) == []
    assert board.check_net({"ip": "10.0.0.2"}) == []
    probs = board.check_net({"dhcp": "yes", "ip": "10.0.0.300", "mask": "x"})
    assert any("network.dhcp" in p for p in probs) and any("network.mask: unknown" in p for p in probs)
    assert any("network.ip" in p for p in board.check_net({"dhcp": False}))
    assert board.check_net([1]) != []


def test_board_limits_enforced():
    d = {"name": "small", "limits": {"max_groups": 2, "max_caches": 8}}
    raw = {"services": [{"id": 0, "type": "standard"}]}
    assert board.apply_limits(raw, d) == [] and raw["limits"]["max_caches"] == 8     # the board's default
    raw = {"services": [{"id": i, "type": "dynamic"} for i in range(3)], "limits": {"max_caches": 32}}
    probs = board.apply_limits(raw, d)
    assert any("3 groups" in p and "at most 2" in p for p in probs), probs
    assert any("limits.max_caches: 32" in p for p in probs), probs
    probs = board.apply_limits({"services": [{"id": 1, "type": "dynamic", "max_caches": 9}]}, d)
    assert any("services[0].max_caches" in p for p in probs), probs
    assert board.limits(None) == (8, 32)


def test_board_bounds_the_receive_buffer():
    """A board's max_routers / max_mask_values bound the config (default and ceiling), so the
    largest datagram, i.e. the block every recvfrom allocates, fits the board's heap."""
    from wccp.router_base import max_message
    d = {"name": "small", "limits": {"max_groups": 2, "max_caches": 8, "max_routers": 8, "max_mask_values": 128}}
    raw = {"services": [{"id": 0, "type": "standard"}]}
    assert board.apply_limits(raw, d) == []
    assert raw["limits"] == {"max_caches": 8, "max_routers": 8, "max_mask_values": 128}
    assert max_message(raw["limits"]) < 2560 < max_message({"max_routers": 32, "max_mask_values": 256})
    probs = board.apply_limits({"services": [{"id": 0}, {"id": 51, "type": "dynamic"}], "static": [{}]}, d)
    assert any("3 groups" in p and "at most 2" in p for p in probs), probs     # static groups count
    raw = {"services": [], "limits": {"max_routers": 4, "max_mask_values": 200}}
    probs = board.apply_limits(raw, d)
    assert probs == ["limits.max_mask_values: 200, board small holds at most 128"], probs
    assert raw["limits"]["max_routers"] == 4
    raw = {"services": []}      # a board that does not bound them leaves the config's defaults
    assert board.apply_limits(raw, {"name": "big", "limits": {"max_caches": 32}}) == []
    assert raw["limits"] == {"max_caches": 32}


def test_watchdog_clamped_to_the_port_range():
    made = []

    class WDT:
        def __init__(self, timeout):
            made.append(timeout)

        def feed(self):
            made.append("fed")

    class M:
        pass

    M.WDT = WDT
    logs = []
    w = board.BoardWatchdog(M, {"mcu": {"family": "rp2040"}}, 20000, log=logs.append)
    assert w.timeout_ms == 8388 and made == [8388] and "clamped" in logs[0]
    w.feed()
    assert made[-1] == "fed"
    assert board.BoardWatchdog(M, {"mcu": {"family": "stm32f4"}}, 0).timeout_ms == board.DEFAULT_WATCHDOG_MS
    assert board.BoardWatchdog(M, {"mcu": {"family": "rp2350"}}, 12000).timeout_ms == 12000
