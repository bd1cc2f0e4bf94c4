"""wccptool.pcap: the capture reader/writer (scapy underneath), checked against tshark's own
tools (editcap writes the pcapng files, tshark reads what the writer wrote)."""
import struct
import subprocess

import pytest
from wccptool import cachesim, pcap
from wccptool.pcap import PcapError, PcapWriter, extract_udp, read_pcap, udp_frame, write_pcap


def _frames(n):
    return [(1700000000.25 + i, udp_frame(b"payload-%d" % i, sport=2048, dport=2048, ip_id=i + 1))
            for i in range(n)]


def test_round_trip_keeps_frames_and_timestamps(tmp_path):
    p = tmp_path / "a.pcap"
    frames = _frames(3)
    write_pcap(str(p), frames)
    recs = list(read_pcap(str(p)))
    assert [r.index for r in recs] == [1, 2, 3]
    assert [r.data for r in recs] == [fr for _t, fr in frames]
    assert [r.ts for r in recs] == pytest.approx([t for t, _fr in frames], abs=1e-6)
    assert all(r.linktype == pcap.LINKTYPE_ETHERNET for r in recs)
    assert extract_udp(recs[1].linktype, recs[1].data).payload == b"payload-1"


def test_tshark_reads_what_the_writer_wrote(tmp_path):
    p = tmp_path / "a.pcap"
    write_pcap(str(p), _frames(2))
    out = subprocess.run(["tshark", "-r", str(p), "-T", "fields", "-e", "udp.srcport",
                          "-e", "ip.checksum.status", "-e", "udp.checksum.status",
                          "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE"],
                         capture_output=True, text=True, timeout=60, check=True).stdout.split("\n")
    assert out[:2] == ["2048\t1\t1", "2048\t1\t1"]      # 1: checksum good (0 bad, 2 unverified)


@pytest.mark.parametrize("linktype", [pcap.LINKTYPE_ETHERNET, pcap.LINKTYPE_LINUX_SLL, pcap.LINKTYPE_RAW])
def test_pcapng_from_editcap(tmp_path, linktype):
    """A pcapng file (as editcap and Wireshark write it) reads like the pcap it came from."""
    src, ng = tmp_path / "a.pcap", tmp_path / "a.pcapng"
    frames = [(1700000000.5 + i, udp_frame(b"ng-%d" % i, linktype=linktype)) for i in range(3)]
    write_pcap(str(src), frames, linktype=linktype)
    subprocess.run(["editcap", "-F", "pcapng", str(src), str(ng)], check=True, timeout=60)
    assert ng.read_bytes()[:4] == b"\x0a\x0d\x0d\x0a"
    recs = list(read_pcap(str(ng)))
    assert [r.data for r in recs] == [fr for _t, fr in frames]
    assert [r.linktype for r in recs] == [linktype] * 3
    assert [r.ts for r in recs] == pytest.approx([t for t, _fr in frames], abs=1e-6)


def test_pcapng_cut_short_yields_what_it_has(tmp_path):
    src, ng = tmp_path / "a.pcap", tmp_path / "a.pcapng"
    write_pcap(str(src), _frames(3))
    subprocess.run(["editcap", "-F", "pcapng", str(src), str(ng)], check=True, timeout=60)
    cut = tmp_path / "cut.pcapng"
    cut.write_bytes(ng.read_bytes()[:-10])
    got = []
    with pytest.raises(PcapError, match="truncated"):
        for r in read_pcap(str(cut)):
            got.append(r.data)
    assert got == [fr for _t, fr in _frames(3)[:2]]


def test_partial_tail_ends_quietly(tmp_path):
    """A capture still being written: the finished records, no error, for every cut point."""
    p = tmp_path / "a.pcap"
    write_pcap(str(p), _frames(2))
    raw = p.read_bytes()
    rec_len = 16 + len(_frames(1)[0][1])
    for cut in (0, 3, 10, 24, 24 + 5, 24 + rec_len, 24 + rec_len + 20, len(raw)):
        part = tmp_path / "part.pcap"
        part.write_bytes(raw[:cut])
        n = len(list(read_pcap(str(part), partial_tail=True)))
        assert n == max(0, (cut - 24) // rec_len), cut


def test_oversized_record_is_corruption(tmp_path):
    p = tmp_path / "big.pcap"
    p.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
                  + struct.pack("<IIII", 1, 0, 300000, 300000) + bytes(100))
    with pytest.raises(PcapError, match="claims 300000 captured bytes"):
        list(read_pcap(str(p)))


def test_streaming_writer_is_readable_before_close(tmp_path):
    p = tmp_path / "live.pcap"
    w = PcapWriter(str(p))
    w.write(b"\x01" * 60, ts=1700000000.000001)
    assert [r.data for r in read_pcap(str(p))] == [b"\x01" * 60]
    w.write(bytearray(b"\x02" * 61))
    w.close()
    assert [len(r.data) for r in read_pcap(str(p))] == [60, 61]


def test_cachesim_capture_is_raw_ipv4(tmp_path):
    p = tmp_path / "sim.pcap"
    a, b = cachesim.ip2int("10.1.0.2"), cachesim.ip2int("10.0.0.1")
    cachesim.write_pcap(str(p), [(5.5, (a, 2048), (b, 2048), b"hello"), (6.0, (b, 2048), (a, 2048), b"x")])
    recs = list(read_pcap(str(p)))
    assert [r.linktype for r in recs] == [pcap.LINKTYPE_RAW] * 2
    u = [extract_udp(r.linktype, r.data) for r in recs]
    assert [(x.src, x.dst, x.payload) for x in u] == [("10.1.0.2", "10.0.0.1", b"hello"),
                                                        ("10.0.0.1", "10.1.0.2", b"x")]
    assert recs[0].data[6] & 0x40 and recs[0].data[4:6] == b"\x00\x01"   # DF, IP id counts from 1
