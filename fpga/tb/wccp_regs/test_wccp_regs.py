"""wccp_regs: identification/read-back, shadow writes + atomic commit (hold until the decision
core is idle, the group RAM copied into the live flip-flops while it is held, the live
configuration wholly old or wholly new whenever hold is clear, COMMIT_BUSY until the bank copy
is done; the redirect-list words copied into the live redirect-list RAM in the same copy,
wholly old or wholly new to the core's reads), table/learnt-state write strobes, counter read strobes, heartbeat watchdog (fail-open)."""
import os
import random

import pytest
import wccp_tb
from wccp import regmap as R
from wccp_tb import Clock, ReadOnly, RisingEdge, Timer, cocotb, cocotb_test

CLK_PER_US = 5      # small prescaler so the watchdog runs in a few hundred cycles
BUILD_ID = 0x5EED0C0D   # the build's identifier (a parameter the board top / build passes in)
LIVE = ("router_id", "appl_mac", "mtu", "nh_mac", "grp_ctrl", "grp_svc", "grp_flags", "grp_ports")


class TB:
    def __init__(self, dut, copy_cycles=12):
        self.dut = dut
        self.copy_cycles = copy_cycles
        cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start())
        for s in ("reg_addr", "reg_wr", "reg_wdata", "reg_rd", "copy_busy", "engines_busy", "ln_ack", "acl_raddr"):
            getattr(dut, s).value = 0
        self.cycle = 0
        self.t_writes = []       # (sel, addr, data)
        self.ln_writes = []      # (idx, data)
        self.copy_starts = []    # cycles
        self.live_flips = []     # (cycle, new live)
        self.snap_errors = []
        self.old = self.new = None
        cocotb.start_soon(self._mon())

    def live_state(self):
        return tuple(int(getattr(self.dut, n).value) for n in LIVE)

    async def _mon(self):
        d = self.dut
        busy_left = 0
        prev_live = None
        prev_hold = 0
        while True:
            await RisingEdge(d.clk)
            await ReadOnly()
            self.cycle += 1
            we = int(d.t_we.value)
            if we:
                assert we & (we - 1) == 0, "t_we not one-hot: %s" % bin(we)
                self.t_writes.append((we.bit_length() - 1, int(d.t_addr.value), int(d.t_data.value)))
            ack = int(d.ln_wr.value) and self.cycle % 3 == 0     # acknowledge late
            if ack:
                self.ln_writes.append((int(d.ln_idx.value), int(d.ln_data.value)))
            cs = int(d.copy_start.value)
            if cs:
                self.copy_starts.append(self.cycle)
            lv = int(d.live.value)
            st = self.live_state()
            if prev_live is not None and lv != prev_live:
                self.live_flips.append((self.cycle, lv))
                # the switch happens only after hold has been seen by an idle core
                # (inputs change 1 ns after an edge: engines_busy read now is what the edge saw)
                if not (prev_hold and not int(d.engines_busy.value)):
                    self.snap_errors.append((self.cycle, "switch without hold/idle handshake"))
            prev_hold = int(d.hold.value)
            # atomicity: whenever the core may run (hold clear) the live configuration is
            # wholly old or wholly new, and it is new exactly when `live` has flipped (while
            # held it is copied over a word a cycle)
            if self.old is not None and not int(d.hold.value):
                if lv == self.old[0] and st != self.old[1]:
                    self.snap_errors.append((self.cycle, "mix/early"))
                if lv != self.old[0] and st != self.new:
                    self.snap_errors.append((self.cycle, "mix/late"))
            prev_live = lv
            await Timer(1, "ns")
            d.ln_ack.value = 1 if ack else 0
            # bank RAM model: busy from the cycle after copy_start for copy_cycles cycles
            if cs:
                busy_left = self.copy_cycles
            d.copy_busy.value = 1 if busy_left else 0
            if busy_left:
                busy_left -= 1

    async def reset(self):
        self.dut.rst.value = 1
        for _ in range(4):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        await RisingEdge(self.dut.clk)

    async def write(self, addr, data):
        d = self.dut
        await Timer(1, "ns")
        d.reg_addr.value = addr
        d.reg_wdata.value = data & 0xFFFFFFFF
        d.reg_wr.value = 1
        await RisingEdge(d.clk)
        await Timer(1, "ns")
        d.reg_wr.value = 0

    async def read(self, addr, strobes=None):
        """Read: counter strobes two cycles after reg_rd, rvalid exactly four cycles after."""
        d = self.dut
        await Timer(1, "ns")
        d.reg_addr.value = addr
        d.reg_rd.value = 1
        await RisingEdge(d.clk)
        await Timer(1, "ns")
        d.reg_rd.value = 0
        d.reg_addr.value = addr ^ 0xFFFFFF      # the strobes must not depend on a later address
        await ReadOnly()
        assert (int(d.cc_rd.value), int(d.bc_rd.value), int(d.st_rd.value)) == (0, 0, 0)
        await RisingEdge(d.clk)
        await ReadOnly()
        if strobes is not None:
            strobes.append((int(d.cc_rd.value), int(d.bc_rd.value), int(d.st_rd.value),
                            int(d.st_word.value), int(d.st_hi.value)))
        for _ in range(2):
            assert int(d.reg_rvalid.value) == 0, "rvalid earlier than four cycles after reg_rd"
            await RisingEdge(d.clk)
            await ReadOnly()
        v = (int(d.reg_rvalid.value), int(d.reg_rdata.value))
        await RisingEdge(d.clk)
        await ReadOnly()
        assert int(d.reg_rvalid.value) == 0, "rvalid longer than one cycle"
        assert (int(d.cc_rd.value), int(d.bc_rd.value), int(d.st_rd.value)) == (0, 0, 0)
        await RisingEdge(d.clk)
        return v

    async def rd(self, addr):
        valid, v = await self.read(addr)
        assert valid == 1, "no rvalid four cycles after reading 0x%06X" % addr
        return v


