"""The inline lab: real clients, real Squid caches and the simulated appliance in network
namespaces (root only). Used by `wccp lab` (wccptool.cmd_lab) and tests/test_lab.py.

    lab = Lab(prefix="wlab", fpga="rtl", caches=1, service="web-cache")
    lab.up()                       # namespaces, twin, origin, firmware, Squids; prints progress
    lab.get(ORIGIN, "/index.html") # an HTTP request from the client namespace
    lab.access_log(0)              # Squid 1's access log, parsed
    lab.down()                     # every process and namespace it made

Topology (one IPv4 subnet: the appliance is a bump in the wire)::

    <p>-cl  client      10.62.0.10 (+ 10.62.0.100.. for many clients), MTU 1472
       │ TAP <p>-t0 = FPGA port 0
    [ twin: RTL fpga_core on Verilator, or the fast model ] ◄── SPI (UNIX socket) ── firmware
       │ TAP <p>-t1 = FPGA port 1                                                    │
    <p>-sw  bridge br0 ─┬─ <p>-org origin 10.62.0.1 (python http.server, port 80 and 8080)
                        ├─ <p>-fw  firmware 10.62.0.2 (router ID, WCCP UDP 2048, /status :8080)
                        └─ <p>-c1.. Squid caches 10.62.0.21.. (WCCPv2, interception)

Each cache is set up with the commands of docs/quickstart.md section 7 (`cache_setup_commands`):
a GRE tunnel to the router ID — the kernel's ip_gre where it exists, otherwise a TUN device
fed by this module's decapsulator (`python -m wccptool.lab decap`: a raw IPPROTO_GRE socket
that strips GRE and the 4-byte WCCP redirect header) — rp_filter off, and an iptables
REDIRECT of TCP port 80 to Squid's intercept port. L2 forwarding needs only the REDIRECT rule
on the cache's Ethernet interface.

MTU rule: a GRE-redirected packet grows by 28 bytes (outer IPv4 20, GRE 4, WCCP redirect
header 4) and the appliance sends at most 1500-byte IP packets, so the client side runs an
MTU of 1500 - 28 = 1472 (its TCP MSS then fits the tunnel); the cache side keeps 1500.
"""
import ctypes
import hashlib
import json
import os
import pathlib
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
SUBNET = "10.62.0.0/24"
ORIGIN = "10.62.0.1"
ROUTER = "10.62.0.2"
CLIENT = "10.62.0.10"
FIRST_CACHE = 21
FIRST_EXTRA_CLIENT = 100
HTTP_PORT = 8080                 # firmware /status
GRE_OVERHEAD = 28                # outer IPv4 + GRE + WCCP redirect header
CACHE_MTU = 1500
CLIENT_MTU = CACHE_MTU - GRE_OVERHEAD
INTERCEPT_PORT = 3129
SERVICE_ID = 80                  # the dynamic service of the src-hash and mask-l2 set-ups
BIG_SIZE = 6 * 1024 * 1024
LIBFAKETIME = ("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
               "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
               "/usr/lib/faketime/libfaketime.so.1")

# service set-ups: firmware service config + Squid's wccp2_* lines
SERVICES = {
    "web-cache": {"help": "standard service 0 (TCP port 80, hash on the destination address), hash, GRE",
                  "forwarding": "gre", "assignment": "hash", "dynamic": None},
    "src-hash": {"help": "dynamic service 80: TCP port 80 hashed on the client (source) address, hash, GRE",
                 "forwarding": "gre", "assignment": "hash", "dynamic": "src_ip_hash"},
    "mask-l2": {"help": "dynamic service 80: TCP port 80, mask assignment, L2 forwarding and return",
                "forwarding": "l2", "assignment": "mask", "dynamic": "dst_ip_hash"},
}


class LabError(RuntimeError):
    pass


# ---------------------------------------------------------------- small helpers

def need_root(what="wccp lab"):
    if os.geteuid() != 0:
        raise LabError("%s needs root: it creates network namespaces, TAP/veth/bridge devices and "
                       "iptables rules (run it with sudo, or as root in CI)" % what)


