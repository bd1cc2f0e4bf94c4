"""wccptool.simrun: a Verilator build directory left by an interrupted build is rebuilt from
scratch, a finished one is built incrementally."""
from wccptool import simrun

COUNTER = """
`timescale 1ns / 1ps
module tiny (input wire clk, output reg [7:0] n);
    initial n = 8'd0;
    always @(posedge clk) n <= n + 8'd1;
endmodule
"""


def _build(src, bdir):
    return simrun.build("verilator", sources=[src], toplevel="tiny", build_dir=bdir, log_file=bdir / "build.log")


def _objects(bdir):
    return sorted(p for p in bdir.rglob("*.o") if p.is_file())


def test_interrupted_verilator_build_is_rebuilt(tmp_path):
    src = tmp_path / "tiny.v"
    src.write_text(COUNTER)
    bdir = tmp_path / "build"
    _build(src, bdir)
    assert (bdir / simrun.BUILT).exists()
    objs = _objects(bdir)
    assert objs, "the Verilator build wrote no object files"
    binary = bdir / "tiny"        # the runner names the simulator after the top module
    assert binary.is_file(), "no simulator binary"

    # a finished build: the next build reuses its objects
    before = {p: p.stat().st_mtime_ns for p in objs}
    _build(src, bdir)
    assert {p: p.stat().st_mtime_ns for p in _objects(bdir)} == before

    # what a build killed while writing an object leaves: a truncated object, newer than its
    # source (make takes it as up to date), and no completion marker
    victim = max(objs, key=lambda p: p.stat().st_size)
    victim.write_bytes(victim.read_bytes()[:64])
    (bdir / simrun.BUILT).unlink()
    binary.unlink()               # make links again (it would anyway: the object is newer)
    _build(src, bdir)
    assert (bdir / simrun.BUILT).exists()
    assert victim.stat().st_size > 64, "the truncated object was not rebuilt"
    assert binary.is_file()
