"""The cache side of the inline lab (wccptool.lab): the service set-ups, the Squid
configuration, the cache-side commands of docs/quickstart.md section 7 and the GRE
decapsulator for kernels without ip_gre.

Each cache is set up with `cache_setup_commands`: a GRE tunnel to the router ID — the kernel's
ip_gre where it exists, otherwise a TUN device fed by the decapsulator (`python -m
wccptool.lab decap`, run as `decap_main`: a raw IPPROTO_GRE socket that strips GRE and the
4-byte WCCP redirect header) — rp_filter off, and an iptables REDIRECT of TCP port 80 to
Squid's intercept port. L2 forwarding needs only the REDIRECT rule on the cache's Ethernet
interface.
"""
import json
import os
import signal
import socket
import struct
import subprocess
import sys

from wccptool.labnet import ROOT, LabError, run

INTERCEPT_PORT = 3129
SERVICE_ID = 80                  # the dynamic service of the src-hash and mask-l2 set-ups
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
    """squid.conf for a cache at `address` (logs, pid file and core dumps in workdir), joining
    `router` with the WCCP service of set-up `setup` (a SERVICES key) and intercepting on
    INTERCEPT_PORT; service_name is its -n name and visible_hostname."""
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
    """Path of libfaketime (Squid's clock runs faster under it at --time-scale 10), or None."""
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


def clean_shm(pid, service_name):
    """Remove what killed processes leave in /dev/shm: libfaketime (preloaded without its
    wrapper) creates faketime_shm_<pid> and sem.faketime_sem_<pid> and never removes them; a
    killed Squid leaves <service_name>-*.shm. Used by the lab and the Squid test fixture."""
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
    """`python -m wccptool.lab decap`: read GRE from the router off a raw socket, write the
    inner packets to the TUN device; prints its drop counts when stopped (SIGTERM)."""
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
