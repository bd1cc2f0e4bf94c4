"""The twin's data plane without the firmware: the real driver (wccp.fpga.FpgaDataPlane) over
the SPI socket programs the twin (RTL fpga_core on Verilator, or the fast mode); frames
injected on the ports come out exactly as wccp.fwdmodel.ForwardingModel predicts; pcap
ports; TAP devices in network namespaces carry real Linux TCP through the simulated FPGA.

Addresses 127.61.1.x, ports 7101+.
"""
import random
import subprocess
import sys
import time

import pytest
from twin_helpers import (build_rtl, by_port, client_frames, ether, fpga_param, ip2int, ipv4, mac, predict,
                          require_root, tcp, udp)

from wccp import regmap as R
from wccp.dataplane import FWD_GRE, FWD_L2, RET_GRE, RET_L2
from wccp.fpga import FpgaDataPlane
from wccp.fwdmodel import ForwardingModel, with_fcs
from wccptool import twin
from wccptool.pcap import read_pcap, write_pcap

# Listed in conftest.py SPLIT_MODULES: pytest-xdist may run these tests on different
# workers at the same time, as every test has its own twin
# ports (_PORTS + 10 * test) and namespace prefix. Keep it so.

ROUTER = ip2int("10.61.0.1")
APPL_MAC = mac("02:61:00:00:00:aa")
GW_MAC = mac("02:61:00:00:00:fe")
CACHES = [("10.61.1.11", "02:61:01:00:00:11", FWD_GRE, RET_GRE), ("10.61.1.12", "02:61:01:00:00:12", FWD_L2, RET_L2),
          ("10.61.1.13", "02:61:01:00:00:13", FWD_GRE, RET_GRE)]
_PORTS = {"rtl": 7100, "model": 7150, "rtl-spi": 7200}


@pytest.fixture(scope="module", autouse=True)
def _rtl_built():
    build_rtl()


def _start(fpga, tmp_path, test, **kw):
    p = _PORTS[fpga] + 10 * test
    if fpga == "rtl-spi":               # SPI transactions clocked bit by bit into the SPI slave
        fpga, kw["bus"] = "rtl", "spi"
    return twin.start(fpga=fpga, spi="127.61.1.1:%d" % p, frames="127.61.1.1:%d" % (p + 1),
                      log_file=str(tmp_path / "twin.log"), **kw)


CACHE_LIST = [{"address": ip2int(a), "forward": f, "ret": r} for a, _m, f, r in CACHES]


def _group0(t, buckets):
    """Router, next hop and group 0 (TCP 80/8080, hash) on a target."""
    t.configure(ROUTER, APPL_MAC, 1500)
    t.set_next_hop(1, GW_MAC)
    t.set_group(0, {"service_type": 1, "service_id": 90, "priority": 200, "protocol": 6,
                    "service_flags": 0x2 | 0x10, "ports": [80, 8080]})
    t.set_caches(0, CACHE_LIST)
    t.set_hash(0, buckets)


def _program(targets, buckets, mask_sets):
    """The same DataPlane calls on every target (the twin's driver and the local model)."""
    for t in targets:
        _group0(t, buckets)
        t.set_group(1, {"service_type": 1, "service_id": 91, "priority": 100, "protocol": 17,
                        "service_flags": 0, "ports": []})
        t.set_caches(1, CACHE_LIST[1:])
        t.set_mask(1, mask_sets)
        t.commit()
        t.arm(10000)
        t.heartbeat()


def _truncate(frame):
    """frame (with FCS) with its IPv4 total length 100 bytes beyond the frame, FCS recomputed"""
    b = bytearray(frame[:-4])
    lt = 18 if b[12:14] == b"\x81\x00" else 14
    tl = (b[lt + 2] << 8 | b[lt + 3]) + 100
    b[lt + 2:lt + 4] = bytes([tl >> 8, tl & 255])
    return with_fcs(bytes(b))