@cocotb_test
async def test_id_and_readback(dut):
    tb = TB(dut)
    await tb.reset()
    assert await tb.rd(R.ID) == R.ID_VALUE
    assert await tb.rd(R.VERSION) == R.REGMAP_VERSION
    assert await tb.rd(R.BUILD_ID) == BUILD_ID
    await tb.write(R.BUILD_ID, 0x11111111)          # read-only: a write changes nothing
    assert await tb.rd(R.BUILD_ID) == BUILD_ID
    caps = await tb.rd(R.CAPS)
    pearson = R.CAPS_PEARSON if os.environ.get("WCCP_PEARSON") == "1" else 0      # the PEARSON parameter
    assert caps == (R.NUM_PORTS | R.MAX_GROUPS << 8 | R.MAX_CACHES << 16 | R.MAX_MASK_SETS << 24
                    | pearson), hex(caps)
    assert await tb.rd(R.MTU) == 1500
    assert await tb.rd(R.WDT_TIMEOUT) == 1000000
    assert await tb.rd(R.STATUS) == R.STATUS_WDT_EXPIRED
    for a, v in ((R.ROUTER_ID, 0x0A000001), (R.MAC_HI, 0x0211), (R.MAC_LO, 0x22334455),
                 (R.MTU, 1400), (R.CONTROL, 0x1), (R.WDT_TIMEOUT, 777)):
        await tb.write(a, v)
        assert await tb.rd(a) == v, hex(a)
    # MAC_HI keeps only 16 bits, MTU too
    await tb.write(R.MAC_HI, 0xFFFFABCD)
    assert await tb.rd(R.MAC_HI) == 0xABCD
    # write-only / unmapped addresses read 0 (and do answer)
    rng = random.Random(1)
    await tb.write(R.GROUP_BASE + 1, 0x12345678)
    for a in [R.GROUP_BASE + 1, R.CACHE_BASE, R.BUCKET_BASE + 3, 0x00000D, 0x000011, 0x7FFFFF] + \
             [rng.randrange(0x4000, 0x10000) for _ in range(4)]:
        assert await tb.read(a) == (1, 0), hex(a)


