#!/usr/bin/env python3
"""Every register input of a routed design that misses a period, grouped by register.

    python fpga/tools/endpoints.py TIMING.json [--clock clk] [--period 6.667] [-n 40]

TIMING.json is nextpnr's `--report FILE --detailed-timing-report` output (`wccp synth`
writes it as <out>/<top>_timing.json). nextpnr's log names one critical path per clock; the
detailed report holds the post-route arrival time at every timing endpoint (to which this
adds the pin's setup time, which the report leaves out: SETUP_NS), so this lists all of them
at once: for each register (flip-flop bits or RAM ports sharing a name), the number of
endpoints over the period, the worst arrival, its input pin and the net feeding it.
Fix the slowest groups first, then re-run place and route (placement moves everything).
"""
import argparse
import collections
import json
import re
import sys


def group_name(cell):
    """Register name from a nextpnr cell name: flip-flop bits and RAM tiles collapse."""
    n = re.sub(r"(_TRELLIS_FF_Q|_DP16KD|\$).*", "", cell)
    return re.sub(r"\[\d+\]", "", n)


# setup time of an input pin (ns), added to the routed arrival: the detailed report gives
# arrivals only. ECP5 speed 6 as nextpnr's critical-path reports print it (a flip-flop's
# local set/reset 0.42; DI, M, CE 0); setup segments of the report's own critical paths
# are added per pin name (e.g. DP16KD data pins).
SETUP_NS = {"LSR": 0.42}


def setups(report):
    """{pin name: setup ns}: SETUP_NS and the setup segments of the report's critical paths."""
    st = dict(SETUP_NS)
    for cp in report.get("critical_paths", []):
        for seg in cp.get("path", []):
            if seg.get("type") == "setup":
                st[seg["to"]["port"]] = max(st.get(seg["to"]["port"], 0.0), seg["delay"])
    return st


def endpoints(report, clock):
    """[(arrival + setup ns, cell, port, net)] for paths launched and captured by `clock`."""
    st = setups(report)
    out = []
    for net in report.get("detailed_net_timings", []):
        if clock not in net["event"]:
            continue
        for e in net["endpoints"]:
            if clock in e["event"]:
                out.append((e["delay"][1] + st.get(e["port"], 0.0), e["cell"], e["port"], net["net"]))
    return out


def groups(eps, period):
    """{register: [(arrival, port, net), ...]} of the endpoints over `period`, worst first."""
    g = collections.defaultdict(list)
    for arr, cell, port, net in eps:
        if arr > period:
            g[group_name(cell)].append((arr, port, net))
    for v in g.values():
        v.sort(reverse=True)
    return dict(sorted(g.items(), key=lambda kv: -kv[1][0][0]))


def summary(report, clock, period, n=20):
    """{"period_ns", "endpoints", "failing", "groups": [[register, count, worst ns], ...]}."""
    eps = endpoints(report, clock)
    g = groups(eps, period)
    return {"period_ns": period, "endpoints": len(eps),
            "failing": sum(len(v) for v in g.values()),
            "groups": [[k, len(v), round(v[0][0], 2)] for k, v in list(g.items())[:n]]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("timing")
    ap.add_argument("--clock", default="$glbnet$clk", help="clock net as nextpnr names it")
    ap.add_argument("--period", type=float, default=1000.0 / 150, help="ns (6.667 = 150 MHz)")
    ap.add_argument("-n", type=int, default=40, help="groups to print")
    a = ap.parse_args(argv)
    report = json.load(open(a.timing))
    eps = endpoints(report, a.clock)
    if not eps:
        print("no endpoints for clock %r (was the report written with --detailed-timing-report?)"
              % a.clock, file=sys.stderr)
        return 2
    g = groups(eps, a.period)
    print("clock %s: %d endpoints, %d over %.3f ns in %d registers, worst %.2f ns" % (
        a.clock, len(eps), sum(len(v) for v in g.values()), a.period, len(g),
        max(e[0] for e in eps)))
    for k, v in list(g.items())[:a.n]:
        arr, port, net = v[0]
        print("  %6.2f %5d  %-56s %s <- %s" % (arr, len(v), k, port, net))
    return 1 if g else 0


if __name__ == "__main__":
    sys.exit(main())
