"""Board support: read the board definition and bring the network up.

`wccp flash` copies the board definition (boards/<name>.json) to the MCU as
/board.json. This module reads it and, on a real board, starts wired Ethernet:

* ``network.LAN`` (ESP32 internal EMAC + RMII PHY, STM32 ETH) with the PHY type,
  address and pins from the definition;
* ``network.WIZNET5K`` (W5500 over SPI, rp2 / stm32).

IP settings come from a dict (``net``): ``{"dhcp": true}`` (the default) or
``{"ip": .., "netmask": .., "gateway": .., "dns": ..}`` — main.py passes the
``network`` object of /net.json when there is one.

On the unix port (the virtual board, CI) there is nothing to bring up: the host's
loopback is used and ``bring_up`` returns None. The MicroPython modules are passed
in (``network_mod``, ``machine_mod``) so the logic can be tested with fakes.
Runs on MicroPython and CPython.
"""
import json
import sys

DEFAULT_PATH = "/board.json"


class BoardError(Exception):
    pass


def load(path=DEFAULT_PATH):
    """Read a board definition; None when the file does not exist (virtual board without one)."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    try:
        d = json.loads(text)
    except ValueError as e:
        raise BoardError("%s: not valid JSON: %s" % (path, e))
    if not isinstance(d, dict) or "name" not in d or "kind" not in d:
        raise BoardError("%s: not a board definition" % path)
    return d


def is_unix():
    return sys.platform in ("linux", "darwin", "win32") or getattr(sys.implementation, "name", "") == "cpython"


def pin_id(name, port):
    """Pin name from the board definition -> the id machine.Pin takes on that port.

    esp32 "GPIO23" -> 23; rp2 "GP17" -> 17; stm32 "PB3" -> "B3"."""
    if not isinstance(name, str):
        raise BoardError("pin %r: must be a string" % (name,))
    if port == "esp32" and name.startswith("GPIO") and name[4:].isdigit():
        return int(name[4:])
    if port == "rp2" and name.startswith("GP") and name[2:].isdigit():
        return int(name[2:])
    if port == "stm32" and len(name) >= 3 and name[0] == "P" and name[1].isalpha() and name[2:].isdigit():
        return name[1:]
    raise BoardError("pin %r: not a pin name for port %s" % (name, port))


def make_pin(machine_mod, defn, name, mode, value=None):
    port = defn["micropython"]["port"]
    pid = pin_id(name, port)
    if mode == "out":
        p = machine_mod.Pin(pid, machine_mod.Pin.OUT)
        if value is not None:
            p.value(value)
        return p
    return machine_mod.Pin(pid, machine_mod.Pin.IN)


def make_spi(machine_mod, defn, spi_def):
    pins = spi_def["pins"]
    port = defn["micropython"]["port"]
    kw = {"baudrate": spi_def.get("baudrate", 1000000), "polarity": 0, "phase": 0}
    if port in ("esp32", "rp2"):
        kw["sck"] = machine_mod.Pin(pin_id(pins["sck"], port))
        kw["mosi"] = machine_mod.Pin(pin_id(pins["mosi"], port))
        kw["miso"] = machine_mod.Pin(pin_id(pins["miso"], port))
    # stm32: the hardware bus number fixes the pins (checked against the definition by the host tools)
    return machine_mod.SPI(spi_def["bus"], **kw)


def fpga_spi(machine_mod, defn):
    """The SPI bus wired to the FPGA (register access and slave-SPI configuration)."""
    return make_spi(machine_mod, defn, defn["fpga_spi"])


def fpga_pins(machine_mod, defn):
    """dict role -> machine.Pin for the FPGA control pins (cs/programn/creset high = idle)."""
    out = {}
    for role, name in defn.get("fpga_control", {}).items():
        if role in ("cs", "programn", "creset"):
            out[role] = make_pin(machine_mod, defn, name, "out", 1)
        else:
            out[role] = make_pin(machine_mod, defn, name, "in")
    return out


def _lan(network_mod, machine_mod, defn):
    net = defn["network"]
    port = defn["micropython"]["port"]
    if port == "stm32":
        return network_mod.LAN()
    pins = net.get("pins", {})
    kw = {"mdc": machine_mod.Pin(pin_id(pins["mdc"], port)),
          "mdio": machine_mod.Pin(pin_id(pins["mdio"], port)),
          "phy_addr": net.get("phy_addr", 0),
          "phy_type": getattr(network_mod, "PHY_" + net["phy_type"])}
    if "power" in pins:
        kw["power"] = machine_mod.Pin(pin_id(pins["power"], port))
    if "ref_clk" in pins:
        kw["ref_clk"] = machine_mod.Pin(pin_id(pins["ref_clk"], port))
        kw["ref_clk_mode"] = machine_mod.Pin.OUT if net.get("ref_clk_mode") == "out" else machine_mod.Pin.IN
    return network_mod.LAN(**kw)


def _wiznet(network_mod, machine_mod, defn):
    net = defn["network"]
    port = defn["micropython"]["port"]
    spi = make_spi(machine_mod, defn, net["spi"])
    cs = machine_mod.Pin(pin_id(net["pins"]["cs"], port), machine_mod.Pin.OUT)
    rst = machine_mod.Pin(pin_id(net["pins"]["rst"], port), machine_mod.Pin.OUT)
    return network_mod.WIZNET5K(spi, cs, rst)


def bring_up(defn, net=None, network_mod=None, machine_mod=None, sleep_ms=None, timeout_ms=15000, log=print):
    """Start the wired interface described by `defn`; returns the NIC, or None on the unix port."""
    if defn is None or defn.get("kind") != "mcu" or defn["micropython"]["port"] == "unix":
        return None
    if network_mod is None:
        if getattr(sys.implementation, "name", "") != "micropython":
            return None
        try:
            import network as network_mod  # noqa: F811 - boards (and emulated boards, wccptool.vport)
        except ImportError:
            return None     # the plain unix port: the host's network
    if machine_mod is None:
        import machine as machine_mod  # noqa: F811
    if sleep_ms is None:
        import time
        sleep_ms = getattr(time, "sleep_ms", None) or (lambda ms: time.sleep(ms / 1000))
    drv = defn["network"]["driver"]
    if drv == "LAN":
        nic = _lan(network_mod, machine_mod, defn)
    elif drv == "WIZNET5K":
        nic = _wiznet(network_mod, machine_mod, defn)
    else:
        raise BoardError("network.driver %r not supported" % drv)
    nic.active(True)
    net = net or {"dhcp": True}
    if net.get("dhcp", False) or "ip" not in net:
        nic.ifconfig("dhcp")
    else:
        nic.ifconfig((net["ip"], net.get("netmask", "255.255.255.0"), net.get("gateway", net["ip"]),
                      net.get("dns", net.get("gateway", net["ip"]))))
    waited = 0
    while not nic.isconnected():
        if waited >= timeout_ms:
            log("board: %s link/address not up after %d ms, continuing" % (drv, timeout_ms))
            break
        sleep_ms(100)
        waited += 100
    if nic.isconnected():
        log("board: %s up, %s" % (drv, nic.ifconfig()[0]))
    return nic


def load_bitstream(defn, machine_mod=None, path=None, log=print, fpga_board_path="fpga_board.json"):
    """Configure the FPGA from the bitstream file named by the board definition (relative to the
    firmware slot, the current directory). Returns True when configured, False when there is
    nothing to do (no file, no configuration pins, unix port); raises fpgaload.LoadError on failure."""
    if defn is None or defn.get("kind") != "mcu" or "fpga_control" not in defn:
        return False
    path = path or defn.get("bitstream_path", "fpga.bit")
    try:
        import os
        os.stat(path)
    except OSError:
        return False
    ctl = defn["fpga_control"]
    if not ("programn" in ctl or "creset" in ctl):
        log("board: %s present but the board has no FPGA configuration pins" % path)
        return False
    if machine_mod is None:
        if is_unix():
            return False
        import machine as machine_mod  # noqa: F811
    from wccp import fpgaload
    fb = None
    try:
        fb = load(fpga_board_path)
    except BoardError:
        fb = None
    if fb is not None and not (fb.get("sysconfig") or {}).get("wired_on_board", True):
        # e.g. the Colorlight 5A-75B: it loads its own flash; the file only records the build
        log("board: %s boots from its own flash (its configuration pins are not wired); %s not loaded"
            % (fb.get("name"), path))
        return False
    spi = fpga_spi(machine_mod, defn)
    pins = fpga_pins(machine_mod, defn)
    ld = fpgaload.loader_for(defn, fb, spi, pins)
    res = ld.load(path)
    log("board: FPGA configured from %s (%d bytes)" % (path, res[0] if isinstance(res, tuple) else res))
    return True


def start(net=None, path=DEFAULT_PATH, log=print):
    """Boot-time board set-up for main.py: read /board.json, bring the network up, configure the
    FPGA from the slot's bitstream. Never raises: problems are logged and (defn, nic, fpga_ok) says
    what worked; on the unix port it returns (defn or None, None, False)."""
    defn = nic = None
    fpga_ok = False
    try:
        defn = load(path)
    except BoardError as e:
        log("board: %s" % e)
        return None, None, False
    if defn is None:
        return None, None, False
    try:
        nic = bring_up(defn, net, log=log)
    except Exception as e:  # noqa: BLE001 - keep booting: the data plane can still fail open
        log("board: network bring-up failed: %s" % e)
    try:
        fpga_ok = load_bitstream(defn, log=log)
    except Exception as e:  # noqa: BLE001
        log("board: FPGA configuration failed: %s" % e)
    return defn, nic, fpga_ok


# ---------------------------------------------------------------- boot-time helpers for main.py

# machine.WDT(timeout=ms) range per MCU family, from the ports' machine_wdt.c: rp2 checks
# timeout <= WDT_TIMEOUT_MAX (8388 ms on RP2040, 16777 ms on RP2350) and raises ValueError above;
# stm32 IWDG: LSI/256 with a 12-bit reload, "WDT timeout too long" from 32768 ms; esp32 (task WDT)
# takes any positive value.
WDT_RANGE = {"rp2040": (1, 8388), "rp2350": (1, 16777), "stm32f4": (1, 32767), "stm32f7": (1, 32767),
             "stm32h7": (1, 32767), "esp32": (1, 3600000)}
DEFAULT_WATCHDOG_MS = 8000


def check_net(net):
    """Problems with the "network" object of config.json (empty list = usable)."""
    if net is None:
        return []
    if not isinstance(net, dict):
        return ["network: must be an object {\"dhcp\": true} or {\"ip\", \"netmask\", \"gateway\", \"dns\"}"]
    out = []
    for k in net:
        if k not in ("dhcp", "ip", "netmask", "gateway", "dns", "comment"):
            out.append("network.%s: unknown field" % k)
    if "dhcp" in net and not isinstance(net["dhcp"], bool):
        out.append("network.dhcp: must be true or false")
    if not net.get("dhcp", "ip" not in net):
        if "ip" not in net:
            out.append("network.ip: needed when dhcp is false")
        for k in ("ip", "netmask", "gateway", "dns"):
            if k in net:
                v = net[k]
                parts = v.split(".") if isinstance(v, str) else []
                if len(parts) != 4 or not all(p.isdigit() and 0 <= int(p) <= 255 for p in parts):
                    out.append("network.%s: %r is not a dotted IPv4 address" % (k, v))
    return out


def limits(defn):
    """(max service groups, max caches per group) the board runs with (its RAM), from "limits"."""
    lim = (defn or {}).get("limits") or {}
    return lim.get("max_groups", 8), lim.get("max_caches", 32)


# config limits a board can bound (its RAM): max_caches sizes the groups, max_routers and
# max_mask_values the largest datagram, i.e. the receive buffer (router_base.max_message)
BOUNDED = ("max_caches", "max_routers", "max_mask_values")


def apply_limits(raw, defn):
    """Fit a raw config to the board: limits.max_caches, max_routers and max_mask_values
    default to the board's where it sets them; returns the problems (more groups or a larger
    limit than the board can hold)."""
    groups, caches = limits(defn)
    blim = (defn or {}).get("limits") or {}
    out = []
    svcs = raw.get("services")
    st = raw.get("static")
    n = (len(svcs) if isinstance(svcs, list) else 0) + (len(st) if isinstance(st, list) else 0)
    if n > groups:
        out.append("services + static: %d groups configured, board %s holds at most %d (its RAM; "
                   "docs/performance.md)" % (n, defn.get("name"), groups))
    lim = raw.get("limits")
    if lim is None:
        lim = raw["limits"] = {}
    if isinstance(lim, dict):
        for k in BOUNDED:
            hi = caches if k == "max_caches" else blim.get(k)
            if hi is None:
                continue
            v = lim.get(k)
            if v is None:
                lim[k] = hi
            elif isinstance(v, int) and v > hi:
                out.append("limits.%s: %d, board %s holds at most %d" % (k, v, defn.get("name"), hi))
    if isinstance(svcs, list):
        for i, s in enumerate(svcs):
            if isinstance(s, dict) and isinstance(s.get("max_caches"), int) and s["max_caches"] > caches:
                out.append("services[%d].max_caches: %d, board %s holds at most %d" % (i, s["max_caches"],
                                                                                   defn.get("name"), caches))
    return out


class BoardWatchdog:
    """machine.WDT with the timeout clamped to what the port accepts; ``feed()`` for the app."""

    def __init__(self, machine_mod, defn, timeout_ms=0, log=print):
        fam = (defn.get("mcu") or {}).get("family")
        lo, hi = WDT_RANGE.get(fam, (1, DEFAULT_WATCHDOG_MS))
        want = timeout_ms or defn.get("watchdog_ms", DEFAULT_WATCHDOG_MS)
        self.timeout_ms = min(max(want, lo), hi)
        self.note = None
        if self.timeout_ms != want:
            self.note = "watchdog %d ms clamped to %d ms (%s range %d..%d ms)" % (want, self.timeout_ms, fam, lo, hi)
            log("board: " + self.note)
        self.wdt = machine_mod.WDT(timeout=self.timeout_ms)

    def feed(self):
        self.wdt.feed()


def read_json(path):
    try:
        with open(path) as f:
            return json.loads(f.read())
    except (OSError, ValueError):
        return None


def commit_slot(slot_dir, log=print):
    """The firmware in ``slot_dir`` (/fw/a or /fw/b) came up: make it the active slot if it is
    the one on trial (written by `wccp flash` as /fw/try). True when a commit happened."""
    import os
    try:
        with open("/fw/try") as f:
            trial = f.read().strip()
    except OSError:
        return False
    if not slot_dir.endswith("/" + trial):
        return False
    with open("/fw/active.new", "w") as f:
        f.write(trial)
    os.rename("/fw/active.new", "/fw/active")
    for p in ("/fw/try", "/fw/try.boot"):
        try:
            os.remove(p)
        except OSError:
            pass
    log("wccp: slot %s committed" % trial)
    return True