@cocotb_test
async def test_shadow_commit_atomic(dut):
    tb = TB(dut, copy_cycles=20)
    await tb.reset()
    d = dut
    rng = random.Random(7)
    base = tb.live_state()
    assert base == (0, 0, 1500, 0, 0, 0, 0, 0)
    exp = {"router_id": 0xC0A80001, "mac_hi": 0x0A0B, "mac_lo": 0x0C0D0E0F, "mtu": 1476,
           "nh": [(0x1111, 0x22223333), (0x4444, 0x55556666)]}
    await tb.write(R.ROUTER_ID, exp["router_id"])
    await tb.write(R.MAC_HI, exp["mac_hi"])
    await tb.write(R.MAC_LO, exp["mac_lo"])
    await tb.write(R.MTU, exp["mtu"])
    for p, (hi, lo) in enumerate(exp["nh"]):
        await tb.write(R.NEXTHOP_MAC_HI + 2 * p, hi)
        await tb.write(R.NEXTHOP_MAC_LO + 2 * p, lo)
    grp = {}
    for slot in (0, 3, 7):
        vals = [rng.getrandbits(32) for _ in range(7)]
        grp[slot] = vals
        for off, v in enumerate(vals):
            await tb.write(R.GROUP_BASE + slot * R.GROUP_STRIDE + off, v)
    # shadow only: nothing live yet, read-back shows the shadow values
    for _ in range(5):
        await RisingEdge(d.clk)
    assert tb.live_state() == base
    assert await tb.rd(R.ROUTER_ID) == exp["router_id"]
    new = [exp["router_id"], exp["mac_hi"] << 32 | exp["mac_lo"], exp["mtu"],
           (exp["nh"][1][0] << 32 | exp["nh"][1][1]) << 48 | exp["nh"][0][0] << 32 | exp["nh"][0][1],
           0, 0, 0, 0]
    for slot, v in grp.items():
        new[4] |= v[0] << (32 * slot)
        new[5] |= v[1] << (32 * slot)
        new[6] |= v[2] << (32 * slot)
        new[7] |= (v[3] << 96 | v[4] << 64 | v[5] << 32 | v[6]) << (128 * slot)
    live0 = int(d.live.value)
    tb.old = (live0, base)
    tb.new = tuple(new)
    # commit while the decision core is busy: hold rises, nothing switches
    d.engines_busy.value = 1
    await tb.write(R.COMMIT, 0)            # bit 0 clear: no commit
    assert (await tb.rd(R.STATUS)) & R.STATUS_COMMIT_BUSY == 0
    await tb.write(R.COMMIT, 1)
    for _ in range(30):
        await RisingEdge(d.clk)
    await ReadOnly()
    assert int(d.hold.value) == 1 and int(d.live.value) == live0
    assert tb.live_state() == base and not tb.copy_starts
    assert (await tb.rd(R.STATUS)) & R.STATUS_COMMIT_BUSY
    assert await tb.rd(R.COMMIT) == 0
    await Timer(1, "ns")
    d.engines_busy.value = 0
    # busy registered, the group RAM copied (256 words, a word a cycle, while held), the
    # commit decided (registered), then applied
    for _ in range(3):
        await RisingEdge(d.clk)
    await ReadOnly()
    assert int(d.live.value) == live0 and tb.live_state() == base and int(d.hold.value) == 1
    n = 3
    while int(d.live.value) == live0:
        await RisingEdge(d.clk)
        await ReadOnly()
        n += 1
        assert n < 280, "no swap %d cycles after the core went idle" % n
    assert n >= 256, n                     # not before the whole group RAM was read
    assert tb.live_state() == tb.new
    assert int(d.hold.value) == 0
    await Timer(1, "ns")                   # (the monitor has seen this edge too)
    assert len(tb.copy_starts) == 1 and len(tb.live_flips) == 1
    # COMMIT_BUSY until the bank copy has finished
    assert (await tb.rd(R.STATUS)) & R.STATUS_COMMIT_BUSY
    for _ in range(30):
        await RisingEdge(d.clk)
    assert (await tb.rd(R.STATUS)) & R.STATUS_COMMIT_BUSY == 0
    assert await tb.rd(R.COMMIT) == 1
    # a second commit with no decision activity: one more flip, same contents, count 2
    tb.old = (1 - live0, tb.new)
    await tb.write(R.COMMIT, 1)
    for _ in range(300):
        await RisingEdge(d.clk)
    assert await tb.rd(R.COMMIT) == 2
    assert len(tb.copy_starts) == 2 and len(tb.live_flips) == 2
    assert tb.snap_errors == [], tb.snap_errors[:5]


