"""The appliance's digital twin: the simulated FPGA as a service (see docs/twin.md).

    tw = twin.start(fpga="rtl", spi="127.61.0.1:7001", frames="127.61.0.1:7002")
    dp = FpgaDataPlane(SocketTransport("127.61.0.1", 7001))   # what the firmware does
    fc = tw.frame_client()                                   # inject / observe frames
    ...
    tw.stop()

``fpga="rtl"``: fpga_core under cocotb (Verilator by default, ``sim="icarus"``) inside the
sim-only wrapper fpga/twin/twin_top.v; ``fpga="model"``: the fast mode (ModelRegisterFile +
ForwardingModel). Both serve the same SPI socket (wccp.transport.SocketTransport framing)
and the same Ethernet ports: frame socket, pcap in/out, TAP devices (optionally moved into
network namespaces this module creates, see wccptool.twin.netns).
"""
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

from wccptool.procgroup import stop_group
from wccptool.twin.hub import KIND_BARRIER, KIND_STATS

# RTL: clock cycles per watchdog microsecond. The real part runs 125 MHz (125); the twin
# keeps its simulated watchdog time in step with the wall clock while idle, which Verilator
# manages for a few million cycles per second, so the twin counts 1 cycle per microsecond.
DEFAULT_CLK_PER_US = 1
READY_TIMEOUT = 300.0


class TwinError(RuntimeError):
    pass


class Twin:
    """A running twin service (a process group this module started)."""

    def __init__(self, proc, cfg, ready, tmpdir, netns=None):
        self.proc = proc
        self.cfg = cfg
        self.ready = ready
        self.tmpdir = tmpdir
        self.netns = netns

    @property
    def spi(self):
        return self.cfg["spi"]

    @property
    def frames(self):
        return self.cfg["frames"]

    def spi_address(self):
        """(host, port) or path of the SPI socket, as SocketTransport takes it."""
        from wccptool.twin.hub import parse_addr
        return parse_addr(self.cfg["spi"])

    def transport(self, timeout=30.0):
        """A wccp.transport.SocketTransport connected to the twin's SPI socket."""
        from wccp.transport import SocketTransport
        kind, addr = self.spi_address()
        if kind == "tcp":
            return SocketTransport(addr[0], addr[1], timeout=timeout)
        return SocketTransport(path=addr, timeout=timeout)

    def frame_client(self, timeout=30.0):
        if not self.cfg.get("frames"):
            raise TwinError("the twin was started without a frame socket")
        return FrameClient(self.cfg["frames"], timeout=timeout)

    def alive(self):
        return self.proc.poll() is None

    def stop(self, timeout=10.0):
        if self.netns is not None:
            self.netns.down()
            self.netns = None
        stop_group(self.proc, signal.SIGTERM, timeout)
        if self.tmpdir is not None:
            self.tmpdir.cleanup()
            self.tmpdir = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def _args(cfg):
    a = ["--fpga", cfg["fpga"], "--sim", cfg.get("sim", "verilator"), "--spi", cfg["spi"],
         "--bus", cfg.get("bus", "regbus")]
    if cfg.get("frames"):
        a += ["--frames", cfg["frames"]]
    for key, opt in (("pcap_in", "--pcap-in"), ("pcap_out", "--pcap-out"), ("taps", "--tap")):
        for p, v in sorted((cfg.get(key) or {}).items()):
            a += [opt, "%s=%s" % (p, v)]
    if cfg.get("pcap_in_delay"):
        a += ["--pcap-in-delay", str(cfg["pcap_in_delay"])]
    if cfg.get("clk_per_us"):
        a += ["--clk-per-us", str(cfg["clk_per_us"])]
    if cfg.get("spi_log"):
        a += ["--spi-log", cfg["spi_log"]]
    if cfg.get("verbose"):
        a.append("-v")
    return a


def build(sim="verilator", log=print):
    """Build the RTL twin (or find it built); returns the cocotb runner (wccptool.twin.rtl.build)."""
    from wccptool.twin import rtl
    return rtl.build(sim, {"clk_per_us": DEFAULT_CLK_PER_US}, log=log)


