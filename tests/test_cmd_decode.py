"""`wccp decode` end to end: the real CLI on pcaps written here."""
import json
import pathlib
import struct
import subprocess
import sys

import pytest

import codec_samples as fw
from wccp import codec
from wccptool import pcap
from wccptool.cmd_decode import to_jsonable
from wccptool.wccpnames import annotate

ROOT = pathlib.Path(__file__).resolve().parent.parent

WCCP = pathlib.Path(sys.executable).parent / "wccp"


def run_cli(*args):
    cmd = [str(WCCP)] if WCCP.exists() else [sys.executable, "-m", "wccptool.cli"]
    return subprocess.run(cmd + ["decode"] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=120, cwd=str(ROOT))


def _samples_encoded():
    out = []
    for name, msg in fw.samples().items():
        out.append((name, msg, codec.encode(msg, password="pw" if msg["security"]["option"] == 1 else None)))
    return out


def _expected_json(msg, data):
    """The JSON the CLI must print for a sample: built from the source dict, not from decode()."""
    d = to_jsonable(codec.plain(msg))
    d["length"] = len(data) - 8
    if msg["security"]["option"] == 1:
        d["security"]["digest"] = data[16:32].hex()
    return annotate(d)       # names next to the numbers (checked on their own in test_json_names)


@pytest.fixture(scope="module")
def mixed_pcap(tmp_path_factory):
    """All sample messages, interleaved with non-WCCP traffic and two malformed WCCP packets."""
    frames, expect = [], []
    for name, msg, data in _samples_encoded():
        frames.append(pcap.udp_frame(b"\x12\x34\x01\x00" + bytes(12), sport=5353, dport=53))  # DNS-ish
        frames.append(pcap.udp_frame(data, src="10.1.0.2", dst="10.0.0.1", sport=40000, dport=2048))
        expect.append(("ok", name, msg, data))
    frames.append(b"\xff" * 60)                                        # garbage frame (not IPv4)
    bad = bytearray(_samples_encoded()[0][2])
    bad[6:8] = b"\x10\x00"                                             # header length too large
    frames.append(pcap.udp_frame(bytes(bad), sport=2048, dport=2048))
    expect.append(("bad", "header length", None, None))
    frames.append(pcap.udp_frame(b"\x00\x00\x00\x63" + bytes(4), sport=2048, dport=2048))
    expect.append(("bad", "unknown message type 99", None, None))
    path = tmp_path_factory.mktemp("decode") / "mixed.pcap"
    pcap.write_pcap(str(path), frames)
    return path, expect


def test_json_every_field(mixed_pcap):
    path, expect = mixed_pcap
    r = run_cli(path, "--json")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert len(lines) == len(expect)
    for obj, (kind, name, msg, data) in zip(lines, expect, strict=True):
        if kind == "bad":
            assert name in obj["error"], obj
            continue
        assert obj["message"] == codec.MESSAGE_NAMES[msg["type"]], name
        assert obj["src"] == "10.1.0.2:40000" and obj["dst"] == "10.0.0.1:2048"
        for k in ("packet", "time", "src", "dst", "message"):
            obj.pop(k)
        assert obj == _expected_json(msg, data), name


def test_json_conversions(mixed_pcap):
    path, _ = mixed_pcap
    lines = [json.loads(x) for x in run_cli(path, "--json").stdout.splitlines()]
    by_type = {}
    for o in lines:
        if "error" not in o:
            by_type.setdefault(o["message"], []).append(o)
    isy = by_type["I_SEE_YOU"][0]
    assert isy["router_identity"]["router_id"] == "10.0.0.1"
    assert isy["router_identity"]["received_from"] == ["10.1.0.2"]
    assert isy["router_view"]["routers"] == ["10.0.0.1"]
    el = isy["router_view"]["web_caches"][1]
    assert el["address"] == "10.1.0.3" and el["data_type"] == "hash"
    assert len(el["bucket_bitmap"]) == 64 and int(el["bucket_bitmap"], 16) >= 0
    ra = by_type["REDIRECT_ASSIGN"][0]
    assert ra["assignment_info"]["web_caches"] == ["10.1.0.2", "10.1.0.3"]
    assert len(ra["assignment_info"]["buckets"]) == 512
    assert bytes.fromhex(ra["assignment_info"]["buckets"])[7] == 0xFF
    hia = by_type["HERE_I_AM"][1]
    assert hia["web_cache_identity"]["mask_value_sets"][0]["masks"]["src_addr"] == "0.0.23.65"
    assert hia["command_extension"] == [{"type": 1, "data": "10.1.0.3", "name": "Cache shutdown"}]
    assert len(hia["security"]["digest"]) == 32


