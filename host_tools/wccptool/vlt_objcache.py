#!/usr/bin/env python3
"""Verilator's OBJCACHE for this project: its run-time library compiled once per checkout.

Every Verilator build compiles the same run-time library (verilated.cpp, verilated_vpi.cpp,
verilated_dpi.cpp, verilated_threads.cpp: ~13 s of CPU, most of a small testbench's build)
into its own build directory. Verilator's makefiles run each compile as
``$(OBJCACHE) $(CXX) ... -c -o OBJ SRC`` (the hook meant for ccache); wccptool.simrun sets
OBJCACHE to this script. A compile of a run-time source (one that lives next to Verilator's
headers, not in the build directory) is looked up in $WCCP_VLT_OBJCACHE_DIR under a key
hashed from the whole command line, the compiler's version, the source and every header
beside it; a hit copies the object in, a miss compiles and stores it (a temporary file
renamed into place: parallel builds never see a partial entry). Any other compile runs as is.
"""
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile


def _runtime_compile(argv):
    """(object, source) when argv compiles one of Verilator's run-time sources, else None."""
    if "-c" not in argv or "-o" not in argv:
        return None
    i = argv.index("-o")
    if i + 1 >= len(argv):
        return None
    obj, src = argv[i + 1], pathlib.Path(argv[-1])
    if not (src.name.startswith("verilated") and src.suffix == ".cpp" and src.is_absolute()
            and src.parent.resolve() != pathlib.Path.cwd().resolve()):
        return None
    return obj, src


def _key(argv, src):
    h = hashlib.sha256()
    h.update("\0".join(argv).encode())
    h.update(subprocess.run([argv[0], "--version"], capture_output=True).stdout)
    h.update(src.read_bytes())
    for header in sorted(src.parent.glob("*.h")):
        h.update(header.name.encode())
        h.update(header.read_bytes())
    return h.hexdigest()[:32]


def main(argv):
    if not argv:
        sys.exit("usage: vlt_objcache.py COMPILER ARGS...")
    cache = os.environ.get("WCCP_VLT_OBJCACHE_DIR")
    found = _runtime_compile(argv) if cache else None
    if found is None:
        os.execvp(argv[0], argv)
    obj, src = found
    entry = pathlib.Path(cache) / (_key(argv, src) + ".o")
    if entry.exists():
        shutil.copyfile(entry, obj + ".tmp")
        os.replace(obj + ".tmp", obj)
        return 0
    rc = subprocess.run(argv).returncode
    if rc == 0:
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=entry.parent)
        os.close(fd)
        shutil.copyfile(obj, tmp)
        os.replace(tmp, entry)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
