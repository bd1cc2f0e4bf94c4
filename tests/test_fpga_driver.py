"""FPGA data-plane driver (wccp.fpga) against a register-file SPI slave.

The server below implements the SPI transaction format of docs/regmap.md over the socket
framing of wccp.transport (4-byte length + MOSI bytes -> as many MISO bytes), with a shadow
and a live bank and the COMMIT/STATUS handshake. The driver programs it (from CPython and
from the real MicroPython unix port); the test decodes the live register image back into
tables, independently of the driver's encoders, and checks it equals what was programmed.
"""
import json
import os
import random
import shutil
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from wccp import regmap as R
from wccp.dataplane import FWD_GRE, FWD_L2, RET_GRE, RET_L2, effective_service
from wccp.fpga import FpgaDataPlane, FpgaError, method_word
from wccp.regpack import srcidx_words
from wccp.transport import SocketTransport, SpiTransport

ROOT = Path(__file__).resolve().parent.parent

HOST = "127.0.41.7"


def _ro_addresses():
    ro = {R.ID: R.ID_VALUE, R.VERSION: R.REGMAP_VERSION,
          R.CAPS: R.NUM_PORTS | (R.MAX_GROUPS << 8) | (R.MAX_CACHES << 16) | (R.MAX_MASK_SETS << 24)
             | R.CAPS_PEARSON}
    return ro


def is_shadow(a):
    """Shadow-bank registers (docs/regmap.md 'shadow'), by address range."""
    if R.ROUTER_ID <= a <= R.MTU or R.NEXTHOP_MAC_HI <= a < R.NEXTHOP_MAC_HI + 16:
        return True
    if R.GROUP_BASE <= a < R.GROUP_BASE + 8 * R.GROUP_STRIDE:
        return True
    if R.CACHE_BASE <= a < R.CACHE_BASE + 8 * R.CACHE_STRIDE:
        return (a - R.CACHE_BASE) % 4 in (R.CACHE_ADDRESS, R.CACHE_METHOD)
    for base, stride in ((R.BUCKET_BASE, R.BUCKET_STRIDE), (R.MASKSET_BASE, R.MASKSET_STRIDE),
                         (R.MASKTAB_BASE, R.MASKTAB_STRIDE)):
        if base <= a < base + 8 * stride:
            return True
    return (R.SRCIDX_HEAD <= a < R.SRCIDX_HEAD + R.SRCIDX_HEAD_COUNT
            or R.SRCIDX_LIST <= a < R.SRCIDX_LIST + R.SRCIDX_LIST_COUNT)


