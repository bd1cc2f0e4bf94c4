"""fpga_core with active discovery: the firmware's driver (wccp.fpga.FpgaDataPlane, its register
writes recorded and replayed onto the register bus) finds a cache that never sent a frame.

Every register write also goes into wccp.fwdmodel_regs.ModelRegisterFile (the twin's fast mode):
every output frame of the RTL is compared byte for byte with that model's (the probe frames
PKTOUT sends, padded with a new FCS, included), and the ARP capture ring read back through the
driver equals the model's. Then packet out under load: probes sent while both ports forward
traffic come out whole, between whole frames. The per-(slot, cache) count of frames sent to the
origin for want of a location (UNKCNT) agrees with the model.
"""
import os
import random
import struct

import pytest
import wccp_tb
from cocotbext.eth import GmiiFrame
from wccp import regmap as R
from wccp.discovery import Discovery
from wccp.fwdmodel import with_fcs
from wccp.fwdmodel_regs import ModelRegisterFile
from wccp_hw import HwDriver
from wccp_tb import RisingEdge, Timer, cocotb_test

APPL_MAC = bytes.fromhex("02aa00000001")
ROUTER_ID = 0x0A000001
CACHE_IP = 0x0A000032
CACHE_MAC = bytes.fromhex("02cc00000032")
GW_MAC = bytes.fromhex("02ee000000fe")


def http(src, dst, sport):
    tcp = struct.pack(">HHIIBBHHH", sport, 80, 1, 0, 0x50, 0x18, 8192, 0, 0) + b"GET / HTTP/1.0\r\n\r\n"
    ip = bytearray(struct.pack(">BBHHHBBHII", 0x45, 0, 20 + len(tcp), 1, 0, 64, 6, 0, src, dst))
    s = sum(struct.unpack(">10H", ip))
    s = (s & 0xFFFF) + (s >> 16)
    ip[10:12] = struct.pack(">H", 0xFFFF - ((s & 0xFFFF) + (s >> 16)))
    f = GW_MAC + bytes.fromhex("02c100000001") + b"\x08\x00" + bytes(ip) + tcp
    return with_fcs(f + bytes(max(0, 60 - len(f))))


def arp_reply(spa, mac, dst=APPL_MAC, vlan=None):
    tag = struct.pack(">HH", 0x8100, vlan) if vlan is not None else b""
    f = dst + mac + tag + b"\x08\x06" + struct.pack(">HHBBH", 1, 0x0800, 6, 4, 2) + mac + \
        struct.pack(">I", spa) + dst + bytes(4)
    return with_fcs(f + bytes(max(0, 60 - len(f))))


class Rig:
    """The driver's writes, replayed onto the RTL's register bus and into the register model."""

    def __init__(self, tb):
        self.tb = tb
        self.regs = ModelRegisterFile()
        self.model = self.regs.model
        self.hw = HwDriver(tb.bus, on_write=self.regs.write_word)
        self.rec = self.hw.rec
        self.dp = self.hw.dp

    async def flush(self):
        await self.hw.flush()
        # (queued as if received on their egress: no other frame goes back out of its port
        # here, so their order against the forwarded frames is left open)
        for o, data in self.model.take_sent():
            self.tb.expected[o][o].append(data)
            self.tb.nexp[o] += 1

    async def read_block(self, base, n):
        return {base + i: await self.tb.bus.read(base + i) for i in range(n)}


async def setup(dut):
    from core_tb import TB
    tb = TB(dut)
    await tb.reset()
    rig = Rig(tb)
    d = rig.dp
    d.configure(ROUTER_ID, APPL_MAC)
    d.set_group(0, {"service_type": 0, "service_id": 0, "priority": 0, "protocol": 6,
                    "service_flags": 0, "ports": [0] * 8})
    d.set_caches(0, [{"address": CACHE_IP, "forward": 1, "ret": 1, "mac": None}])
    d.set_hash(0, bytes(256))
    d.commit()
    d.arm(0)
    d.heartbeat()
    await rig.flush()
    return tb, rig


