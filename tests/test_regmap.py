"""The register map's generated files must match fpga/regmap.json, and the map must be sane."""
import importlib.util
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
GEN = ROOT / "fpga" / "tools" / "gen_regmap.py"


def _gen():
    spec = importlib.util.spec_from_file_location("gen_regmap", GEN)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_generated_files_are_fresh():
    r = subprocess.run([sys.executable, str(GEN), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, "generated register-map files are stale:\n" + r.stdout + r.stderr


def test_check_detects_staleness(tmp_path):
    gen = _gen()
    rm = gen.load()
    texts = gen.outputs(rm)
    rm["blocks"][0]["registers"][0]["doc"] += " changed"
    changed = gen.outputs(rm)
    assert texts[gen.OUT_MD] != changed[gen.OUT_MD]


def test_no_overlapping_addresses():
    gen = _gen()
    rm = gen.load()
    seen = {}
    for blk in rm["blocks"]:
        base = gen.num(blk["base"])
        bcount = gen.num(blk.get("count", 1))
        bstride = gen.num(blk.get("stride", 0))
        for i in range(bcount):
            for reg in blk["registers"]:
                for j in range(gen.num(reg.get("count", 1))):
                    a = base + i * bstride + gen.num(reg["offset"]) + j * gen.num(reg.get("stride", 0))
                    assert a < (1 << 24)
                    key = (reg["name"], i, j)
                    assert a not in seen, "address 0x%06X used by %s and %s" % (a, seen[a], key)
                    seen[a] = key


def test_micropython_imports_regmap():
    mp = ROOT / ".venv" / "bin" / "micropython"
    code = ("import sys; sys.path.insert(0, 'firmware'); from wccp import regmap as r; from wccp import regpack as p; "
            "w0, w1, t = p.compile_mask_set((0, 0x1741, 0, 0), [(0, 0x0001, 0, 0, 3), (0, 0x0041, 0, 0, 5)]); "
            "print(r.ID_VALUE, w0, w1, t[1], t[3], t[0])")
    out = subprocess.run([str(mp), "-c", code], capture_output=True, text=True, cwd=str(ROOT))
    assert out.returncode == 0, out.stderr
    vals = [int(x) for x in out.stdout.split()]
    # mask 0x1741 over dst_ip -> bits 32+{0,6,8,9,10,12} -> valid positions
    pos = [32, 38, 40, 41, 42, 44]
    assert vals[0] == 0x57434350
    assert vals[1] == sum((p | 0x80) << (8 * j) for j, p in enumerate(pos[:4]))
    assert vals[2] == (pos[4] | 0x80) | ((pos[5] | 0x80) << 8)
    assert vals[3] == 3      # 0x0001 -> index 0b000001
    assert vals[4] == 5      # 0x0041 -> bits 0 and 6 -> index 0b11
    assert vals[5] == 0xFF


def test_generated_module_holds_constants_only():
    """The packing helpers are written once, in wccp.regpack; the generator writes no code."""
    gen = _gen()
    text = gen.outputs(gen.load())[gen.OUT_PY]
    assert "\ndef " not in text and "\nclass " not in text, text[-2000:]


def test_packing_helpers_live_only_in_regpack():
    """wccp.regpack takes its constants from the generated wccp.regmap, which holds constants
    only (no second way to reach the helpers), on MicroPython and CPython."""
    mp = str(ROOT / ".venv" / "bin" / "micropython")
    code = ("import sys; sys.path.insert(0, 'firmware'); from wccp import regpack as p; from wccp import regmap as r; "
            "print(hasattr(r, 'compile_mask_set'), hasattr(r, 'pack_bytes'), p.MASK_BITS == r.MASK_BITS, "
            "len(p.compile_mask_set((0, 1, 0, 0), [])[2]) == r.MASK_TABLE_SIZE)")
    for exe in (mp, sys.executable):
        out = subprocess.run([exe, "-c", code], capture_output=True, text=True, cwd=str(ROOT))
        assert out.returncode == 0, (exe, out.stderr)
        assert out.stdout.split() == ["False", "False", "True", "True"], (exe, out.stdout)


def test_mask_with_too_many_bits_rejected():
    from wccp import regpack
    try:
        regpack.compile_mask_set((0xFF, 0, 0, 0), [])
    except ValueError:
        return
    raise AssertionError("8-bit mask accepted")


def test_data_plane_limits_are_the_register_map_s():
    """The data-plane interface's limits (what the model and the config validation accept) are
    the register map's, so that a table the model takes fits the FPGA."""
    from wccp import dataplane, regmap
    for k in ("MAX_GROUPS", "MAX_CACHES", "MAX_MASK_SETS", "MAX_ACL_ENTRIES", "NUM_BUCKETS", "ARPCAP_ENTRIES"):
        assert getattr(dataplane, k) == getattr(regmap, k), k
