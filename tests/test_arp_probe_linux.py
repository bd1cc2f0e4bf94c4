"""What active discovery (wccp.discovery) relies on, checked against the real Linux kernel:
a host answers the appliance's ARP probe (RFC 5227: sender IP 0.0.0.0) for one of its
addresses with a unicast ARP reply to the probe's sender MAC, its own MAC as sender hardware
address and Ethernet source, and learns nothing from the probe (its neighbour table stays
empty: no peer's ARP cache is poisoned). Also for a 127/8 address on an interface with
route_localnet (how the twin tests give a cache's loopback WCCP address a data-plane side).

Two network namespaces made by the test (prefix wdl-), one veth pair; the probe is the exact
frame wccp.discovery builds, sent and received on an AF_PACKET socket.
"""
import subprocess
import sys

import pytest
from twin_helpers import require_root

from wccp.discovery import Discovery

NS = ("wdl-a", "wdl-b")
VETH = ("wdl-va", "wdl-vb")
PROBER_MAC = "02:00:00:00:66:01"
HOST_MAC = "02:00:00:00:66:02"

# In the prober's namespace: send the frame given in hex, print the first ARP reply (hex).
PROBE = r"""
import socket, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0806))
s.bind((sys.argv[1], 0))
s.settimeout(0.2)
s.send(bytes.fromhex(sys.argv[2]))
end = time.time() + 3
while time.time() < end:
    try:
        d = s.recv(2000)
    except socket.timeout:
        continue
    if d[20:22] == b"\x00\x02":
        print(d[:42].hex())
        break
"""


def _ip(*args):
    subprocess.run(["ip"] + list(args), check=True, capture_output=True)


@pytest.fixture
def pair():
    require_root()
    for ns in NS:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        _ip("netns", "add", ns)
    try:
        _ip("link", "add", VETH[0], "type", "veth", "peer", "name", VETH[1])
        for ns, dev, m in zip(NS, VETH, (PROBER_MAC, HOST_MAC), strict=True):
            _ip("link", "set", dev, "netns", ns)
            _ip("-n", ns, "link", "set", dev, "address", m)
            _ip("-n", ns, "link", "set", dev, "up")
        _ip("-n", NS[1], "addr", "add", "10.66.0.5/24", "dev", VETH[1])
        _ip("-n", NS[1], "addr", "add", "127.66.0.6/32", "dev", VETH[1])
        subprocess.run(["ip", "netns", "exec", NS[1], "sysctl", "-qw",
                        "net.ipv4.conf.%s.route_localnet=1" % VETH[1]], check=True)
        yield
    finally:
        for ns in NS:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


class _Capture:
    """Stands in for the data plane: keeps the frame Discovery sends."""

    def __init__(self):
        self.frames = []

    def send_frame(self, ports, frame):
        self.frames.append(bytes(frame))

    def arp_replies(self, since):
        return since, []


def _mac(s):
    return bytes(int(x, 16) for x in s.split(":"))


@pytest.mark.parametrize("target", ["10.66.0.5", "127.66.0.6"])
def test_linux_answers_the_discovery_probe_unicast(pair, target):
    cap = _Capture()
    a = int.from_bytes(bytes(int(x) for x in target.split(".")), "big")
    Discovery(cap, _mac(PROBER_MAC)).run(0, {a})
    probe = cap.frames[0]
    r = None
    for _ in range(3):      # the veth may still be coming up (DAD, carrier)
        r = subprocess.run(["ip", "netns", "exec", NS[0], sys.executable, "-c", PROBE, VETH[0], probe.hex()],
                           capture_output=True, text=True, timeout=30)
        if r.stdout.strip():
            break
    assert r.returncode == 0, r.stderr
    reply = bytes.fromhex(r.stdout.strip())
    assert reply[0:6] == _mac(PROBER_MAC)                 # unicast to the probe's sender MAC
    assert reply[6:12] == _mac(HOST_MAC)                  # from the host's own MAC
    assert reply[12:22] == bytes.fromhex("08060001080006040002")     # ARP reply, Ethernet/IPv4
    assert reply[22:28] == _mac(HOST_MAC) and reply[28:32] == a.to_bytes(4, "big")
    assert reply[32:38] == _mac(PROBER_MAC) and reply[38:42] == b"\x00" * 4
    neigh = subprocess.run(["ip", "-n", NS[1], "neigh", "show"], capture_output=True, text=True).stdout
    assert PROBER_MAC not in neigh.lower()                # the probe poisoned nothing
