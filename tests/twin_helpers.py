"""Shared helpers for tests/test_twin_*.py: frames, the RTL build, expected outputs."""
import os
import random
import struct

import pytest

from wccp.fwdmodel import with_fcs
from wccptool import twin

FPGAS = ["rtl", "model"]


def build_rtl():
    """Build (or find) the Verilator twin once; a failure fails the test (CI must run it).

    The build is shared by every module and pytest-xdist worker (build/twin/verilator, under a
    lock file, redone only when the RTL changes); its `make -j` gets this worker's share of the
    CPUs (fpga/tb/wccp_tb.build_jobs)."""
    import sys
    tb = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fpga", "tb")
    if tb not in sys.path:
        sys.path.insert(0, tb)
    import wccp_tb
    wccp_tb.limit_build_jobs()
    twin.build("verilator", log=lambda m: None)


def fpga_param():
    return pytest.mark.parametrize("fpga", FPGAS)


def ip2int(a):
    return struct.unpack(">I", bytes(int(x) for x in a.split(".")))[0]


def mac(s):
    return bytes.fromhex(s.replace(":", ""))


def _csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(">%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def ipv4(src, dst, proto, payload, ttl=64, ident=1):
    h = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), ident, 0, ttl, proto, 0,
                    struct.pack(">I", src), struct.pack(">I", dst))
    h = h[:10] + struct.pack(">H", _csum(h)) + h[12:]
    return h + payload


def tcp(sport, dport, data=b""):
    return struct.pack(">HHIIBBHHH", sport, dport, 1, 0, 0x50, 0x02, 65535, 0, 0) + data


def udp(sport, dport, data=b""):
    return struct.pack(">HHHH", sport, dport, 8 + len(data), 0) + data


def ether(dst, src, payload, ethertype=0x0800, vlan=None):
    h = bytes(dst) + bytes(src)
    if vlan is not None:
        h += struct.pack(">HH", 0x8100, vlan)
    f = h + struct.pack(">H", ethertype) + payload
    if len(f) < 60:
        f += bytes(60 - len(f))
    return with_fcs(f)


def predict(model, port, frames):
    """Outputs of `frames` (all received on `port`) in the model, grouped by output port."""
    out = {0: [], 1: []}
    for f in frames:
        for o, data in model.process(port, f):
            out[o].append(data)
    return out


def is_probe(frame):
    """An ARP probe of the appliance's active discovery (wccp.discovery): broadcast ARP request
    with sender IP 0.0.0.0. The firmware sends them on its own schedule, between test frames."""
    return frame[0:6] == b"\xff" * 6 and frame[12:22] == bytes.fromhex("08060001080006040001") \
        and frame[28:32] == b"\x00" * 4


def without_probes(received):
    """received ([(port, frame)]) without the discovery's ARP probes."""
    return [(p, f) for p, f in received if not is_probe(f)]


def by_port(received):
    out = {0: [], 1: []}
    for p, f in received:
        out[p].append(f)
    return out


def client_frames(rng, n, router_mac, gw_mac, dports=(80, 443, 8080, 53), vlan_every=5):
    """Client traffic on port 0 towards the gateway: TCP/UDP to random servers."""
    frames = []
    for i in range(n):
        src = ip2int("10.61.2.%d" % rng.randrange(1, 250))
        dst = rng.getrandbits(32)
        dport = rng.choice(dports)
        if dport == 53:
            pl = ipv4(src, dst, 17, udp(rng.randrange(1024, 65535), dport, b"q" * rng.randrange(0, 40)))
        else:
            pl = ipv4(src, dst, 6, tcp(rng.randrange(1024, 65535), dport, b"x" * rng.randrange(0, 200)))
        vlan = 61 if vlan_every and i % vlan_every == 0 else None
        frames.append(ether(gw_mac, mac("02:61:02:00:00:%02x" % (i % 250)), pl, vlan=vlan))
    return frames


def require_root():
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            raise AssertionError("network namespace tests need root (CI must run them)")
        pytest.skip("network namespaces need root")


RNG = random.Random(61)