@cocotb_test
async def test_reset_forgets_group_shadow(dut):
    """The group shadow is a block RAM, which a reset does not clear: a word not written since
    the reset still commits as 0, as a reset register would."""
    tb = TB(dut)
    await tb.reset()
    d = dut

    async def commit():
        n = int(d.live.value)
        await tb.write(R.COMMIT, 1)
        for _ in range(400):
            await RisingEdge(d.clk)
            if int(d.live.value) != n and not int(d.copy_busy.value):
                break
        await ReadOnly()
        assert int(d.live.value) != n

    for slot in (2, 5):
        for off in range(7):
            await tb.write(R.GROUP_BASE + slot * R.GROUP_STRIDE + off, 0xA0000000 | slot << 8 | off)
    await commit()
    assert (int(d.grp_ctrl.value) >> 64) & 0xFFFFFFFF == 0xA0000200
    assert (int(d.grp_ports.value) >> (128 * 5)) & 0xFFFFFFFF == 0xA0000506
    await Timer(1, "ns")
    await tb.reset()
    await tb.write(R.GROUP_BASE + 5 * R.GROUP_STRIDE + 1, 0x1234)
    await commit()
    assert int(d.grp_ctrl.value) == 0 and int(d.grp_flags.value) == 0 and int(d.grp_ports.value) == 0
    assert int(d.grp_svc.value) == 0x1234 << (32 * 5)


async def commit_and_wait(tb):
    d = tb.dut
    n = int(d.live.value)
    await tb.write(R.COMMIT, 1)
    for _ in range(400):
        await RisingEdge(d.clk)
        if int(d.live.value) != n:
            break
    await ReadOnly()
    assert int(d.live.value) != n
    await RisingEdge(d.clk)


def acl_addr(slot, word):
    """A word of a slot's redirect-list as the core addresses the live redirect-list RAM."""
    return slot * R.GROUP_STRIDE + word