def run(argv, check=True, timeout=60, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise LabError("%s: %s" % (" ".join(argv), (r.stderr or r.stdout).strip()))
    return r


def nsx(ns, argv):
    """argv run inside namespace ns."""
    return ["ip", "netns", "exec", ns] + list(argv)


_libc = None
CLONE_NEWNET = 0x40000000


def in_netns(ns, fn, *args, **kw):
    """Call fn(*args, **kw) in a thread that has entered network namespace ns: sockets it
    creates belong to that namespace. Returns fn's result, raises its exception."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    out = {}

    def body():
        try:
            fd = os.open("/var/run/netns/%s" % ns, os.O_RDONLY)
            try:
                if _libc.setns(fd, CLONE_NEWNET) != 0:
                    e = ctypes.get_errno()
                    raise OSError(e, "setns(%s): %s" % (ns, os.strerror(e)))
            finally:
                os.close(fd)
            out["v"] = fn(*args, **kw)
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            out["e"] = e

    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join()
    if "e" in out:
        raise out["e"]
    return out.get("v")


def http_get(host, path="/", port=80, source=None, timeout=5.0, method="GET", body=None):
    """One HTTP/1.1 request (Connection: close) -> (status, headers dict lower-case, body bytes)."""
    import http.client
    c = http.client.HTTPConnection(host, port, timeout=timeout, source_address=(source, 0) if source else None)
    try:
        c.request(method, path, body=body, headers={"Connection": "close", "User-Agent": "wccp-lab"})
        r = c.getresponse()
        body = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, body
    finally:
        c.close()


def origin_content():
    """{path: bytes} the origin serves: a small page and a BIG_SIZE pseudo-random file."""
    rng = random.Random(6262)
    page = b"<html><body>wccp lab origin: served by 10.62.0.1</body></html>\n"
    return {"/index.html": page, "/big.bin": rng.randbytes(BIG_SIZE)}


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def kernel_has_gre(ns):
    """True when `ip link add ... type gre` works (the kernel's ip_gre), tried in namespace ns."""
    r = run(["ip", "-n", ns, "link", "add", "wccpprobe", "type", "gre", "remote", "192.0.2.1",
             "local", "192.0.2.2"], check=False)
    if r.returncode == 0:
        run(["ip", "-n", ns, "link", "del", "wccpprobe"], check=False)
        return True
    return False


def cache_setup_commands(cache, router, forwarding, gre="ip_gre", dev="eth0", tunnel="wccp0"):
    """The cache-side commands of docs/quickstart.md section 7, for this cache (argv lists).

    gre: "ip_gre" (the kernel's GRE tunnel) or "decap" (a TUN device this module's
    decapsulator feeds: `python -m wccptool.lab decap --dev wccp0 --remote ROUTER`)."""
    cmds = []
    if forwarding == "gre":
        if gre == "ip_gre":
            cmds.append(["ip", "tunnel", "add", tunnel, "mode", "gre", "remote", router, "local", cache, "dev", dev])
        else:
            cmds.append(["ip", "tuntap", "add", "dev", tunnel, "mode", "tun"])
        cmds += [["ip", "addr", "add", cache + "/32", "dev", tunnel],
                 ["ip", "link", "set", tunnel, "up"]]
        into = tunnel
    else:
        into = dev
    cmds.append(["sysctl", "-w", "net.ipv4.ip_forward=1"])
    cmds.append(["sysctl", "-w", "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.%s.rp_filter=0" % into])
    rule = ["iptables", "-t", "nat", "-A", "PREROUTING", "-i", into, "-p", "tcp", "--dport", "80"]
    if forwarding != "gre":
        rule += ["!", "-d", cache]        # L2: the cache's own port-80 traffic is not intercepted
    cmds.append(rule + ["-j", "REDIRECT", "--to-port", str(INTERCEPT_PORT)])
    return cmds


def decap_command(cache, router, tunnel="wccp0"):
    """The decapsulator for kernels without ip_gre (docs/quickstart.md section 7)."""
    return ["python3", "-m", "wccptool.lab", "decap", "--dev", tunnel, "--remote", router, "--local", cache]


def squid_conf(workdir, address, router, setup, service_name):
    s = SERVICES[setup]
    lines = [
        "http_port %s:3128" % address,
        "http_port %d intercept" % INTERCEPT_PORT,
        "http_access allow all",
        "strip_query_terms off",
        "visible_hostname %s" % service_name,
        "pid_filename %s/squid.pid" % workdir,
        "cache_log %s/cache.log" % workdir,
        "access_log stdio:%s/access.log squid" % workdir,
        "cache_store_log none",
        "cache_effective_user nobody",
        "coredump_dir %s" % workdir,
        "cache_mem 16 MB",
        "pinger_enable off",
        "logfile_rotate 0",
        "shutdown_lifetime 0 seconds",
        "dns_nameservers 127.0.0.1",
        "wccp2_router %s" % router,
        "wccp2_address %s" % address,
        "wccp2_rebuild_wait off",
        "wccp2_forwarding_method %s" % s["forwarding"],
        "wccp2_return_method %s" % s["forwarding"],
        "wccp2_assignment_method %s" % s["assignment"],
    ]
    if s["dynamic"] is None:
        lines.append("wccp2_service standard 0")
    else:
        lines.append("wccp2_service dynamic %d" % SERVICE_ID)
        lines.append("wccp2_service_info %d protocol=tcp flags=%s priority=240 ports=80" % (SERVICE_ID, s["dynamic"]))
    return "\n".join(lines) + "\n"


def firmware_config(setup, caches, here_i_am_ms):
    s = SERVICES[setup]
    svc = {"forwarding": [s["forwarding"]], "assignment": [s["assignment"]], "return": [s["forwarding"]]}
    if s["dynamic"] is None:
        svc.update({"id": 0, "type": "standard"})
    else:
        svc.update({"id": SERVICE_ID, "type": "dynamic"})
    if s["forwarding"] == "l2":
        svc["l2_adjacent"] = list(caches)       # addresses only: the appliance finds their MACs
    return {"router_id": ROUTER, "addresses": [ROUTER], "http": {"address": ROUTER, "port": HTTP_PORT},
            "timers": {"here_i_am_ms": here_i_am_ms}, "services": [svc]}


def parse_access_log(text):
    """Squid's native access log -> [{"client", "code", "status", "bytes", "method", "url"}]."""
    out = []
    for line in text.splitlines():
        f = line.split()
        if len(f) < 7:
            continue
        code, _, status = f[3].partition("/")
        out.append({"client": f[2], "code": code, "status": int(status) if status.isdigit() else 0,
                    "bytes": int(f[4]) if f[4].isdigit() else 0, "method": f[5], "url": f[6]})
    return out


def libfaketime():
    for p in LIBFAKETIME:
        if os.path.exists(p):
            return p
    return None


def ensure_squid():
    """The patched Squid binary (scripts/ensure-squid.sh builds it on first use)."""
    r = subprocess.run([str(ROOT / "scripts" / "ensure-squid.sh")], capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        raise LabError("scripts/ensure-squid.sh failed:\n%s" % r.stderr[-3000:])
    dirs = dict(line.split("=", 1) for line in r.stdout.split() if "=" in line)
    exe = os.path.join(dirs.get("patched", ""), "sbin", "squid")
    if not os.access(exe, os.X_OK):
        raise LabError("patched Squid missing at %s" % exe)
    return exe


# ---------------------------------------------------------------- processes

class Proc:
    """A process this lab started in a session of its own (killed by process group)."""

    def __init__(self, name, argv, log, env=None, cwd=None):
        self.name = name
        self.argv = argv
        self.log = str(log)
        with open(self.log, "ab") as f:
            self.popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
                                          start_new_session=True, env=env, cwd=cwd)
        self.pid = self.popen.pid

    def alive(self):
        return self.popen.poll() is None

    def kill(self, sig=signal.SIGTERM, wait=5.0):
        if self.popen.poll() is None:
            try:
                os.killpg(self.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.popen.wait(wait)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.popen.wait(5)
        else:
            try:                                   # a leader gone, children left behind
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def tail(self, n=15):
        try:
            lines = pathlib.Path(self.log).read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])


def wait_until(pred, timeout, what, step=0.1):
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            v = pred()
            if v:
                return v
        except Exception as e:  # noqa: BLE001 - keep trying until the deadline
            last = e
        if time.monotonic() > deadline:
            raise LabError("timed out after %.0f s waiting for %s%s" % (timeout, what,
                                                                       " (last error: %s)" % last if last else ""))
        time.sleep(step)


# ---------------------------------------------------------------- the lab

class Lab:
    def __init__(self, prefix="wlab", fpga="rtl", caches=1, service="web-cache", clients=32, time_scale=1,
                 state_dir=None, gre="auto", log=print):
        if not prefix or len(prefix) > 11 or not prefix.replace("-", "").isalnum():
            raise LabError("prefix must be 1-11 letters, digits or '-' (interface names are <prefix>-t0)")
        if fpga not in ("rtl", "twin-model"):
            raise LabError("fpga must be rtl or twin-model")
        if service not in SERVICES:
            raise LabError("service must be one of %s" % ", ".join(SERVICES))
        if not 1 <= caches <= 8:
            raise LabError("1 to 8 caches")
        if not 0 <= clients <= 100:
            raise LabError("0 to 100 extra client addresses")
        if time_scale not in (1, 10):
            raise LabError("time scale 1 (real time) or 10 (Squid under libfaketime, 1 s HERE_I_AM)")
        self.prefix = prefix
        self.fpga = fpga
        self.ncaches = caches
        self.service = service
        self.nclients = clients
        self.time_scale = time_scale
        self.gre_choice = gre
        self.gre = None                # "ip_gre" / "decap" once up (GRE set-ups)
        self.log = log
        self.state = pathlib.Path(state_dir or (ROOT / "build" / "lab" / prefix)).absolute()
        if len(str(self.state / "frames.sock")) > 107:
            raise LabError("state directory %s: too long a path for its UNIX sockets (107 bytes); "
                           "use a shorter --state-dir" % self.state)
        self.ns = {"client": prefix + "-cl", "switch": prefix + "-sw", "origin": prefix + "-org",
                   "firmware": prefix + "-fw"}
        for i in range(caches):
            self.ns["cache%d" % i] = "%s-c%d" % (prefix, i + 1)
        self.taps = {0: prefix + "-t0", 1: prefix + "-t1"}
        self.caches = ["10.62.0.%d" % (FIRST_CACHE + i) for i in range(caches)]
        self.clients = [CLIENT] + ["10.62.0.%d" % (FIRST_EXTRA_CLIENT + i) for i in range(clients)]
        self.procs = {}
        self.twin = None
        self.content = None
        self.timings = {}
        self.made = False

    # -- names and paths
    def cache_ns(self, i):
        return self.ns["cache%d" % i]

    def cache_dir(self, i):
        return self.state / ("cache%d" % (i + 1))

    @property
    def here_i_am_ms(self):
        return 10000 // self.time_scale

    @property
    def removal_s(self):
        """The protocol's removal time: 3 HERE_I_AM intervals of silence."""
        return 3 * self.here_i_am_ms / 1000.0

    # -- state file (for `wccp lab --down` from another shell)
    def _save(self):
        st = {"prefix": self.prefix, "owner": os.getpid(), "namespaces": sorted(self.ns.values()), "taps": list(self.taps.values()),
              "pgids": {n: p.pid for n, p in self.procs.items()}}
        if self.twin is not None:
            st["pgids"]["twin"] = self.twin.proc.pid
        self.state.mkdir(parents=True, exist_ok=True)
        (self.state / "lab.json").write_text(json.dumps(st, indent=1))

    # -- bring-up
    def up(self):
        need_root()
        for tool in ("ip", "iptables", "sysctl"):
            if shutil.which(tool) is None:
                raise LabError("%s not found: install it (scripts/setup-system.sh, `make setup`)" % tool)
        t0 = time.monotonic()
        owner = running_owner(self.state)
        if owner:
            raise LabError("a lab with prefix %s is running (pid %d): stop it (`wccp lab --down --prefix %s`) "
                           "or choose another --prefix" % (self.prefix, owner, self.prefix))
        self.made = True                  # from here on, down() removes what this lab made
        if self.state.exists():
            down_from_state(self.state, self.prefix, quiet=True)
            shutil.rmtree(self.state, ignore_errors=True)
        self.state.mkdir(parents=True)
        os.chmod(self.state, 0o755)
        try:
            self._up()
        except BaseException:
            self.down()
            raise
        self.timings["up"] = time.monotonic() - t0

    def _up(self):
        self.log("lab: finding the patched Squid (scripts/ensure-squid.sh; the first build takes minutes) ...")
        squid = ensure_squid()
        if self.time_scale != 1 and libfaketime() is None:
            raise LabError("--time-scale 10 needs libfaketime (Debian package libfaketime)")
        self._start_twin()
        self._namespaces()
        self._save()
        self._start_origin()
        self.start_firmware()
        for i in range(self.ncaches):
            self._cache_side(i)
            self.start_squid(i, squid)
        self._save()

    def _start_twin(self):
        from wccptool import twin
        if self.fpga == "rtl":
            self.log("lab: building/finding the RTL twin (Verilator; cached after the first build) ...")
            twin.build("verilator", log=lambda *_: None)
        self.log("lab: starting the twin (%s) ..." % ("RTL fpga_core on Verilator" if self.fpga == "rtl" else
                                                       "fast model"))
        self.twin = twin.start(fpga="rtl" if self.fpga == "rtl" else "model", spi=str(self.state / "spi.sock"),
                               frames=str(self.state / "frames.sock"), taps=self.taps,
                               log_file=str(self.state / "twin.log"))

    def _namespaces(self):
        for ns in self.ns.values():
            run(["ip", "netns", "add", ns])
            run(["ip", "-n", ns, "link", "set", "lo", "up"])
        cl, sw = self.ns["client"], self.ns["switch"]
        # client: TAP of port 0
        run(["ip", "link", "set", "dev", self.taps[0], "netns", cl])
        run(["ip", "-n", cl, "link", "set", "dev", self.taps[0], "mtu", str(CLIENT_MTU), "up"])
        for a in self.clients:
            run(["ip", "-n", cl, "addr", "add", a + "/24", "dev", self.taps[0]])
        # upstream: a bridge holding port 1's TAP and a veth per host
        run(["ip", "-n", sw, "link", "add", "br0", "type", "bridge", "stp_state", "0", "forward_delay", "0"])
        run(["ip", "link", "set", "dev", self.taps[1], "netns", sw])
        run(["ip", "-n", sw, "link", "set", self.taps[1], "master", "br0", "up"])
        hosts = [("org", self.ns["origin"], ORIGIN), ("fw", self.ns["firmware"], ROUTER)]
        hosts += [("c%d" % (i + 1), self.cache_ns(i), a) for i, a in enumerate(self.caches)]
        for tag, ns, addr in hosts:
            run(["ip", "-n", sw, "link", "add", "v-" + tag, "type", "veth", "peer", "name", "eth0", "netns", ns])
            run(["ip", "-n", sw, "link", "set", "v-" + tag, "master", "br0", "up"])
            run(["ip", "-n", ns, "addr", "add", addr + "/24", "dev", "eth0"])
            run(["ip", "-n", ns, "link", "set", "eth0", "mtu", str(CACHE_MTU), "up"])
        run(["ip", "-n", sw, "link", "set", "br0", "up"])

    def _spawn(self, name, ns, argv, env=None, cwd=None, log=None):
        p = Proc(name, nsx(ns, argv), log or (self.state / (name + ".log")), env=env, cwd=cwd)
        self.procs[name] = p
        self._save()
        return p

    def _start_origin(self):
        www = self.state / "www"
        www.mkdir()
        self.content = origin_content()
        for path, data in self.content.items():
            (www / path.lstrip("/")).write_bytes(data)
        for port in (80, 8080):
            self._spawn("origin%d" % port, self.ns["origin"],
                        [sys.executable, "-m", "wccptool.lab", "origin", "--port", str(port), "--bind", ORIGIN,
                         "--dir", str(www)])
        for port in (80, 8080):
            in_netns(self.ns["client"], wait_until, lambda p=port: _tcp_open(ORIGIN, p), 20,
                     "the origin on %s:%d" % (ORIGIN, port))

    # -- firmware
    def start_firmware(self):
        from wccptool import launch
        fwdir = self.state / "firmware"
        fwdir.mkdir(exist_ok=True)
        cfg = fwdir / "config.json"
        cfg.write_text(json.dumps(firmware_config(self.service, self.caches, self.here_i_am_ms), indent=1))
        cmd = launch.firmware_command(str(cfg), None, None, HTTP_PORT, str(fwdir), "fpga",
                                      extra_args=["--fpga-socket", str(self.state / "spi.sock")])
        self._spawn("firmware", self.ns["firmware"], cmd, cwd=str(ROOT), log=fwdir / "firmware.log")
        wait_until(lambda: self.status(timeout=2), 60, "the firmware's /status on %s:%d" % (ROUTER, HTTP_PORT))
        self.log("lab: firmware up in %s (%s, WCCP UDP 2048)" % (self.ns["firmware"], ROUTER))

    def kill_firmware(self, sig=signal.SIGKILL):
        self.procs["firmware"].kill(sig)

    def status(self, timeout=5):
        from wccptool.cmd_show import fetch
        return in_netns(self.ns["firmware"], fetch, ROUTER, HTTP_PORT, timeout)

    def group(self, st=None):
        st = st or self.status()
        sid = 0 if SERVICES[self.service]["dynamic"] is None else SERVICE_ID
        for g in st["groups"]:
            if g["service_id"] == sid:
                return g
        raise LabError("service %d not in /status" % sid)

    # -- caches
    def _cache_side(self, i):
        ns, addr = self.cache_ns(i), self.caches[i]
        fwd = SERVICES[self.service]["forwarding"]
        gre = None
        if fwd == "gre":
            if self.gre_choice == "auto":
                gre = "ip_gre" if kernel_has_gre(ns) else "decap"
            else:
                gre = self.gre_choice
                if gre == "ip_gre" and not kernel_has_gre(ns):
                    raise LabError("--gre ip_gre: this kernel has no GRE tunnels (`ip link add ... type gre` "
                                   "fails); use --gre decap (or auto)")
            self.gre = gre
            if gre == "decap":
                run(nsx(ns, ["ip", "tuntap", "add", "dev", "wccp0", "mode", "tun"]))
                self._spawn("decap%d" % (i + 1), ns, [sys.executable] + decap_command(addr, ROUTER)[1:])
        for argv in cache_setup_commands(addr, ROUTER, fwd, gre=gre or "ip_gre"):
            if argv[:3] == ["ip", "tuntap", "add"]:
                continue                         # made above, before the decapsulator attached
            run(nsx(ns, argv))

    def start_squid(self, i, exe=None):
        exe = exe or ensure_squid()
        d = self.cache_dir(i)
        d.mkdir(parents=True, exist_ok=True)
        os.chmod(d, 0o777)
        for name in ("access.log", "cache.log"):
            p = d / name
            p.touch()
            os.chmod(p, 0o666)
        name = self.cache_name(i)
        (d / "squid.conf").write_text(squid_conf(d, self.caches[i], ROUTER, self.service, name))
        env = dict(os.environ)
        if self.time_scale != 1:
            env.update({"LD_PRELOAD": libfaketime(), "FAKETIME": "+0 x%d" % self.time_scale,
                        "FAKETIME_DONT_RESET": "1"})
        self._spawn("squid%d" % (i + 1), self.cache_ns(i), [exe, "-N", "-n", name, "-f", str(d / "squid.conf")],
                    env=env, cwd=str(d))
        self.log("lab: Squid %d started in %s (%s)" % (i + 1, self.cache_ns(i), self.caches[i]))

    def cache_name(self, i):
        """Squid's service name and visible_hostname (its Via and X-Cache headers name it)."""
        return "wccplab%s%d" % (self.prefix.replace("-", ""), i + 1)

    def served_by(self, headers):
        """Index of the cache whose Via header is on a response, None when none is."""
        via = headers.get("via", "")
        for i in range(self.ncaches):
            if (" %s " % self.cache_name(i)) in via + " ":
                return i
        return None

    def kill_squid(self, i, sig=signal.SIGKILL):
        p = self.procs.get("squid%d" % (i + 1))
        if p is not None:
            p.kill(sig)
            _clean_shm(p.pid, self.cache_name(i))

    def access_log(self, i):
        try:
            return parse_access_log((self.cache_dir(i) / "access.log").read_text(errors="replace"))
        except OSError:
            return []

    def wait_assigned(self, n=None, timeout=None):
        """Until the group has n usable caches (default: all) and an assignment naming them all."""
        n = self.ncaches if n is None else n
        timeout = timeout or (6 * self.here_i_am_ms / 1000.0 + 20)

        def ok():
            g = self.group()
            usable = [c for c in g["caches"] if c["state"] == "usable"]
            a = g.get("assignment")
            return len(usable) == n and a is not None and len(a["caches"]) == n and g
        t0 = time.monotonic()
        g = wait_until(ok, timeout, "%d usable cache(s) and an assignment" % n, step=0.2)
        self.timings["assigned"] = time.monotonic() - t0
        return g

    # -- clients
    def get(self, host=ORIGIN, path="/index.html", port=80, source=None, timeout=5.0, method="GET", body=None):
        """An HTTP request from the client namespace (source: one of self.clients)."""
        return in_netns(self.ns["client"], http_get, host, path, port, source, timeout, method, body)

    def spawn_in(self, role, name, argv):
        """A helper process of a test (e.g. a server in the client namespace); stopped by down()."""
        return self._spawn(name, self.ns[role], argv)

    # -- teardown
    def down(self):
        if not self.made:                 # never brought up (e.g. refused): nothing of ours to remove
            return
        for name in list(self.procs):
            p = self.procs.pop(name)
            p.kill()
            if name.startswith("squid"):
                _clean_shm(p.pid, self.cache_name(int(name[5:]) - 1))
        if self.twin is not None:
            self.twin.stop()
            self.twin = None
        for ns in self.ns.values():
            run(["ip", "netns", "del", ns], check=False)
        for t in self.taps.values():
            run(["ip", "link", "del", t], check=False)
        try:
            (self.state / "lab.json").unlink()
        except OSError:
            pass
        self.made = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.down()

    # -- banner
    def banner(self):
        fw = self.ns["firmware"]
        mode = "RTL fpga_core on Verilator" if self.fpga == "rtl" else "fast model (register map + reference model)"
        gre = {"ip_gre": "the kernel's ip_gre tunnel",
               "decap": "the lab's decapsulator (no ip_gre in this kernel): raw GRE socket -> TUN wccp0"}
        lines = [
            "WCCPv2 inline lab up: namespaces and processes in %.0f s, caches assigned %.0f s later (%s)"
            % (self.timings.get("up", 0), self.timings.get("assigned", 0), SERVICES[self.service]["help"]),
            "  appliance   firmware in %s at %s (WCCP UDP 2048, /status :%d), FPGA twin: %s"
            % (fw, ROUTER, HTTP_PORT, mode),
            "  client      %s: %s (+%d more client addresses), FPGA port 0, MTU %d"
            % (self.ns["client"], CLIENT, len(self.clients) - 1, CLIENT_MTU),
            "  origin      %s: http://%s/ (and :8080, not redirected), behind FPGA port 1" % (self.ns["origin"], ORIGIN),
        ]
        for i, a in enumerate(self.caches):
            lines.append("  cache %d     %s: Squid at %s, logs %s" % (i + 1, self.cache_ns(i), a, self.cache_dir(i)))
        if self.gre:
            lines.append("  GRE         " + gre[self.gre])
        lines += [
            "Try:",
            "  ip netns exec %s curl -v http://%s/index.html        # Via / X-Cache: served by Squid"
            % (self.ns["client"], ORIGIN),
            "  ip netns exec %s curl -s --interface 10.62.0.%d http://%s/ -o /dev/null  # another client"
            % (self.ns["client"], FIRST_EXTRA_CLIENT, ORIGIN),
            "  ip netns exec %s %s show --host %s --port %d --detail" % (fw, _wccp_exe(), ROUTER, HTTP_PORT),
            "  tail -f %s/access.log" % self.cache_dir(0),
            "Stop: Ctrl-C here, or `wccp lab --down --prefix %s` from another shell" % self.prefix,
        ]
        return "\n".join(lines)


def _wccp_exe():
    """`wccp` as the user can run it inside a namespace (sudo's PATH may not hold the venv)."""
    exe = os.path.join(os.path.dirname(sys.executable), "wccp")
    return exe if os.access(exe, os.X_OK) else "wccp"


def _tcp_open(host, port):
    with socket.create_connection((host, port), timeout=1):
        return True


def _clean_shm(pid, service_name):
    """libfaketime leaves /dev/shm/faketime_* of a killed process; a killed Squid its <name>-*.shm."""
    try:
        names = os.listdir("/dev/shm")
    except OSError:
        return
    for n in names:
        if n.startswith(service_name + "-") or (pid and n in ("faketime_shm_%d" % pid, "sem.faketime_sem_%d" % pid)):
            try:
                os.unlink(os.path.join("/dev/shm", n))
            except OSError:
                pass


def down_from_state(state_dir, prefix, quiet=False, log=print):
    """`wccp lab --down`: kill the process groups recorded in <state>/lab.json and delete the
    namespaces and TAPs named after prefix. Returns what was removed."""
    state = pathlib.Path(state_dir)
    removed = []
    try:
        st = json.loads((state / "lab.json").read_text())
    except (OSError, ValueError):
        st = {}
    owner = st.get("owner")
    if owner and owner != os.getpid() and _alive(owner):
        os.kill(owner, signal.SIGTERM)           # `wccp lab` cleans up after itself
        deadline = time.monotonic() + 20
        while _alive(owner) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not _alive(owner):
            removed.append("the lab process %d" % owner)
    for name, pgid in (st.get("pgids") or {}).items():
        try:
            os.killpg(int(pgid), signal.SIGKILL)
            removed.append("process group %s (%s)" % (pgid, name))
        except (ProcessLookupError, PermissionError, ValueError):
            pass
    r = run(["ip", "netns", "list"], check=False)
    mine = {prefix + "-" + s for s in ("cl", "sw", "org", "fw")} | {"%s-c%d" % (prefix, i) for i in range(1, 9)}
    for line in r.stdout.splitlines():
        ns = line.split()[0] if line.split() else ""
        if ns in mine or ns in (st.get("namespaces") or []):
            _kill_ns_pids(ns)
            run(["ip", "netns", "del", ns], check=False)
            removed.append("namespace " + ns)
    for t in (prefix + "-t0", prefix + "-t1"):
        if run(["ip", "link", "del", t], check=False).returncode == 0:
            removed.append("interface " + t)
    try:
        (state / "lab.json").unlink()
    except OSError:
        pass
    if not quiet:
        log("lab: removed %s" % (", ".join(removed) if removed else "nothing (no lab with prefix %s)" % prefix))
    return removed


def running_owner(state_dir):
    """pid of the live `wccp lab` (or test) that owns the lab in state_dir, else None."""
    try:
        owner = json.loads((pathlib.Path(state_dir) / "lab.json").read_text()).get("owner")
    except (OSError, ValueError, AttributeError):
        return None
    return owner if owner and owner != os.getpid() and _alive(owner) else None


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:                                   # a zombie is not alive
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _kill_ns_pids(ns):
    r = run(["ip", "netns", "pids", ns], check=False)
    for pid in r.stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


# ---------------------------------------------------------------- the GRE decapsulator

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
GRE_PROTO_WCCP = 0x883E
GRE_PROTO_IPV4 = 0x0800


def gre_payload(pkt):
    """An IPv4 packet carrying GRE (protocol 47) -> the inner IPv4 packet, or None.

    GRE (RFC 2784/2890): flags+version word, protocol type; optional checksum+reserved (C),
    key (K), sequence number (S). Protocol 0x883E carries the 4-byte WCCP redirect header
    before the inner packet (WCCPv2 draft, 'Packet Forwarding: GRE'); 0x0800 carries the
    inner packet directly."""
    if len(pkt) < 20 or pkt[0] >> 4 != 4:
        return None
    ihl = (pkt[0] & 0x0F) * 4
    if pkt[9] != 47 or len(pkt) < ihl + 4:
        return None
    flags, proto = struct.unpack_from("!HH", pkt, ihl)
    if flags & 0x0007:                 # version must be 0
        return None
    o = ihl + 4
    if flags & 0x8000:
        o += 4
    if flags & 0x2000:
        o += 4
    if flags & 0x1000:
        o += 4
    if proto == GRE_PROTO_WCCP:
        o += 4
    elif proto != GRE_PROTO_IPV4:
        return None
    inner = pkt[o:]
    if len(inner) < 20 or inner[0] >> 4 != 4:
        return None
    return inner


def decap_main(argv):
    import argparse
    import fcntl
    ap = argparse.ArgumentParser(prog="python -m wccptool.lab decap",
                                 description="WCCP GRE decapsulator for kernels without ip_gre")
    ap.add_argument("--dev", default="wccp0", help="TUN device (created with `ip tuntap add dev wccp0 mode tun`)")
    ap.add_argument("--remote", required=True, help="the router ID: outer source of redirected packets")
    ap.add_argument("--local", default=None, help="this cache's address (outer destination); default: any")
    a = ap.parse_args(argv)
    tun = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(tun, TUNSETIFF, struct.pack("16sH", a.dev.encode(), IFF_TUN | IFF_NO_PI))
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, 47)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    remote = socket.inet_aton(a.remote)
    local = socket.inet_aton(a.local) if a.local else None
    counts = {"decapsulated": 0, "not_from_router": 0, "bad_gre": 0, "tun_errors": 0}
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print("decap: %s <- GRE from %s%s" % (a.dev, a.remote, " to %s" % a.local if a.local else ""), flush=True)
    try:
        while True:
            pkt = raw.recv(65535)
            if pkt[12:16] != remote or (local is not None and pkt[16:20] != local):
                counts["not_from_router"] += 1
                continue
            inner = gre_payload(pkt)
            if inner is None:
                counts["bad_gre"] += 1
                continue
            try:
                os.write(tun, inner)
                counts["decapsulated"] += 1
            except OSError:
                counts["tun_errors"] += 1
    finally:
        print("decap: %s" % json.dumps(counts), flush=True)


