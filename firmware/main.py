"""Firmware entry point (boards and the MicroPython unix port).

Unix port (docs/config.md):
    micropython firmware/main.py [--config FILE] [--wccp-addr A[,B..]] [--router-id R]
        [--http-addr H] [--http-port P] [--state-dir DIR] [--dataplane model|none|fpga]
        [--fpga-socket HOST:PORT|PATH]   (fpga: the FPGA behind the twin's SPI socket, docs/twin.md)

--wccp-addr replaces the config's "addresses" (and sets router_id to the first one when the
config does not name one); the boot counter lives in DIR/wccp_state.json (default: the
current directory). SIGTERM/Ctrl-C stop the process; there is nothing to flush.

Boards (a board definition board.json in the firmware slot whose port is not unix, e.g. as
`wccp flash` installs it; docs/quickstart.md): ``run_board`` — the network from the config's
"network" object (DHCP by default), the FPGA pins and SPI register link from the board
definition, the FPGA identity checked before anything is written (wccp.fpgalink: fail-open
with the reason on /status until it answers right), the watchdog on (clamped to the port's
range). A config that does not load is reported on the console and /status and the last
good one (or none: no services, fail-open) is used instead — the board never reboot-loops on
a bad config. Once the router runs, a firmware slot on trial is committed.
"""
import sys

try:
    _here = __file__.rsplit("/", 1)[0] if "/" in __file__ else "."
except NameError:
    _here = "."
if _here not in sys.path:     # MicroPython finds packages only on sys.path: the slot's wccp/ sits here
    sys.path.insert(0, _here)

import json  # noqa: E402

from wccp import config as wconfig  # noqa: E402
from wccp.storage import FileStorage  # noqa: E402

USAGE = ("usage: main.py [--config FILE] [--wccp-addr A[,B..]] [--router-id R] [--http-addr H] "
         "[--http-port P] [--state-dir DIR] [--dataplane model|none|fpga] [--fpga-socket HOST:PORT|PATH]")


def parse_args(argv):
    opts = {}
    i = 0
    names = ("--config", "--wccp-addr", "--router-id", "--http-addr", "--http-port", "--state-dir", "--dataplane",
             "--fpga-socket")
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            print(USAGE)
            sys.exit(0)
        if a not in names or i + 1 >= len(argv):
            print(USAGE)
            raise SystemExit(2)
        opts[a[2:]] = argv[i + 1]
        i += 2
    return opts


def make_dataplane(name, opts=None):
    if name == "none":
        from wccp.dataplane import NullDataPlane
        return NullDataPlane()
    if name == "fpga":
        from wccp.fpga import FpgaDataPlane
        sock = (opts or {}).get("fpga-socket")
        if sock:        # unix port: the digital twin's SPI socket (wccptool.twin)
            from wccp.transport import SocketTransport
            if ":" in sock and not sock.startswith("/"):
                host, port = sock.rsplit(":", 1)
                return FpgaDataPlane(SocketTransport(host, int(port)))
            return FpgaDataPlane(SocketTransport(path=sock))
        return FpgaDataPlane()
    from wccp.fwdmodel import ForwardingModel
    return ForwardingModel()


LAST_GOOD = "wccp_last_good.json"     # in the state directory: the last config that ran
COMMIT_AFTER_MS = 5000                 # a slot on trial is committed after running this long


def _slot_dir():
    return _here if _here.startswith("/fw/") else None


async def _supervise(app, asyncio, on_up=None, after_ms=COMMIT_AFTER_MS):
    """Run the app; once its sockets are open and its timers have ticked for after_ms, call
    on_up() (commit the firmware slot on trial, remember the config as good)."""
    task = asyncio.create_task(app.run())
    waited = 0
    while on_up is not None and app.running:
        await asyncio.sleep_ms(100) if hasattr(asyncio, "sleep_ms") else await asyncio.sleep(0.1)
        waited += 100
        if waited >= after_ms and app.socks and app.stats.get("ticks", 0) >= 2:
            try:
                on_up()
            except Exception as e:  # noqa: BLE001 - never stop the router for this
                print("wccp: %s" % e)
            break
    await task


