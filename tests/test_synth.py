"""`wccp synth`: the real YoWASP flow (yosys, nextpnr-ecp5, ecppack) for each FPGA board, one seed each: the
board file's."""
import json
import os
import re
import shutil
import subprocess
import sys
import uuid

import pytest

from wccptool import boards
from wccptool.cmd_synth import summarise

ROOT = boards.ROOT


# Synthesis takes minutes: results are cached on this machine, keyed by a hash of every flow input
# (RTL, constraints, board, flow script, tool versions), so CI re-runs the real flow whenever any
# of them changes and otherwise checks the stored result of that same flow.
SYNTH_CACHE = os.environ.get("WCCP_SYNTH_CACHE", "/var/cache/wccp-redirector/synth")


def wccp(*args, timeout=60):
    env = dict(os.environ, WCCP_SYNTH_CACHE=SYNTH_CACHE)
    return subprocess.run([sys.executable, "-m", "wccptool.cli"] + list(args), capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=env)


def test_synth_rejects_unknown_board():
    p = wccp("synth", "--board", "no_such_board")
    assert p.returncode == 2 and "unknown board" in p.stderr


@pytest.mark.slow
@pytest.mark.parametrize("board", ["colorlight_5a75b", "colorlight_i5", "colorlight_i9"])
def test_synth_board_flow(board):
    # YoWASP tools only see the working tree: the output directory must be inside it
    out = os.path.join(ROOT, "build", "test_synth_" + uuid.uuid4().hex[:8])
    try:
        p = wccp("synth", "--board", board, "--out", out, "--json", timeout=1800)
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-4000:]
        rep = json.loads(p.stdout)
        fb = boards.load(board)
        assert rep["board"] == board and rep["top"] == "fpga"
        f = fb["fpga"]
        assert rep["device"] == "%s-%s %s" % (f["device"], f["speed"], f["package"]), rep["device"]
        # every constrained pin of the LPF is a used IO cell
        sites = boards.lpf_sites(boards.constraint_files(fb))
        assert rep["util"]["TRELLIS_IO"][0] == len(sites)
        assert rep["util"]["TRELLIS_COMB"][0] > 0
        # the board build hashes with RFC 3074's Pearson hash too (its mixing-table RAM, filled)
        assert rep["pearson"] is True, rep
        # place and route as the board file says: its seed, the core clock held to the 150 MHz goal
        assert rep["seed"] == fb["pnr"]["seed"] and rep["core_mhz_constraint"] == fb["pnr"]["core_mhz"] == 150, rep
        assert rep["pnr_args"] == " ".join(fb["pnr"].get("args", [])), rep
        assert rep["yosys_args"] == " ".join(fb.get("synth", {}).get("args", [])), rep
        # timing closes: the core clock at 125 MHz (1 GbE GMII), both RGMII receive clocks too
        for phy in ("eth0_rxc", "eth1_rxc"):
            assert any(phy in clk and mhz >= 125.0 for clk, mhz in rep["fmax_mhz"].items()), rep["fmax_mhz"]
        core = [mhz for clk, mhz in rep["fmax_mhz"].items() if clk.endswith("$clk")]
        assert core and core[0] >= 125.0, rep["fmax_mhz"]
        # every core-clock endpoint against the 150 MHz goal (fpga/tools/endpoints.py): the
        # slowest listed register is nextpnr's critical path, i.e. 1000 / Fmax
        goal = rep["goal_150mhz"]
        assert goal["endpoints"] > 10000 and abs(goal["period_ns"] - 1000.0 / 150) < 1e-6, goal
        if core[0] < 149.9:
            assert goal["failing"] > 0 and abs(goal["groups"][0][2] - 1000.0 / core[0]) < 0.02, (goal, core)
        elif core[0] > 150.1:
            assert goal["failing"] == 0, (goal, core)
        bit = open(rep["bitstream"], "rb").read()
        assert bit[:2] == b"\xff\x00" and b"\xff\xff\xbd\xb3" in bit     # comment header, ECP5 preamble
        text = summarise(rep, fb["fpga"])
        assert "Fmax" in text and "TRELLIS_COMB" in text and f["package"] in text and "150 MHz goal" in text
        assert "Pearson hashing: in the build (CAPS_PEARSON)" in text, text
        core_line = [ln for ln in text.splitlines() if ln.startswith("Fmax") and ln.split()[1].endswith("$clk")]
        assert core_line and "needs 125 MHz: OK" in core_line[0], text
        assert "place and route: seed %d, core clock constrained to 150" % fb["pnr"]["seed"] in text, text
        # the same inputs again: served from the cache, same numbers, same bitstream
        # (--out relative to the working directory: made absolute, as the YoWASP tools need)
        p2 = wccp("synth", "--board", board, "--out", os.path.relpath(out + "-again", ROOT), "--json",
                  timeout=120)
        assert p2.returncode == 0, p2.stderr[-2000:]
        rep2 = json.loads(p2.stdout)
        assert rep2["bitstream"] == os.path.join(out + "-again", "fpga.bit"), rep2["bitstream"]
        assert rep2["cached"] is True and "result from cache" in p2.stderr
        assert rep2["fmax_mhz"] == rep["fmax_mhz"] and rep2["util"] == rep["util"]
        assert open(rep2["bitstream"], "rb").read() == bit
    finally:
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(out + "-again", ignore_errors=True)


