"""RFC 3074 Pearson hashing: wccp.pearson against the RFC's C function (compiled with gcc),
the model's per-group hash choice against the reference, the driver's register bit and
capability check, the config field."""
import random
import shutil
import struct
import subprocess
from pathlib import Path

import pytest


from wccp import config
from wccp import regmap as R
from wccp.dataplane import FWD_GRE, SF_DST_IP_ALT_HASH, SF_DST_PORT_HASH, SF_PORTS_DEFINED
from wccp.dataplane import SF_SRC_IP_HASH, SF_SRC_PORT_ALT_HASH, SF_SRC_PORT_HASH
from wccp.fpga import FpgaDataPlane
from wccp.fwdmodel import ForwardingModel, fold, hash_key, with_fcs
from wccp.fwdmodel_regs import ModelRegisterFile
from wccp.pearson import MIX, bucket, key_bytes, pearson

C_SRC = Path(__file__).resolve().parent / "c" / "rfc3074_pearson.c"

# Keys shaped like the RFC's use (DHCP client hardware addresses and client identifiers,
# section 3's service transaction ids) and the WCCP keys the data plane hashes.
EXAMPLE_KEYS = [b"", b"\x00", b"\xff", bytes.fromhex("0001"), bytes.fromhex("00a0c9112233"),
                bytes.fromhex("020000000001"), bytes.fromhex("01" "00a0c9112233"), b"client-id-1",
                bytes(12), b"\xff" * 12, bytes([192, 0, 2, 11]), bytes([192, 33, 43, 11, 192, 33, 43, 12, 0, 80])]


@pytest.fixture(scope="module")
def c_ref(tmp_path_factory):
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.fail("gcc not installed (the RFC's reference code is compiled by this test)")
    exe = tmp_path_factory.mktemp("pearson") / "rfc3074_pearson"
    subprocess.run([gcc, "-Wall", "-Werror", "-O2", "-o", str(exe), str(C_SRC)], check=True)

    def run(keys):
        out = subprocess.run([str(exe)], input="".join(k.hex() + "\n" for k in keys), capture_output=True,
                             text=True, check=True).stdout.split("\n")
        res = [tuple(int(x) for x in line.split()) for line in out if line]
        assert len(res) == len(keys)
        return res
    return run


def test_mixing_table_is_a_permutation():
    assert sorted(MIX) == list(range(256))


def test_example_and_random_keys_match_the_rfc_code(c_ref):
    rng = random.Random(3074)
    keys = EXAMPLE_KEYS + [bytes(rng.randrange(256) for _ in range(rng.randrange(0, 300))) for _ in range(3000)]
    ref = c_ref(keys)
    for k, (h, accept) in zip(keys, ref, strict=True):
        assert pearson(k) == h, k.hex()
        assert accept == (1 if h % 2 == 0 else 0)       # the HBA bitmap of even buckets
    # the hash spreads: all 256 values occur for random 12-byte keys
    assert len(set(h for (h, _a) in c_ref([bytes(rng.randrange(256) for _ in range(12))
                                           for _ in range(4000)]))) == 256


def test_key_bytes_are_the_flagged_fields_in_packet_order():
    src, dst, sp, dp = 0xC0000201, 0xC6336402, 0x1234, 80
    assert key_bytes(0xF, src, dst, sp, dp) == struct.pack(">IIHH", src, dst, sp, dp)
    assert key_bytes(SF_SRC_IP_HASH | SF_DST_PORT_HASH, src, dst, sp, dp) == struct.pack(">IH", src, dp)
    assert key_bytes(SF_DST_IP_ALT_HASH | SF_SRC_PORT_ALT_HASH, src, dst, sp, dp, alt=True) == \
        struct.pack(">IH", dst, sp)
    assert key_bytes(0, src, dst, sp, dp) == b"" and bucket(0, src, dst, sp, dp) == 0


def _model(hash_fn, flags, buckets):
    m = ForwardingModel(clock=lambda: 0)
    m.configure(0x0A000001, bytes.fromhex("020000000001"), 1500)
    m.set_group(0, {"service_type": 1, "service_id": 90, "priority": 10, "protocol": 6,
                    "service_flags": flags, "ports": [80], "hash_fn": hash_fn})
    m.set_caches(0, [{"address": 0x0A000032 + i, "forward": FWD_GRE, "mac": bytes([2, 0, 0, 0, 0, 0xC0 + i]),
                      "port": 1} for i in range(4)])
    m.set_hash(0, buckets)
    m.commit()
    m.arm(0)
    m.heartbeat()
    return m


def _frame(src, dst, sport, dport):
    ip = struct.pack(">BBHHHBBHII", 0x45, 0, 40, 1, 0, 64, 6, 0, src, dst)
    return with_fcs(bytes.fromhex("020000000001" "02000000009a" "0800") + ip +
                    struct.pack(">HHIIBBHHH", sport, dport, 0, 0, 0x50, 0x18, 8192, 0, 0) + bytes(6))


