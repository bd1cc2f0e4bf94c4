"""wccp_arpcap: every good ARP reply addressed to the appliance is reported once, with its
sender IP and Ethernet source MAC, and nothing else is (wrong destination, a request, another
ethertype or ARP header, a bad frame, a second tag); the expected reports come from
wccp.fwdmodel (D16) fed the same frames. Frames arrive as from wccp_mac_rx: a byte per cycle
with random gaps, the last one after an idle cycle, m_last with m_good."""
import random
import struct

import pytest
import wccp_tb
from wccp.fwdmodel import ForwardingModel, with_fcs
from wccp_tb import Clock, ReadOnly, RisingEdge, Timer, cocotb, cocotb_test

APP_MAC = bytes.fromhex("02000000aa01")


def arp_frame(rng):
    """An ARP frame (or a near miss), without FCS, padded to at least 60 bytes."""
    kind = rng.randrange(10)
    dst = APP_MAC if kind < 7 else rng.choice([b"\xff" * 6, bytes.fromhex("02000000aa02")])
    src = bytes([2, 0, 0, 0, rng.randrange(256), rng.randrange(256)])
    op = 2 if rng.random() < 0.85 else 1
    hdr = [0x0001, 0x0800, 6, 4, op]
    if rng.random() < 0.1:                       # one field of the fixed header wrong
        i = rng.randrange(5)
        hdr[i] ^= 1 << rng.randrange(8 if i in (2, 3) else 16)
    sip = rng.getrandbits(32)
    arp = struct.pack(">HHBBH", *hdr) + src + struct.pack(">I", sip) + APP_MAC + bytes(4)
    tags = rng.choice([0, 0, 0, 1, 1, 2])
    et = b"".join(struct.pack(">HH", 0x8100, rng.randrange(4096)) for _ in range(tags))
    et += b"\x08\x06" if rng.random() < 0.95 else b"\x08\x00"
    f = dst + src + et + arp + bytes(rng.randrange(0, 30))
    return f + bytes(max(0, 60 - len(f)))


@cocotb_test
async def test_reports_match_the_model(dut):
    cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start())
    rng = random.Random(27)
    dut.appl_mac.value = int.from_bytes(APP_MAC, "big")
    dut.s_valid.value = 0
    dut.s_last.value = 0
    dut.s_good.value = 0
    dut.s_data.value = 0
    dut.rst.value = 1
    for _ in range(3):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    m = ForwardingModel()
    m.configure(0x0A000001, APP_MAC)
    m.commit()
    reports = []
    expected = []

    async def monitor():
        while True:
            await RisingEdge(dut.clk)
            await ReadOnly()
            if int(dut.cap_valid.value):
                reports.append((int(dut.cap_sip.value), int(dut.cap_mac.value).to_bytes(6, "big")))

    cocotb.start_soon(monitor())
    for _ in range(300):
        f = arp_frame(rng)
        good = rng.random() < 0.9
        # the model sees the frame with its FCS (a bad one: FCS broken)
        wire = with_fcs(f)
        if not good:
            wire = wire[:-1] + bytes([wire[-1] ^ 0x40])
        n0 = m.arp_replies(0)[0]
        m.process(rng.randrange(2), wire)
        expected += [(c[0], c[1]) for c in m.arp_replies(n0)[1]]
        for i, b in enumerate(f):
            last = i == len(f) - 1
            if last or rng.random() < 0.1:       # the MAC's idle cycle before the last byte
                dut.s_valid.value = 0
                dut.s_last.value = 0
                await RisingEdge(dut.clk)
            dut.s_data.value = b
            dut.s_valid.value = 1
            dut.s_last.value = int(last)
            dut.s_good.value = int(good and last)
            await RisingEdge(dut.clk)
        dut.s_valid.value = 0
        dut.s_last.value = 0
        dut.s_good.value = 0
        for _ in range(rng.randrange(0, 3)):
            await RisingEdge(dut.clk)
    for _ in range(6):
        await RisingEdge(dut.clk)
    await Timer(1, "ns")
    assert len(expected) > 100 and len(expected) < 250, len(expected)
    assert reports == expected, [(a, b) for a, b in zip(reports, expected, strict=False) if a != b][:3]


@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_arpcap(sim):
    wccp_tb.run_sim(sim, "wccp_arpcap", __file__, sources=[wccp_tb.RTL / "wccp_arpcap.v"])
