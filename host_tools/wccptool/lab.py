"""The inline lab: real clients, real Squid caches and the simulated appliance in network
namespaces (root only). Used by `wccp lab` (wccptool.cmd_lab) and tests/test_lab.py.

    lab = Lab(prefix="wlab", fpga="rtl", caches=1, service="web-cache")
    lab.up()                       # namespaces, twin, origin, firmware, Squids; prints progress
    lab.get(ORIGIN, "/index.html") # an HTTP request from the client namespace
    lab.access_log(0)              # Squid 1's access log, parsed
    lab.down()                     # every process and namespace it made

Topology (one IPv4 subnet: the appliance is a bump in the wire)::

    <p>-cl  client      10.62.0.10 (+ 10.62.0.100.. for many clients), MTU 1472 (1500 at cache_mtu 1528)
       │ TAP <p>-t0 = FPGA port 0
    [ twin: RTL fpga_core on Verilator, or the fast model ] ◄── SPI (UNIX socket) ── firmware
       │ TAP <p>-t1 = FPGA port 1                                                    │
    <p>-sw  bridge br0 ─┬─ <p>-org origin 10.62.0.1 (python http.server, port 80 and 8080)
                        ├─ <p>-fw  firmware 10.62.0.2 (router ID, WCCP UDP 2048, /status :8080)
                        └─ <p>-c1.. Squid caches 10.62.0.21.. (WCCPv2, interception)

Modules: wccptool.labnet (addresses, namespaces, processes), wccptool.labcache (service
set-ups, Squid, the cache-side commands of docs/quickstart.md section 7, the GRE
decapsulator), wccptool.laborigin (the origin web server); this module holds the Lab, its
state file (`wccp lab --down`) and the entry points `python -m wccptool.lab decap|origin`
that the lab runs inside its namespaces. Their public names are importable from here too.

MTU rule: a GRE-redirected packet grows by 28 bytes (outer IPv4 20, GRE 4, WCCP redirect
header 4). With the cache side at the default 1500 the client side runs an MTU of
1500 - 28 = 1472 (its TCP MSS then fits the tunnel); `cache_mtu=1528` (`wccp lab --cache-mtu
1528`) raises the caches' links and the appliance's `mtu` to 1528, and the client runs 1500.
"""
import json
import os
import pathlib
import shutil
import signal
import sys
import time

# the lab's public names are importable from here (tests, wccptool.cmd_lab)
from wccptool.labcache import (GRE_PROTO_IPV4, GRE_PROTO_WCCP, INTERCEPT_PORT, LIBFAKETIME,  # noqa: F401
                               SERVICE_ID, SERVICES, cache_setup_commands, clean_shm, decap_command,
                               decap_main, ensure_squid, gre_payload, kernel_has_gre, libfaketime,
                               parse_access_log, squid_conf)
from wccptool.labnet import (CACHE_MTU, CLIENT, CLIENT_MTU, FIRST_CACHE, FIRST_EXTRA_CLIENT,  # noqa: F401
                             GRE_OVERHEAD, HTTP_PORT, MAX_CACHE_MTU, ORIGIN, client_mtu, ROOT, ROUTER, SUBNET, LabError, Proc,
                             http_get, in_netns, kill_ns_pids, need_root, nsx, run, tcp_open, wait_until)
from wccptool.laborigin import BIG_SIZE, origin_content, origin_main, sha256  # noqa: F401
from wccptool.procgroup import pid_alive


def firmware_config(setup, caches, here_i_am_ms, mtu=CACHE_MTU):
    """The firmware's config for set-up `setup` (a SERVICES key): router ID ROUTER, /status on
    HTTP_PORT, one service; caches are the L2-adjacent cache addresses of L2 forwarding; mtu:
    the cache side's."""
    s = SERVICES[setup]
    svc = {"forwarding": [s["forwarding"]], "assignment": [s["assignment"]], "return": [s["forwarding"]]}
    if s["dynamic"] is None:
        svc.update({"id": 0, "type": "standard"})
    else:
        svc.update({"id": SERVICE_ID, "type": "dynamic"})
    if s["forwarding"] == "l2":
        svc["l2_adjacent"] = list(caches)       # addresses only: the appliance finds their MACs
    return {"router_id": ROUTER, "addresses": [ROUTER], "http": {"address": ROUTER, "port": HTTP_PORT},
            "mtu": mtu, "timers": {"here_i_am_ms": here_i_am_ms}, "services": [svc]}