# ---------------------------------------------------------------- the origin web server

def origin_main(argv):
    """http.server's file server, plus POST: answers the SHA-256 and length of the body it read
    (uploads through the redirect are checked byte for byte). Logs every request with the
    client address to stderr."""
    import argparse
    import functools
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    class Handler(SimpleHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            h = hashlib.sha256()
            left = n
            while left:
                chunk = self.rfile.read(min(left, 65536))
                if not chunk:
                    break
                h.update(chunk)
                left -= len(chunk)
            body = ("%s %d\n" % (h.hexdigest(), n - left)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, fmt, *args):
            sys.stderr.write("%s %s\n" % (self.client_address[0], fmt % args))
            sys.stderr.flush()

    ap = argparse.ArgumentParser(prog="python -m wccptool.lab origin")
    ap.add_argument("--port", type=int, default=80)
    ap.add_argument("--bind", default="0.0.0.0")
    ap.add_argument("--dir", required=True)
    a = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    srv = ThreadingHTTPServer((a.bind, a.port), functools.partial(Handler, directory=a.dir))
    srv.daemon_threads = True
    print("origin: http://%s:%d/ serving %s" % (a.bind, a.port, a.dir), file=sys.stderr, flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    cmds = {"decap": decap_main, "origin": origin_main}
    if len(sys.argv) > 1 and sys.argv[1] in cmds:
        cmds[sys.argv[1]](sys.argv[2:])
    else:
        print("usage: python -m wccptool.lab decap --dev wccp0 --remote ROUTER [--local CACHE]\n"
              "       python -m wccptool.lab origin --dir DIR [--port 80] [--bind ADDR]", file=sys.stderr)
        sys.exit(2)
