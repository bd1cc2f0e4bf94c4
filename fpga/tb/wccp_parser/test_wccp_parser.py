"""wccp_parser: Ethernet (+802.1Q), IPv4 validity (IHL, options, fragments, lengths), ports."""
import pathlib
import random
import struct
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import wccp_tb  # noqa: E402

try:
    import cocotb
    from cocotb.clock import Clock
    from cocotb.triggers import ReadOnly, RisingEdge
except ImportError:
    cocotb = None


def _test(f):
    return cocotb.test()(f) if cocotb is not None else f


def expect(frame):
    """Reference field extraction (datapath spec), frame without FCS."""
    e = {"dst_mac": int.from_bytes(frame[0:6], "big"), "src_mac": int.from_bytes(frame[6:12], "big"),
         "frame_len": len(frame)}
    l3 = 14
    et = struct.unpack_from(">H", frame, 12)[0]
    e["vlan"] = int(et == 0x8100)
    if et == 0x8100:
        e["vlan_tci"] = struct.unpack_from(">H", frame, 14)[0]
        et = struct.unpack_from(">H", frame, 16)[0]
        l3 = 18
    e["is_ip"] = int(et == 0x0800)
    if not e["is_ip"]:
        e["ip_ok"] = 0
        return e
    vihl = frame[l3]
    ihl = (vihl & 15) * 4
    tl = struct.unpack_from(">H", frame, l3 + 2)[0]
    frag = struct.unpack_from(">H", frame, l3 + 6)[0]
    proto = frame[l3 + 9]
    ok = (vihl >> 4) == 4 and ihl >= 20 and tl >= ihl and l3 + tl <= len(frame) and (frag & 0x3FFF) == 0
    sp = dp = 0
    if ok and proto in (6, 17):
        if ihl + 4 <= tl:
            sp, dp = struct.unpack_from(">HH", frame, l3 + ihl)
        else:
            ok = False
    e["ip_ok"] = int(ok)
    if ok:
        e.update(proto=proto, sip=struct.unpack_from(">I", frame, l3 + 12)[0],
                 dip=struct.unpack_from(">I", frame, l3 + 16)[0], sport=sp, dport=dp, totlen=tl,
                 ihl=ihl // 4)
        if proto == 47:
            e["l4_word0"] = struct.unpack_from(">I", frame, l3 + ihl)[0]
    return e


def frames(rng):
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    from wccp_frames import MALFORMED, FrameGen
    g = FrameGen(rng, 0x0A000001, [0x0A010001], [b"\x02\xcc\x00\x00\x00\x01"], [0])
    out = []
    for _ in range(40):
        out.append(g.ip_frame(vlan=rng.choice([None, None, 5])))
    out.append(g.gre_return(0))
    out.append(g.gre_return(0, vlan=7, redirect_header=False))
    for _ in range(4):
        out.append(g.non_ip())
    for k in MALFORMED:
        if k in ("runt", "bad_fcs", "oversize"):
            continue
        for _ in range(3):
            out.append(g.malformed(k)[:-4])
    return [f + b"\x00" * max(0, 60 - len(f)) for f in out]


@_test
async def test_fields(dut):
    cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start())
    dut.rst.value = 1
    dut.s_valid.value = 0
    dut.s_last.value = 0
    dut.s_data.value = 0
    for _ in range(3):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    rng = random.Random(11)
    for f in frames(rng):
        for i, b in enumerate(f):
            dut.s_data.value = b
            dut.s_valid.value = 1
            dut.s_last.value = int(i == len(f) - 1)
            await RisingEdge(dut.clk)
        dut.s_valid.value = 0
        dut.s_last.value = 0
        # results in the third cycle after the last byte (two idle cycles between frames)
        for _ in range(2):
            await ReadOnly()
            assert int(dut.done.value) == 0
            await RisingEdge(dut.clk)
        await ReadOnly()
        assert int(dut.done.value) == 1
        e = expect(f)
        for k, v in e.items():
            got = int(getattr(dut, k).value)
            assert got == v, (k, hex(got), hex(v), f.hex())
        await RisingEdge(dut.clk)


@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_parser(sim):
    wccp_tb.run_sim(sim, "wccp_parser", __file__, sources=[wccp_tb.RTL / "wccp_parser.v"])