def test_model_buckets_follow_the_groups_hash_function(c_ref):
    """Primary and alternate buckets of a Pearson group are the RFC function of the key
    bytes (checked against the C code); a WCCP group on the same packets uses the fold."""
    rng = random.Random(28)
    flags = SF_SRC_IP_HASH | SF_SRC_PORT_HASH | SF_PORTS_DEFINED | SF_DST_IP_ALT_HASH | SF_SRC_PORT_ALT_HASH
    buckets = [0x80 | (i % 4) if i % 3 == 0 else i % 4 for i in range(256)]
    mp, mw = _model("pearson", flags, buckets), _model("wccp", flags, buckets)
    pkts = [(rng.getrandbits(32), rng.getrandbits(32), rng.randrange(1, 65536), 80) for _ in range(500)]
    ref = c_ref([key_bytes(flags, *p) for p in pkts] + [key_bytes(flags, *p, alt=True) for p in pkts])
    n_alt = 0
    differ = 0
    for i, p in enumerate(pkts):
        d = mp.decide(0, _frame(*p))
        assert d.bucket == ref[i][0]
        if buckets[d.bucket] & 0x80:
            assert d.alt_used and d.alt_bucket == ref[len(pkts) + i][0]
            assert d.cache == buckets[d.alt_bucket] & 0x7F
            n_alt += 1
        else:
            assert d.cache == buckets[d.bucket]
        w = mw.decide(0, _frame(*p))
        assert w.bucket == fold(hash_key(flags, *p))
        differ += w.bucket != d.bucket
    assert n_alt > 50 and differ > 400


class _Regs:
    """Transport onto a ModelRegisterFile whose CAPS word can be overridden."""

    def __init__(self, caps=None):
        self.rf = ModelRegisterFile()
        self.caps = caps

    def write(self, addr, words):
        for i, w in enumerate(words):
            self.rf.write_word(addr + i, w)

    def read(self, addr, n):
        return [self.caps if (a == R.CAPS and self.caps is not None) else self.rf.read_word(a)
                for a in range(addr, addr + n)]


def test_driver_sets_the_pearson_bit_and_the_register_file_decodes_it():
    t = _Regs()
    dp = FpgaDataPlane(t)
    svc = {"service_type": 1, "service_id": 91, "protocol": 6, "service_flags": SF_SRC_IP_HASH | 0xFFFF0000,
           "ports": [80]}
    dp.set_group(2, dict(svc, hash_fn="pearson"))
    flags_addr = R.GROUP_BASE + R.GROUP_STRIDE * 2 + R.GROUP_FLAGS
    assert t.rf.shadow[flags_addr] == SF_SRC_IP_HASH | R.GROUP_FLAGS_PEARSON   # undefined flag bits dropped
    dp.commit()
    assert t.rf.model._live.slots[2].service["hash_fn"] == 1
    dp.set_group(2, dict(svc, hash_fn="wccp"))
    assert t.rf.shadow[flags_addr] == SF_SRC_IP_HASH
    dp.commit()
    assert t.rf.model._live.slots[2].service["hash_fn"] == 0


def test_driver_refuses_pearson_on_an_image_without_it():
    caps = R.NUM_PORTS | (R.MAX_GROUPS << 8) | (R.MAX_CACHES << 16) | (R.MAX_MASK_SETS << 24)
    dp = FpgaDataPlane(_Regs(caps))
    svc = {"service_type": 1, "service_id": 91, "protocol": 6, "service_flags": 1, "ports": [80]}
    with pytest.raises(ValueError, match="no Pearson hash"):
        dp.set_group(0, dict(svc, hash_fn="pearson"))
    dp.set_group(0, dict(svc, hash_fn="wccp"))         # the WCCP hash still works
    with pytest.raises(ValueError):
        dp.set_group(0, dict(svc, hash_fn="crc"))


def test_config_hash_field():
    cfg = config.load({"services": [{"id": 0}, {"id": 90, "hash": "pearson"}]})
    assert [s["hash"] for s in cfg["services"]] == ["wccp", "pearson"]
    with pytest.raises(config.ConfigError, match=r"services\[0\]\.hash"):
        config.load({"services": [{"id": 0, "hash": "md5"}]})


def test_rtl_mixing_rom_is_the_rfc_table():
    """fpga/rtl/wccp_pearson.vh (the RTL's ROM) holds the same table as wccp.pearson."""
    import re
    vh = (Path(__file__).resolve().parent.parent / "fpga" / "rtl" / "wccp_pearson.vh").read_text()
    rom = {int(a): int(v) for a, v in re.findall(r"8'd(\d+): pearson_mix = 8'd(\d+);", vh)}
    assert rom == {i: MIX[i] for i in range(256)}
