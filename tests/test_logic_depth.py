"""fpga/tools/logic_depth.py on a real yosys netlist: a deep combinational path between two
registers is reported over budget with its register named; the same function split by a
register stage is not."""
import json
import os
import re
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


def _synth_core(d, opts=""):
    """Synthesise fpga_core (fpga/rtl without the board top) into d/core.json; its path."""
    rtl = os.path.join(ROOT, "fpga", "rtl")
    srcs = " ".join(os.path.join(rtl, f) for f in sorted(os.listdir(rtl)) if f.endswith(".v") and f != "fpga.v")
    core = os.path.join(d, "core.json")
    yosys("read_verilog -I%s %s; synth_ecp5 %s-top fpga_core -json %s" % (rtl, srcs, opts, core), timeout=900)
    return core


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
        core = _synth_core(d)
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


# the decision core's bundle inputs (both ports' queue heads, from the far sides of the die)
BUNDLE_IN = ("in_dst_mac", "in_src_mac", "in_vlan", "in_is_ip", "in_ip_hdr_ok", "in_proto", "in_sip", "in_dip",
             "in_tcpudp", "in_totlen", "in_ihl", "in_l4w0", "in_l4b4", "in_len4", "in_len8")


def _module(nl, name):
    """The module of a -noflatten netlist whose name is name or a parametrised name's."""
    keys = [k for k in nl["modules"] if k == name or k.startswith("$paramod\\%s\\" % name)]
    assert keys, sorted(nl["modules"])
    return nl["modules"][keys[0]]


def _aliases(mod):
    """bit -> the names of the nets it is on (without bit indices; yosys keeps several)."""
    out = {}
    for n, v in mod["netnames"].items():
        for b in v["bits"]:
            if isinstance(b, int):
                out.setdefault(b, set()).add(n)
    return out


def _fed_by(mod, inputs):
    """{cell: (names, cells on its deepest path)} for every register, RAM or submodule
    instance with an input pin whose combinational cone reaches any of the module inputs; a
    register's names are those of its output net, an instance's its cell type."""
    cells = mod["cells"]
    alias = _aliases(mod)
    driver, _loads = logic_depth.connectivity(cells)
    src_bits = {b for p in inputs for b in mod["ports"][p]["bits"]}
    memo = {}
    out = {}
    for cn, c in cells.items():
        if c["type"] in logic_depth.COMB:
            continue
        for p, bits in c["connections"].items():
            if c.get("port_directions", {}).get(p) == "output" or p == "CLK":
                continue
            depth = [n for (sc, b), n in logic_depth.cone(cells, driver, bits, memo).items()
                     if sc is None and b in src_bits]
            if depth:
                q = c["connections"].get("Q", [None])[0]
                nm = alias.get(q, set()) if c["type"] == "TRELLIS_FF" else {c["type"]}
                out[cn] = (nm, max(out.get(cn, (None, 0))[1], max(depth)))
    return out


def test_cross_die_paths_stay_short():
    """The netlist as synthesis builds it, modules kept apart: two kinds of path that cross the
    die between a port's receive queue and commit unit (at its pins) and the one decision core
    stay a register and at most one LUT.
    - Every register of the decision core loaded from the queue heads' bundle fields (the
      bundle registers, the prefilter's query) is loaded through one LUT (the port
      multiplexer): nothing it computes from the bundle (ports, per-slot ports, hash key folds)
      is loaded straight from the queues.
    - A commit unit's counter events come from its own registers: nothing of the core's
      hand-off (ho, the decision's registers) reaches them, only the learnt-location writer's
      acknowledge (the learn event)."""
    with scratch_dir("test_crossdie") as d:
        nl = json.load(open(_synth_core(d, "-noflatten ")))
    fed = _fed_by(_module(nl, "wccp_decide"), BUNDLE_IN)
    deep = sorted((sorted(nm), depth) for nm, depth in fed.values() if depth != 1)
    assert not deep, "loaded from the queue heads through more than one cell: %s" % deep
    regs = [nm for nm, _d in fed.values() if nm != {"wccp_srcfilt"}]
    assert len(regs) >= 200 and len(regs) < len(fed), (len(regs), len(fed))      # the bundle, the query
    cu = _module(nl, "wccp_commit")
    cells = cu["cells"]
    alias = _aliases(cu)
    driver, _loads = logic_depth.connectivity(cells)
    port_of = {b: p for p, v in cu["ports"].items() for b in v["bits"]}
    seen = set()
    for c in cells.values():
        if c["type"] != "TRELLIS_FF":
            continue
        ev = {n for n in alias.get(c["connections"]["Q"][0], ()) if re.fullmatch(r"ev_(cause|slot|cache|bucket)", n)}
        if ev:
            seen |= ev
            srcs = {port_of.get(b, b) for (sc, b) in logic_depth.cone(cells, driver, c["connections"]["DI"])
                    if sc is None}
            assert srcs <= {"lr_ack"}, (ev, srcs)
    assert seen == {"ev_cause", "ev_slot", "ev_cache", "ev_bucket"}, seen
