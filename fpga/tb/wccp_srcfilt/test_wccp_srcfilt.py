"""wccp_srcfilt: the decision core's scan prefilter. Against a Python model of the two bit
sets: every written cache address or MAC answers "maybe" from two edges after its write on
(never a false "no"); a key whose 8-bit fold was never written answers "no"; the query is
sampled by q_en and answered after the third edge after that; a write of one kind never sets the other;
MAC bits only count once a cache method with L2 return was written (sticky)."""
import random

import pytest
import wccp_tb
from wccp_tb import Clock, ReadOnly, RisingEdge, Timer, cocotb, cocotb_test


def fold(k, nbytes):
    v = 0
    for i in range(nbytes):
        v ^= (k >> (8 * i)) & 0xFF
    return v


class TB:
    def __init__(self, dut):
        self.dut = dut
        for s in ("ip_wr", "mac_wr", "l2_wr", "q_en", "ip_key", "mac_key", "q_ip", "q_mac"):
            getattr(dut, s).value = 0
        cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start())
        self.ip_bits = set()
        self.mac_bits = set()
        self.l2 = False

    async def edge(self):
        await RisingEdge(self.dut.clk)
        await Timer(1, "ns")

    async def write(self, ip=None, mac=None, l2=False):
        d = self.dut
        d.ip_wr.value = ip is not None
        d.mac_wr.value = mac is not None
        d.l2_wr.value = l2
        if ip is not None:
            d.ip_key.value = ip
        if mac is not None:
            d.mac_key.value = mac
        await self.edge()
        d.ip_wr.value = 0
        d.mac_wr.value = 0
        d.l2_wr.value = 0
        # garbage on the keys without a write strobe must not set anything
        d.ip_key.value = random.getrandbits(32)
        d.mac_key.value = random.getrandbits(48)
        await self.edge()          # the registered write lands on this edge
        if ip is not None:
            self.ip_bits.add(fold(ip, 4))
        if mac is not None:
            self.mac_bits.add(fold(mac, 6))
        self.l2 = self.l2 or l2

    async def query(self, ip, mac):
        d = self.dut
        d.q_ip.value = ip
        d.q_mac.value = mac
        d.q_en.value = 1
        await self.edge()
        d.q_en.value = 0
        # the query registers hold while q_en is low, whatever the inputs do
        d.q_ip.value = random.getrandbits(32)
        d.q_mac.value = random.getrandbits(48)
        await self.edge()          # fold
        await self.edge()          # the 16 blocks read
        await RisingEdge(d.clk)    # the bit picked
        await ReadOnly()
        got = int(d.maybe.value)
        # the MAC half on its own (the core walks the L2-return run only on it)
        want_mac = int(self.l2 and fold(mac, 6) in self.mac_bits)
        assert int(d.maybe_mac.value) == want_mac, "maybe_mac %s, model %d" % (d.maybe_mac.value, want_mac)
        await Timer(1, "ns")
        return got

    def expect(self, ip, mac):
        return int(fold(ip, 4) in self.ip_bits or (self.l2 and fold(mac, 6) in self.mac_bits))


@cocotb_test
async def test_against_model(dut):
    random.seed(11)
    tb = TB(dut)
    await tb.edge()
    # power-up: nothing written, nothing matches
    for _ in range(50):
        assert await tb.query(random.getrandbits(32), random.getrandbits(48)) == 0
    ips, macs = [], []
    seen = {0: 0, 1: 0}
    l2_at = None
    for rnd in range(600):
        if rnd == 300:
            # from here on a cache returns at L2: learnt MACs start to count
            assert seen[0] > 20 and seen[1] > 20, seen
            await tb.write(l2=True)
            l2_at = dict(seen)
        r = random.random()
        if r < 0.15:
            ips.append(random.getrandbits(32))
            await tb.write(ip=ips[-1])
        elif r < 0.25:
            macs.append(random.getrandbits(48))
            await tb.write(mac=macs[-1])
        elif r < 0.3:
            ips.append(random.getrandbits(32))
            macs.append(random.getrandbits(48))
            await tb.write(ip=ips[-1], mac=macs[-1])
        # a written key, a written key of the other kind in the other field, or random keys
        kind = random.randrange(4)
        ip = random.choice(ips) if (kind == 0 and ips) else random.getrandbits(32)
        mac = random.choice(macs) if (kind == 1 and macs) else random.getrandbits(48)
        if kind == 2 and macs:
            ip = random.choice(macs) & 0xFFFFFFFF         # a MAC's bits in the address field
        want = tb.expect(ip, mac)
        got = await tb.query(ip, mac)
        assert got == want, (rnd, hex(ip), hex(mac), got, want)
        seen[got] += 1
        if kind == 0 and ips:
            assert got == 1, "a written cache address must never be filtered out"
        if kind == 1 and macs and tb.l2:
            assert got == 1, "a written MAC must never be filtered out once L2 return is in use"
    assert seen[0] - l2_at[0] > 20 and seen[1] - l2_at[1] > 20, (seen, l2_at)


@cocotb_test
async def test_write_to_query_timing(dut):
    """A query sampled on the edge that registers a write sees it; one sampled an edge
    earlier does not (the answer comes three edges after the sample)."""
    tb = TB(dut)
    await tb.edge()
    ip = 0x0A000001
    d = tb.dut
    d.q_ip.value = ip
    d.q_mac.value = 0
    d.q_en.value = 1
    await tb.edge()                 # edge -1: query A sampled
    d.ip_key.value = ip
    d.ip_wr.value = 1
    await tb.edge()                 # edge 0: write registered, query B sampled; A folded
    d.ip_wr.value = 0
    d.q_en.value = 0
    await tb.edge()                 # edge 1: the bit is set; A's blocks read (before); B folded
    await RisingEdge(d.clk)         # edge 2: A's bit picked; B's blocks read (after the set)
    await ReadOnly()
    assert int(d.maybe.value) == 0, "query A"
    await Timer(1, "ns")
    await RisingEdge(d.clk)         # edge 3: B's bit picked
    await ReadOnly()
    assert int(d.maybe.value) == 1, "query B"


@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_srcfilt(sim):
    wccp_tb.run_sim(sim, "wccp_srcfilt", __file__, sources=[wccp_tb.RTL / "wccp_srcfilt.v"])