# ---------------------------------------------------------------- the lab

class Lab:
    def __init__(self, prefix="wlab", fpga="rtl", caches=1, service="web-cache", clients=32, time_scale=1,
                 state_dir=None, gre="auto", cache_mtu=CACHE_MTU, log=print):
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
        if not CACHE_MTU <= cache_mtu <= MAX_CACHE_MTU:
            raise LabError("cache-side MTU %d..%d" % (CACHE_MTU, MAX_CACHE_MTU))
        if time_scale not in (1, 10):
            raise LabError("time scale 1 (real time) or 10 (Squid under libfaketime, 1 s HERE_I_AM)")
        self.prefix = prefix
        self.fpga = fpga
        self.ncaches = caches
        self.service = service
        self.nclients = clients
        self.time_scale = time_scale
        self.gre_choice = gre
        self.cache_mtu = cache_mtu
        self.client_mtu = client_mtu(cache_mtu)
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
        run(["ip", "-n", cl, "link", "set", "dev", self.taps[0], "mtu", str(self.client_mtu), "up"])
        for a in self.clients:
            run(["ip", "-n", cl, "addr", "add", a + "/24", "dev", self.taps[0]])
        # upstream: a bridge holding port 1's TAP and a veth per host
        run(["ip", "-n", sw, "link", "add", "br0", "type", "bridge", "stp_state", "0", "forward_delay", "0"])
        run(["ip", "link", "set", "dev", self.taps[1], "netns", sw])
        run(["ip", "-n", sw, "link", "set", self.taps[1], "mtu", str(self.cache_mtu), "master", "br0", "up"])
        hosts = [("org", self.ns["origin"], ORIGIN), ("fw", self.ns["firmware"], ROUTER)]
        hosts += [("c%d" % (i + 1), self.cache_ns(i), a) for i, a in enumerate(self.caches)]
        for tag, ns, addr in hosts:
            # the caches' links carry the cache side's MTU; the origin and the firmware keep 1500
            mtu = str(self.cache_mtu if tag.startswith("c") else CACHE_MTU)
            run(["ip", "-n", sw, "link", "add", "v-" + tag, "type", "veth", "peer", "name", "eth0", "netns", ns])
            run(["ip", "-n", sw, "link", "set", "v-" + tag, "mtu", mtu, "master", "br0", "up"])
            run(["ip", "-n", ns, "addr", "add", addr + "/24", "dev", "eth0"])
            run(["ip", "-n", ns, "link", "set", "eth0", "mtu", mtu, "up"])
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
            in_netns(self.ns["client"], wait_until, lambda p=port: tcp_open(ORIGIN, p), 20,
                     "the origin on %s:%d" % (ORIGIN, port))

    # -- firmware
    def start_firmware(self):
        from wccptool import launch
        fwdir = self.state / "firmware"
        fwdir.mkdir(exist_ok=True)
        cfg = fwdir / "config.json"
        cfg.write_text(json.dumps(firmware_config(self.service, self.caches, self.here_i_am_ms, self.cache_mtu),
                                  indent=1))
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
            clean_shm(p.pid, self.cache_name(i))

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
                clean_shm(p.pid, self.cache_name(int(name[5:]) - 1))
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
            % (self.ns["client"], CLIENT, len(self.clients) - 1, self.client_mtu),
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
    if owner and owner != os.getpid() and pid_alive(owner):
        os.kill(owner, signal.SIGTERM)           # `wccp lab` cleans up after itself
        deadline = time.monotonic() + 20
        while pid_alive(owner) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not pid_alive(owner):
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
            kill_ns_pids(ns)
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
    return owner if owner and owner != os.getpid() and pid_alive(owner) else None


if __name__ == "__main__":
    cmds = {"decap": decap_main, "origin": origin_main}
    if len(sys.argv) > 1 and sys.argv[1] in cmds:
        cmds[sys.argv[1]](sys.argv[2:])
    else:
        print("usage: python -m wccptool.lab decap --dev wccp0 --remote ROUTER [--local CACHE]\n"
              "       python -m wccptool.lab origin --dir DIR [--port 80] [--bind ADDR]", file=sys.stderr)
        sys.exit(2)
