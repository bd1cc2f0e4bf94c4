"""wccp_pearson_rom: the RFC 3074 mixing table (words 0-255) and the identity (256-511) in
one block RAM, read 2 cycles after the address. Random and sweeping addresses against
firmware/wccp/pearson.py's table (which tests/test_pearson.py checks against the RFC's C
code), in four builds:

- `behav`: the behavioural branch (what the other testbenches simulate);
- `prim`: the ECP5 branch (wccp_bram's DP16KD with its output registers and the table in
  INITVAL, what synthesis builds) on the DP16KD model of fpga/tb/ecp5_sim.v;
- `yosys-prim`: the ECP5 branch after yosys read it (the INITVAL values nextpnr gets);
- `yosys-ref`: a plain initialised memory (ref_pearson_rom.v) mapped to a DP16KD by yosys'
  own rules, on the model: this checks the model's reading of INITVAL against yosys, so that
  the `prim` builds check wccp_bram's INITVAL encoding.
"""
import os
import pathlib
import random
import re

import pytest
import wccp_tb
from wccp_tb import Clock, ReadOnly, RisingEdge, Timer, cocotb, cocotb_test
from wccp.pearson import MIX

HERE = pathlib.Path(__file__).resolve().parent
VARIANTS = ["behav", "prim", "yosys-prim", "yosys-ref"]
SOURCES = [wccp_tb.RTL / "wccp_pearson_rom.v", wccp_tb.RTL / "wccp_bram.v"]


def _word(a):
    return a & 0xFF if a >= 256 else MIX[a]


@cocotb_test
async def test_table(dut):
    rng = random.Random(int(os.environ.get("ROM_SEED", "3074")))
    dut.addr.value = 0
    await Timer(1, "ns")
    cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start())
    # every word once in order, then random addresses
    addrs = list(range(512)) + [rng.randrange(512) for _ in range(1500)]
    pipe = [None, None]             # the addresses of the last two edges
    seen = set()
    checked = 0
    for a in addrs + [0, 0]:
        await RisingEdge(dut.clk)
        await ReadOnly()
        q = dut.q.value
        if pipe[0] is not None:
            assert q.is_resolvable, (pipe[0], str(q))
            assert int(q) == _word(pipe[0]), ("word %d" % pipe[0], int(q), _word(pipe[0]))
            seen.add(pipe[0])
            checked += 1
        await Timer(1, "ns")
        dut.addr.value = a
        pipe = [pipe[1], a]
    assert len(seen) == 512 and checked >= 2000, (len(seen), checked)


def _yosys_netlist(kind, out):
    if kind == "yosys-ref":
        srcs, top = [HERE / "ref_pearson_rom.v"], "ref_pearson_rom"
        body = ("proc; opt; memory -nomap; opt; memory_libmap -lib +/lattice/brams_16kd.txt "
                "-no-auto-distributed; techmap -map +/lattice/brams_map_16kd.v; opt_clean")
    else:
        srcs, top, body = SOURCES, "wccp_pearson_rom", "proc; opt_clean"
    out, n = wccp_tb.yosys_netlist(srcs, top, out, body, name="wccp_pearson_rom")
    assert n == 1, "%s: %d DP16KD" % (kind, n)        # else the check proves nothing
    inits = re.findall(r"\.INITVAL_[0-9A-F]{2}\(320'h([0-9a-f]+)\)", out.read_text())
    assert any(int(v, 16) for v in inits), "%s: no INITVAL content" % kind
    return out


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_pearson_rom(sim, variant):
    ecp5 = wccp_tb.TB / "ecp5_sim.v"
    if variant == "behav":
        kw = dict(sources=SOURCES)
    elif variant == "prim":
        kw = dict(sources=SOURCES + [ecp5], defines={"WCCP_ECP5_BRAM": 1})
    else:
        d = wccp_tb.ROOT / "build" / "sim" / ("prom-netlist-%s-%s" % (sim, variant))
        d.mkdir(parents=True, exist_ok=True)
        kw = dict(sources=[_yosys_netlist(variant, d / "netlist.v"), ecp5])
    wccp_tb.run_sim(sim, "wccp_pearson_rom", __file__, tag=variant, **kw)
