"""Run every benchmark script bench/bench_*.py in turn (make bench).

Each script prints its own results; docs/performance.md records them with the
command that produced them.
"""
import pathlib
import subprocess
import sys

here = pathlib.Path(__file__).resolve().parent
status = 0
for script in sorted(here.glob("bench_*.py")):
    print("==> %s" % script.name, flush=True)
    rc = subprocess.call([sys.executable, str(script)], cwd=str(here.parent))
    if rc:
        print("!! %s exited %d" % (script.name, rc), flush=True)
        status = 1
sys.exit(status)
