"""wccp_mac_tx: preamble/SFD, zero padding to 60 bytes, FCS, inter-frame gap, back-to-back."""
import random
import struct
import zlib

import pytest
import wccp_tb
from cocotbext.eth import GmiiSink
from wccp_tb import Clock, ReadOnly, RisingEdge, cocotb, cocotb_test


async def source(dut, payloads, aborts=None):
    """Offer `payloads` back to back, as fpga_core's builder + egress registers do: s_ready
    in cycle c lets the source pop a byte in cycle c + 1, presented in cycle c + 2; after a
    frame's last byte nothing pops until s_ready has been seen low. aborts[i] true: payload i's
    last byte carries s_abort."""
    aborts = aborts or [False] * len(payloads)
    fi, bi = 0, 0
    armed, go, shown = True, False, None
    while fi < len(payloads) or shown is not None:
        dut.s_start.value = int(fi < len(payloads) and armed)
        dut.s_valid.value = int(shown is not None)
        dut.s_data.value = shown[0] if shown else 0
        dut.s_last.value = int(shown[1]) if shown else 0
        dut.s_abort.value = int(shown[2]) if shown else 0
        await ReadOnly()
        ready = int(dut.s_ready.value)
        await RisingEdge(dut.clk)
        shown = None
        if go and armed and fi < len(payloads):
            p = payloads[fi]
            shown = (p[bi], bi == len(p) - 1, bi == len(p) - 1 and aborts[fi])
            bi += 1
            if bi == len(p):
                fi, bi, armed = fi + 1, 0, False
        elif not go:
            armed = True
        go = bool(ready)
    dut.s_valid.value = 0
    dut.s_start.value = 0


@cocotb_test
async def test_frames(dut):
    cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start())
    sink = GmiiSink(dut.gmii_txd, dut.gmii_tx_er, dut.gmii_tx_en, dut.clk, dut.rst)
    dut.rst.value = 1
    dut.s_valid.value = 0
    dut.s_last.value = 0
    dut.s_abort.value = 0
    dut.s_data.value = 0
    dut.s_start.value = 0
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
    # the source as fpga_core builds it: a byte requested by s_ready in cycle c arrives in
    # cycle c + 2; nothing after a frame's last byte until s_ready has been seen low
    await source(dut, payloads)
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


@cocotb_test
async def test_abort(dut):
    """Aborted (stomped) frames back to back with good ones: padding as usual, then the FCS
    inverted with gmii_tx_er high on exactly those 4 bytes; frame_done only for good frames,
    frame_aborted only for aborted ones, once each."""
    cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start())
    sink = GmiiSink(dut.gmii_txd, dut.gmii_tx_er, dut.gmii_tx_en, dut.clk, dut.rst)
    dut.rst.value = 1
    for n in ("s_valid", "s_last", "s_abort", "s_data", "s_start"):
        getattr(dut, n).value = 0
    for _ in range(4):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    rng = random.Random(5)
    spec = [(20, True), (60, False), (1, True), (60, True), (1514, True), (59, False),
            (61, True), (1514, False), (30, False), (45, True), (300, True), (1, False)]
    payloads = [bytes(rng.randrange(256) for _ in range(n)) for n, _ in spec]
    aborts = [a for _, a in spec]
    pulses = []

    async def mon():
        cyc = 0
        while True:
            await RisingEdge(dut.clk)
            await ReadOnly()
            cyc += 1
            d, a = int(dut.frame_done.value), int(dut.frame_aborted.value)
            assert not (d and a)
            if d:
                pulses.append(("done", int(dut.frame_len.value), cyc))
            if a:
                pulses.append(("abort", None, cyc))
    cocotb.start_soon(mon())
    await source(dut, payloads, aborts)
    for p, ab in zip(payloads, aborts, strict=True):
        f = await sink.recv()
        body = p + b"\x00" * max(0, 60 - len(p))
        fcs = struct.pack("<I", zlib.crc32(body) & 0xFFFFFFFF)
        assert bytes(f.get_payload()) == body
        n = len(f.data)
        assert n == f.get_preamble_len() + len(body) + 4
        if ab:
            assert bytes(f.get_fcs()) == bytes(x ^ 0xFF for x in fcs)
            assert f.error is not None and list(f.error) == [0] * (n - 4) + [1] * 4, f.error
        else:
            assert bytes(f.get_fcs()) == fcs
            assert f.error is None or not any(f.error)
    for _ in range(40):
        await RisingEdge(dut.clk)
    assert [k for k, _, _ in pulses] == ["abort" if a else "done" for a in aborts], pulses
    good = [p for p, a in zip(payloads, aborts, strict=True) if not a]
    assert [ln for k, ln, _ in pulses if k == "done"] == [max(60, len(p)) + 4 for p in good]


@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_mac_tx(sim):
    wccp_tb.run_sim(sim, "wccp_mac_tx", __file__, sources=[wccp_tb.RTL / "wccp_mac_tx.v"])