@pytest.mark.parametrize("fpga", ["rtl", "rtl-spi", "model"])
def test_driver_programs_twin_and_frames_match_model(fpga, tmp_path):
    rng = random.Random(6101)
    buckets = bytes(rng.choice([0, 1, 2, 0xFF, 0x80 | 1]) for _ in range(256))
    mask_sets = [{"masks": (0, 0x3, 0, 0), "values": [(0, 0, 0, 0, 0), (0, 1, 0, 0, 1), (0, 2, 0, 0, 0)]}]
    tw = _start(fpga, tmp_path, 0)
    try:
        dp = FpgaDataPlane(tw.transport())
        ref = ForwardingModel()
        _program([dp, ref], buckets, mask_sets)
        # what the driver wrote is in the FPGA's registers (read back over the socket; group
        # and table registers are write-only: the tables show in the counters further down)
        t = tw.transport()
        assert t.read(R.ID, 1)[0] == R.ID_VALUE
        assert t.read(R.ROUTER_ID, 4) == [ROUTER, 0x0261, 0x000000AA, 1500]
        assert dp.status()["active"] and dp.status()["commits"] == 1
        t.close()

        fc = tw.frame_client()
        # caches announce themselves on port 1 (learning), clients send on port 0
        learn = [ether(GW_MAC, mac(m), ipv4(ip2int(a), ip2int("10.61.0.254"), 6, tcp(3128, 40000)))
                 for a, m, _f, _r in CACHES]
        batches = [(1, learn), (0, client_frames(rng, 60, APPL_MAC, GW_MAC))]
        # UDP for the mask group, a frame from a cache (excluded), GRE return from a cache
        udp_frames = [ether(GW_MAC, mac("02:61:03:00:00:01"),
                            ipv4(ip2int("10.61.3.%d" % i), ip2int("10.61.4.%d" % (i * 7)), 17, udp(5000 + i, 9000)))
                      for i in range(1, 12)]
        inner = ipv4(ip2int("10.61.4.4"), ip2int("10.61.2.9"), 6, tcp(80, 5555, b"reply"))
        gre_ret = ether(APPL_MAC, mac(CACHES[0][1]), ipv4(ip2int(CACHES[0][0]), ROUTER, 47,
                                                         b"\x00\x00\x88\x3e" + b"\x00\x00\x00\x00" + inner))
        from_cache = ether(GW_MAC, mac(CACHES[0][1]), ipv4(ip2int(CACHES[0][0]), ip2int("10.61.4.1"), 6, tcp(1, 80)))
        bad = [with_fcs(bytes(40))[:50], ether(GW_MAC, APPL_MAC, bytes(50))[:-1] + b"\x00"]
        # long client frames (cut through), and datagrams cut short by their frame's end: one
        # per kind of decision (redirected: dropped, counted `truncated`; else forwarded)
        long_frames = [ether(GW_MAC, mac("02:61:02:00:01:%02x" % i),
                             ipv4(ip2int("10.61.2.%d" % (100 + i)), rng.getrandbits(32), 6,
                                  tcp(41000 + i, (80, 443)[i % 2], b"y" * 900)))
                       for i in range(6)]
        cut_short = [_truncate(f) for f in client_frames(rng, 8, APPL_MAC, GW_MAC) + udp_frames[:4]]
        batches += [(0, udp_frames), (1, [gre_ret, from_cache]), (0, bad), (0, long_frames), (0, cut_short)]
        redirected = 0
        for port, frames in batches:
            want = predict(ref, port, frames)
            fc.send_many([(port, f) for f in frames])
            got = by_port(fc.barrier())
            assert got == want, "port %d batch of %d frames differs from the model" % (port, len(frames))
            redirected += sum(1 for o in want for f in want[o] if f[6:12] == APPL_MAC)
        c, rc = dp.counters(), ref.counters()
        for k in ("rx_frames", "tx_frames", "redirect_gre", "redirect_l2", "gre_return", "unassigned",
                  "from_cache", "rx_runt", "rx_bad_fcs", "slot_frames", "cache_frames", "bucket_hits",
                  "truncated", "not_redirectable", "learnt"):
            assert c[k] == rc[k], k
        assert rc["truncated"] > 0 and rc["not_redirectable"] > 0
        # raw per-(slot, cache) and per-(slot, bucket) registers: the assignment at work
        t = tw.transport()
        assert t.read(R.CACHECNT_BASE, 6)[0::2] == rc["cache_frames"][0][:3]
        assert t.read(R.BUCKETCNT_BASE, 256) == rc["bucket_hits"][0]
        assert sum(rc["bucket_hits"][0]) > 10
        t.close()
        assert c["redirect_gre"] > 5 and c["redirect_l2"] > 5 and c["gre_return"] == 1
        assert redirected >= 10
        fc.close()
    finally:
        tw.stop()