@cocotb_test
async def test_acl_commit_atomic(dut):
    """Redirect-list words (ACL_SRC/DST/CTRL) are shadow: the decision core's reads of the
    live redirect-list RAM return the words of the last commit, wholly old until the swap and
    wholly new from it, whatever the cycle they read in while not held."""
    tb = TB(dut, copy_cycles=4)
    await tb.reset()
    d = dut
    rng = random.Random(21)
    words = [(s, R.ACL_SRC + w) for s in (0, 4, 7) for w in range(3 * R.MAX_ACL_ENTRIES)]
    old = {k: 0 for k in words}
    new = {}
    for rnd in range(3):
        new = {k: rng.getrandbits(32) for k in words}
        for (s, w), v in new.items():
            await tb.write(R.GROUP_BASE + s * R.GROUP_STRIDE + w, v)
        # every cycle the read port reads a random one of the words; a read in a cycle without
        # hold returns (two cycles later) the old word before the swap, the new one after it
        seen = []
        done = [False]

        async def reader(seen, done):
            pend = []
            while not done[0]:
                await Timer(1, "ns")
                k0 = rng.choice(words)
                d.acl_raddr.value = acl_addr(*k0)
                await ReadOnly()
                pend.append((k0, int(d.hold.value), int(d.live.value)))
                if len(pend) > 2:
                    a0, held, lv = pend.pop(0)
                    if not held:
                        seen.append((lv, a0, int(d.acl_rdata.value)))
                await RisingEdge(d.clk)
        live0 = int(d.live.value)
        task = cocotb.start_soon(reader(seen, done))
        for _ in range(20):
            await RisingEdge(d.clk)
        await commit_and_wait(tb)
        for _ in range(20):
            await RisingEdge(d.clk)
        done[0] = True
        await task
        before = [x for x in seen if x[0] == live0]
        after = [x for x in seen if x[0] != live0]
        assert len(before) >= 20 and len(after) >= 15, (len(before), len(after))
        for _lv, a0, v0 in before:
            assert v0 == old[a0], (rnd, "before the swap", a0, hex(v0))
        for _lv, a0, v0 in after:
            assert v0 == new[a0], (rnd, "after the swap", a0, hex(v0))
        old = new
    await Timer(1, "ns")
    # reset: the shadow RAM keeps its words, but a word not written since reads as 0 at the
    # next commit (even where GROUP_CTRL says the slot has a redirect-list)
    await tb.reset()
    await tb.write(R.GROUP_BASE + 4 * R.GROUP_STRIDE + R.GROUP_CTRL, R.MAX_ACL_ENTRIES << R.GROUP_CTRL_NUM_ACL_SHIFT)
    await tb.write(R.GROUP_BASE + 7 * R.GROUP_STRIDE + R.ACL_DST, 0x0A0B0C0D)
    await commit_and_wait(tb)
    assert (int(d.grp_ctrl.value) >> (32 * 4)) & 0xFFFFFFFF == R.MAX_ACL_ENTRIES << R.GROUP_CTRL_NUM_ACL_SHIFT
    for k in words:
        await Timer(1, "ns")
        d.acl_raddr.value = acl_addr(*k)
        for _ in range(3):
            await RisingEdge(d.clk)
        await ReadOnly()
        want = 0x0A0B0C0D if k == (7, R.ACL_DST) else 0
        assert int(d.acl_rdata.value) == want, (k, old[k])


