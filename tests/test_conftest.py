"""conftest.py's collection order, which `make test` keeps (--no-loadscope-reorder): the boards'
place and route first, then the other slow tests, then the rest."""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODULES = ["tests/test_boards.py", "tests/test_synth.py"]


def _collected(*extra):
    p = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"] +
                       list(extra) + MODULES, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    return [ln for ln in p.stdout.splitlines() if "::" in ln]


def test_board_flows_then_slow_tests_come_first():
    ids = _collected()
    flows = [i for i, n in enumerate(ids) if n.startswith("tests/test_synth.py::test_synth_board_flow")]
    assert len(flows) >= 3 and flows == list(range(len(flows))), ids[:6]
    fast = _collected("-m", "not slow")
    assert fast and len(fast) < len(ids) - len(flows) and ids[len(ids) - len(fast):] == fast, ids
    assert "--no-loadscope-reorder" in (ROOT / "Makefile").read_text()
