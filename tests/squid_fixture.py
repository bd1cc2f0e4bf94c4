"""Real Squid processes, loopback capture and tshark checks for tests/test_squid_interop.py.

* ``squid_bins`` (session fixture): runs scripts/ensure-squid.sh once (builds the patched Squid
  and unpacks Debian's unpatched one when the cache is empty). With CI=true a failure fails.
* ``Squid``: one Squid daemon (``-N`` foreground, own process group, own temp dir) with
  libfaketime preloaded so its hard-coded WCCP timers run ``SPEED`` times faster.
* ``Capture``: dumpcap on ``lo`` with a BPF filter, writes classic pcap; ``udp_packets()``
  parses it; ``tshark_problems()`` lists every expert warning/error tshark reports.
Every process started here is killed by its process group (``stop()``; ``kill_all()`` at exit).
"""
import atexit
import fcntl
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest
from wccptool.labcache import clean_shm
from wccptool.pcap import extract_udp, read_pcap

ROOT = pathlib.Path(__file__).resolve().parents[1]
ENSURE = ROOT / "scripts" / "ensure-squid.sh"
SPEED = 10                       # libfaketime rate: Squid's 10 s HERE_I_AM interval -> 1 s
LIBFAKETIME_CANDIDATES = (
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/faketime/libfaketime.so.1",
)
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

_live = []      # Popen objects still to be killed


def _unavailable(msg):
    if IN_CI:
        pytest.fail(msg, pytrace=False)
    pytest.skip(msg)


def libfaketime():
    for p in LIBFAKETIME_CANDIDATES:
        if os.path.exists(p):
            return p
    r = subprocess.run(["dpkg", "-L", "libfaketime"], capture_output=True, text=True)
    for line in r.stdout.splitlines():
        if line.endswith("/libfaketime.so.1"):
            return line
    return None


