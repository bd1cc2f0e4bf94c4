"""Build and run the RTL twin (fpga_core inside fpga/twin/twin_top.v) with the cocotb runner.

``serve(cfg)`` blocks while the simulator runs (wccptool.twin.rtl_sim is the cocotb module).
The build is cached in build/twin/<sim>/ and redone only when an RTL source, the wrapper
or a parameter changes (a stamp file holds their hash).
"""
import hashlib
import json
import os
import pathlib

from wccptool import simrun

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
RTL = ROOT / "fpga" / "rtl"
WRAPPER = ROOT / "fpga" / "twin" / "twin_top.v"
SIMULATORS = ("verilator", "icarus")      # the first is the default


def sources():
    return [p for p in sorted(RTL.glob("*.v")) if p.name != "fpga.v"] + [WRAPPER]


def parameters(cfg):
    return {"CLK_PER_US": int(cfg.get("clk_per_us", 125)), "SPI_HALF": int(cfg.get("spi_half", 4)),
            "NSLOT_LG": int(cfg.get("nslot_lg", 5))}


def build_dir(sim, root=None):
    return pathlib.Path(root or (ROOT / "build" / "twin")) / sim


def _stamp(sim, params):
    h = hashlib.sha256()
    h.update(json.dumps([sim, params], sort_keys=True).encode())
    for p in sources() + sorted(RTL.glob("*.vh")):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def build(sim="verilator", cfg=None, force=False, log=print):
    """Build the twin for `sim`; returns the cocotb runner, ready to run it. A build whose
    stamp matches (same sources and parameters) is reused: the runner's build step then
    finds nothing to do. Concurrent callers (parallel tests, several twins) serialise on a
    lock file."""
    cfg = cfg or {}
    if sim not in SIMULATORS:
        raise ValueError("simulator must be one of %s" % ", ".join(SIMULATORS))
    bdir = build_dir(sim, cfg.get("build_root"))
    with simrun.dir_lock(bdir):
        params = parameters(cfg)
        stamp = bdir / "twin.stamp"
        want = _stamp(sim, params)
        fresh = force or not stamp.exists() or stamp.read_text() != want
        if fresh:
            log("building the RTL twin with %s in %s ..." % (sim, bdir))
            if stamp.exists():
                stamp.unlink()
        # Verilator: only the wrapper's ports and memories (marked public in twin_top.v) need
        # VPI access; --no-public-flat-rw undoes the runner's everything-public default, which
        # slows the model down. -O3 and -O2 for the C++: the twin runs long.
        runner = simrun.build(sim, sources=sources(), includes=[RTL], toplevel="twin_top", build_dir=bdir,
                              parameters=params, defines={"TWIN_INTERNAL_CLOCK": 1} if sim == "icarus" else {},
                              verilator_args=["--no-public-flat-rw", "-O3"],
                              make_vars=["OPT_FAST=-O2", "OPT_GLOBAL=-O2"], always=fresh,
                              log_file=bdir / "build.log")
        if fresh:
            stamp.write_text(want)
    return runner


def serve(cfg):
    """Run the RTL twin until it is killed (or its parent exits). Blocks."""
    sim = cfg.get("sim", "verilator")
    bdir = build_dir(sim, cfg.get("build_root"))
    runner = build(sim, cfg)
    cfg = dict(cfg, parent_pid=os.getpid())     # the simulator exits when this process does
    env = {"WCCP_TWIN_CONFIG": json.dumps(cfg),
           "PYTHONPATH": os.pathsep.join([str(ROOT / "host_tools"), str(ROOT / "firmware")])}
    if not cfg.get("verbose"):
        env["COCOTB_LOG_LEVEL"] = "WARNING"
        env["GPI_LOG_LEVEL"] = "WARNING"
    runner.test(hdl_toplevel="twin_top", hdl_toplevel_lang="verilog", test_module="wccptool.twin.rtl_sim", build_dir=bdir,
                extra_env=env, results_xml=str(bdir / "results.xml"), timescale=("1ns", "1ps"))