@pytest.mark.parametrize("fpga", ["rtl", "model"])
def test_redirect_list_and_closed_service_through_twin(fpga, tmp_path):
    """Group policies programmed by the driver: group 0 (TCP 80/8080) with a redirect-list
    (deny the clients 10.61.2.0/25, permit the rest of 10.61.0.0/16; anything else not
    permitted) redirects permitted traffic and leaves the rest to group 1, every TCP/UDP
    frame, closed, with a hash that assigns half the buckets: what group 1 cannot assign is
    dropped and counted closed_drop. Frames and counters as the model predicts."""
    rng = random.Random(6102)
    acl = [(False, ip2int("10.61.2.0"), 0xFFFFFF80, 0, 0), (True, ip2int("10.61.0.0"), 0xFFFF0000, 0, 0)]
    half = bytes(rng.choice([0, 1]) if b & 1 else 0xFF for b in range(256))
    buckets = bytes(rng.choice([0, 1, 2]) for _ in range(256))
    tw = _start(fpga, tmp_path, 4)
    try:
        dp = FpgaDataPlane(tw.transport())
        ref = ForwardingModel()
        for t in (dp, ref):
            _group0(t, buckets)
            t.set_policy(0, False, acl)
            t.set_group(1, {"service_type": 1, "service_id": 91, "priority": 100, "protocol": 0,
                            "service_flags": 0x1, "ports": []})
            t.set_caches(1, CACHE_LIST[:2])
            t.set_hash(1, half)
            t.set_policy(1, True, [])
            t.commit()
            t.arm(10000)
            t.heartbeat()
        fc = tw.frame_client()
        learn = [ether(GW_MAC, mac(m), ipv4(ip2int(a), ip2int("10.61.0.254"), 6, tcp(3128, 40000)))
                 for a, m, _f, _r in CACHES]
        outside = [ether(GW_MAC, mac("02:61:05:00:00:%02x" % i),
                         ipv4(ip2int("192.0.2.%d" % (i + 1)), rng.getrandbits(32), 6, tcp(40000 + i, 80)))
                   for i in range(20)]
        batches = [(1, learn), (0, client_frames(rng, 80, APPL_MAC, GW_MAC, dports=(80, 8080, 443))),
                   (0, outside)]
        for port, frames in batches:
            want = predict(ref, port, frames)
            fc.send_many([(port, f) for f in frames])
            got = by_port(fc.barrier())
            assert got == want, "port %d batch of %d frames differs from the model" % (port, len(frames))
        c, rc = dp.counters(), ref.counters()
        for k in ("rx_frames", "tx_frames", "redirect_gre", "redirect_l2", "unassigned", "closed_drop",
                  "slot_frames", "cache_frames", "bucket_hits", "not_redirectable"):
            assert c[k] == rc[k], (k, c[k], rc[k])
        # permitted clients redirected by group 0, the denied ones by group 1 or dropped there
        assert rc["cache_frames"][0][0] + rc["cache_frames"][0][1] + rc["cache_frames"][0][2] > 10
        assert sum(rc["cache_frames"][1]) > 5 and rc["closed_drop"] > 5
        assert c["rx_frames"][0] > c["tx_frames"][1] + 5 > 5     # the closed drops never leave
        fc.close()
    finally:
        tw.stop()


@fpga_param()
def test_pcap_ports_fail_open(fpga, tmp_path):
    """Frames from a pcap enter port 0 and leave port 1 unchanged (no tables: fail-open)."""
    rng = random.Random(6102)
    frames = [f[:-4] for f in client_frames(rng, 20, APPL_MAC, GW_MAC)]
    frames.append(bytes.fromhex("ffffffffffff026100000001" "0806") + bytes(28))     # ARP, 42 bytes
    pin = tmp_path / "in.pcap"
    write_pcap(str(pin), frames)
    pout = tmp_path / "out.pcap"
    tw = _start(fpga, tmp_path, 1, pcap_in={0: pin}, pcap_out={1: pout})
    try:
        deadline = time.monotonic() + 30
        got = []
        while time.monotonic() < deadline:
            try:
                got = [r.data for r in read_pcap(str(pout))]
            except Exception:  # noqa: BLE001 - file still being written
                got = []
            if len(got) >= len(frames):
                break
            time.sleep(0.1)
        want = [f + bytes(max(0, 60 - len(f))) for f in frames]
        assert got == want
        st = tw.frame_client().stats()
        assert st["rx_frames"] == [len(frames), 0] and st["tx_frames"] == [0, len(frames)]
        assert st["tx_bad_fcs"] == 0
    finally:
        tw.stop()


