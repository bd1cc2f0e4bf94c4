"""Firmware entry point (boards and the MicroPython unix port).

Unix port (docs/config.md):
    micropython firmware/main.py [--config FILE] [--wccp-addr A[,B..]] [--router-id R]
        [--http-addr H] [--http-port P] [--state-dir DIR] [--dataplane model|none|fpga]
        [--fpga-socket HOST:PORT|PATH]   (fpga: the FPGA behind the twin's SPI socket, docs/twin.md)

--wccp-addr replaces the config's "addresses" (and sets router_id to the first one when the
config does not name one); the boot counter lives in DIR/wccp_state.json (default: the
current directory). SIGTERM/Ctrl-C stop the process; there is nothing to flush.

Boards: /config.json (or the embedded default), state in /, data plane: the FPGA driver
when present, else the reference model.
"""
import sys

try:
    _here = __file__.rsplit("/", 1)[0] if "/" in __file__ else "."
except NameError:
    _here = "."
if _here not in sys.path:
    sys.path.insert(0, _here)

import json  # noqa: E402

from wccp import config as wconfig  # noqa: E402
from wccp.storage import FileStorage  # noqa: E402

USAGE = ("usage: main.py [--config FILE] [--wccp-addr A[,B..]] [--router-id R] [--http-addr H] "
         "[--http-port P] [--state-dir DIR] [--dataplane model|none|fpga] [--fpga-socket HOST:PORT|PATH]")


class NullDataPlane:
    """Accepts and counts table writes (for running without any data plane)."""

    def __init__(self):
        self.c = {"commits": 0, "writes": 0}

    def _w(self, *a):
        self.c["writes"] += 1

    configure = set_group = set_caches = set_hash = set_mask = clear_assignment = clear_group = _w

    def commit(self):
        self.c["commits"] += 1

    def heartbeat(self):
        pass

    def counters(self):
        return dict(self.c)


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


def _board_up(raw, opts):
    """Real boards: bring the wired network up (wccp.board, /board.json + /net.json); without
    configured addresses the router listens on the board's address. Never fatal."""
    try:
        from wccp import board
        defn = board.load()
        net = None
        try:
            with open("/net.json") as f:
                net = json.loads(f.read()).get("network")
        except (OSError, ValueError, AttributeError):
            net = None
        nic = board.bring_up(defn, net)
        if nic is not None and "addresses" not in raw:
            raw["addresses"] = [nic.ifconfig()[0]]
        if defn is not None and defn.get("fpga_spi") and "dataplane" not in opts:
            opts["dataplane"] = "fpga"
    except Exception as e:  # noqa: BLE001 - run with what we have; /status shows the rest
        print("wccp: board bring-up failed: %s" % e)


def main(argv):
    unix = sys.platform in ("linux", "darwin")
    opts = parse_args(argv)
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
    if not unix:
        _board_up(raw, opts)
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
    try:
        asyncio.run(app.run())
    except KeyboardInterrupt:
        pass
    finally:
        app.close()


if __name__ == "__main__":
    main(sys.argv[1:])
