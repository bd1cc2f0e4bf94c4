"""wccp_mac_rx: preamble/SFD strip, FCS check and removal, runt/oversize, rx_er."""
import os
import random
import struct
import zlib

import pytest
import wccp_tb
from cocotbext.eth import GmiiFrame, GmiiSource
from wccp_tb import Clock, ReadOnly, RisingEdge, Timer, cocotb, cocotb_test


def fcs(d):
    return struct.pack("<I", zlib.crc32(d) & 0xFFFFFFFF)


class TB:
    def __init__(self, dut):
        self.dut = dut
        cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start())
        self.src = GmiiSource(dut.gmii_rxd, dut.gmii_rx_er, dut.gmii_rx_dv, dut.clk, dut.rst)
        self.frames = []
        self.cur = bytearray()
        self.early = 0           # early-stream bytes seen (e_valid), each checked against e_nz
        cocotb.start_soon(self._mon())

    async def _mon(self):
        d = self.dut
        while True:
            await RisingEdge(d.clk)
            await ReadOnly()
            if int(d.e_valid.value):
                self.early += 1
                assert int(d.e_nz.value) == (int(d.e_data.value) != 0), (int(d.e_data.value), int(d.e_nz.value))
            if int(d.m_valid.value):
                if not (int(d.m_last.value) and int(d.m_runt.value) and len(self.cur) == 0 and False):
                    self.cur.append(int(d.m_data.value))
                if int(d.m_last.value):
                    st = {"good": int(d.m_good.value), "runt": int(d.m_runt.value),
                          "bad_fcs": int(d.m_bad_fcs.value), "oversize": int(d.m_oversize.value),
                          "len": int(d.m_len.value)}
                    self.frames.append((bytes(self.cur), st))
                    self.cur = bytearray()

    async def reset(self):
        self.dut.rst.value = 1
        for _ in range(4):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0


@cocotb_test
async def test_frames(dut):
    tb = TB(dut)
    await tb.reset()
    rng = random.Random(5)
    cases = []
    for n in (60, 61, 100, 1514, 1518, 200):
        body = bytes(rng.randrange(256) for _ in range(n))
        cases.append((body + fcs(body), "good" if n + 4 <= 1522 else "oversize"))
    body = bytes(rng.randrange(256) for _ in range(1519))
    cases.append((body + fcs(body), "oversize"))
    body = bytes(rng.randrange(256) for _ in range(80))
    bad = bytearray(body + fcs(body))
    bad[30] ^= 0x10
    cases.append((bytes(bad), "bad_fcs"))
    body = bytes(rng.randrange(256) for _ in range(40))
    cases.append((body + fcs(body), "runt"))
    body = bytes(rng.randrange(256) for _ in range(1600))
    bad = bytearray(body + fcs(body))
    bad[5] ^= 1
    cases.append((bytes(bad), "bad_fcs"))       # bad FCS takes precedence over oversize
    body = bytes(rng.randrange(256) for _ in range(4200))
    cases.append((body + fcs(body), "oversize"))  # the length saturates at 4095
    body = bytes(60)                              # zero bytes on the early stream
    cases.append((body + fcs(body), "good"))
    for raw, _ in cases:
        await tb.src.send(GmiiFrame.from_raw_payload(raw))
    # a frame with rx_er in the middle
    body = bytes(rng.randrange(256) for _ in range(70))
    f = GmiiFrame.from_raw_payload(body + fcs(body))
    f.error = [0] * len(f.data)
    f.error[30] = 1
    await tb.src.send(f)
    cases.append((body + fcs(body), "bad_fcs"))
    while not (tb.src.empty() and tb.src.idle()):
        await Timer(1, "us")
    await Timer(1, "us")
    assert len(tb.frames) == len(cases), (len(tb.frames), len(cases))
    assert tb.early >= sum(len(raw) for raw, _ in cases), tb.early
    for (raw, kind), (data, st) in zip(cases, tb.frames, strict=True):
        assert st[kind] == 1, (kind, st)
        assert sum(st[k] for k in ("good", "runt", "bad_fcs", "oversize")) == 1, st
        assert st["len"] == min(len(raw), 4095)
        assert data == raw[:-4], (kind, len(data), len(raw))


@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_mac_rx(sim):
    wccp_tb.run_sim(sim, "wccp_mac_rx", __file__, sources=[wccp_tb.RTL / "wccp_mac_rx.v"])


_ = os
