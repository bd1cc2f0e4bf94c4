"""wccp_mac_tx: preamble/SFD, zero padding to 60 bytes, FCS, inter-frame gap, back-to-back."""
import pathlib
import random
import struct
import sys
import zlib

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import wccp_tb  # noqa: E402

try:
    import cocotb
    from cocotb.clock import Clock
    from cocotb.triggers import ReadOnly, RisingEdge
    from cocotbext.eth import GmiiSink
except ImportError:
    cocotb = None


def _test(f):
    return cocotb.test()(f) if cocotb is not None else f


@_test
async def test_frames(dut):
    cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start())
    sink = GmiiSink(dut.gmii_txd, dut.gmii_tx_er, dut.gmii_tx_en, dut.clk, dut.rst)
    dut.rst.value = 1
    dut.s_valid.value = 0
    dut.s_last.value = 0
    dut.s_data.value = 0
    for _ in range(4):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    rng = random.Random(3)
    payloads = [bytes(rng.randrange(256) for _ in range(n)) for n in (1, 20, 59, 60, 61, 300, 1514)]
    en_hist = []

    async def mon():
        while True:
            await RisingEdge(dut.clk)
            await ReadOnly()
            en_hist.append((int(dut.gmii_tx_en.value), int(dut.gmii_txd.value)))
    cocotb.start_soon(mon())
    for p in payloads:       # offered back to back: valid is always high
        i = 0
        while i < len(p):
            dut.s_data.value = p[i]
            dut.s_valid.value = 1
            dut.s_last.value = int(i == len(p) - 1)
            await ReadOnly()
            ready = int(dut.s_ready.value)
            await RisingEdge(dut.clk)
            if ready:
                i += 1
    dut.s_valid.value = 0
    for p in payloads:
        f = await sink.recv()
        assert f.error is None or not any(f.error)
        body = p + b"\x00" * max(0, 60 - len(p))
        assert bytes(f.get_payload()) == body
        assert bytes(f.get_fcs()) == struct.pack("<I", zlib.crc32(body) & 0xFFFFFFFF)
    # inter-frame gaps between back-to-back frames are exactly 12 byte times
    runs, cur, prev = [], 0, None
    bursts = []
    for e, d in en_hist:
        if prev == 0 and e == 1 and cur:
            runs.append(cur)
        if e == 1:
            if prev != 1:
                bursts.append(bytearray())
            bursts[-1].append(d)
        cur = cur + 1 if e == 0 else 0
        prev = e
    assert len(bursts) == len(payloads)
    for b, p in zip(bursts, payloads, strict=True):
        assert bytes(b[:8]) == b"\x55" * 7 + b"\xd5", bytes(b[:8])
        assert len(b) == 8 + max(60, len(p)) + 4
    gaps = runs[-(len(payloads) - 1):]     # idle runs between the bursts
    assert len(gaps) == len(payloads) - 1 and all(g == 12 for g in gaps), gaps


@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_mac_tx(sim):
    wccp_tb.run_sim(sim, "wccp_mac_tx", __file__, sources=[wccp_tb.RTL / "wccp_mac_tx.v"])
