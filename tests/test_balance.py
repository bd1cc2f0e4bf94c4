"""`wccp balance` and its engine (wccptool.balance): flows from pcap and pcapng captures,
bucket / mask-value arithmetic against the data plane's functions, shares and ratios, the
SVG plot, the CLI."""
import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.utils import PcapNgWriter, wrpcap

from wccp.dataplane import FWD_GRE
from wccp.fwdmodel import ForwardingModel, with_fcs
from wccptool import balance as bal

NAT = ["198.51.100.%d" % i for i in range(1, 5)]


def _packets():
    pk = []
    for i in range(400):
        src = NAT[i % 4]
        pk.append(Ether() / IP(src=src, dst="203.0.113.%d" % (1 + i % 50)) / TCP(sport=20000 + i, dport=80) /
                  (b"x" * (i % 7 * 100)))
    pk.append(Ether() / IP(src="10.9.9.9", dst="10.9.9.8") / UDP(sport=5353, dport=53))
    return pk


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    d = tmp_path_factory.mktemp("bal")
    pk = _packets()
    wrpcap(str(d / "mix.pcap"), pk)
    w = PcapNgWriter(str(d / "mix.pcapng"))
    for p in pk:
        w.write(p)
    w.close()
    return d


def test_flows_from_pcap_and_pcapng_are_the_same(captures):
    a, na = bal.read_flows(str(captures / "mix.pcap"))
    b, nb = bal.read_flows(str(captures / "mix.pcapng"))
    assert a == b and na == nb == 401 and len(a) == 401
    c, nc = bal.read_flows(str(captures / "mix.pcap"), dst_ports=(80,))
    assert nc == 400 and all(k[4] == 80 for k in c)


def _model_bucket(hash_fn, flags, key):
    """The bucket the reference data plane computes for the flow (hash assignment)."""
    _p, src, dst, sport, dport = key
    m = ForwardingModel(clock=lambda: 0)
    m.configure(1, bytes(6), 1500)
    m.set_group(0, {"service_type": 1, "service_id": 9, "protocol": 6, "service_flags": flags, "ports": [],
                    "hash_fn": hash_fn})
    m.set_caches(0, [{"address": 99, "forward": FWD_GRE}])
    m.set_hash(0, bytes(256))
    m.commit()
    m.arm(0)
    m.heartbeat()
    ip = IP(src="%d.%d.%d.%d" % tuple(src.to_bytes(4, "big")), dst="%d.%d.%d.%d" % tuple(dst.to_bytes(4, "big"))) / \
        TCP(sport=sport, dport=dport)
    f = bytes(Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:09") / ip)
    f = with_fcs(f + bytes(max(0, 60 - len(f))))
    return m.decide(0, f).bucket


def test_buckets_are_the_data_planes(captures):
    flows, _n = bal.read_flows(str(captures / "mix.pcap"), dst_ports=(80,))
    keys = list(flows)[:40]
    for method, fn in (("wccp-hash", "wccp"), ("pearson", "pearson")):
        for fields in (["src_ip"], ["src_ip", "src_port"], ["dst_ip", "dst_port"]):
            fl = bal.flags_of(fields)
            for k in keys[:10]:
                assert bal.slot_of(method, fl, k) == _model_bucket(fn, fl, k), (method, fields, k)


def test_shares_ratios_and_mask_values(captures):
    flows, _n = bal.read_flows(str(captures / "mix.pcap"), dst_ports=(80,))
    r = bal.assign(flows, 4, "mask", ["src_ip"], 0x3)
    # the 4 NAT addresses' low bits are 1, 2, 3, 0 (+ sequence k -> cache k mod 4): 100 flows each
    assert [c["flows"] for c in r["per_cache"]] == [100] * 4 and r["flow_ratio"] == 1.0
    assert r["slot_flows"] == [100] * 4
    r = bal.assign(flows, 4, "wccp-hash", ["src_ip"])
    assert sum(c["flow_share"] for c in r["per_cache"]) == pytest.approx(1.0)
    assert sum(c["bytes"] for c in r["per_cache"]) == sum(b for _p, b in flows.values())
    loads = [c["flows"] for c in r["per_cache"]]
    assert r["flow_ratio"] == pytest.approx(max(loads) / (sum(loads) / 4))
    assert r["idle_caches"] == loads.count(0)
    # blocks: bucket b -> b*N//256; interleaved: b mod N
    assert bal.deal(4, "blocks")[63:65] == [0, 1] and bal.deal(4, "interleaved")[:5] == [0, 1, 2, 3, 0]
    with pytest.raises(bal.BalanceError):
        bal.assign(flows, 4, "mask", ["src_ip", "dst_ip"], 3)
    with pytest.raises(bal.BalanceError):
        bal.assign(flows, 4, "mask", ["src_port"], 0x10000)


def test_svg_is_well_formed_with_a_bar_per_cache_and_share(captures):
    flows, _n = bal.read_flows(str(captures / "mix.pcap"))
    r = bal.assign(flows, 5, "pearson", ["src_ip", "src_port"])
    root = ET.fromstring(bal.svg(r, "t"))
    titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
    assert len(titles) == 10 and titles[0].startswith("cache 0 flow share")


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "wccptool.cli", "balance", *args], capture_output=True, text=True)


def test_cli_all_methods_json_and_plot(captures, tmp_path):
    outs = []
    for name in ("mix.pcap", "mix.pcapng"):
        p = _cli(str(captures / name), "--caches", "4", "--method", "all", "--mask", "0x3", "--json",
                 "--dst-port", "80", "--plot", str(tmp_path / (name + ".svg")))
        assert p.returncode == 0, p.stderr
        outs.append(json.loads(p.stdout))
    assert outs[0]["results"] == outs[1]["results"]
    res = {r["method"]: r for r in outs[0]["results"]}
    assert set(res) == {"wccp-hash", "pearson", "mask"} and res["mask"]["flow_ratio"] == 1.0
    for m in res:
        ET.parse(str(tmp_path / ("mix.pcapng-%s.svg" % m)))
    p = _cli(str(captures / "mix.pcap"), "--caches", "3", "--method", "pearson", "--fields", "src_ip,src_port")
    assert p.returncode == 0 and "pearson" in p.stdout and p.stdout.count("%") >= 6
    assert _cli(str(captures / "mix.pcap"), "--caches", "3", "--method", "mask").returncode == 2
    p = _cli(str(tmp_path / "nope.pcap"), "--caches", "3")
    assert p.returncode == 1 and "cannot open" in p.stderr