@pytest.fixture(scope="session")
def squid_bins():
    """{"patched": <squid binary>, "debian": <squid binary>, "debian_root": dir}."""
    for tool in ("dumpcap", "tshark"):
        if shutil.which(tool) is None:
            _unavailable("%s not installed (scripts/setup-system.sh installs it)" % tool)
    if libfaketime() is None:
        _unavailable("libfaketime not installed (Debian package libfaketime)")
    if os.geteuid() != 0:
        _unavailable("the Squid interop tests capture on lo and need root")
    t0 = time.monotonic()
    r = subprocess.run([str(ENSURE)], capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        _unavailable("scripts/ensure-squid.sh failed (rc %d):\n%s" % (r.returncode, r.stderr[-4000:]))
    dirs = dict(line.split("=", 1) for line in r.stdout.split() if "=" in line)
    out = {"patched": os.path.join(dirs["patched"], "sbin", "squid"),
           "patched_root": dirs["patched"],
           "debian": os.path.join(dirs["debian"], "usr", "sbin", "squid"),
           "debian_root": dirs["debian"],
           "ensure_seconds": time.monotonic() - t0}
    for k in ("patched", "debian"):
        if not os.access(out[k], os.X_OK):
            _unavailable("%s Squid missing at %s" % (k, out[k]))
    return out


def kill_group(proc, sig=signal.SIGKILL):
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def kill_all():
    while _live:
        kill_group(_live.pop())


atexit.register(kill_all)


def _spawn(argv, **kw):
    p = subprocess.Popen(argv, start_new_session=True, **kw)
    _live.append(p)
    return p


def _forget(p):
    if p in _live:
        _live.remove(p)


class Squid:
    """One Squid instance speaking WCCPv2 from ``address`` to ``routers``.

    service: "standard" (service 0) or a dynamic service id (int).
    """

    def __init__(self, bins, kind, workdir, address, routers, service="standard", assignment="hash",
                 forwarding="gre", returning="gre", password=None, weight=None, ports=(80,)):
        self.bins = bins
        self.kind = kind
        self.dir = pathlib.Path(workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o777)
        self.address = address
        self.routers = list(routers)
        self.proc = None
        lines = [
            "http_port %s:3128" % address,
            "pid_filename %s/squid.pid" % self.dir,
            "cache_log %s/cache.log" % self.dir,
            "access_log none",
            "cache_store_log none",
            "cache_effective_user nobody",
            "coredump_dir %s" % self.dir,
            "cache_mem 4 MB",
            "pinger_enable off",
            "logfile_rotate 0",
            "shutdown_lifetime 0 seconds",
            "debug_options ALL,1 80,6",           # section 80 = WCCP
            "wccp2_address %s" % address,
            "wccp2_rebuild_wait off",
            "wccp2_forwarding_method %s" % forwarding,
            "wccp2_return_method %s" % returning,
            "wccp2_assignment_method %s" % assignment,
        ]
        for r in self.routers:
            lines.append("wccp2_router %s" % r)
        pw = (" password=%s" % password) if password else ""
        if service == "standard":
            lines.append("wccp2_service standard 0%s" % pw)
        else:
            lines.append("wccp2_service dynamic %d%s" % (service, pw))
            lines.append("wccp2_service_info %d protocol=tcp flags=dst_ip_hash priority=240 ports=%s"
                         % (service, ",".join(str(p) for p in ports)))
        if weight is not None:
            lines.append("wccp2_weight %d" % weight)
        if kind == "debian":
            root = bins["debian_root"]
            lines += ["unlinkd_program %s/usr/lib/squid/unlinkd" % root,
                      "icon_directory %s/usr/share/squid/icons" % root,
                      "error_directory %s/usr/share/squid/errors/en" % root,
                      "mime_table %s/usr/share/squid/mime.conf" % root]
        # own service name: Squid's shared memory segments (/dev/shm/<name>-cf__*.shm) stay apart
        self.service_name = "wccpinterop" + "".join("%03d" % int(x) for x in address.split("."))
        self.conf = self.dir / "squid.conf"
        self.conf.write_text("\n".join(lines) + "\n")

    def start(self):
        env = dict(os.environ)
        env["LD_PRELOAD"] = libfaketime()
        env["FAKETIME"] = "+0 x%d" % SPEED
        env["FAKETIME_DONT_RESET"] = "1"
        if self.kind == "debian":
            env["LD_LIBRARY_PATH"] = os.path.join(self.bins["debian_root"], "lib")
        self.out = open(self.dir / "stdout.log", "wb")
        self.proc = _spawn([self.bins[self.kind], "-N", "-n", self.service_name, "-f", str(self.conf)], env=env,
                           stdout=self.out, stderr=subprocess.STDOUT, cwd=str(self.dir))
        return self

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        """SIGTERM (Squid exits within ~0.2 s with shutdown_lifetime 0), SIGKILL if it hangs;
        then remove what the killed processes leave in /dev/shm."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=3)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        kill_group(self.proc)
        _forget(self.proc)
        if self.proc is not None:
            clean_shm(self.proc.pid, self.service_name)
        if getattr(self, "out", None):
            self.out.close()
            self.out = None

    def log(self):
        text = ""
        for name in ("cache.log", "stdout.log"):
            p = self.dir / name
            if p.exists():
                text += p.read_text(errors="replace")
        return text


class Capture:
    """dumpcap on lo with a capture filter; classic pcap output."""

    def __init__(self, path, bpf, lock=None):
        self.path = pathlib.Path(path)
        self.bpf = bpf
        self.proc = None
        self.lock_name = lock
        self.lock = None

    def _acquire(self, timeout=600):
        """Exclusive per-subnet lock (another pytest session may run the same scenario)."""
        self.lock = open(os.path.join(tempfile.gettempdir(), "wccp-squid-interop-%s.lock" % self.lock_name), "w")
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("subnet %s busy for %d s (another test session?)"
                                       % (self.lock_name, timeout)) from None
                time.sleep(0.2)

    def start(self, probe_addr=None):
        if self.lock_name:
            self._acquire()
        self.err = open(str(self.path) + ".stderr", "wb")
        self.proc = _spawn(["dumpcap", "-q", "-P", "-i", "lo", "-f", self.bpf, "-w", str(self.path)],
                           stdout=subprocess.DEVNULL, stderr=self.err)
        # dumpcap writes the pcap header once the filter is installed; then make sure it really
        # sees traffic by sending marker datagrams until one shows up (never to port 2048).
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("dumpcap exited: %s" % pathlib.Path(str(self.path) + ".stderr").read_text())
            if self.path.exists() and self.path.stat().st_size >= 24:
                break
            time.sleep(0.02)
        else:
            raise RuntimeError("dumpcap did not start")
        if probe_addr:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                while time.monotonic() < deadline:
                    s.sendto(b"capture-probe", (probe_addr, 9))
                    time.sleep(0.05)
                    if any(p["payload"] == b"capture-probe" for p in self.udp_packets(sync=False)):
                        break
            finally:
                s.close()
        return self

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            time.sleep(0.2)                   # let the kernel hand over the last packets
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                kill_group(self.proc)
        _forget(self.proc)
        if getattr(self, "err", None):
            self.err.close()
            self.err = None
        if self.lock is not None:
            self.lock.close()                 # releases the flock
            self.lock = None

    def udp_packets(self, sync=True, port=None):
        """[{"t", "src", "sport", "dst", "dport", "payload"}] of IPv4/UDP frames so far."""
        if sync:
            time.sleep(0.1)
        return parse_pcap(self.path, port) if self.path.exists() else []

    def tshark_problems(self):
        return tshark_problems(self.path)


def parse_pcap(path, port=None):
    """The IPv4/UDP datagrams of a capture that dumpcap may still be writing (a record it has
    not finished is left for the next call)."""
    out = []
    for rec in read_pcap(str(path), partial_tail=True):
        udp = extract_udp(rec.linktype, rec.data)
        if udp is None or (port is not None and port not in (udp.sport, udp.dport)):
            continue
        out.append({"t": rec.ts, "src": udp.src, "dst": udp.dst, "sport": udp.sport, "dport": udp.dport,
                    "payload": bytes(udp.payload)})
    return out


# The one expert warning a conformant exchange still shows: a cache's first HERE_I_AMs carry
# Receive ID 0 (draft: "first contact"; Debian's unpatched Squid never gets further).
ALLOWED_CACHE_WARNINGS = ("Receive ID shouldn't be 0",)


def tshark_problems(path, allow_hia_receive_id_0=True):
    """Expert infos of severity warning/error, malformed frames and UDP 2048 frames not dissected
    as WCCP, as a list of strings (empty = clean). A HERE_I_AM's "Receive ID shouldn't be 0" is
    allowed (see ALLOWED_CACHE_WARNINGS) unless allow_hia_receive_id_0 is False."""
    probs = []
    r = subprocess.run(["tshark", "-n", "-r", str(path),
                        "-Y", "_ws.expert.severity >= 6291456 || _ws.malformed || (udp.port == 2048 && !wccp)",
                        "-T", "fields", "-E", "aggregator=|", "-E", "occurrence=a",
                        "-e", "frame.number", "-e", "ip.src", "-e", "wccp.message", "-e", "wccp",
                        "-e", "_ws.expert.message", "-e", "_ws.expert.severity", "-e", "_ws.malformed"],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        probs.append("tshark failed: " + r.stderr[-2000:])
    for line in r.stdout.splitlines():
        if not line.strip():
            continue
        cols = line.split("\t") + [""] * 7
        frame, src, mtype, wccp, msgs, sevs, malformed = cols[:7]
        if not wccp:
            probs.append("frame %s from %s: UDP 2048 not dissected as WCCP" % (frame, src))
        msgs, sevs = msgs.split("|"), sevs.split("|")
        for m, sv in zip(msgs, sevs, strict=False):
            try:
                sev = int(sv, 0)
            except ValueError:
                sev = 0x800000
            if sev < 0x600000:
                continue
            if (allow_hia_receive_id_0 and m in ALLOWED_CACHE_WARNINGS
                    and mtype in ("10", "0x0000000a", "0x0a")):
                continue
            probs.append("frame %s from %s (WCCP type %s): %s [severity 0x%x]" % (frame, src, mtype, m, sev))
        if malformed:
            probs.append("frame %s from %s: malformed" % (frame, src))
    return probs


def tshark_count(path, display_filter):
    r = subprocess.run(["tshark", "-n", "-r", str(path), "-Y", display_filter, "-T", "fields",
                        "-e", "frame.number"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return len(r.stdout.split())


def wait_for(pred, timeout, step=0.05, what="condition"):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.1f s waiting for %s" % (timeout, what))
        time.sleep(step)



_firmwares = []


def start_router(config, workdir):
    """The router firmware under the MicroPython unix port (wccptool.launch), serving /status on
    config["http"]; ``workdir`` is its state directory (pass it again to reboot with the same
    persisted boot counter). Stopped by the caller (``stop()``) or at exit."""
    from wccptool.launch import start_firmware
    cfg = dict(config)
    http = cfg.pop("http")
    fw = start_firmware(cfg, wccp_addr=None, http_addr=http["address"], http_port=http["port"],
                        state_dir=str(workdir), timeout=30)
    _firmwares.append(fw)
    return fw


def _stop_firmwares():
    while _firmwares:
        _firmwares.pop().stop()


atexit.register(_stop_firmwares)