def test_text_output(mixed_pcap):
    path, expect = mixed_pcap
    r = run_cli(path)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for t in ("HERE_I_AM", "I_SEE_YOU", "REDIRECT_ASSIGN", "REMOVAL_QUERY"):
        assert t in out
    assert out.count("MALFORMED WCCP") == 2
    assert "unknown message type 99" in out
    n_ok = sum(1 for e in expect if e[0] == "ok")
    assert "%d WCCP message(s), 2 malformed, %d other packet(s) skipped" % (n_ok, n_ok + 1) in out
    assert "buckets: (per cache" in out


def test_md5_check(tmp_path):
    msg = fw.samples()["rq_md5"]
    good = codec.encode(msg, password="pw")
    bad = bytearray(good)
    bad[-1] ^= 1
    p = tmp_path / "md5.pcap"
    pcap.write_pcap(str(p), [pcap.udp_frame(good), pcap.udp_frame(bytes(bad))])
    lines = [json.loads(x) for x in run_cli(p, "--json", "--password", "pw").stdout.splitlines()]
    assert [o["md5_ok"] for o in lines] == [True, False]


@pytest.mark.parametrize("linktype", [pcap.LINKTYPE_LINUX_SLL, pcap.LINKTYPE_RAW, pcap.LINKTYPE_IPV4])
def test_other_link_types(tmp_path, linktype):
    data = codec.encode(fw.samples()["isy_hash"])
    p = tmp_path / "lt.pcap"
    pcap.write_pcap(str(p), [pcap.udp_frame(data, linktype=linktype)], linktype=linktype)
    lines = [json.loads(x) for x in run_cli(p, "--json").stdout.splitlines()]
    assert len(lines) == 1 and lines[0]["message"] == "I_SEE_YOU"


