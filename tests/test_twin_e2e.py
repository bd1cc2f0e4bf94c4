"""The whole appliance as a digital twin: the real firmware (firmware/main.py under the
MicroPython unix port, data plane = wccp.fpga.FpgaDataPlane over the twin's SPI socket)
drives the simulated FPGA (RTL fpga_core on Verilator, or the fast mode); emulated caches
(wccptool.cachesim) join over loopback UDP.

Checked end to end: the firmware's register writes carry exactly the assignment it reports
(the twin's SPI log decoded by wccp.fwdmodel_regs.ModelRegisterFile), and the FPGA applies it: its
per-(group, cache) and per-bucket counter registers, read back through the socket, grow as
the model's do; traffic injected on port 0 comes out redirected to the right cache (GRE for the
hash group, L2 for the mask group) exactly as the reference model predicts from the
firmware's own register writes (the twin's SPI log replayed into wccp.fwdmodel), other
traffic passes; SIGKILL the firmware -> the watchdog fails open -> everything passes;
restart -> the caches re-assign and redirection resumes.

Addresses 127.61.2.x (rtl) / 127.61.3.x (model); twin ports 7300+, HTTP 18610+.
"""
import asyncio
import random
import time

import pytest
from twin_helpers import build_rtl, by_port, ether, ip2int, ipv4, mac, predict, tcp, udp, without_probes

from wccp import regmap as R
from wccptool import cachesim as cs
from wccptool import launch, twin
from wccptool.twin.hub import read_spi_log, replay

# Listed in conftest.py SPLIT_MODULES: pytest-xdist may run these tests on different
# workers at the same time, as rtl and model each have their
# own 127.61.<n>.x addresses, twin and HTTP ports. Keep it so.

T = 0.5
NET = {"rtl": 2, "model": 3}


@pytest.fixture(scope="module", autouse=True)
def _rtl_built():
    build_rtl()


def _fw_config(router, l2_cache):
    return {"router_id": router, "addresses": [router], "timers": {"here_i_am_ms": int(T * 1000)},
            "watchdog_ms": 1500,
            "services": [{"id": 0, "type": "standard"},
                         {"id": 91, "type": "dynamic", "forwarding": ["l2"], "return": ["l2"],
                          "assignment": ["mask"], "l2_adjacent": [l2_cache]}]}


def _slots(model):
    """{service_id: slot} of the enabled groups in the model's live tables."""
    return {sl.service["service_id"]: i for i, sl in enumerate(model._live.slots) if sl.enabled}


def _group(st, sid):
    for g in st["groups"]:
        if g["service_id"] == sid:
            return g
    raise KeyError(sid)


def _assigned(st, sid):
    for g in st["groups"]:
        if g["service_id"] == sid:
            return g["assignment"] is not None and all(c["state"] == "usable" for c in g["caches"])
    return False


async def _poll(pred, timeout, what):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    last = None
    while loop.time() < end:
        try:
            if await loop.run_in_executor(None, pred):
                return
        except (OSError, KeyError, ValueError) as e:
            last = e
        await asyncio.sleep(0.1)
    raise AssertionError("timed out waiting for %s (last error %r)" % (what, last))


