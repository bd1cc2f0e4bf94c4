"""The REAL firmware (firmware/main.py under the MicroPython unix port, asyncio app, UDP on
loopback) against spoofed senders: identity theft, forged and replayed REDIRECT_ASSIGN,
first-contact floods at 1,000 messages/s from 1,000 addresses, oversized and truncated
datagrams. Legitimate caches (wccptool.cachesim) keep their assignment and join within one
HERE_I_AM interval, the heap stays bounded and every datagram is accounted for by a counter
or a drop reason in /status.

Addresses: 127.44.<scenario>.x (router .1, caches .11+, the attacker .66), in-group-list
floods from 127.44.64.0 upwards, out-of-list floods from 127.45.0.0 upwards; HTTP ports
18501-18502. Each test has its own addresses and port (safe to run on separate workers).
"""
import asyncio
import pathlib
import socket
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent

import test_integration_firmware as itf  # noqa: E402
import test_router as tr  # noqa: E402
from wccp import codec  # noqa: E402
from wccptool import cachesim as cs  # noqa: E402

T = itf.T
GROUP_LIST = ["127.44.0.0/16"]


def _cfg(rid):
    return itf.fw_config(rid, services=[{"id": 0, "caches": GROUP_LIST}])


def _flood(first, count, rate, seconds, rtr, stop=None):
    """HERE_I_AMs (first contact) from count addresses starting at first, each from its own
    address, rate per second for seconds. Returns (datagrams sent, bytes sent)."""
    base = cs.ip2int(first)
    sent = nbytes = 0
    msgs = [tr.hia(cs.int2ip(base + i), 0, router=rtr) for i in range(count)]
    t0 = time.monotonic()
    i = 0
    while time.monotonic() - t0 < seconds and (stop is None or not stop.is_set()):
        a = cs.int2ip(base + i % count)
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.bind((a, 2048))
            s.sendto(msgs[i % count], (rtr, 2048))
            sent += 1
            nbytes += len(msgs[i % count])
        finally:
            s.close()
        i += 1
        ahead = i / rate - (time.monotonic() - t0)
        if ahead > 0:
            time.sleep(ahead)
    return sent, nbytes


def _no_answer(s, what):
    s.settimeout(0.3)
    try:
        data, peer = s.recvfrom(65535)
    except socket.timeout:
        return
    raise AssertionError("%s was answered by %s: %r" % (what, peer, codec.decode(data)["type"]))


def _cache(st, addr):
    for c in itf.group(st)["caches"]:
        if c["address"] == addr:
            return c
    raise KeyError(addr)


def _accounted(st):
    """Every datagram the app read reached the router's counters."""
    assert st["counters"]["rx"] == st["app"]["udp_rx"], (st["counters"], st["app"])
    assert st["drops"].get("internal_error", 0) == 0 and st["drops"].get("no_memory", 0) == 0, st["drops"]
    assert st["app"]["udp_rx_errors"] == 0, st["app"]