def test_big_endian_nanosecond_pcap(tmp_path):
    data = codec.encode(fw.samples()["rq"])
    fr = pcap.udp_frame(data)
    p = tmp_path / "be.pcap"
    with open(p, "wb") as f:
        f.write(struct.pack(">IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1))
        f.write(struct.pack(">IIII", 1700000001, 500000000, len(fr), len(fr)) + fr)
    lines = [json.loads(x) for x in run_cli(p, "--json").stdout.splitlines()]
    assert lines[0]["message"] == "REMOVAL_QUERY" and lines[0]["time"] == 1700000001.5


def _assert_clean_failure(r, words):
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr + r.stdout
    assert r.stderr.startswith("wccp decode: "), r.stderr
    for w in words:
        assert w in r.stderr, (w, r.stderr)


def test_bad_captures(tmp_path):
    _assert_clean_failure(run_cli(tmp_path / "missing.pcap"), ["cannot open"])
    p = tmp_path / "empty.pcap"
    p.write_bytes(b"")
    _assert_clean_failure(run_cli(p), ["empty file"])
    p = tmp_path / "text.pcap"
    p.write_bytes(b"hello world, definitely not a capture\n")
    _assert_clean_failure(run_cli(p), ["not a pcap file"])
    p = tmp_path / "ng.pcap"
    p.write_bytes(b"\x0a\x0d\x0d\x0a" + bytes(40))
    _assert_clean_failure(run_cli(p), ["malformed pcapng"])
    p = tmp_path / "short.pcap"
    p.write_bytes(struct.pack("<I", 0xA1B2C3D4) + b"\x02\x00")
    _assert_clean_failure(run_cli(p), ["truncated pcap file header"])
    p = tmp_path / "lt.pcap"
    pcap.write_pcap(str(p), [], linktype=147)
    _assert_clean_failure(run_cli(p), ["unsupported link type 147"])


def test_truncated_capture_prints_what_it_has(tmp_path):
    good = tmp_path / "good.pcap"
    frames = [pcap.udp_frame(codec.encode(fw.samples()["rq"])) for _ in range(3)]
    pcap.write_pcap(str(good), frames)
    raw = good.read_bytes()
    for cut, what in ((len(raw) - 10, "truncated in packet 3"), (24 + 2 * (16 + len(frames[0])) + 5,
                                                                  "truncated in the header of packet 3")):
        p = tmp_path / ("cut%d.pcap" % cut)
        p.write_bytes(raw[:cut])
        r = run_cli(p, "--json")
        _assert_clean_failure(r, [what])
        assert len(r.stdout.splitlines()) == 2


def test_snaplen_truncated_wccp_packet_reported(tmp_path):
    data = codec.encode(fw.samples()["isy_32_caches"])
    fr = pcap.udp_frame(data)[:200]   # captured with a small snaplen
    p = tmp_path / "snap.pcap"
    pcap.write_pcap(str(p), [fr])
    r = run_cli(p, "--json")
    assert r.returncode == 0
    (o,) = [json.loads(x) for x in r.stdout.splitlines()]
    assert "truncated in the capture" in o["error"]


def test_other_port(tmp_path):
    data = codec.encode(fw.samples()["rq"])
    p = tmp_path / "port.pcap"
    pcap.write_pcap(str(p), [pcap.udp_frame(data, sport=3000, dport=3000)])
    assert run_cli(p, "--json").stdout == ""
    assert json.loads(run_cli(p, "--json", "--port", "3000").stdout)["message"] == "REMOVAL_QUERY"


def test_live_decode_on_loopback():
    """`wccp decode --live lo`: dumpcap on loopback, messages decoded as they arrive."""
    import selectors
    import socket
    import time
    samples = [(n, m, d) for n, m, d in _samples_encoded() if m["security"]["option"] == 0][:3]
    assert len(samples) == 3 and len({d for _, _, d in samples}) == 3
    src, dst = "127.77.0.2", "127.77.0.1"
    cmd = [str(WCCP)] if WCCP.exists() else [sys.executable, "-m", "wccptool.cli"]
    proc = subprocess.Popen(cmd + ["decode", "--live", "lo", "--json", "--duration", "60",
                                   "--filter", "host %s" % dst],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
    got = []
    try:
        # dumpcap needs a moment to attach; until output appears keep sending the first sample
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((src, 0))
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        deadline = time.time() + 30
        while not got and time.time() < deadline:
            s.sendto(samples[0][2], (dst, 2048))
            if sel.select(timeout=0.3):
                got.append(json.loads(proc.stdout.readline()))
        assert got, proc.stderr.read() if proc.poll() is not None else "no output from --live"
        for _, _, data in samples[1:]:
            s.sendto(data, (dst, 2048))
        while len(got) < 50 and time.time() < deadline + 30:
            line = proc.stdout.readline()
            assert line, proc.stderr.read()
            got.append(json.loads(line))
            if len(got) >= 3 and _strip(got[-1]) == _expected_json(samples[2][1], samples[2][2]):
                break
        s.close()
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    for g in got:
        assert g["src"].startswith(src + ":") and g["dst"] == dst + ":2048"
    # k >= 1 copies of the first sample, then the other two, each decoded field for field
    exp = [_expected_json(m, d) for _, m, d in samples]
    bodies = [_strip(g) for g in got]
    k = 0
    while k < len(bodies) and bodies[k] == exp[0]:
        k += 1
    assert k >= 1 and bodies[k:] == exp[1:], bodies


def _strip(obj):
    return {k: v for k, v in obj.items() if k not in ("packet", "time", "src", "dst", "message")}


def test_live_decode_bad_interface_and_no_input():
    p = run_cli("--live", "no-such-if0", "--duration", "2")
    assert p.returncode == 1 and "dumpcap" in p.stderr
    p = run_cli()
    assert p.returncode == 2 and "--live" in p.stderr