@fpga_param()
def test_bad_socket_input_is_refused_not_fatal(fpga, tmp_path):
    """Garbage on both sockets closes that connection; the twin keeps serving."""
    import socket
    import struct
    tw = _start(fpga, tmp_path, 2)
    try:
        for addr, n in ((tw.spi, 0x7FFFFFFF), (tw.frames, 0x7FFFFFFF), (tw.spi, 2049), (tw.frames, 0)):
            h, p = addr.split(":")
            s = socket.create_connection((h, int(p)), timeout=10)
            s.sendall(struct.pack(">I", n) + b"junk")
            assert s.recv(10) == b""            # closed by the twin
            s.close()
        t = tw.transport()
        assert t.read(R.ID, 1) == [R.ID_VALUE]
        assert t._xfer(b"\x03\x00") == bytes(2)       # a transaction too short to mean anything
        t.write(0xFFFF00, [1, 2, 3])               # unmapped: ignored
        assert t.read(0xFFFF00, 3) == [0, 0, 0]
        fc = tw.frame_client()
        fc.send(0, b"\x09" * 70)                # a frame too short / bad FCS: dropped and counted
        fc._msg(bytes([0x77]))                  # unknown message kind: counted
        fc.send(0, b"\x05" * 3000)              # longer than any frame: dropped and counted
        f = ether(GW_MAC, APPL_MAC, bytes(50))
        fc.send(0, f)
        assert fc.barrier() == [(1, f)]
        dp = FpgaDataPlane(tw.transport())
        c = dp.counters()
        assert c["rx_bad_fcs"][0] + c["rx_oversize"][0] == 2 and c["rx_frames"] == [3, 0]
        assert fc.stats()["bad_input"] >= 5
    finally:
        tw.stop()


@fpga_param()
def test_tap_namespaces_real_tcp_through_twin(fpga, tmp_path):
    """Two network namespaces on TAP ports: a TCP exchange crosses the simulated FPGA."""
    require_root()
    from wccptool.twin.netns import Topology
    topo = Topology(prefix="wt%s" % fpga[0])
    tw = _start(fpga, tmp_path, 3, netns=topo)
    try:
        srv = subprocess.Popen(topo.cmd(1, [sys.executable, "-c",
                                            "import socket\ns=socket.socket();s.bind(('0.0.0.0',8000));s.listen(1)\n"
                                            "c,a=s.accept();d=c.recv(100);c.sendall(d.upper());c.close()"]))
        try:
            r = None
            for _ in range(20):
                r = topo.run(0, [sys.executable, "-c",
                                 "import socket\nc=socket.create_connection(('%s',8000),timeout=10)\n"
                                 "c.sendall(b'through the twin');print(c.recv(100).decode())" % topo.address(1)])
                if r.returncode == 0:
                    break
                time.sleep(0.2)            # server not listening yet
            assert r.returncode == 0, r.stderr
            assert r.stdout.strip() == "THROUGH THE TWIN"
        finally:
            srv.kill()
            srv.wait(5)
        st = tw.frame_client().stats()
        assert st["rx_frames"][0] >= 3 and st["rx_frames"][1] >= 3      # ARP + TCP both ways
        assert st["tx_bad_fcs"] == 0
    finally:
        tw.stop()
    assert topo.namespaces[0] not in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                                    text=True).stdout


def test_icarus_selectable(tmp_path):
    """The same twin on Icarus (slow: functional check only): ID over the socket, a frame
    passes, bit-level SPI too."""
    tw = twin.start(fpga="rtl", sim="icarus", bus="spi", spi="127.61.1.1:7290", frames="127.61.1.1:7291",
                    log_file=str(tmp_path / "twin.log"))
    try:
        t = tw.transport()
        assert t.read(R.ID, 2) == [R.ID_VALUE, R.REGMAP_VERSION]
        fc = tw.frame_client()
        f = ether(GW_MAC, APPL_MAC, bytes(46))
        fc.send(1, f)
        assert fc.barrier() == [(0, f)]
        assert t.read(R.PORTCNT_BASE + R.CNT_RX_FRAMES, 1) == [0]
        assert t.read(R.PORTCNT_BASE + R.PORTCNT_STRIDE + R.CNT_RX_FRAMES, 1) == [1]
    finally:
        tw.stop()
