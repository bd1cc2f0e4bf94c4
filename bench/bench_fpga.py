#!/usr/bin/env python3
"""FPGA datapath throughput/latency bench: runs fpga/tb/fpga_core/bench_fpga_core.py in a
simulator (cycle-accurate GMII at 125 MHz; Verilator unless told otherwise: Icarus gives the
same cycles about 30 times slower) and prints the results as JSON. Every output frame of the
throughput runs is scored against the reference model; a wrong frame fails the bench.

    .venv/bin/python bench/bench_fpga.py [verilator|icarus]
"""
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "fpga" / "tb"))   # the testbenches' helpers are not a package
import wccp_tb  # noqa: E402


def main():
    sim = sys.argv[1] if len(sys.argv) > 1 else "verilator"
    out = ROOT / "build" / "bench_fpga.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    wccp_tb.run_sim(sim, "fpga_core", ROOT / "fpga" / "tb" / "fpga_core" / "bench_fpga_core.py",
                    extra_env={"WCCP_BENCH_OUT": str(out)})
    res = json.loads(out.read_text())
    print(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
