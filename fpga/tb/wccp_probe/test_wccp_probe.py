"""wccp_probe: the PROBE register block. Packet out: the buffer's first LEN bytes leave once
per port of the mask (port 0 first), each as one frame towards the right egress (req), with
m_last on the last byte, under a random m_ready pattern; BUSY while sending, SENT counts
frames, a start while busy or with a bad LEN / no port is ignored. Capture ring: reports of
both ports (also in the same cycle) land in entry n mod 8 in arrival order (port 0 first),
ARPCAP_COUNT counts them. Reads answer exactly four cycles after reg_rd (like wccp_regs);
addresses outside the block read nothing. (Cycle c = the cycle with reg_rd: rvalid in c + 4.)"""
import random

import pytest
import wccp_tb
from wccp import regmap as R
from wccp_tb import Clock, ReadOnly, RisingEdge, Timer, cocotb, cocotb_test


class TB:
    def __init__(self, dut, seed):
        self.dut = dut
        self.rng = random.Random(seed)
        self.frames = []            # (egress, bytes, m_last only on the last byte)
        self.cur = None
        self.ready_p = 0.7
        cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start())
        for s in ("reg_wr", "reg_rd", "reg_addr", "reg_wdata", "cap0_valid", "cap1_valid",
                  "cap0_data", "cap1_data", "m_ready"):
            getattr(dut, s).value = 0

    async def reset(self):
        self.dut.rst.value = 1
        for _ in range(3):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        cocotb.start_soon(self.egress())

    async def egress(self):
        """The registered grant: m_ready random while a request is up; pops recorded (the byte
        on m_data in a cycle with m_valid and m_ready is popped at the cycle's end)."""
        d = self.dut
        while True:
            await RisingEdge(d.clk)
            await ReadOnly()
            req = int(d.req.value)
            rdy = int(req != 0 and self.rng.random() < self.ready_p)
            if int(d.m_valid.value) and rdy:
                assert req in (1, 2), "a byte popped without a one-hot request (req %d)" % req
                if self.cur is None:
                    self.cur = [req >> 1, bytearray(), []]
                assert self.cur[0] == req >> 1, "egress changed mid-frame"
                self.cur[1].append(int(d.m_data.value))
                self.cur[2].append(int(d.m_last.value))
                if int(d.m_last.value):
                    self.frames.append((self.cur[0], bytes(self.cur[1]), self.cur[2]))
                    self.cur = None
            await Timer(1, "ns")
            d.m_ready.value = rdy

    async def write(self, addr, v):
        d = self.dut
        await RisingEdge(d.clk)
        await Timer(1, "ns")
        d.reg_addr.value = addr
        d.reg_wdata.value = v
        d.reg_wr.value = 1
        await RisingEdge(d.clk)
        await Timer(1, "ns")
        d.reg_wr.value = 0

    async def read(self, addr):
        d = self.dut
        await RisingEdge(d.clk)
        await Timer(1, "ns")
        d.reg_addr.value = addr
        d.reg_rd.value = 1
        await RisingEdge(d.clk)         # reg_rd is sampled at the end of cycle 0
        await Timer(1, "ns")
        d.reg_rd.value = 0
        for cyc in range(1, 8):         # cycle cyc starts with this edge
            await RisingEdge(d.clk)
            await ReadOnly()
            if int(d.rvalid.value):
                assert cyc == 3, "read of 0x%06X answered in cycle %d" % (addr, cyc + 1)
                v = int(d.rdata.value)
                await Timer(1, "ns")
                return v
        await Timer(1, "ns")
        return None

    async def wait_idle(self):
        for _ in range(2000):
            if not (await self.read(R.PKTOUT_CTRL)) & R.PKTOUT_BUSY:
                return
        raise AssertionError("PKTOUT stays BUSY")