def start(fpga="rtl", sim="verilator", bus="regbus", spi="127.0.0.1:7470", frames=None, pcap_in=None, pcap_out=None,
          taps=None, netns=None, pcap_in_delay=0.0, clk_per_us=None, log_file=None, verbose=False,
          spi_log=None, ready_timeout=READY_TIMEOUT):
    """Start the twin service and wait until its sockets listen. Returns a Twin.

    pcap_in/pcap_out/taps: {port: path-or-ifname}. netns: a wccptool.twin.netns.Topology
    (or True for the default one): TAP devices created by the twin and moved into fresh
    network namespaces once it is up."""
    if fpga not in ("rtl", "model"):
        raise ValueError("fpga must be 'rtl' or 'model'")
    topo = None
    if netns:
        from wccptool.twin import netns as nsmod
        topo = netns if isinstance(netns, nsmod.Topology) else nsmod.Topology()
        taps = dict(taps or {})
        for p, name in topo.tap_names().items():
            taps[p] = name
    tmp = tempfile.TemporaryDirectory(prefix="wccp-twin-")
    ready_file = os.path.join(tmp.name, "ready.json")
    cfg = {"fpga": fpga, "sim": sim, "bus": bus, "spi": spi, "frames": frames,
           "pcap_in": {str(k): str(v) for k, v in (pcap_in or {}).items()},
           "pcap_out": {str(k): str(v) for k, v in (pcap_out or {}).items()},
           "taps": {str(k): str(v) for k, v in (taps or {}).items()},
           "pcap_in_delay": pcap_in_delay, "clk_per_us": clk_per_us or DEFAULT_CLK_PER_US,
           "verbose": verbose, "spi_log": str(spi_log) if spi_log else None}
    cmd = [sys.executable, "-m", "wccptool.twin"] + _args(cfg) + ["--ready-file", ready_file,
                                                                   "--parent-pid", str(os.getpid())]
    env = dict(os.environ)
    env.pop("PYTEST_CURRENT_TEST", None)
    out = open(log_file, "ab") if log_file else None
    log_start = out.tell() if out is not None else 0
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                            start_new_session=True)
    if out is not None:
        out.close()
    tw = Twin(proc, cfg, None, tmp)
    deadline = time.monotonic() + ready_timeout
    while not os.path.exists(ready_file):
        if proc.poll() is not None:
            tw.stop()
            tail = ""
            if log_file:
                try:
                    with open(log_file, "rb") as f:
                        f.seek(log_start)
                        text = f.read().decode(errors="replace")
                    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
                    tail = ": " + " | ".join(lines[-3:]) + " (log: %s)" % log_file
                except OSError:
                    pass
            raise TwinError("twin service exited with %s before it was ready%s" % (proc.returncode, tail))
        if time.monotonic() > deadline:
            tw.stop()
            raise TwinError("twin service not ready after %.0f s" % ready_timeout)
        time.sleep(0.02)
    with open(ready_file) as f:
        tw.ready = json.load(f)
    if topo is not None:
        try:
            topo.up()
        except Exception:
            tw.stop()
            raise
        tw.netns = topo
    return tw


class FrameClient:
    """Client of the twin's frame socket (see wccptool.twin.hub)."""

    def __init__(self, addr, timeout=30.0):
        from wccptool.twin.hub import parse_addr
        kind, a = parse_addr(addr)
        if kind == "tcp":
            self.sock = socket.create_connection(a, timeout=timeout)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        else:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect(a)
        self.buf = bytearray()
        self.received = []          # [(port, frame)] transmitted by the twin, in order
        self._token = 0

    def _msg(self, payload):
        self.sock.sendall(struct.pack(">I", len(payload)) + payload)

    def send(self, port, frame):
        """Inject a frame (FCS included) as received on `port`."""
        self._msg(bytes([port]) + bytes(frame))

    def send_many(self, items):
        data = bytearray()
        for port, frame in items:
            data += struct.pack(">I", len(frame) + 1) + bytes([port]) + bytes(frame)
        self.sock.sendall(data)

    def _read_msg(self):
        while True:
            if len(self.buf) >= 4:
                n = struct.unpack_from(">I", self.buf, 0)[0]
                if len(self.buf) >= 4 + n:
                    m = bytes(self.buf[4:4 + n])
                    del self.buf[:4 + n]
                    return m
            chunk = self.sock.recv(262144)
            if not chunk:
                raise TwinError("twin closed the frame socket")
            self.buf += chunk

    def barrier(self):
        """Wait until every frame sent so far has been processed; return the frames
        transmitted since the last barrier as [(port, frame)]."""
        self._token = (self._token + 1) & 0xFFFFFFFF
        tok = struct.pack(">I", self._token)
        self._msg(bytes([KIND_BARRIER]) + tok)
        out = []
        while True:
            m = self._read_msg()
            if m[0] == KIND_BARRIER and m[1:] == tok:
                self.received += out
                return out
            if m[0] < 16:
                out.append((m[0], m[1:]))

    def stats(self):
        self._msg(bytes([KIND_STATS]))
        while True:
            m = self._read_msg()
            if m[0] == KIND_STATS:
                return json.loads(m[1:].decode())
            if m[0] < 16:
                self.received.append((m[0], m[1:]))

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