class RegFile:
    """Register file with the documented SPI behaviour (one instance per server)."""

    def __init__(self, busy_polls=2):
        self.shadow = {}
        self.live = {}
        self.live_regs = {}          # CONTROL, HEARTBEAT, WDT_TIMEOUT, CACHE_MAC_*
        self.counters = {}           # address -> value (read-only counters)
        self.commits = 0
        self.busy = 0
        self.busy_polls = busy_polls
        self.heartbeats = 0
        self.transactions = []
        self.lock = threading.Lock()

    def write_word(self, a, v):
        if is_shadow(a):
            self.shadow[a] = v
        elif a == R.COMMIT:
            if v & 1:
                self.live = dict(self.shadow)       # switch; the copy-back leaves shadow == live
                self.commits += 1
                self.busy = self.busy_polls
        elif a == R.HEARTBEAT:
            self.heartbeats += 1
            self.live_regs[a] = v
        elif a in (R.CONTROL, R.WDT_TIMEOUT) or (R.CACHE_BASE <= a < R.CACHE_BASE + 8 * R.CACHE_STRIDE):
            self.live_regs[a] = v
        # other addresses (read-only, unmapped): ignored

    def read_word(self, a):
        ro = _ro_addresses()
        if a in ro:
            return ro[a]
        if a == R.STATUS:
            s = 0
            if self.busy:
                self.busy -= 1
                s |= R.STATUS_COMMIT_BUSY
            if self.live_regs.get(R.CONTROL, 0) & 1 and self.heartbeats:
                s |= R.STATUS_ACTIVE
            return s
        if a == R.COMMIT:
            return self.commits
        if a in self.counters:
            return self.counters[a]
        if R.CACHE_BASE <= a < R.CACHE_BASE + 8 * R.CACHE_STRIDE and (a - R.CACHE_BASE) % 4 >= 2:
            return 0                  # learnt state is not readable (docs/regmap.md)
        if is_shadow(a):
            return self.shadow.get(a, 0)
        return self.live_regs.get(a, 0)

    def transaction(self, mosi):
        """One chip-select period: MOSI bytes in, MISO bytes out."""
        with self.lock:
            self.transactions.append(bytes(mosi))
            miso = bytearray(len(mosi))
            if len(mosi) < 4:
                return miso
            cmd = mosi[0]
            addr = (mosi[1] << 16) | (mosi[2] << 8) | mosi[3]
            if cmd == R.SPI_CMD_WRITE:
                for i in range((len(mosi) - 4) // 4):       # an incomplete word is discarded
                    self.write_word(addr + i, struct.unpack_from(">I", mosi, 4 + 4 * i)[0])
            elif cmd == R.SPI_CMD_READ:
                for i in range(max(0, (len(mosi) - 5) // 4)):
                    struct.pack_into(">I", miso, 5 + 4 * i, self.read_word(addr + i))
            return miso


class Server:
    def __init__(self, regs, port=0, path=None):
        self.regs = regs
        if path is not None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.bind(path)
        else:
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.sock.bind((HOST, port))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1] if path is None else None
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _recv(self, c, n):
        buf = b""
        while len(buf) < n:
            chunk = c.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf

    def _serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._client, args=(c,), daemon=True).start()

    def _client(self, c):
        with c:
            while True:
                h = self._recv(c, 4)
                if h is None:
                    return
                n = struct.unpack(">I", h)[0]
                mosi = self._recv(c, n)
                if mosi is None:
                    return
                c.sendall(bytes(self.regs.transaction(mosi)))

    def close(self):
        self.sock.close()


@pytest.fixture
def server():
    s = Server(RegFile())
    yield s
    s.close()


# --- decoding the register image (independent of the driver's encoders) -------------

def rd(img, a):
    return img.get(a, 0)


def mac_of(hi, lo):
    return bytes([(hi >> 8) & 0xFF, hi & 0xFF, lo >> 24, (lo >> 16) & 0xFF, (lo >> 8) & 0xFF, lo & 0xFF])


def decode(img):
    t = {"router_id": rd(img, R.ROUTER_ID), "mac": mac_of(rd(img, R.MAC_HI), rd(img, R.MAC_LO)),
         "mtu": rd(img, R.MTU), "next_hop": [], "slots": []}
    for p in range(R.NUM_PORTS):
        t["next_hop"].append(mac_of(rd(img, 0x10 + 2 * p), rd(img, 0x11 + 2 * p)))
    for s in range(8):
        g = R.GROUP_BASE + 0x20 * s
        ctrl = rd(img, g)
        svc = rd(img, g + 1)
        ports = []
        for i in range(4):
            w = rd(img, g + 3 + i)
            ports += [w >> 16, w & 0xFFFF]
        slot = {"enabled": bool(ctrl & 1), "assign": (ctrl >> 1) & 3, "nsets": (ctrl >> 8) & 7,
                "ncaches": (ctrl >> 16) & 0x3F,
                "service": {"service_type": svc & 0xFF, "service_id": (svc >> 8) & 0xFF,
                            "priority": (svc >> 16) & 0xFF, "protocol": svc >> 24,
                            "service_flags": rd(img, g + 2) & 0xFFFF, "ports": ports,
                            "hash_fn": 1 if rd(img, g + 2) & 0x10000 else 0}}
        caches = []
        for i in range(32):
            a = R.CACHE_BASE + 0x80 * s + 4 * i
            m = rd(img, a + 1)
            caches.append((rd(img, a), (m >> R.METHOD_FWD_SHIFT) & R.METHOD_FIELD_MASK,
                           (m >> R.METHOD_RET_SHIFT) & R.METHOD_FIELD_MASK))
        slot["caches"] = caches
        slot["buckets"] = bytes(b for w in range(64) for b in struct.pack(">I", rd(img, R.BUCKET_BASE + 0x40 * s + w)))
        sets = []
        for k in range(4):
            w0 = rd(img, R.MASKSET_BASE + 0x10 * s + 2 * k)
            w1 = rd(img, R.MASKSET_BASE + 0x10 * s + 2 * k + 1)
            pos = [(w0 >> (8 * j)) & 0xFF for j in range(4)] + [(w1 >> (8 * j)) & 0xFF for j in range(3)]
            pos = [p & 0x7F for p in pos if p & 0x80]
            tab = bytes(b for w in range(32) for b in struct.pack(">I", rd(img, R.MASKTAB_BASE + 0x80 * s + 32 * k + w)))
            sets.append((pos, tab))
        slot["masksets"] = sets
        t["slots"].append(slot)
    return t


def key96(sa, da, sp, dp):
    return (sa << 64) | (da << 32) | (sp << 16) | dp


def expected_mask_set(masks, values):
    """Positions of the mask bits and the 2**k-entry first-match table, computed directly."""
    m = key96(*masks)
    pos = [i for i in range(96) if (m >> i) & 1]
    tab = []
    for idx in range(128):
        if idx >= (1 << len(pos)):
            tab.append(0xFF)
            continue
        key = 0
        for j, p in enumerate(pos):
            if (idx >> j) & 1:
                key |= 1 << p
        hit = 0xFF
        for v in values:
            if key96(*v[:4]) == key:
                hit = v[4]
                break
        tab.append(hit)
    return pos, bytes(tab)


def check_image(img, prog):
    """img decoded must equal the programmed tables `prog` (a dict built by the test)."""
    t = decode(img)
    assert t["router_id"] == prog["router_id"] and t["mac"] == prog["mac"] and t["mtu"] == prog["mtu"]
    # the cache-source index of the programmed cache tables: heads, and the list words in use
    head, entries = srcidx_words([[(c["address"], method_word(c["forward"], c["ret"]))
                                   for c in prog["slots"][s]["caches"]] if s in prog["slots"] else []
                                  for s in range(8)])
    assert [rd(img, R.SRCIDX_HEAD + f) for f in range(R.SRCIDX_HEAD_COUNT)] == head
    assert [rd(img, R.SRCIDX_LIST + k) for k in range(len(entries))] == entries
    assert t["next_hop"] == [m or b"\x00" * 6 for m in prog["next_hop"]]
    for s in range(8):
        got = t["slots"][s]
        exp = prog["slots"].get(s)
        if exp is None:
            assert not got["enabled"] and got["ncaches"] == 0, (s, got["enabled"])
            assert all(c == (0, 0, 0) for c in got["caches"])
            continue
        assert got["enabled"]
        assert got["service"] == effective_service(exp["service"])
        caches = [(c["address"], c["forward"], c["ret"]) for c in exp["caches"]]
        assert got["ncaches"] == len(caches)
        assert got["caches"] == caches + [(0, 0, 0)] * (32 - len(caches))
        if "hash" in exp:
            assert got["assign"] == R.ASSIGN_HASH and got["buckets"] == bytes(exp["hash"])
        elif "mask" in exp:
            assert got["assign"] == R.ASSIGN_MASK and got["nsets"] == len(exp["mask"])
            for k, ms in enumerate(exp["mask"]):
                assert got["masksets"][k] == expected_mask_set(ms["masks"], ms["values"])
        else:
            assert got["assign"] == R.ASSIGN_NONE


# --- random programs ------------------------------------------------------------------

def popbits(rng, k):
    """A random 4-field mask with k bits set in total."""
    bits = rng.sample(range(96), k)
    m = 0
    for b in bits:
        m |= 1 << b
    return ((m >> 64) & 0xFFFFFFFF, (m >> 32) & 0xFFFFFFFF, (m >> 16) & 0xFFFF, m & 0xFFFF)


def random_program(rng):
    prog = {"router_id": rng.getrandbits(32), "mac": bytes([2] + [rng.randrange(256) for _ in range(5)]),
            "mtu": rng.randrange(576, 1501), "next_hop": [None, bytes([2, 0, 0, 0, 0, rng.randrange(1, 256)])],
            "slots": {}}
    for s in rng.sample(range(8), rng.randrange(1, 9)):
        nc = rng.randrange(0, 33)
        caches = [{"address": rng.getrandbits(32) | 1, "forward": rng.choice([FWD_GRE, FWD_L2]),
                   "ret": rng.choice([RET_GRE, RET_L2])} for _ in range(nc)]
        svc = {"service_type": rng.choice([0, 1, 1]), "service_id": rng.randrange(256),
               "priority": rng.randrange(256), "protocol": rng.choice([0, 6, 17]),
               "service_flags": rng.getrandbits(12), "ports": [rng.randrange(65536) for _ in range(rng.randrange(9))],
               "hash_fn": rng.choice(["wccp", "pearson", 0, 1])}
        slot = {"service": svc, "caches": caches}
        r = rng.random()
        if r < 0.45:
            slot["hash"] = [rng.choice([0xFF, 0x80 | rng.randrange(32), rng.randrange(128)]) for _ in range(256)]
        elif r < 0.9:
            sets = []
            for _ in range(rng.randrange(0, 5)):
                masks = popbits(rng, rng.randrange(0, 8))
                vals = []
                for _ in range(rng.randrange(0, 129)):
                    v = [x & m for x, m in zip((rng.getrandbits(32), rng.getrandbits(32), rng.getrandbits(16),
                                               rng.getrandbits(16)), masks, strict=True)]
                    if rng.random() < 0.05:
                        v[0] |= 1 << 31                     # bits outside the mask: never matches
                    vals.append(tuple(v) + (rng.randrange(128),))
                sets.append({"masks": masks, "values": vals})
            slot["mask"] = sets
        prog["slots"][s] = slot
    return prog


def program(dp, prog):
    dp.configure(prog["router_id"], prog["mac"], prog["mtu"])
    for p, m in enumerate(prog["next_hop"]):
        dp.set_next_hop(p, m)
    for s, slot in prog["slots"].items():
        dp.set_group(s, slot["service"])
        dp.set_caches(s, slot["caches"])
        if "hash" in slot:
            dp.set_hash(s, slot["hash"])
        elif "mask" in slot:
            dp.set_mask(s, slot["mask"])
        else:
            dp.clear_assignment(s)


def _json_prog(prog):
    def enc(x):
        if isinstance(x, bytes):
            return {"hex": x.hex()}
        if isinstance(x, dict):
            return {str(k): enc(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [enc(v) for v in x]
        return x
    return json.dumps(enc(prog))


# --- tests ----------------------------------------------------------------------------

def test_random_programs_round_trip_through_register_image(server):
    rng = random.Random(5150)
    dp = FpgaDataPlane(SocketTransport(HOST, server.port))
    try:
        prev = None
        for _ in range(8):
            prog = random_program(rng)
            live_before = dict(server.regs.live)
            if prev is not None:
                for s in range(8):
                    if s not in prog["slots"]:
                        dp.clear_group(s)
            program(dp, prog)
            assert server.regs.live == live_before            # nothing live before commit
            dp.commit()
            check_image(server.regs.live, prog)
            prev = prog
    finally:
        dp.t.close()


def test_partial_updates_and_clear(server):
    dp = FpgaDataPlane(SocketTransport(HOST, server.port))
    c1 = {"address": 0x0A000032, "forward": FWD_GRE, "ret": RET_GRE}
    c2 = {"address": 0x0A000033, "forward": FWD_L2, "ret": RET_L2}
    prog = {"router_id": 0x0A000001, "mac": bytes.fromhex("020000000001"), "mtu": 1500,
            "next_hop": [None, None],
            "slots": {2: {"service": {"service_type": 0, "service_id": 0}, "caches": [c1, c2],
                          "hash": [0, 1] * 128}}}
    program(dp, prog)
    dp.commit()
    check_image(server.regs.live, prog)
    n_tx = len(server.regs.transactions)
    # the same cache list again: no cache writes at all
    dp.set_caches(2, [c1, c2])
    cache_writes = [t for t in server.regs.transactions[n_tx:]
                    if t[0] == R.SPI_CMD_WRITE and R.CACHE_BASE <= int.from_bytes(t[1:4], "big") < R.BUCKET_BASE]
    assert cache_writes == []
    # shrink: the removed entry is zeroed; switch to mask; clear assignment; clear group
    dp.set_caches(2, [c2])
    prog["slots"][2]["caches"] = [c2]
    del prog["slots"][2]["hash"]
    prog["slots"][2]["mask"] = [{"masks": (0, 0x1741, 0, 0), "values": [(0, 0x0101, 0, 0, 0)]}]
    dp.set_mask(2, prog["slots"][2]["mask"])
    dp.commit()
    check_image(server.regs.live, prog)
    dp.clear_assignment(2)
    del prog["slots"][2]["mask"]
    dp.commit()
    check_image(server.regs.live, prog)
    dp.clear_group(2)
    del prog["slots"][2]
    dp.commit()
    check_image(server.regs.live, prog)
    dp.t.close()


def test_cache_locations_watchdog_and_status(server):
    dp = FpgaDataPlane(SocketTransport(HOST, server.port))
    regs = server.regs
    mac = bytes.fromhex("0200000000ca")
    HI0 = R.CACHE_BASE + 0x80 + R.CACHE_MAC_HI
    HI1 = HI0 + 4
    dp.set_caches(1, [{"address": 1, "mac": mac, "port": 1}, {"address": 2}])
    assert regs.live_regs[HI0] == 0 and regs.live_regs[HI1] == 0           # new addresses: cleared
    n_commits = regs.commits
    dp.commit()
    hi = regs.live_regs[HI0]
    lo = regs.live_regs[R.CACHE_BASE + 0x80 + R.CACHE_MAC_LO]
    assert regs.commits == n_commits + 1
    assert mac_of(hi, lo) == mac and hi & R.CACHE_MAC_KNOWN and hi & R.CACHE_PORT_KNOWN and (hi >> 20) & 0xF == 1
    # after the commit: new addresses cleared again (a re-learnt old cache must not carry
    # over), then the explicit location, LO (staging) before HI (which updates the entry)
    writes = [int.from_bytes(t[1:4], "big") for t in regs.transactions if t[0] == R.SPI_CMD_WRITE]
    LO0 = R.CACHE_BASE + 0x80 + R.CACHE_MAC_LO
    after = writes[len(writes) - 1 - writes[::-1].index(R.COMMIT) + 1:]
    assert after == [LO0, HI0, LO0 + 4, HI1, LO0, HI0]
    # explicit location, MAC only, for index 1 (after commit), then a new address clears it
    dp.set_cache_location(1, 1, bytes.fromhex("0200000000cb"), None)
    assert regs.live_regs[HI1] == 0
    dp.commit()
    assert regs.live_regs[HI1] & R.CACHE_MAC_KNOWN and not regs.live_regs[HI1] & R.CACHE_PORT_KNOWN
    dp.set_cache_location(1, 1, None, 1)                 # queued, then dropped by the address change
    dp.set_caches(1, [{"address": 1}, {"address": 3}])
    assert regs.live_regs[HI1] == 0
    dp.commit()
    assert regs.live_regs[HI1] == 0
    assert regs.live_regs[HI0] == hi                     # same address: kept
    n_tx = len(regs.transactions)
    dp.set_caches(1, [{"address": 1, "mac": bytes.fromhex("0200000000cc")}, {"address": 3}])
    dp.commit()                                          # unchanged addresses: no location writes
    writes = [int.from_bytes(t[1:4], "big") for t in regs.transactions[n_tx:] if t[0] == R.SPI_CMD_WRITE]
    assert HI0 not in writes and regs.live_regs[HI0] == hi
    assert dp.cache_location(1, 0) is None            # not readable (docs/regmap.md)
    with pytest.raises(ValueError):
        dp.set_cache_location(1, 32, mac, 0)
    with pytest.raises(ValueError):
        dp.set_cache_location(1, 0, mac, 2)
    # watchdog
    assert not dp.redirect_enabled()
    assert dp.status()["commits"] == regs.commits
    dp.arm(250)
    assert regs.live_regs[R.WDT_TIMEOUT] == 250000 and regs.live_regs[R.CONTROL] == 1
    dp.heartbeat()
    dp.heartbeat()
    assert regs.heartbeats == 2 and dp.redirect_enabled()
    dp.disarm()
    assert not dp.redirect_enabled()
    st = dp.status()
    assert st["commits"] == 4 and not st["commit_busy"]
    dp.commit()
    assert dp.status()["commits"] == 5
    dp.t.close()


def test_commit_timeout_and_wrong_id():
    regs = RegFile(busy_polls=10 ** 9)
    srv = Server(regs)
    try:
        dp = FpgaDataPlane(SocketTransport(HOST, srv.port))
        import wccp.fpga as F
        old = F.COMMIT_POLLS
        F.COMMIT_POLLS = 20
        try:
            with pytest.raises(FpgaError):
                dp.commit()
        finally:
            F.COMMIT_POLLS = old
        dp.t.close()
    finally:
        srv.close()

    class Zero:
        def read(self, addr, n):
            return [0] * n

        def write(self, addr, words):
            pass
    with pytest.raises(FpgaError):
        FpgaDataPlane(Zero())


def test_counters_sum_ports_and_clear(server):
    regs = server.regs
    rng = random.Random(3)
    for a in range(R.PORTCNT_BASE, R.PORTCNT_BASE + 2 * R.PORTCNT_STRIDE):
        regs.counters[a] = rng.randrange(1000)
    for a in range(R.SLOTCNT_BASE, R.BUCKETCNT_BASE + 8 * R.BUCKETCNT_STRIDE):
        regs.counters[a] = rng.randrange(1000)
    dp = FpgaDataPlane(SocketTransport(HOST, server.port))
    c = dp.counters()
    P = R.PORTCNT_BASE
    assert c["rx_frames"] == [regs.counters[P + R.CNT_RX_FRAMES], regs.counters[P + 0x20 + R.CNT_RX_FRAMES]]
    assert c["redirect_gre"] == regs.counters[P + R.CNT_REDIRECT_GRE] + regs.counters[P + 0x20 + R.CNT_REDIRECT_GRE]
    assert c["gre_return_bad"] == regs.counters[P + R.CNT_GRE_RETURN_BAD] + regs.counters[P + 0x20 + R.CNT_GRE_RETURN_BAD]
    assert c["truncated"] == regs.counters[P + R.CNT_TRUNCATED] + regs.counters[P + 0x20 + R.CNT_TRUNCATED] > 0
    assert c["learnt"][1] == regs.counters[P + 0x20 + R.CNT_LEARNT]
    S = R.SLOTCNT_BASE + 3 * R.SLOTCNT_STRIDE
    assert c["slot_frames"][3] == regs.counters[S] + regs.counters[S + 2]
    assert c["slot_bytes"][3] == regs.counters[S + 1] + regs.counters[S + 3]
    assert c["cache_bytes"][5][7] == regs.counters[R.CACHECNT_BASE + 5 * R.CACHECNT_STRIDE + 15]
    assert c["bucket_hits"][7][255] == regs.counters[R.BUCKETCNT_BASE + 7 * R.BUCKETCNT_STRIDE + 255]
    # same keys as the reference model
    from wccp.fwdmodel import ForwardingModel
    assert set(c) == set(ForwardingModel().counters())
    dp.clear_counters()
    regs.counters[P + R.CNT_RX_FRAMES] = (regs.counters[P + R.CNT_RX_FRAMES] + 5) & 0xFFFFFFFF
    regs.counters[P + R.CNT_TX_BYTES] = 3                  # wrapped around
    c2 = dp.counters()
    assert c2["rx_frames"] == [5, 0]
    assert c2["tx_bytes"][0] == (3 - c["tx_bytes"][0]) & 0xFFFFFFFF
    assert c2["redirect_gre"] == 0 and c2["truncated"] == 0 and sum(map(sum, c2["bucket_hits"])) == 0
    dp.t.close()


def test_spi_transport_sends_the_documented_bytes():
    class Pin:
        def __init__(self):
            self.log = []

        def value(self, v):
            self.log.append(v)

    class Spi:
        def __init__(self, regs, pin):
            self.regs = regs
            self.pin = pin
            self.seen = []

        def write_readinto(self, tx, rx):
            assert self.pin.log[-1] == 0                  # CS asserted during the transfer
            self.seen.append(bytes(tx))
            rx[:] = self.regs.transaction(tx)

        def write(self, tx):                              # machine.SPI.write: MISO ignored
            assert self.pin.log[-1] == 0
            self.seen.append(bytes(tx))
            self.regs.transaction(tx)

    regs = RegFile()
    pin = Pin()
    spi = Spi(regs, pin)
    tr = SpiTransport(spi, pin)
    dp = FpgaDataPlane(tr)
    assert spi.seen[0] == bytes([0x03, 0, 0, 0, 0]) + b"\x00" * 12      # read ID, VERSION, CAPS
    dp.configure(0x0A000001, bytes.fromhex("020000000001"), 1400)
    assert spi.seen[-1] == bytes([0x02, 0, 0, 0x08]) + struct.pack(">IIII", 0x0A000001, 0x0200, 0x00000001, 1400)
    assert pin.log[-1] == 1 and pin.log.count(0) == len(spi.seen)
    dp.set_hash(0, list(range(256)))
    assert regs.shadow[R.BUCKET_BASE] == 0x00010203 and regs.shadow[R.BUCKET_BASE + 63] == 0xFCFDFEFF
    big = list(range(600))
    tr.write(R.MASKTAB_BASE, big)                        # split into <= 256-word transactions
    assert [regs.shadow[R.MASKTAB_BASE + i] for i in range(600)] == big
    assert tr.read(R.MASKTAB_BASE, 600) == big
    with pytest.raises(ValueError):
        tr.write(0x1000000, [1])


def _micropython():
    exe = shutil.which("micropython") or str(Path(sys.executable).parent / "micropython")
    if not os.path.exists(exe):
        pytest.fail("micropython not installed")
    return exe


MP_SCRIPT = r"""
import sys, json
sys.path.insert(0, ROOT + "/firmware")   # the unix port has no installed packages
from wccp.transport import SocketTransport
from wccp.fpga import FpgaDataPlane

def dec(x):
    if isinstance(x, dict):
        if "hex" in x and len(x) == 1:
            return bytes.fromhex(x["hex"])
        return {k: dec(v) for k, v in x.items()}
    if isinstance(x, list):
        return [dec(v) for v in x]
    return x

prog = dec(json.loads(PROG))
dp = FpgaDataPlane(SocketTransport(HOST, PORT))
dp.configure(prog["router_id"], prog["mac"], prog["mtu"])
for p, m in enumerate(prog["next_hop"]):
    dp.set_next_hop(p, m)
for s, slot in prog["slots"].items():
    s = int(s)
    dp.set_group(s, slot["service"])
    dp.set_caches(s, slot["caches"])
    if "hash" in slot:
        dp.set_hash(s, slot["hash"])
    elif "mask" in slot:
        dp.set_mask(s, [{"masks": tuple(m["masks"]), "values": [tuple(v) for v in m["values"]]} for m in slot["mask"]])
    else:
        dp.clear_assignment(s)
dp.commit()
dp.arm(1000)
dp.heartbeat()
print("OK", dp.redirect_enabled(), len(dp.counters()["bucket_hits"]))
"""


def test_driver_under_micropython(server, tmp_path):
    rng = random.Random(77)
    prog = random_program(rng)
    while not any("mask" in s and s["mask"] for s in prog["slots"].values()):
        prog = random_program(rng)
    script = tmp_path / "mp_fpga.py"
    script.write_text(MP_SCRIPT.replace("ROOT", repr(str(ROOT))).replace("PROG", repr(_json_prog(prog)))
                      .replace("HOST", repr(HOST)).replace("PORT", str(server.port)))
    res = subprocess.run([_micropython(), "-X", "heapsize=8m", str(script)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.strip() == "OK True 8", res.stdout
    check_image(server.regs.live, prog)


def test_fast_mode_twin_shape_micropython_driver_socket_model(tmp_path):
    """The digital twin's fast mode: firmware driver (MicroPython) -> socket -> model registers."""
    from wccp.fwdmodel import ForwardingModel
    from wccp.fwdmodel_regs import ModelRegisterFile
    regs = ModelRegisterFile(ForwardingModel(clock=lambda: 0))
    srv = Server(regs)
    try:
        rng = random.Random(11)
        prog = random_program(rng)
        while not any(s.get("mask") for s in prog["slots"].values()):
            prog = random_program(rng)
        prog["mtu"] = 1500
        script = tmp_path / "mp_fast.py"
        script.write_text(MP_SCRIPT.replace("ROOT", repr(str(ROOT))).replace("PROG", repr(_json_prog(prog)))
                          .replace("HOST", repr(HOST)).replace("PORT", str(srv.port)))
        res = subprocess.run([_micropython(), "-X", "heapsize=8m", str(script)], capture_output=True, text=True,
                             timeout=300)
        assert res.returncode == 0, res.stdout + res.stderr
        assert res.stdout.strip() == "OK True 8", res.stdout
        assert regs.commits == 1 and regs.srcidx_mismatch == 0      # the index the model's tables have
        # the same program applied directly to a model gives the same live tables
        direct = ForwardingModel(clock=lambda: 0)
        program(direct, prog)
        direct.commit()
        a, b = regs.model._live, direct._live
        assert (a.router_id, a.mac, a.mtu, a.next_hop) == (b.router_id, b.mac, b.mtu, b.next_hop)
        for s in range(8):
            x, y = a.slots[s], b.slots[s]
            assert x.enabled == y.enabled and x.caches == y.caches and x.hash == y.hash, s
            if y.enabled:
                assert x.service == y.service
            if y.mask is not None:
                # decoded from the compiled tables: equivalent first-match behaviour
                assert len(x.mask) == len(y.mask)
                for (mx, vx), (my, vy) in zip(x.mask, y.mask, strict=True):
                    assert mx == my
                    first = {}
                    for v in vy:
                        if all((v[i] & ~my[i]) == 0 for i in range(4)):
                            first.setdefault(v[:4], v[4])
                    assert {v[:4]: v[4] for v in vx} == first
    finally:
        srv.close()


def test_recording_transport_replays_to_the_same_image():
    from wccp.transport import RecordingTransport
    rec = RecordingTransport()
    dp = FpgaDataPlane(rec, check_id=False)
    prog = random_program(random.Random(8))
    program(dp, prog)
    dp.commit()
    writes = rec.take()
    assert writes and rec.writes == []
    regs = RegFile()
    for addr, words in writes:
        for i, w in enumerate(words):
            regs.write_word(addr + i, w)
    check_image(regs.live, prog)


def test_unix_socket_transport(tmp_path):
    path = str(tmp_path / "fpga.sock")
    srv = Server(RegFile(), path=path)
    try:
        tr = SocketTransport(path=path)
        dp = FpgaDataPlane(tr)
        dp.configure(0x0A000001, bytes.fromhex("020000000001"), 1500)
        dp.commit()
        assert srv.regs.live[R.ROUTER_ID] == 0x0A000001
        tr.close()
        tr.close()
    finally:
        srv.close()
    with pytest.raises(ValueError):
        SocketTransport(HOST)
