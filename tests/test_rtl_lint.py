"""RTL static checks: Verilator -Wall lint of the simulated top (fpga_core) and of the board
top (fpga.v with the ECP5 primitive stubs used only for linting), and an Icarus compile."""
import os
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[1]
RTL = ROOT / "fpga" / "rtl"
VERILATOR = ROOT / ".venv" / "bin" / "verilator"


def _core_sources():
    return [str(p) for p in sorted(RTL.glob("*.v")) if p.name != "fpga.v"]


def _run(cmd):
    env = dict(os.environ)
    env["PATH"] = str(ROOT / ".venv" / "bin") + os.pathsep + env.get("PATH", "")
    return subprocess.run(cmd, capture_output=True, text=True, cwd=str(ROOT), env=env, timeout=300)


def test_verilator_lint_fpga_core():
    r = _run([str(VERILATOR), "--lint-only", "-Wall", "-I" + str(RTL), "--top-module", "fpga_core"]
             + _core_sources())
    assert r.returncode == 0, r.stdout + r.stderr
    assert "%Warning" not in r.stderr, r.stderr


def test_verilator_lint_all_rtl_like_makefile():
    """`make lint-verilog` passes every fpga/rtl/*.v with top fpga_core."""
    r = _run([str(VERILATOR), "--lint-only", "-Wall", "-I" + str(RTL), "--top-module", "fpga_core"]
             + [str(p) for p in sorted(RTL.glob("*.v"))])
    assert r.returncode == 0, r.stdout + r.stderr


def test_iverilog_compile():
    r = _run(["iverilog", "-g2012", "-Wall", "-I" + str(RTL), "-s", "fpga_core", "-o", os.devnull]
             + _core_sources())
    assert r.returncode == 0, r.stdout + r.stderr
    bad = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.strip() and "timescale" not in ln]
    assert not bad, "\n".join(bad)


def test_verilator_lint_board_top():
    """fpga.v (ECP5 primitives) linted with the behavioural stubs in fpga/lint/, and with the
    block RAMs built from DP16KD tiles as in synthesis (wccp_bram's ECP5 branch)."""
    r = _run([str(VERILATOR), "--lint-only", "-Wall", "-DWCCP_ECP5_BRAM", "-I" + str(RTL), "--top-module", "fpga"]
             + [str(p) for p in sorted(RTL.glob("*.v"))] + [str(ROOT / "fpga" / "lint" / "ecp5_stubs.v")])
    assert r.returncode == 0, r.stdout + r.stderr


def test_verilator_lint_colorlight_i5_top():
    """The Colorlight i5 board top with its own files (boards/colorlight_i5/rtl/, the board file's
    "sources") and the shared RTL except fpga.v, linted like the 5A-75B's top."""
    import json
    fb = json.loads((ROOT / "boards" / "colorlight_i5.json").read_text())
    r = _run([str(VERILATOR), "--lint-only", "-Wall", "-DWCCP_ECP5_BRAM", "-I" + str(RTL), "--top-module", fb["top"]]
             + _core_sources() + [str(ROOT / s) for s in fb["sources"]] + [str(ROOT / "fpga" / "lint" / "ecp5_stubs.v")])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "%Warning" not in r.stderr, r.stderr