@cocotb_test
async def test_table_strobes(dut):
    tb = TB(dut)
    await tb.reset()
    rng = random.Random(3)
    exp_t = []
    for _ in range(6):
        slot, ci = rng.randrange(8), rng.randrange(32)
        v = rng.getrandbits(32)
        await tb.write(R.CACHE_BASE + slot * R.CACHE_STRIDE + 4 * ci + R.CACHE_ADDRESS, v)
        exp_t.append((0, slot * 32 + ci, v))
        await tb.write(R.CACHE_BASE + slot * R.CACHE_STRIDE + 4 * ci + R.CACHE_METHOD, v ^ 5)
        exp_t.append((1, slot * 32 + ci, v ^ 5))
    for _ in range(6):
        slot, w = rng.randrange(8), rng.randrange(64)
        v = rng.getrandbits(32)
        await tb.write(R.BUCKET_BASE + slot * R.BUCKET_STRIDE + w, v)
        exp_t.append((2, slot * 64 + w, v))
    for _ in range(6):
        slot, s, w = rng.randrange(8), rng.randrange(4), rng.randrange(2)
        v = rng.getrandbits(32)
        await tb.write(R.MASKSET_BASE + slot * R.MASKSET_STRIDE + 2 * s + w, v)
        exp_t.append((3, slot * 8 + s * 2 + w, v))
    for _ in range(6):
        slot, w = rng.randrange(8), rng.randrange(128)
        v = rng.getrandbits(32)
        await tb.write(R.MASKTAB_BASE + slot * R.MASKTAB_STRIDE + w, v)
        exp_t.append((4, slot * 128 + w, v))
    # the cache-source index: heads (the last one too: the L2-return run) and list words
    for f in (0, R.SRCIDX_L2, rng.randrange(256)):
        v = rng.getrandbits(32)
        await tb.write(R.SRCIDX_HEAD + f, v)
        exp_t.append((5, f, v))
    for w in (0, R.SRCIDX_LIST_COUNT - 1, rng.randrange(R.SRCIDX_LIST_COUNT)):
        v = rng.getrandbits(32)
        await tb.write(R.SRCIDX_LIST + w, v)
        exp_t.append((6, w, v))
    for _ in range(3):
        await RisingEdge(dut.clk)
    # each table uses the low bits of t_addr it needs (fpga_core: cache tables 8, bucket 9,
    # mask positions 6, mask table 10, source index 9); the others are don't-care
    width = {0: 8, 1: 8, 2: 9, 3: 6, 4: 10, 5: 9, 6: 9}
    got = [(sel, a & ((1 << width[sel]) - 1), v) for sel, a, v in tb.t_writes]
    assert got == exp_t, (got[:4], exp_t[:4])
    # learnt state: CACHE_MAC_LO stages, CACHE_MAC_HI writes {port_known, mac_known, port, mac}
    exp_l = []
    for _ in range(5):
        slot, ci = rng.randrange(8), rng.randrange(32)
        lo, hi = rng.getrandbits(32), rng.getrandbits(24)
        cb = R.CACHE_BASE + slot * R.CACHE_STRIDE + 4 * ci
        await tb.write(cb + R.CACHE_MAC_LO, lo)
        await tb.write(cb + R.CACHE_MAC_HI, hi)
        for _ in range(6):                # ln_wr is held until acknowledged
            await RisingEdge(dut.clk)
        await ReadOnly()
        assert int(dut.ln_wr.value) == 0
        await RisingEdge(dut.clk)
        data = (hi >> 17 & 1) << 53 | (hi >> 16 & 1) << 52 | (hi >> 20 & 15) << 48 | (hi & 0xFFFF) << 32 | lo
        exp_l.append((slot * 32 + ci, data))
    assert tb.ln_writes == exp_l, ([(i, hex(x)) for i, x in tb.ln_writes], [(i, hex(x)) for i, x in exp_l])
    # no table write went to the shadow tables
    assert len(tb.t_writes) == len(exp_t)


@cocotb_test
async def test_counter_read_strobes(dut):
    """Counter addresses strobe the counter RAMs instead of answering (they answer)."""
    tb = TB(dut)
    await tb.reset()
    cases = []
    for port in (0, 1):
        for off in range(R.CNT_CLOSED_DROP + 1):
            word = port << 4 | (off >> 1 if off < 4 else off - 2)
            if off == R.CNT_TRUNCATED:
                word = 48 + port                # wccp_stats: cause 10 in a word of its own
            if off == R.CNT_CLOSED_DROP:
                word = 50 + port                # and cause 11
            hi = (off & 1) if off < 4 else 0
            cases.append((R.PORTCNT_BASE + port * R.PORTCNT_STRIDE + off, (0, 0, 1, word, hi)))
        for off in (R.CNT_CLOSED_DROP + 1, 0x16, 0x1A, 0x1F):   # past the block (0x16, 0x1A: a[4], a[1] set)
            cases.append((R.PORTCNT_BASE + port * R.PORTCNT_STRIDE + off, None))
    for slot in (0, 5, 7):
        for off in range(4):
            word = 0b100000 | slot << 1 | off >> 1
            cases.append((R.SLOTCNT_BASE + slot * R.SLOTCNT_STRIDE + off, (0, 0, 1, word, off & 1)))
        cases.append((R.SLOTCNT_BASE + slot * R.SLOTCNT_STRIDE + 4, None))
    cases.append((R.CACHECNT_BASE + 17, "cc"))
    cases.append((R.BUCKETCNT_BASE + 0x7FF, "bc"))
    for a, want in cases:
        st = []
        valid, v = await tb.read(a, st)
        cc, bc, sr, word, hi = st[0]
        if want is None:
            assert (valid, v, cc, bc, sr) == (1, 0, 0, 0, 0), hex(a)
        elif want == "cc":
            assert (valid, cc, bc, sr) == (0, 1, 0, 0), hex(a)
        elif want == "bc":
            assert (valid, cc, bc, sr) == (0, 0, 1, 0), hex(a)
        else:
            assert valid == 0 and (cc, bc, sr, word, hi) == want, (hex(a), st[0], want)


