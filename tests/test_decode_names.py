"""`wccp decode` names and bucket ranges (wccptool.wccpnames), and a pcapng written by dumpcap
on loopback decoding exactly as the same capture converted to pcap by editcap.

Addresses 127.78.0.x."""
import json
import pathlib
import shutil
import socket
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "firmware"), str(ROOT / "tests" / "fw"), str(ROOT / "host_tools")]

import test_codec as fw  # noqa: E402
from wccp import codec  # noqa: E402
from wccptool import pcap  # noqa: E402
from wccptool.wccpnames import bitmap_buckets, bucket_ranges, ranges  # noqa: E402


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "wccptool.cli", "decode", *[str(a) for a in args]],
                          capture_output=True, text=True, timeout=120, cwd=str(ROOT))


def _encoded(name):
    m = fw.samples()[name]
    return m, codec.encode(m, password="pw" if m["security"]["option"] == 1 else None)


def _parse_ranges(text):
    out = set()
    for tok in text.split():
        a, _, b = tok.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def test_ranges_and_bucket_tables():
    assert ranges([5, 0, 1, 2, 7, 8]) == "0-2 5 7-8" and ranges([]) == ""
    tab = bytes([0] * 128 + [1] * 100 + [0x81] * 20 + [0xFF] * 8)
    r = bucket_ranges(tab, ["10.0.0.2", "10.0.0.3"])
    assert r == [{"cache_index": 0, "cache": "10.0.0.2", "alternate": False, "count": 128, "buckets": "0-127"},
                 {"cache_index": 1, "cache": "10.0.0.3", "alternate": False, "count": 100, "buckets": "128-227"},
                 {"cache_index": 1, "cache": "10.0.0.3", "alternate": True, "count": 20, "buckets": "228-247"},
                 {"cache_index": None, "cache": None, "alternate": False, "count": 8, "buckets": "248-255"}]
    assert bitmap_buckets(codec.bucket_bitmap([0, 1, 2, 200]).hex()) == "0-2 200"


def test_json_names_keep_numbers(tmp_path):
    names = ["hia_squid_mask_md5", "ra_hash", "hia_u8000_timers", "isy_hash", "ra_alt_mask_rev1",
             "hia_rev1_addrtable_nodata", "isy_unknown_component"]
    frames = [pcap.udp_frame(_encoded(n)[1]) for n in names]
    p = tmp_path / "n.pcap"
    pcap.write_pcap(str(p), frames)
    r = _cli(p, "--json")
    assert r.returncode == 0, r.stderr
    got = dict(zip(names, [json.loads(x) for x in r.stdout.splitlines()], strict=True))
    h = got["hia_squid_mask_md5"]
    assert h["message"] == "HERE_I_AM" and h["type"] == 10
    assert h["security"] == {"option": 1, "option_name": "MD5", "digest": h["security"]["digest"]}
    sv = h["service"]
    assert sv["service_flags"] == 0x211 and sv["protocol"] == 6 and sv["protocol_name"] == "TCP"
    assert sv["service_type_name"] == "dynamic"
    assert sv["service_flags_names"] == ["Source IP hash", "Ports defined", "Destination IP alternative hash"]
    assert [(c["type"], c["value"], c["name"], c["value_name"]) for c in h["capabilities"]] == [
        (1, 2, "Forwarding Method", "L2"), (2, 2, "Assignment Method", "Mask"), (3, 2, "Packet Return Method", "L2")]
    assert h["command_extension"][0]["name"] == "Cache shutdown"
    t = got["hia_u8000_timers"]
    assert [c.get("value_name") for c in t["capabilities"]][3:] == ["10000 ms", "timers x1, retransmit x1"]
    assert t["web_cache_identity"]["buckets"] == "0-2 255" and t["web_cache_identity"]["flags_names"] == \
        ["U (v2-01 bit)"]
    assert got["isy_hash"]["service"]["service_name"] == "web-cache"
    # the REDIRECT_ASSIGN bucket table: per cache, exactly the sample's buckets
    msg = fw.samples()["ra_hash"]
    table = bytes(msg["assignment_info"]["buckets"])
    caches = [codec.int2ip(a) for a in msg["assignment_info"]["web_caches"]]
    br = got["ra_hash"]["assignment_info"]["bucket_ranges"]
    assert got["ra_hash"]["assignment_info"]["buckets"] == table.hex()          # numbers kept
    assert sum(e["count"] for e in br) == 256
    for e in br:
        want = {b for b in range(256) if (table[b] == 0xFF) == (e["cache_index"] is None)
                and (e["cache_index"] is None or ((table[b] & 0x7F) == e["cache_index"]
                                                  and bool(table[b] & 0x80) == e["alternate"]))}
        assert _parse_ranges(e["buckets"]) == want and e["count"] == len(want)
        assert e["cache"] == (None if e["cache_index"] is None else caches[e["cache_index"]])
    assert got["ra_alt_mask_rev1"]["alternate_assignment"]["assignment_type_name"] == "Extended mask"
    assert got["hia_rev1_addrtable_nodata"]["address_table"]["family_name"] == "IPv6"
    assert got["isy_unknown_component"]["unknown_components"][0]["name"] == "unknown component 11"
    text = _cli(p).stdout
    assert "Forwarding Method: L2 (type 1, value 2)" in text and "option: 1 (MD5)" in text
    assert "protocol: 6 (TCP)" in text
    for e in br:
        if e["cache"]:
            assert "%s \u2192 %s%s  [%d]" % (e["buckets"], e["cache"], " (alternate)" if e["alternate"] else "",
                                             e["count"]) in text


def test_dumpcap_pcapng_decodes_like_the_pcap(tmp_path):
    for tool in ("dumpcap", "editcap"):
        if shutil.which(tool) is None:
            pytest.fail("%s not installed (tshark package)" % tool)
    ng = tmp_path / "cap.pcapng"
    dst = "127.78.0.1"
    proc = subprocess.Popen(["dumpcap", "-q", "-i", "lo", "-f", "udp and host %s" % dst, "-w", str(ng)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    names = ["hia_squid_hash", "isy_hash", "ra_hash", "rq_md5"]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.78.0.2", 0))
    try:
        # dumpcap needs a moment to attach: send a marker until it shows in the file
        deadline = time.time() + 30
        while time.time() < deadline:
            s.sendto(b"marker", (dst, 9))
            time.sleep(0.3)
            if ng.exists() and ng.stat().st_size > 200:
                break
        for n in names:
            s.sendto(_encoded(n)[1], (dst, 2048))
        time.sleep(1.0)
    finally:
        s.close()
        proc.terminate()
        proc.communicate(timeout=30)
    assert ng.read_bytes()[:4] == b"\x0a\x0d\x0d\x0a"          # dumpcap wrote pcapng
    pc = tmp_path / "cap.pcap"
    # dumpcap stamps in nanoseconds: the nanosecond pcap keeps the same ticks
    subprocess.run(["editcap", "-F", "nsecpcap", str(ng), str(pc)], check=True)
    assert pc.read_bytes()[:4] in (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1")
    for args in ((), ("--json",)):
        a, b = _cli(ng, *args), _cli(pc, *args)
        assert a.returncode == b.returncode == 0, a.stderr + b.stderr
        assert a.stdout == b.stdout
    msgs = [json.loads(x) for x in a.stdout.splitlines()]
    assert [m["message"] for m in msgs] == ["HERE_I_AM", "I_SEE_YOU", "REDIRECT_ASSIGN", "REMOVAL_QUERY"]
    assert msgs[2]["assignment_info"]["bucket_ranges"][0]["cache"] == "10.1.0.2"