@pytest.mark.parametrize("fpga", ["rtl", "model"])
def test_firmware_caches_twin_redirect_failopen_restart(fpga, tmp_path):
    n = NET[fpga]
    router = "127.61.%d.1" % n
    caches_gre = ["127.61.%d.11" % n, "127.61.%d.12" % n]
    cache_l2 = "127.61.%d.13" % n
    cache_macs = {a: mac("02:61:%02x:00:00:%02x" % (n, 0x11 + i)) for i, a in enumerate(caches_gre + [cache_l2])}
    spi = "127.61.%d.1:%d" % (n, 7300 + 10 * n)
    spi_log = tmp_path / "spi.log"
    tw = twin.start(fpga=fpga, spi=spi, frames="127.61.%d.1:%d" % (n, 7301 + 10 * n), spi_log=spi_log,
                    log_file=str(tmp_path / "twin.log"))
    state = tmp_path / "state"
    state.mkdir()
    http_port = 18600 + 10 * n

    def start_fw():
        return launch.start_firmware(config=_fw_config(router, cache_l2), wccp_addr=[router], http_port=http_port,
                                     state_dir=str(state), dataplane="fpga", extra_args=["--fpga-socket", spi],
                                     timeout=60)

    dyn = cs.dynamic_service(91, protocol=17, ports=[53], priority=50)
    members = [cs.Member(a, [router], interval=T) for a in caches_gre]
    members.append(cs.Member(cache_l2, [router], service=dyn, interval=T, assignment="mask", forwarding=2,
                             return_method=2, masks=[{"dst_addr": 0x3}]))
    rng = random.Random(6103)
    gw_mac = mac("02:61:00:00:00:fe")

    def learn_frames():
        return [ether(gw_mac, cache_macs[a], ipv4(ip2int(a), ip2int("10.61.9.9"), 6, tcp(3128, 40000 + i)))
                for i, a in enumerate(caches_gre + [cache_l2])]

    def client_frames():
        out = []
        for i in range(24):
            src, dst = ip2int("10.61.5.%d" % (i + 1)), rng.getrandbits(32)
            if i % 3 == 2:
                pl = ipv4(src, dst, 17, udp(20000 + i, 53, b"query"))
            elif i % 6 == 1:
                pl = ipv4(src, dst, 6, tcp(20000 + i, 443))          # no group: passes
            else:
                pl = ipv4(src, dst, 6, tcp(20000 + i, 80, b"GET / HTTP/1.0\r\n\r\n"))
            out.append(ether(gw_mac, mac("02:61:05:00:00:%02x" % i), pl))
        return out

    def check_redirection(fc, what):
        """Learn the caches on port 1, then client traffic on port 0: equal to the model's
        prediction from the firmware's register writes; some GRE and some L2 redirects; the
        FPGA's per-(slot, cache) and per-bucket counter registers grew as the model's did; every
        commit the firmware made carried a cache-source index that matches its tables."""
        rf = replay(read_spi_log(spi_log))
        ref = rf.model
        assert ref.redirect_enabled(), what
        assert rf.commits >= 1 and rf.srcidx_mismatch == 0, (what, rf.srcidx_mismatch)   # index = tables
        slots = _slots(ref)
        before = {s: (t.read(R.CACHECNT_BASE + R.CACHECNT_STRIDE * s, 64)[0::2],
                      t.read(R.BUCKETCNT_BASE + R.BUCKETCNT_STRIDE * s, 256)) for s in slots.values()}
        gre = l2 = 0
        for port, frames in ((1, learn_frames()), (0, client_frames())):
            want = predict(ref, port, frames)
            fc.send_many([(port, f) for f in frames])
            # (the firmware's ARP probes for the caches, which never answer here, come between)
            got = by_port(without_probes(fc.barrier()))
            assert got == want, "%s: port %d traffic differs from the model" % (what, port)
            if port == 0:
                for f in want[1]:
                    if f[:6] == cache_macs[cache_l2]:
                        l2 += 1
                    elif f[:6] in (cache_macs[caches_gre[0]], cache_macs[caches_gre[1]]) and f[23] == 47:
                        gre += 1
        assert gre >= 4 and l2 >= 4, (what, gre, l2)
        rc = ref.counters()
        for s in slots.values():
            cf = t.read(R.CACHECNT_BASE + R.CACHECNT_STRIDE * s, 64)[0::2]
            bh = t.read(R.BUCKETCNT_BASE + R.BUCKETCNT_STRIDE * s, 256)
            assert [a - b for a, b in zip(cf, before[s][0], strict=True)] == rc["cache_frames"][s], (what, s)
            assert [a - b for a, b in zip(bh, before[s][1], strict=True)] == rc["bucket_hits"][s], (what, s)

    t = tw.transport()
    fc = tw.frame_client()
    fw = start_fw()

    async def scenario():
        nonlocal fw
        async with cs.CacheSim(members):
            await _poll(lambda: _assigned(fw.status(), 0) and _assigned(fw.status(), 91), 30, "both groups assigned")
            # the firmware's register writes carry exactly the assignment it reports
            st = fw.status()
            regs = replay(read_spi_log(spi_log)).model
            live = regs._live
            slots = _slots(regs)
            assert set(slots) == {0, 91}
            g0, g91 = _group(st, 0), _group(st, 91)
            sl0, sl91 = live.slots[slots[0]], live.slots[slots[91]]
            assert list(sl0.hash) == g0["assignment"]["buckets"]
            assert [cs.int2ip(c[0]) for c in sl0.caches] == g0["assignment"]["caches"]
            assert g91["assignment"]["type"] == "mask" and g91["assignment"]["caches"] == [cache_l2]
            assert sl91.mask is not None and [cs.int2ip(c[0]) for c in sl91.caches] == [cache_l2]
            assert [c[1] for c in sl91.caches] == [2] and {c[1] for c in sl0.caches} == {1}    # L2 / GRE
            # and the FPGA took them: readable state over the socket
            assert t.read(R.ROUTER_ID, 1)[0] == ip2int(router)
            assert t.read(R.STATUS, 1)[0] & R.STATUS_ACTIVE
            assert t.read(R.COMMIT, 1)[0] >= 1
            await asyncio.get_running_loop().run_in_executor(None, check_redirection, fc, "first boot")
            dpc = fw.status()["dataplane"]          # the firmware reads the FPGA's counters
            assert dpc["redirect_gre"] >= 4 and dpc["redirect_l2"] >= 4, dpc

            # power cut: no more heartbeats -> the watchdog fails open
            fw.proc.kill()
            fw.proc.wait(5)
            fw.stop()
            fw = None
            t0 = time.monotonic()
            # (the RTL twin's watchdog counts simulated microseconds, which fall behind the wall
            # clock when Verilator is slow: 19 s for the 1.5 s on a loaded 2-core machine)
            await _poll(lambda: t.read(R.STATUS, 1)[0] & R.STATUS_WDT_EXPIRED, 90, "watchdog expiry")
            print("WDT_EXPIRY_S %.1f" % (time.monotonic() - t0))
            assert time.monotonic() - t0 >= 0.5       # armed for 1.5 s; it does not expire at once
            assert not t.read(R.STATUS, 1)[0] & R.STATUS_ACTIVE
            frames = client_frames()
            fc.send_many([(0, f) for f in frames])
            assert by_port(without_probes(fc.barrier())) == {0: [], 1: frames}     # everything passes unchanged

            # restart: the caches re-join, re-assign, redirection resumes
            commits = t.read(R.COMMIT, 1)[0]
            fw = start_fw()
            await _poll(lambda: _assigned(fw.status(), 0) and _assigned(fw.status(), 91), 30, "re-assigned")
            await _poll(lambda: t.read(R.STATUS, 1)[0] & R.STATUS_ACTIVE, 10, "redirection active again")
            assert t.read(R.COMMIT, 1)[0] > commits
            await asyncio.get_running_loop().run_in_executor(None, check_redirection, fc, "after restart")

    try:
        asyncio.run(scenario())
        assert "Traceback" not in (fw.log() if fw else "")
    finally:
        if fw is not None:
            fw.stop()
        t.close()
        fc.close()
        tw.stop()
