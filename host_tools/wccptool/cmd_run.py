"""`wccp run` — the simulated appliance: the router firmware under the MicroPython unix port.

    wccp run                              WCCP on 127.0.0.1:2048, /status on 127.0.0.1:8080,
                                          embedded default config (service 0, hash, GRE),
                                          data plane = the reference model (wccp.fwdmodel)
    wccp run --config my.json             your config (docs/config.md)
    wccp run --wccp-addr 127.0.0.5 --http-port 8081 --state-dir /tmp/r1

Runs until Ctrl-C or SIGTERM (then stops the firmware cleanly). The boot counter lives in
--state-dir (default build/run-state), so every start gets new member change numbers.

Data-plane back ends (``BACKENDS``): each is a function(args) -> Backend that says which data
plane the firmware uses, which extra firmware arguments it needs and what to clean up; ``rtl``,
``rtl-icarus`` and ``twin-model`` start the digital twin (wccptool.twin).
"""
import argparse
import json
import pathlib
import signal
import sys
import os
import time

from wccptool import launch, twin
from wccptool.twin import netns as twin_netns

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEFAULT_STATE = ROOT / "build" / "run-state"


class Backend:
    def __init__(self, dataplane, description, extra_args=(), cleanup=None, env=None):
        self.dataplane = dataplane          # firmware --dataplane value
        self.description = description
        self.extra_args = list(extra_args)
        self.cleanup = cleanup
        self.env = env or {}


def _model(args):
    return Backend("model", "reference model (wccp.fwdmodel.ForwardingModel, in the firmware process)")


def _none(args):
    return Backend("none", "none (tables accepted and counted only)")


TWIN_SPI = "127.0.0.1:7470"
TWIN_FRAMES = "127.0.0.1:7471"


def _twin(fpga, sim):
    """A back end on the digital twin (wccptool.twin): its SPI socket is the firmware's FPGA."""
    def factory(args):
        env = os.environ
        spi = env.get("WCCP_TWIN_SPI", TWIN_SPI)
        frames = env.get("WCCP_TWIN_FRAMES", TWIN_FRAMES)
        pcap_out = {}
        if env.get("WCCP_TWIN_PCAP_OUT"):       # a directory: port0.pcap, port1.pcap
            d = env["WCCP_TWIN_PCAP_OUT"]
            os.makedirs(d, exist_ok=True)
            pcap_out = {0: os.path.join(d, "port0.pcap"), 1: os.path.join(d, "port1.pcap")}
        topo = None
        if env.get("WCCP_TWIN_NETNS"):
            topo = twin_netns.Topology(prefix=env["WCCP_TWIN_NETNS"] if env["WCCP_TWIN_NETNS"] != "1" else "wccp")
        if fpga == "rtl":
            print("wccp run: starting the RTL twin (%s; the first start builds it, ~1 min) ..." % sim, flush=True)
        log = env.get("WCCP_TWIN_LOG")
        if not log:
            state = getattr(args, "state_dir", None)
            if not state:
                state = str(DEFAULT_STATE)
            os.makedirs(state, exist_ok=True)
            log = os.path.join(state, "twin.log")
        try:
            tw = twin.start(fpga=fpga, sim=sim, spi=spi, frames=frames, pcap_out=pcap_out, netns=topo, log_file=log,
                       bus=env.get("WCCP_TWIN_BUS", "regbus"))
        except Exception as e:  # noqa: BLE001 - a clear message instead of a traceback
            raise SystemExit("wccp run: digital twin: %s" % e) from None
        what = ("RTL fpga_core under cocotb + %s" % sim) if fpga == "rtl" else "twin fast mode (register map + model)"
        lines = ["digital twin: %s, pid %d" % (what, tw.proc.pid),
                 "                 SPI socket %s (the firmware's FpgaDataPlane)" % spi,
                 "                 frame socket %s (wccptool.twin.FrameClient: inject/observe frames)" % frames]
        if log:
            lines.append("                 log %s" % log)
        if pcap_out:
            lines.append("                 pcap out %s" % ", ".join("port %s: %s" % kv for kv in sorted(pcap_out.items())))
        if tw.netns is not None:
            lines.append("                 " + tw.netns.describe())
        return Backend("fpga", "\n".join(lines), extra_args=["--fpga-socket", spi], cleanup=tw.stop)
    return factory


BACKENDS = {"model": _model, "none": _none, "rtl": _twin("rtl", "verilator"),
            "rtl-icarus": _twin("rtl", "icarus"), "twin-model": _twin("model", "verilator")}


class _Stop(BaseException):
    """SIGTERM, raised like KeyboardInterrupt: a BaseException, so no `except Exception` on the way
    (status reads, log polling, back-end start-up) can swallow it and keep `wccp run` running."""