@cocotb_test
async def test_watchdog(dut):
    tb = TB(dut)
    await tb.reset()
    d = dut

    async def status():
        # ACTIVE is registered: it follows a CONTROL/HEARTBEAT write one cycle later
        await RisingEdge(d.clk)
        return await tb.rd(R.STATUS)

    assert await status() == R.STATUS_WDT_EXPIRED
    await tb.write(R.WDT_TIMEOUT, 40)
    await tb.write(R.HEARTBEAT, 0)        # armed, but REDIRECT_EN is 0
    assert await status() == 0
    assert int(d.active.value) == 0
    await tb.write(R.CONTROL, 1)          # 0 -> 1 disarms: needs a fresh heartbeat
    assert await status() == R.STATUS_WDT_EXPIRED
    await tb.write(R.HEARTBEAT, 0xDEAD)
    assert await status() == R.STATUS_ACTIVE
    assert int(d.active.value) == 1
    left = await tb.rd(R.HEARTBEAT)
    assert 36 <= left <= 40, left
    # keep it alive with heartbeats every ~20 us
    for _ in range(4):
        for _ in range(20 * CLK_PER_US):
            await RisingEdge(d.clk)
        assert int(d.active.value) == 1
        await tb.write(R.HEARTBEAT, 1)
    # now stop: expires between 39 and 41 us later
    t0 = tb.cycle
    while int(d.active.value):
        await RisingEdge(d.clk)
        assert tb.cycle - t0 < 60 * CLK_PER_US
    dt = tb.cycle - t0
    # 40 us after the heartbeat (within one microsecond tick, minus the prescaler phase; the
    # write takes effect 3 cycles after reg_wr: registered decode)
    assert 39 * CLK_PER_US <= dt <= 40 * CLK_PER_US + 3, dt
    assert await status() == R.STATUS_WDT_EXPIRED
    assert await tb.rd(R.HEARTBEAT) == 0
    # re-arm; CONTROL 1 -> 1 does not disarm, CONTROL -> 0 drops active at once
    await tb.write(R.HEARTBEAT, 0)
    await tb.write(R.CONTROL, 1)
    assert await status() == R.STATUS_ACTIVE
    await tb.write(R.CONTROL, 0)
    assert await status() == 0 and int(d.active.value) == 0
    # timeout 0: never expires once armed
    await tb.write(R.WDT_TIMEOUT, 0)
    await tb.write(R.CONTROL, 1)
    await tb.write(R.HEARTBEAT, 0)
    for _ in range(100 * CLK_PER_US):
        await RisingEdge(d.clk)
    assert await status() == R.STATUS_ACTIVE


@pytest.mark.parametrize("pearson", [0, 1])
@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_regs(sim, pearson):
    wccp_tb.run_sim(sim, "wccp_regs", __file__,
                    sources=[wccp_tb.RTL / "wccp_regs.v", wccp_tb.RTL / "wccp_rst_buf.v", wccp_tb.RTL / "wccp_bram.v"],
                    parameters={"CLK_PER_US": CLK_PER_US, "BUILD_ID": BUILD_ID, "PEARSON": pearson},
                    extra_env={"WCCP_PEARSON": str(pearson)}, tag="pearson%d" % pearson)