def test_seed_sweep_keeps_the_fastest_seed():
    """fpga/tools/synth.py --seeds: every seed placed and routed in its own directory, the
    fastest core clock kept (its log, config and timing report copied up), all listed."""
    from deep_design import scratch_dir, synth_deep, yowasp_env     # a small design with one deep register path
    with scratch_dir("test_sweep") as out:
        synth_deep(out)
        env = yowasp_env()
        flow = [sys.executable, os.path.join(ROOT, "fpga", "tools", "synth.py"), "--top", "deep", "--out", out,
                "--pnr-only", "--freq", "400"]
        # extra nextpnr options as a board's pnr.args passes them (`wccp synth`: "--pnr-args=...")
        r = subprocess.run(flow + ["--seeds", "1,2,3", "--jobs", "2", "--pnr-args=--tmg-ripup"], cwd=ROOT,
                           capture_output=True, text=True, timeout=900, env=env)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        rep = json.load(open(os.path.join(out, "report.json")))
        assert rep["pnr_args"] == "--tmg-ripup", rep
        seeds = {int(k): v for k, v in rep["seeds"].items()}
        assert sorted(seeds) == [1, 2, 3] and all(v > 0 for v in seeds.values()), seeds
        assert seeds[rep["seed"]] == max(seeds.values()) == max(rep["fmax_mhz"].values()), rep
        for sd in seeds:
            log = open(os.path.join(out, "seed%d" % sd, "deep_nextpnr.log")).read()
            mhz = re.findall(r"Max frequency for clock\s+'\$glbnet\$clk[^']*': ([0-9.]+) MHz", log)
            assert mhz and float(mhz[-1]) == seeds[sd], (sd, mhz, seeds)
        # the kept files are the winner's
        kept = open(os.path.join(out, "deep_nextpnr.log")).read()
        assert kept == open(os.path.join(out, "seed%d" % rep["seed"], "deep_nextpnr.log")).read()
        goal = rep["goal_150mhz"]
        assert goal["failing"] == 0 or abs(goal["groups"][0][2] - 1000.0 / seeds[rep["seed"]]) < 0.02, goal
        # no seed finishes in time: a clear error, no report
        os.remove(os.path.join(out, "report.json"))
        r = subprocess.run(flow + ["--seeds", "4,5", "--pnr-timeout", "0.01"], cwd=ROOT, capture_output=True,
                           text=True, timeout=300, env=env)
        assert r.returncode != 0 and "no seed finished place and route" in r.stderr, r.stderr[-2000:]
        assert not os.path.exists(os.path.join(out, "report.json"))


def test_sweep_summary_reports_min_median_max():
    """A seed sweep's summary: min / median / max of the core clock over the seeds, and how many
    miss the 125 MHz the ports need (a seed without a result counts as a miss)."""
    from wccptool.cmd_synth import sweep_spread
    rep = {"board": "colorlight_5a75b", "top": "fpga", "seed": 3, "core_mhz_constraint": 150,
           "fmax_mhz": {"$glbnet$clk": 151.0}, "seeds": {"1": 120.5, "2": 140.0, "3": 151.0, "4": None}}
    text = summarise(rep, boards.load("colorlight_5a75b")["fpga"])
    assert "sweep: 4 seeds, core clock min 0.00 / median 130.25 / max 151.00 MHz; 2 under 125 MHz" in text, text
    assert sweep_spread({"7": 130.0, "8": 150.0, "9": 140.0})["median"] == 140.0
    assert sweep_spread({"7": 130.0}) is None and sweep_spread(None) is None


def test_sweep_command_carries_the_board_settings_and_the_sweep_limits():
    """`wccp synth --seeds`: the flow runs with the board's pnr.args and core clock constraint
    (the flow script alone applies neither), and --jobs / --pnr-timeout reach it; a single seed
    passes neither."""
    from wccptool.cli import build_parser
    from wccptool.cmd_synth import flow_command
    fb = boards.load("colorlight_i9")
    a = build_parser().parse_args(["synth", "--board", "colorlight_i9", "--seeds", "1,2,3", "--jobs", "1",
                                   "--pnr-timeout", "900"])
    cmd = flow_command(fb, a, "/o", 2, "synth.py")
    assert cmd[cmd.index("--seeds") + 1] == "1,2,3" and cmd[cmd.index("--jobs") + 1] == "1"
    assert cmd[cmd.index("--pnr-timeout") + 1] == "900" and cmd[cmd.index("--core-mhz") + 1] == "150"
    assert "--pnr-args=" + " ".join(fb["pnr"]["args"]) in cmd and "--tmg-ripup" in fb["pnr"]["args"]
    one = flow_command(fb, build_parser().parse_args(["synth", "--board", "colorlight_i9"]), "/o", 2, "synth.py")
    assert "--jobs" not in one and "--pnr-timeout" not in one and one[one.index("--seed") + 1] == "2"


def test_build_id_covers_the_include_files(tmp_path, monkeypatch):
    """The default BUILD_ID (what the firmware reads to know the bitstream) changes with any RTL
    file the netlist is made of, the include files (.vh: the Pearson table, the board tops' shared
    blocks) as well as the modules."""
    import synth
    for name, text in (("a.v", "module a; endmodule\n"), ("wccp_regmap.vh", "`define X 1\n"),
                       ("wccp_pearson.vh", "// table\n")):
        (tmp_path / name).write_text(text)
    monkeypatch.setattr(synth, "RTL", tmp_path)
    srcs = [str(tmp_path / "a.v")]
    first = synth.rtl_build_id(srcs)
    assert synth.rtl_build_id(srcs) == first
    (tmp_path / "wccp_pearson.vh").write_text("// another table\n")
    assert synth.rtl_build_id(srcs) != first
