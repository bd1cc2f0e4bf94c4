"""`wccp synth`: the real YoWASP flow (yosys, nextpnr-ecp5, ecppack) for the colorlight_i5 board."""
import json
import os
import shutil
import subprocess
import sys
import uuid

import pytest

from wccptool import boards
from wccptool.cmd_synth import summarise

ROOT = boards.ROOT


def wccp(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "wccptool.cli"] + list(args), capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def test_synth_rejects_unknown_board():
    p = wccp("synth", "--board", "no_such_board")
    assert p.returncode == 2 and "unknown board" in p.stderr


@pytest.mark.slow
def test_synth_colorlight_i5_flow():
    # YoWASP tools only see the working tree: the output directory must be inside it
    out = os.path.join(ROOT, "build", "test_synth_" + uuid.uuid4().hex[:8])
    try:
        p = wccp("synth", "--board", "colorlight_i5", "--out", out, "--json", timeout=1800)
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-4000:]
        rep = json.loads(p.stdout)
        fb = boards.load("colorlight_i5")
        assert rep["board"] == "colorlight_i5" and rep["top"] == "fpga"
        assert fb["fpga"]["package"] in rep["device"]
        # every constrained pin of the LPF is a used IO cell
        sites = boards.lpf_sites(os.path.join(ROOT, fb["constraints"]))
        assert rep["util"]["TRELLIS_IO"][0] == len(sites)
        assert rep["util"]["TRELLIS_COMB"][0] > 0
        # Fmax reported for both RGMII receive clocks
        for phy in ("eth0_rxc", "eth1_rxc"):
            assert any(phy in clk and mhz > 0 for clk, mhz in rep["fmax_mhz"].items()), rep["fmax_mhz"]
        bit = open(rep["bitstream"], "rb").read()
        assert bit[:2] == b"\xff\x00" and b"\xff\xff\xbd\xb3" in bit     # comment header, ECP5 preamble
        text = summarise(rep, fb["fpga"])
        assert "Fmax" in text and "TRELLIS_COMB" in text and "CABGA256" in text
    finally:
        shutil.rmtree(out, ignore_errors=True)