def _read_raw(path):
    """(dict or None, [errors])."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        return None, ["cannot read %s: %s" % (path, e)]
    try:
        raw = json.loads(text)
    except ValueError as e:
        return None, ["%s: not valid JSON: %s" % (path, e)]
    if not isinstance(raw, dict):
        return None, ["%s: must be a JSON object" % path]
    return raw, []


def board_config(raw, defn, addr, errors):
    """Validate a raw config for a board (network object removed, board limits applied, the
    board's address as default listening/HTTP address); config dict or None (errors appended)."""
    from wccp import board
    raw = dict(raw)
    raw.pop("network", None)
    probs = board.apply_limits(raw, defn)
    if addr and "addresses" not in raw:
        raw["addresses"] = [addr]
    if addr and "http" not in raw:
        raw["http"] = {"address": addr}
    try:
        cfg = wconfig.load(raw)
    except wconfig.ConfigError as e:
        probs.append(str(e))
    if probs:
        errors.extend(probs)
        return None
    return cfg


def run_board(defn, opts, state_dir="/"):
    """Boot on a board: never raises for a bad config, a missing network or FPGA."""
    from wccp import board
    import machine
    log = print
    errors = []
    path = opts.get("config") or "config.json"
    raw, errs = _read_raw(path)
    errors.extend(errs)
    last_path = state_dir.rstrip("/") + "/" + LAST_GOOD
    last, _ = _read_raw(last_path)
    net = (raw or {}).get("network")
    nerr = board.check_net(net)
    if nerr:
        errors.extend(nerr)
        net = (last or {}).get("network")
        if board.check_net(net):
            net = None
    nic = None
    try:
        nic = board.bring_up(defn, net, log=log)
    except Exception as e:  # noqa: BLE001 - the router still runs; /status says why
        errors.append("network bring-up failed: %s: %s" % (type(e).__name__, e))
    addr = nic.ifconfig()[0] if nic is not None else None
    source = path
    cfg = board_config(raw, defn, addr, errors) if raw is not None else None
    if cfg is None and last is not None:
        source = last_path
        cfg = board_config(last, defn, addr, [])
        if cfg is not None:
            log("wccp: config %s not usable, running the last good config %s" % (path, last_path))
    if cfg is None:
        source = None
        cfg = wconfig.load({"addresses": [addr or "127.0.0.1"], "http": {"address": addr or "127.0.0.1"},
                            "services": [{"id": 0, "type": "standard"}]})
        cfg["services"] = []
        log("wccp: no usable config: running with no service groups (the FPGA stays fail-open)")
    for e in errors:
        log("wccp: config error: %s" % e)
    # FPGA: configure from the slot's bitstream where the board is wired for it, then the
    # register link; FpgaLink checks the identity before writing anything
    from wccp.fpgalink import FpgaLink
    from wccp.transport import SpiTransport
    fpga_note = None
    try:
        if board.load_bitstream(defn, machine_mod=machine, log=log):
            fpga_note = "configured from the slot's bitstream"
    except Exception as e:  # noqa: BLE001
        fpga_note = "configuration from the slot's bitstream failed: %s" % e
        log("board: " + fpga_note)
    manifest = board.read_json("manifest.json") or {}
    expect = manifest.get("fpga_build_id")
    try:
        pins = board.fpga_pins(machine, defn)
        link = FpgaLink(SpiTransport(board.fpga_spi(machine, defn), pins["cs"]),
                        expect_build=int(expect, 16) if isinstance(expect, str) else expect, log=log)
    except Exception as e:  # noqa: BLE001 - wrong pins for this port: report, run fail-open
        errors.append("FPGA link: %s: %s" % (type(e).__name__, e))
        link = FpgaLink(_NoLink(str(e)), log=log)
    wdt = None
    try:
        wdt = board.BoardWatchdog(machine, defn, cfg.get("watchdog_ms", 0), log=log)
    except Exception as e:  # noqa: BLE001
        errors.append("watchdog: %s: %s" % (type(e).__name__, e))
    storage = FileStorage(state_dir if state_dir != "/" else "")
    from wccp.app import App, asyncio
    app = App(cfg, link, storage, watchdog=wdt, dataplane_name="fpga")
    try:
        import gc
        # collect after every 16 KiB allocated instead of only when the heap is exhausted:
        # transient objects (each datagram's receive block) then stay low in the heap and the
        # long-lived state does not get spread over it (fragmentation on the small boards)
        gc.threshold(16384)
    except Exception:  # noqa: BLE001 - a port without gc.threshold
        pass
    bstat = {"name": defn.get("name"), "port": defn["micropython"]["port"], "address": addr,
             "config": source, "config_errors": errors, "slot": _slot_dir(),
             "watchdog_ms": None if wdt is None else wdt.timeout_ms, "fpga_load": fpga_note,
             "reset_cause": _reset_cause(machine)}
    def status_hook():
        import gc
        gc.collect()        # live data only: what the board really has left
        bstat["heap_free"] = gc.mem_free() if hasattr(gc, "mem_free") else None
        return {"board": bstat, "fpga": link.info()}

    app.status_hook = status_hook

    def up():
        slot = _slot_dir()
        if slot is not None:
            board.commit_slot(slot, log=log)
        if source == path and raw is not None:
            with open(last_path, "w") as f:
                f.write(json.dumps(raw))

    try:
        asyncio.run(_supervise(app, asyncio, up))
    except KeyboardInterrupt:
        pass
    finally:
        app.close()


def _reset_cause(machine):
    names = {getattr(machine, n, None): n for n in ("PWRON_RESET", "HARD_RESET", "WDT_RESET", "DEEPSLEEP_RESET",
                                                     "SOFT_RESET")}
    try:
        c = machine.reset_cause()
    except Exception:  # noqa: BLE001 - not on every port
        return None
    return names.get(c, c)


class _NoLink:
    """A register transport that cannot reach anything (the board's FPGA wiring failed)."""

    def __init__(self, why):
        self.why = why

    def read(self, addr, n):
        raise OSError(self.why)

    write = read


def main(argv):
    unix = sys.platform in ("linux", "darwin")
    opts = parse_args(argv)
    from wccp import board
    try:
        defn = board.load("board.json") or board.load()
    except board.BoardError as e:
        print("wccp: %s" % e)
        defn = None
    if defn is not None and defn.get("kind") == "mcu" and defn["micropython"]["port"] != "unix":
        return run_board(defn, opts, opts.get("state-dir", "/"))
    raw = None
    path = opts.get("config") or (None if unix else "/config.json")
    if path:
        try:
            with open(path) as f:
                raw = json.loads(f.read())
        except OSError as e:
            if opts.get("config"):
                print("wccp: cannot read config %s: %s" % (path, e))
                raise SystemExit(2)
        except ValueError as e:
            print("wccp: config %s: not valid JSON: %s" % (path, e))
            raise SystemExit(2)
    if raw is None:
        raw = json.loads(json.dumps(wconfig.DEFAULT_CONFIG))
        if not unix:
            del raw["addresses"]      # a board listens on its own address (below)
    if not isinstance(raw, dict):
        print("wccp: config: must be a JSON object")
        raise SystemExit(2)
    if "wccp-addr" in opts:
        addrs = [a for a in opts["wccp-addr"].split(",") if a]
        raw["addresses"] = addrs
        if "router_id" not in raw and addrs:
            raw["router_id"] = addrs[0]
    if "router-id" in opts:
        raw["router_id"] = opts["router-id"]
    if "http-addr" in opts or "http-port" in opts:
        h = dict(raw.get("http") or {})
        if "http-addr" in opts:
            h["address"] = opts["http-addr"]
        if "http-port" in opts:
            try:
                h["port"] = int(opts["http-port"])
            except ValueError:
                print("wccp: --http-port must be a number")
                raise SystemExit(2)
        raw["http"] = h
    raw.pop("network", None)       # a board's IP settings (run_board); the unix port uses the host's
    try:
        cfg = wconfig.load(raw)
    except wconfig.ConfigError as e:
        print("wccp: %s" % e)
        raise SystemExit(2)
    storage = FileStorage(opts.get("state-dir", "." if unix else ""))
    dpname = opts.get("dataplane", "model")
    dp = make_dataplane(dpname, opts)
    from wccp.app import App, asyncio
    app = App(cfg, dp, storage, dataplane_name=dpname)
    slot = _slot_dir()
    try:
        asyncio.run(_supervise(app, asyncio, (lambda: board.commit_slot(slot)) if slot else None))
    except KeyboardInterrupt:
        pass
    finally:
        app.close()


if __name__ == "__main__":
    main(sys.argv[1:])