def test_spoofed_identity_forged_and_replayed_assignments_bad_datagrams(tmp_path):
    rtr, thief = "127.44.1.1", "127.44.1.66"
    r = itf.Firmware(tmp_path, "r", _cfg(rtr), 18501, heapsize="1m")
    ms = itf.members(["127.44.1.11", "127.44.1.12"], [rtr])

    async def main():
        async with cs.CacheSim(ms, capture=True) as sim:
            des = None

            def ready():
                nonlocal des
                st = r.status()
                for m in ms:
                    if m.is_designated() and itf.status_matches(st, m):
                        des = m
                        return True
                return False
            await itf.poll(ready, 10, "the designated cache's assignment")
            victim = cs.int2ip(des.address)
            st = r.status()
            before = itf.group(st)["assignment"]
            key = itf.group(st)["assignment_key"]
            loop = asyncio.get_running_loop()

            def attack():
                st = r.status()
                rid = _cache(st, victim)["receive_id_sent"]
                mcn = itf.group(st)["member_change_number"]
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.bind((thief, 2048))
                # identity theft, with the victim's current Receive ID
                for _k in range(20):
                    s.sendto(tr.hia(victim, rid, router=rtr), (rtr, 2048))
                _no_answer(s, "a HERE_I_AM claiming %s" % victim)
                # forged assignments: everything to the thief, and "not listed"
                forged = tr.ra_hash(victim, [(rtr, rid, mcn)], [thief], key_cn=key["change_number"] + 1)
                s.sendto(forged, (rtr, 2048))
                s.sendto(tr.ra_hash(victim, [("10.9.9.9", 1, 1)], [victim], key_cn=99), (rtr, 2048))
                # too long, and cut short
                big = tr.hia(thief, 0, router=rtr)
                s.sendto(big + bytes(6000 - len(big)), (rtr, 2048))
                s.sendto(big[:len(big) // 2], (rtr, 2048))
                s.close()
                # a replayed assignment from the designated cache's own address (another port):
                # an old Receive ID and change number
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.bind((victim, 3048))
                s.sendto(tr.ra_hash(victim, [(rtr, rid - 3, mcn - 1)], [victim], key_cn=1), (rtr, 2048))
                s.close()
                return rid
            await loop.run_in_executor(None, attack)
            await asyncio.sleep(4 * T)
            st = r.status()
            g = itf.group(st)
            d = st["drops"]
            assert d["identity_mismatch"] == 20 and d["ra_wrong_sender"] == 2, d
            assert d["oversize"] == 1 and d["malformed"] >= 1, d
            assert d.get("ra_stale_receive_id", 0) + d.get("ra_stale_change_number", 0) == 1, d
            assert g["assignment"] == before and g["assignment_key"] == key
            assert thief not in [c["address"] for c in g["caches"]]
            assert itf.states(st) == {"127.44.1.11": "usable", "127.44.1.12": "usable"}
            assert g["counters"]["flushes"] == 0 and g["flush_in_ms"] is None
            _accounted(st)
            assert not any(m.errors for m in ms), [m.errors for m in ms]
            return sim

    sim = itf.run_scenario(tmp_path, [r], main, ms)
    itf.check_router_output(sim, tmp_path, "adversarial", min_frames=8)


def test_first_contact_floods_bounded_caches_join_within_one_interval(tmp_path):
    rtr = "127.44.2.1"
    r = itf.Firmware(tmp_path, "r", _cfg(rtr), 18502, heapsize="1m")
    ms = itf.members(["127.44.2.11", "127.44.2.12"], [rtr])
    late = itf.members(["127.44.2.13"], [rtr])

    async def main():
        async with cs.CacheSim(ms, capture=True) as sim:
            await itf.poll(lambda: any(itf.status_matches(r.status(), m) for m in ms), 10, "first assignment")
            st0 = r.status()
            before = itf.group(st0)["assignment"]
            heap0, rss0 = st0["app"]["heap_used"], r.rss_kb()
            loop = asyncio.get_running_loop()
            # 1) 1,000 addresses outside the group-list, 1,000/s for 3 s; a cache joins meanwhile
            stop = threading.Event()
            fut = loop.run_in_executor(None, _flood, "127.45.0.1", 1000, 1000, 3.0, rtr, stop)
            await asyncio.sleep(0.5)
            async with cs.CacheSim(late):
                t0 = loop.time()
                await itf.poll(lambda: itf.states(r.status()).get("127.44.2.13") == "usable", 5 * T,
                               "the late cache usable", step=0.02)
                joined = loop.time() - t0
            sent_out, _ = await fut
            # the join takes the second HERE_I_AM, one interval after the first
            assert joined <= T + 0.25, joined
            st1 = r.status()
            assert st1["drops"]["cache_not_allowed"] >= sent_out // 2, (sent_out, st1["drops"])
            # 2) 1,000 addresses inside the group-list, 1,000/s for 3 s
            tx1 = st1["app"]["udp_tx"]
            stat1 = itf.group(st1)["counters"]["isy_stateless"]
            t1 = loop.time()
            sent_in, bytes_in = await loop.run_in_executor(None, _flood, "127.44.64.1", 1000, 1000, 3.0, rtr)
            await asyncio.sleep(2 * T)
            elapsed = loop.time() - t1
            st = r.status()
            g = itf.group(st)
            got = g["counters"]["hia_rx"] - itf.group(st1)["counters"]["hia_rx"]
            assert got >= sent_in // 2, (got, sent_in)
            # answers to unproven addresses: the token bucket (40 deep, 20/s), not the flood rate;
            # the three caches' own exchanges are at most 2 per second each
            answers = st["app"]["udp_tx"] - tx1
            assert answers <= 40 + 20 * elapsed + 3 * 2 * elapsed + 10, (answers, elapsed)
            # no amplification: fewer bytes out than the flood brought in (I_SEE_YOUs here < 400 B)
            assert answers * 400 < bytes_in, (answers, bytes_in)
            assert g["drops"]["rate_limited_global"] >= got - answers - 40, g["drops"]
            assert g["counters"]["pending_evicted"] == 0 and st["total_caches"] <= 3 + 32
            assert g["counters"]["isy_stateless"] > stat1
            # the caches kept their membership, the router the designated cache's assignment
            assert any(itf.status_matches(st, m) for m in ms), (g["assignment"], before)
            for a in ("127.44.2.11", "127.44.2.12"):          # (the late cache has stopped)
                assert itf.states(st)[a] == "usable"
            assert g["counters"]["removals_timeout"] <= 1                  # the late cache only
            # bounded memory
            assert st["app"]["heap_used"] - heap0 < 96 * 1024, (heap0, st["app"]["heap_used"])
            assert r.rss_kb() - rss0 < 1024, (rss0, r.rss_kb())
            _accounted(st)
            assert not any(m.errors for m in ms + late), [m.errors for m in ms + late]
            print("adversarial flood: join %.3f s (T %.1f s); out-of-list %d sent; in-list %d sent, %d received, "
                  "%d answers in %.1f s, %d bytes in; heap_used %d -> %d; rss %d -> %d kB"
                  % (joined, T, sent_out, sent_in, got, answers, elapsed, bytes_in, heap0, st["app"]["heap_used"],
                     rss0, r.rss_kb()))
            return sim

    sim = itf.run_scenario(tmp_path, [r], main, ms + late)
    itf.check_router_output(sim, tmp_path, "flood", min_frames=8)