@cocotb_test
async def test_discovery_through_the_driver(dut):
    tb, rig = await setup(dut)
    m = rig.model
    f = http(0xC0A80001, 0xCB007107, 40000)
    assert m.decide(0, f).reason == "cache_unknown"
    await tb.send(0, f, m)
    await tb.send(1, f, m)
    await tb.collect()
    # counted per (slot, cache): frames that went to the origin for want of a location
    unk = [await tb.bus.read(R.UNKCNT_BASE + i) for i in range(R.MAX_CACHES)]
    assert unk == m.counters()["cache_unknown_frames"][0] and unk[0] == 2, unk
    assert await tb.bus.read(R.UNKCNT_BASE + R.UNKCNT_STRIDE + 0) == 0
    # the firmware's discovery: one probe out of both ports
    disc = Discovery(rig.dp, APPL_MAC)
    disc.run(0, {CACHE_IP})
    await rig.flush()
    assert tb.nexp == [1, 1]
    await tb.collect()
    # the cache answers on port 1 (forwarded to port 0 and captured), other ARP is not captured
    await tb.send(1, arp_reply(CACHE_IP, CACHE_MAC), m)
    await tb.send(0, arp_reply(CACHE_IP + 1, CACHE_MAC, dst=b"\xff" * 6), m)
    await tb.send(0, arp_reply(CACHE_IP + 2, CACHE_MAC, vlan=7), m)
    await tb.collect()
    regs = await rig.read_block(R.PROBE_BASE, 0x40)
    rig.rec.read_fn = lambda a, n: [regs[a + i] for i in range(n)]
    assert rig.dp.arp_replies(0) == m.arp_replies(0) == (2, [(CACHE_IP, CACHE_MAC, 1), (CACHE_IP + 2, CACHE_MAC, 0)])
    # discovery reads the reply and sets the location by address: redirection starts
    disc.run(20, {CACHE_IP})
    rig.rec.read_fn = None
    await rig.flush()
    assert disc.location(CACHE_IP) == (CACHE_MAC, 1) and m.cache_location(0, 0) == (CACHE_MAC, 1)
    for i in range(6):
        g = http(0xC0A80001 + i, 0xCB007100 + i, 40000 + i)
        assert m.decide(0, g).reason == "redirect_gre"
        await tb.send(0, g, m)
    await tb.collect()
    tx = [await tb.bus.read(R.PORTCNT_BASE + p * R.PORTCNT_STRIDE + R.CNT_TX_FRAMES) for p in range(2)]
    assert tx == m.counters()["tx_frames"], (tx, m.counters()["tx_frames"])
    assert await tb.bus.read(R.PKTOUT_CTRL) == 2 << R.PKTOUT_SENT_SHIFT


@cocotb_test
async def test_packet_out_under_load(dut):
    """Probes between forwarded frames on both egresses: every frame whole, none lost; both
    ports' ARP replies in the same cycle are both captured."""
    tb, rig = await setup(dut)
    m = rig.model
    rng = random.Random(int(os.environ.get("WCCP_SEED", "5")))
    for _round in range(4):
        for i in range(12):
            f = bytearray(http(0xC0A80100 + i, 0xCB007000 + i, 30000 + i)[:-4])
            f[36:38] = (443).to_bytes(2, "big")         # not the group's port: forwarded
            f += bytes(rng.randrange(0, 200))
            await tb.send(rng.randrange(2), with_fcs(bytes(f)), m)
        n = rng.randrange(14, 65)
        rig.dp.send_frame(rng.choice([1, 2, 3]), bytes(rng.randrange(256) for _ in range(n)))
        # BUSY: wait (as the driver does) before the next send
        while await tb.bus.read(R.PKTOUT_CTRL) & R.PKTOUT_BUSY:
            pass
        await rig.flush()
        await tb.collect()
    # replies on both ports at the same moment
    a, b = arp_reply(CACHE_IP, CACHE_MAC), arp_reply(CACHE_IP + 9, bytes.fromhex("02cc00000099"))
    m.process(0, a)
    m.process(1, b)
    await RisingEdge(dut.clk)
    await Timer(1, "ns")
    tb.src[0].send_nowait(GmiiFrame.from_raw_payload(a))
    tb.src[1].send_nowait(GmiiFrame.from_raw_payload(b))
    for _ in range(400):
        await RisingEdge(dut.clk)
    n = await tb.bus.read(R.ARPCAP_COUNT)
    regs = await rig.read_block(R.PROBE_BASE, 0x40)
    rig.rec.read_fn = lambda a_, k: [regs[a_ + i] for i in range(k)]
    assert n == 2 and sorted(rig.dp.arp_replies(0)[1]) == sorted(m.arp_replies(0)[1])


@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_fpga_core_probe(sim):
    wccp_tb.run_sim(sim, "fpga_core", __file__, parameters={"CLK_PER_US": 125},
                    testcase=os.environ.get("WCCP_TESTCASE") or None)