@cocotb_test
async def test_packet_out(dut):
    tb = TB(dut, 3)
    await tb.reset()
    sent = 0
    for k in range(24):
        n = tb.rng.randrange(14, 65)
        data = bytes(tb.rng.randrange(256) for _ in range(64))
        for w in range(16):
            await tb.write(R.PKTOUT_DATA + w, int.from_bytes(data[4 * w:4 * w + 4], "big"))
        ports = tb.rng.choice([1, 2, 3])
        tb.ready_p = tb.rng.choice([1.0, 0.7, 0.3])
        before = len(tb.frames)
        await tb.write(R.PKTOUT_CTRL, n | ports << R.PKTOUT_PORTS_SHIFT)
        assert (await tb.read(R.PKTOUT_CTRL)) & R.PKTOUT_BUSY
        await tb.write(R.PKTOUT_CTRL, 20 | 3 << R.PKTOUT_PORTS_SHIFT)      # ignored: busy
        await tb.write(R.PKTOUT_DATA, 0xDEADBEEF)   # (not to be done while busy: the frame
        await tb.wait_idle()                        #  sent may or may not carry it)
        want = [p for p in (0, 1) if ports >> p & 1]
        got = tb.frames[before:]
        assert [g[0] for g in got] == want, (k, got, want)
        for g in got:
            assert len(g[1]) == n and g[1][4:] == data[4:n], (k, g[1].hex(), data[:n].hex())
            assert g[1][:4] in (data[:4], bytes.fromhex("deadbeef"))
            assert g[2] == [0] * (n - 1) + [1]
        sent += len(want)
        assert (await tb.read(R.PKTOUT_CTRL)) >> R.PKTOUT_SENT_SHIFT == sent
    # a bad LEN or no port: nothing
    for v in (13, 65, 0, 60):
        await tb.write(R.PKTOUT_CTRL, v)
    for _ in range(200):
        await RisingEdge(dut.clk)
    assert (await tb.read(R.PKTOUT_CTRL)) == sent << R.PKTOUT_SENT_SHIFT
    assert int(dut.req.value) == 0


@cocotb_test
async def test_capture_ring(dut):
    tb = TB(dut, 4)
    await tb.reset()
    d = dut
    want = []
    for k in range(21):
        both = k % 4 == 3
        port = tb.rng.randrange(2)
        caps = []
        for p in ((0, 1) if both else (port,)):
            sip, mac = tb.rng.getrandbits(32), tb.rng.getrandbits(48)
            caps.append((p, sip, mac))
            getattr(d, "cap%d_data" % p).value = sip << 48 | mac
            getattr(d, "cap%d_valid" % p).value = 1
        want += caps
        await RisingEdge(d.clk)
        await Timer(1, "ns")
        d.cap0_valid.value = 0
        d.cap1_valid.value = 0
        for _ in range(tb.rng.randrange(2, 6)):
            await RisingEdge(d.clk)
        if k in (5, 20):
            count = await tb.read(R.ARPCAP_COUNT)
            assert count == len(want), (count, len(want))
            for i in range(max(0, count - 8), count):
                e = i % 8
                sip = await tb.read(R.ARPCAP_SIP + 4 * e)
                hi = await tb.read(R.ARPCAP_MAC_HI + 4 * e)
                lo = await tb.read(R.ARPCAP_MAC_LO + 4 * e)
                p, wsip, wmac = want[i]
                assert (sip, hi, lo) == (wsip, (wmac >> 32) | p << R.ARPCAP_PORT_SHIFT, wmac & 0xFFFFFFFF), (i, e)
                assert await tb.read(R.ARPCAP_SIP + 4 * e + 3) == 0
    # outside the block: no answer from it
    for a in (R.PROBE_BASE - 1, R.PROBE_BASE + 0x40, R.ID):
        assert await tb.read(a) is None


@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_probe(sim):
    wccp_tb.run_sim(sim, "wccp_probe", __file__, sources=[wccp_tb.RTL / "wccp_probe.v"])
