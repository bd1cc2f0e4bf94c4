"""fpga/tools/logic_depth.py on a real yosys netlist: a deep combinational path between two
registers is reported over budget with its register named; the same function split by a
register stage is not."""
import json
import os
import subprocess
import sys

import logic_depth
from deep_design import ROOT, deep_netlist, scratch_dir, yosys


def test_logic_depth_finds_the_deep_register():
    with deep_netlist("test_logic_depth") as (d, js):
        cells, names, arrival, ends = logic_depth.analyse(json.load(open(js))["modules"]["deep"])
        worst = {}
        for t, cn, _p, _b in ends:
            k = logic_depth.reg_name(cells, names, cn)
            worst[k] = max(worst.get(k, 0.0), t)
        assert worst["y"] > worst["half"] > 0, worst      # the adder chain + compare is deeper
        assert worst["z"] < worst["half"], worst          # register to register: one net
        out = subprocess.run([sys.executable, os.path.join(ROOT, "fpga", "tools", "logic_depth.py"), js,
                              "--top", "deep", "--budget", "%.2f" % ((worst["y"] + worst["half"]) / 2), "--paths"],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        listed = [ln.split()[0] for ln in out.stdout.splitlines() if ln.startswith("  ") and not ln.startswith("   ")]
        assert listed == ["y"], out.stdout
        assert "-> y " in out.stdout and "LUT4" in out.stdout, out.stdout      # the path is printed


def _outreg_check(js, top):
    return subprocess.run([sys.executable, os.path.join(ROOT, "fpga", "tools", "logic_depth.py"), js,
                           "--top", top, "--require-outreg", "--brams"],
                          capture_output=True, text=True, timeout=120)


def test_every_block_ram_read_port_has_its_output_register():
    """The datapath as synthesis builds it: every DP16KD read port in use has REGMODE OUTREG
    (yosys' own mapping never sets it, and its 5.8 ns clock-to-out broke 125 MHz), the
    block RAMs fit the LFE5U-25F (56), and the 17 reset copies and the commit strobe's copy are
    not merged into one. The check itself flags yosys' own mapping."""
    with scratch_dir("test_outreg") as d:
        rtl = os.path.join(ROOT, "fpga", "rtl")
        srcs = " ".join(os.path.join(rtl, f) for f in sorted(os.listdir(rtl))
                        if f.endswith(".v") and f != "fpga.v")
        core = os.path.join(d, "core.json")
        yosys("read_verilog -I%s %s; synth_ecp5 -top fpga_core -json %s" % (rtl, srcs, core), timeout=900)
        out = _outreg_check(core, "fpga_core")
        assert out.returncode == 0, out.stdout[-3000:]
        ports = [ln for ln in out.stdout.splitlines() if " OUTREG " in ln or " NOREG " in ln]
        assert len(ports) >= 40 and all(" OUTREG " in ln for ln in ports), out.stdout[-3000:]
        cells = json.load(open(core))["modules"]["fpga_core"]["cells"].values()
        n = sum(1 for c in cells if c["type"] == "DP16KD")
        assert 40 <= n <= 56, n
        # the per-region reset copies and the register file's commit-strobe copy survive
        # synthesis (yosys would merge identical flip-flops)
        names = [n for n, c in json.load(open(core))["modules"]["fpga_core"]["cells"].items()
                 if c["type"] == "wccp_rst_buf"]
        commit = [n for n in names if n.endswith("cmb")]
        assert len(names) - len(commit) == 17 and len(commit) == 1, names      # 9 global, 3 per port, 1 per egress
        # negative: a plain inferred memory, mapped by yosys, has no output register
        ref = os.path.join(ROOT, "fpga", "tb", "wccp_bram", "ref_bram.v")
        rj = os.path.join(d, "ref.json")
        yosys("read_verilog %s; chparam -set AW 10 -set DW 32 ref_bram; synth_ecp5 -top ref_bram -json %s"
              % (ref, rj), timeout=900)
        bad = _outreg_check(rj, "ref_bram")
        assert bad.returncode == 1 and "NOREG" in bad.stdout, bad.stdout
