"""The appliance finds its caches itself (active discovery), end to end in the twin.

The real firmware (MicroPython unix port, FpgaDataPlane over the twin's SPI socket) drives the
simulated FPGA (RTL fpga_core on Verilator, or the fast model). Two emulated caches
(wccptool.cachesim) join over loopback UDP, straight to the firmware, as caches beside the
gateway do: none of their frames ever crosses the appliance. Their data-plane side is a real
Linux host on FPGA port 1 (a network namespace on the twin's TAP that owns both cache
addresses) which does nothing but answer ARP, as the kernel does.

Checked: once WCCP has assigned the caches, the firmware's ARP probes leave on both ports, the
host's replies come back through port 1 (and are forwarded to port 0, not swallowed), the FPGA
captures them, and client HTTP frames on port 0 are redirected in GRE to both caches, with
no location learnt from a cache's own frame (the data plane's learn counter stays 0) and the
first probe answered (no retry). The measured time from the assignment (as /status shows it)
to the first redirected frame is printed (FIRST_REDIRECT_MS). Then one cache shuts down: the
survivor, now at index 0, gets every HTTP frame at once.

Addresses 127.61.17.x (rtl) / 127.61.18.x (model), namespaces wdr-/wdm-, twin ports 7700+,
HTTP 18700+.
"""
import asyncio
import random
import subprocess
import time

import pytest
from twin_helpers import build_rtl, by_port, ether, fpga_param, ip2int, ipv4, mac, require_root, tcp

from wccptool import cachesim as cs
from wccptool import launch, twin
from wccptool.twin.netns import Topology

T = 0.5
NET = {"rtl": 17, "model": 18}


@pytest.fixture(scope="module", autouse=True)
def _rtl_built():
    build_rtl()


def _assignment(st):
    g = st["groups"][0]
    if g["assignment"] is None or not all(c["state"] == "usable" for c in g["caches"]):
        return None
    return g["assignment"]["caches"]


async def _poll(pred, timeout, what, every=0.05):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    last = None
    while loop.time() < end:
        try:
            v = await loop.run_in_executor(None, pred)
            if v:
                return v
        except (OSError, KeyError, ValueError) as e:
            last = e
        await asyncio.sleep(every)
    raise AssertionError("timed out waiting for %s (last error %r)" % (what, last))


def _gre_targets(frames, cache_mac):
    """Outer destination addresses of the GRE frames sent to cache_mac."""
    return [".".join(str(b) for b in f[30:34]) for f in frames if f[0:6] == cache_mac and f[23] == 47]


@fpga_param()
def test_silent_caches_found_by_probing_and_followed(fpga, tmp_path):
    require_root()
    n = NET[fpga]
    router = "127.61.%d.1" % n
    caches = ["127.61.%d.11" % n, "127.61.%d.12" % n]
    host_mac = "02:61:%02x:00:00:02" % n
    topo = Topology(prefix="wd%s" % fpga[0], addresses=("10.67.%d.1/24" % n, "10.67.%d.2/24" % n),
                    macs=["02:61:%02x:00:00:01" % n, host_mac])
    spi = "127.61.%d.1:%d" % (n, 7700 + 10 * (n - 17))
    tw = twin.start(fpga=fpga, spi=spi, frames="127.61.%d.1:%d" % (n, 7701 + 10 * (n - 17)), netns=topo,
                    log_file=str(tmp_path / "twin.log"))
    fw = None
    fc = None
    try:
        # the caches' data-plane side: their addresses on the host behind port 1 (127/8 on an
        # interface needs route_localnet for the kernel to answer ARP for it)
        ns1, tap1 = topo.namespaces[1], topo.taps[1]
        for a in caches:
            subprocess.run(["ip", "-n", ns1, "addr", "add", a + "/32", "dev", tap1], check=True)
        subprocess.run(["ip", "netns", "exec", ns1, "sysctl", "-qw", "net.ipv4.conf.%s.route_localnet=1" % tap1],
                       check=True)
        fc = tw.frame_client()
        cfg = {"router_id": router, "addresses": [router], "timers": {"here_i_am_ms": int(T * 1000)},
               "mac": "02:61:%02x:00:00:aa" % n, "services": [{"id": 0, "type": "standard"}]}
        fw = launch.start_firmware(config=cfg, wccp_addr=[router], http_port=18700 + n, state_dir=str(tmp_path / "st"),
                                   dataplane="fpga", extra_args=["--fpga-socket", spi], timeout=60)
        members = [cs.Member(a, [router], interval=T) for a in caches]
        rng = random.Random(27)
        gw_mac = mac("02:61:00:00:00:fe")
        cmac = mac(host_mac)
        seen = []

        def http_frames(k):
            return [ether(gw_mac, mac("02:61:05:00:00:%02x" % i),
                          ipv4(ip2int("10.61.5.%d" % (i + 1)), rng.getrandbits(32), 6,
                               tcp(20000 + i, 80, b"GET / HTTP/1.0\r\n\r\n"))) for i in range(k)]

        def redirected(k):
            fc.send_many([(0, f) for f in http_frames(k)])
            out = fc.barrier()
            seen.extend(out)
            return _gre_targets(by_port(out)[1], cmac)

        async def scenario():
            nonlocal fw
            async with cs.CacheSim(members) as sim:
                asg = await _poll(lambda: _assignment(fw.status()), 30, "assignment")
                t0 = time.monotonic()
                assert sorted(asg) == caches
                await _poll(lambda: set(redirected(16)) == set(caches), 30, "redirects to both caches", every=0.02)
                print("FIRST_REDIRECT_MS %s %.0f" % (fpga, (time.monotonic() - t0) * 1000))
                st = fw.status()
                assert st["dataplane"]["learnt"] == [0, 0]          # nothing learnt from a cache's frame
                locs = {c["address"]: c["location"] for c in st["groups"][0]["caches"]}
                for a in caches:
                    assert locs[a] == {"mac": host_mac, "port": 1, "source": "probe"}, locs
                d = st["discovery"]
                assert d["enabled"] and d["counters"]["learnt"] == 2 and d["unanswered"] == []
                assert d["counters"]["probes"] == 2, d              # each first probe answered
                # the probes left on both ports; the replies crossed to port 0 (not swallowed)
                by = by_port(seen)
                probes = [f for f in by[0] + by[1] if f[12:14] == b"\x08\x06" and f[20:22] == b"\x00\x01"
                          and f[28:32] == b"\x00" * 4]
                assert {f[38:42] for f in by[0]} >= {bytes(int(x) for x in a.split(".")) for a in caches}
                assert len(probes) >= 4
                replies = [f for f in by[0] if f[12:14] == b"\x08\x06" and f[20:22] == b"\x00\x02"]
                assert {f[28:32] for f in replies} == {bytes(int(x) for x in a.split(".")) for a in caches}

                # the cache at index 0 leaves: the survivor moves to index 0 and keeps its traffic
                assert asg[0] == caches[0]
                sim.shutdown(caches[0])
                await _poll(lambda: _assignment(fw.status()) == [caches[1]], 30, "survivor alone")
                got = redirected(16)
                assert got == [caches[1]] * 16, got
                st = fw.status()
                assert st["dataplane"]["learnt"] == [0, 0]
                assert st["discovery"]["counters"]["probes"] == 2     # carried over, not probed again

        asyncio.run(scenario())
        assert "Traceback" not in fw.log()
    finally:
        if fw is not None:
            fw.stop()
        if fc is not None:
            fc.close()
        tw.stop()
