"""wccp_bram: block RAM with registered outputs (read data 2 cycles after the address, a
write leaves port A's read data unchanged, zero initialised), random traffic against a
model, in four builds per width:

- `behav`: the wrapper's behavioural branch (what every other testbench simulates);
- `prim`: the wrapper's ECP5 branch (DP16KD tiles with REGMODE=OUTREG, what synthesis
  builds) on the DP16KD model of fpga/tb/ecp5_sim.v;
- `yosys-prim`: the ECP5 branch after yosys read it (the netlist nextpnr gets), on the model;
- `yosys-ref`: a plain inferred memory (ref_bram.v) mapped to DP16KD by yosys' own rules
  (brams_16kd.txt / brams_map_16kd.v), on the model. This one checks the DP16KD model's pins
  (address bits per width, byte enables, write modes) against yosys, whose mapping is
  proven on hardware; the other builds then check the wrapper against the model.
"""
import os
import pathlib
import random
import re

import pytest
import wccp_tb
from wccp_tb import Clock, ReadOnly, RisingEdge, Timer, cocotb, cocotb_test

HERE = pathlib.Path(__file__).resolve().parent
# (AW, DW): x18 with 3 tiles and a short address, x18 full depth, x9, x4, a narrow x18 word
CONFIGS = [(8, 54), (10, 32), (11, 32), (12, 8), (9, 4)]
VARIANTS = ["behav", "prim", "yosys-prim", "yosys-ref"]



@cocotb_test
async def test_random(dut):
    aw = int(os.environ["BRAM_AW"])
    dw = int(os.environ["BRAM_DW"])
    rng = random.Random(aw * 100 + dw)
    dut.a_we.value = 0
    dut.a_addr.value = 0
    dut.a_wdata.value = 0
    dut.b_addr.value = 0
    await Timer(1, "ns")          # defined inputs before the first edge
    cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start())
    mem = {}
    pool = [rng.randrange(1 << aw) for _ in range(6)] + [0, (1 << aw) - 1]
    aq = aq2 = bq = bq2 = 0        # model of the two register stages per port
    checked = nonzero = 0
    for cyc in range(3000):
        await RisingEdge(dut.clk)
        await ReadOnly()
        got_a, got_b = dut.a_rdata.value, dut.b_rdata.value
        assert got_a.is_resolvable and got_b.is_resolvable, (cyc, str(got_a), str(got_b))
        assert int(got_a) == aq2, ("port A", cyc, hex(int(got_a)), hex(aq2))
        assert int(got_b) == bq2, ("port B", cyc, hex(int(got_b)), hex(bq2))
        checked += 1
        nonzero += (aq2 != 0) + (bq2 != 0)
        await Timer(1, "ns")
        # addresses mostly from a small pool, so that reads meet recent writes
        pick = (lambda: rng.choice(pool)) if rng.random() < 0.7 else (lambda: rng.randrange(1 << aw))
        wa, ra = pick(), pick()
        we = rng.random() < 0.4
        while we and ra == wa:      # port B reading the word port A writes: undefined
            ra = pick() if rng.random() < 0.5 else rng.randrange(1 << aw)
        wd = rng.randrange(1 << dw)
        dut.a_we.value, dut.a_addr.value, dut.a_wdata.value, dut.b_addr.value = int(we), wa, wd, ra
        # the edge that follows: both output registers take the RAM read of the last edge
        aq2, bq2 = aq, bq
        if not we:
            aq = mem.get(wa, 0)
        bq = mem.get(ra, 0)
        if we:
            mem[wa] = wd
    assert checked == 3000 and nonzero > 1000, (checked, nonzero)


def _yosys_netlist(kind, aw, dw, out):
    """Netlist of wccp_bram (ECP5 branch) or ref_bram (yosys' own mapping), parameters fixed."""
    if kind == "yosys-ref":
        top, src = "ref_bram", HERE / "ref_bram.v"
        body = ("proc; opt; memory -nomap; opt; memory_libmap -lib +/lattice/brams_16kd.txt "
                "-no-auto-distributed; techmap -map +/lattice/brams_map_16kd.v; opt_clean")
    else:
        top, src = "wccp_bram", wccp_tb.RTL / "wccp_bram.v"
        body = "proc; opt_clean"
    out, n = wccp_tb.yosys_netlist([src], top, out, body, chparams="-set AW %d -set DW %d" % (aw, dw),
                                   name="wccp_bram")
    assert n >= 1, "yosys did not map %s to DP16KD" % kind        # else the check proves nothing
    regmodes = set(re.findall(r'\.REGMODE_[AB]\("(\w+)"\)', out.read_text()))
    assert regmodes == ({"NOREG"} if kind == "yosys-ref" else {"OUTREG"}), regmodes
    return out


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("aw,dw", CONFIGS)
@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_bram(sim, aw, dw, variant):
    tag = "%s-%d-%d" % (variant, aw, dw)
    env = {"BRAM_AW": str(aw), "BRAM_DW": str(dw)}
    ecp5 = wccp_tb.TB / "ecp5_sim.v"
    if variant == "behav":
        kw = dict(sources=[wccp_tb.RTL / "wccp_bram.v"], parameters={"AW": aw, "DW": dw})
    elif variant == "prim":
        kw = dict(sources=[wccp_tb.RTL / "wccp_bram.v", ecp5], parameters={"AW": aw, "DW": dw},
                  defines={"WCCP_ECP5_BRAM": 1})
    else:
        d = wccp_tb.ROOT / "build" / "sim" / ("bram-netlist-%s-%s" % (sim, tag))    # per test: no shared file
        d.mkdir(parents=True, exist_ok=True)
        net = _yosys_netlist(variant, aw, dw, d / "netlist.v")
        kw = dict(sources=[net, ecp5])
    wccp_tb.run_sim(sim, "wccp_bram", __file__, extra_env=env, tag=tag, **kw)
