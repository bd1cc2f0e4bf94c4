"""Run the test_* functions of one firmware test module under MicroPython.

Usage (from tests/test_micropython.py): micropython tests/mpy_runner.py ROOT MODULE
Prints one line per test: "@@CASE <json>" with name, ok and the error text.
Runs on MicroPython only needs sys, json and the module itself.
"""
import sys
import json

root = sys.argv[1]
modname = sys.argv[2]
# the unix port has no installed packages: the firmware and its tests come from the tree
sys.path.insert(0, root + "/tests/fw")
sys.path.insert(0, root + "/firmware")

try:
    mod = __import__(modname)
except Exception as e:  # report an import failure against every case
    sys.print_exception(e)
    print("@@IMPORT " + json.dumps({"ok": False, "error": "%s: %s" % (type(e).__name__, e)}))
    sys.exit(0)

only = sys.argv[3:]
names = sorted(n for n in dir(mod) if n.startswith("test_"))
for name in names:
    if only and name not in only:
        continue
    fn = getattr(mod, name)
    try:
        fn()
        print("@@CASE " + json.dumps({"name": name, "ok": True}))
    except BaseException as e:  # noqa: B036 - report everything, keep going
        sys.print_exception(e)
        print("@@CASE " + json.dumps({"name": name, "ok": False, "error": "%s: %s" % (type(e).__name__, e)}))
print("@@DONE")
