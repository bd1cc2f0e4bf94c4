"""The inline lab's plumbing (wccptool.lab): its addresses and MTUs, commands run on the host
or inside a network namespace, calls made from a thread inside a namespace, the processes the
lab starts (each a process group of its own) and waiting for things to come up.
"""
import ctypes
import os
import pathlib
import signal
import socket
import subprocess
import threading
import time

from wccp.dataplane import DEFAULT_MTU, MAX_MTU
from wccptool.procgroup import stop_group

ROOT = pathlib.Path(__file__).resolve().parents[2]
SUBNET = "10.62.0.0/24"
ORIGIN = "10.62.0.1"
ROUTER = "10.62.0.2"
CLIENT = "10.62.0.10"
FIRST_CACHE = 21
FIRST_EXTRA_CLIENT = 100
HTTP_PORT = 8080                 # firmware /status
GRE_OVERHEAD = 28                # outer IPv4 + GRE + WCCP redirect header
CACHE_MTU = DEFAULT_MTU          # the cache side's default MTU (Lab(cache_mtu=...): up to MAX_CACHE_MTU)
CLIENT_MTU = CACHE_MTU - GRE_OVERHEAD
MAX_CACHE_MTU = MAX_MTU          # the appliance's largest MTU


def client_mtu(cache_mtu):
    """The client side's MTU for a cache-side MTU: a GRE-redirected packet grows by 28 bytes, a
    client packet is at most an Ethernet MTU (1500 bytes)."""
    return min(DEFAULT_MTU, cache_mtu - GRE_OVERHEAD)


class LabError(RuntimeError):
    """What the lab could not do, said for the user (`wccp lab` prints it)."""


def need_root(what="wccp lab"):
    """LabError unless this process runs as root."""
    if os.geteuid() != 0:
        raise LabError("%s needs root: it creates network namespaces, TAP/veth/bridge devices and "
                       "iptables rules (run it with sudo, or as root in CI)" % what)


def run(argv, check=True, timeout=60, **kw):
    """Run argv, capturing its output; with check, LabError (with its stderr) when it fails."""
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


def kill_ns_pids(ns):
    """SIGKILL every process inside namespace ns."""
    r = run(["ip", "netns", "pids", ns], check=False)
    for pid in r.stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def tcp_open(host, port):
    """True when a TCP connection to host:port is accepted (raises OSError when not)."""
    with socket.create_connection((host, port), timeout=1):
        return True


def wait_until(pred, timeout, what, step=0.1):
    """Call pred every `step` seconds until it returns a true value (returned); LabError naming
    `what` (and pred's last exception) after `timeout` seconds."""
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
        """sig to the process group, SIGKILL after `wait` seconds; a group whose leader has
        already exited gets SIGKILL (children left behind)."""
        if not stop_group(self.popen, sig, wait):
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def tail(self, n=15):
        """The last n lines of the process's log."""
        try:
            lines = pathlib.Path(self.log).read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])