def _on_term(signum, frame):
    raise _Stop()


def _banner(fw, st, backend, state):
    addrs = st.get("addresses", [])
    svcs = ", ".join(("web-cache (0)" if g["service_type"] == "standard" else "dynamic %d" % g["service_id"])
                     for g in st.get("groups", []))
    lines = [
        "WCCPv2 router running under MicroPython (%s), pid %d" % (fw.command[0], fw.proc.pid),
        "  router ID      %s" % st.get("router_id"),
        "  WCCP           %s UDP 2048" % ", ".join(addrs),
        "  services       %s" % svcs,
        "  data plane     %s" % backend.description,
        "  status JSON    %s/status" % fw.url,
        "  state / log    %s (boot %s)" % (state, st.get("boot")),
        "Point caches at %s, e.g." % addrs[0],
        "  Squid:         wccp2_router %s   (and wccp2_address <another 127.x address>)" % addrs[0],
        "  emulated:      wccp cache-sim --router %s --caches 2" % addrs[0],
        "Watch it:        wccp show --host %s --port %d   (--service 0 for detail, --json)"
        % (fw.http_addr, fw.http_port),
        "Stop:            Ctrl-C",
    ]
    return "\n".join(lines)


def run(args):
    if args.fpga not in BACKENDS:
        print("wccp run: unknown --fpga %r (have: %s)" % (args.fpga, ", ".join(sorted(BACKENDS))), file=sys.stderr)
        return 2
    config = None
    if args.config:
        try:
            with open(args.config) as f:
                config = json.load(f)
        except OSError as e:
            print("wccp run: cannot read config %s: %s" % (args.config, e), file=sys.stderr)
            return 2
        except ValueError as e:
            print("wccp run: config %s: not valid JSON: %s" % (args.config, e), file=sys.stderr)
            return 2
    wccp_addr = args.wccp_addr
    if wccp_addr is None and config is None:
        wccp_addr = "127.0.0.1"
    state = pathlib.Path(args.state_dir) if args.state_dir else DEFAULT_STATE
    state.mkdir(parents=True, exist_ok=True)
    backend = BACKENDS[args.fpga](args)
    old_term = signal.signal(signal.SIGTERM, _on_term)
    # Ctrl-C stops the appliance even when the launching shell ignored SIGINT (a background
    # job of a non-interactive shell inherits SIG_IGN, and Python then raises no
    # KeyboardInterrupt)
    old_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    fw = None
    try:
        try:
            fw = launch.start_firmware(config, wccp_addr=wccp_addr, http_port=args.http_port,
                                       http_addr=args.http_addr, state_dir=str(state), dataplane=backend.dataplane,
                                       extra_args=backend.extra_args, env=backend.env, timeout=20)
        except launch.FirmwareError as e:
            print("wccp run: %s" % e, file=sys.stderr)
            return 1
        st = fw.status()
        pos = len(fw.log())
        print(_banner(fw, st, backend, state), flush=True)
        while fw.alive():
            time.sleep(0.2)
            text = fw.log()
            if len(text) > pos:
                sys.stdout.write(text[pos:])
                sys.stdout.flush()
                pos = len(text)
        print("wccp run: firmware exited with status %s" % fw.proc.returncode, file=sys.stderr)
        print(fw.log()[pos:][-4000:], file=sys.stderr)
        return 1
    except (KeyboardInterrupt, _Stop):
        print("\nwccp run: stopping", flush=True)
        return 0
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)     # no second interruption while stopping
        try:
            if fw is not None:
                fw.stop()
            if backend.cleanup is not None:
                backend.cleanup()
        finally:
            signal.signal(signal.SIGTERM, old_term)
            signal.signal(signal.SIGINT, old_int)


def register(subparsers):
    p = subparsers.add_parser("run", help="run the simulated appliance (firmware under MicroPython)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fpga", default="model", metavar="BACKEND",
                   help="data plane back end: model (default; the reference model), none, "
                        "rtl (digital twin: the RTL on Verilator, docs/twin.md), rtl-icarus, twin-model")
    p.add_argument("--config", "-c", metavar="FILE", help="router config JSON (docs/config.md); default: embedded")
    p.add_argument("--wccp-addr", metavar="A[,B]", default=None,
                   help="WCCP listen address(es), replacing the config's (default 127.0.0.1 without --config)")
    p.add_argument("--http-addr", metavar="ADDR", default=None, help="status HTTP address (default: WCCP address)")
    p.add_argument("--http-port", type=int, default=8080, help="status HTTP port (default 8080)")
    p.add_argument("--state-dir", metavar="DIR", default=None, help="boot counter and log (default build/run-state)")
    p.set_defaults(func=run)
