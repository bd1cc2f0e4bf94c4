"""Real-shaped traffic mixes for `wccp balance` (docs/performance.md "Load balance"), written
with scapy as pcapng, then the comparison table of the methods.

    python bench/balance_mixes.py [--out build/balance] [--caches 4]

Mixes (client -> server direction only, as a service group redirects it):
  nat    8 NAT addresses (198.51.100.1-8) in front of many users: 20000 TCP connections, source
         ports allocated sequentially per NAT address, to 400 web servers (Zipf-like popularity)
         on ports 80/443; a log-normal number of bytes per connection.
  ports  4 clients (10.1.0.1-4, e.g. proxies or load generators), 20000 connections with
         sequential source ports, to 3 servers on port 80.
  sites  200 clients in 20 branch /24s sharing the 10.0 prefix (10.0.<site>.<host>), 20000
         connections to 400 web servers (the vendor note's mask example).
"""
import argparse
import json
import math
import os
import random
import subprocess
import sys

from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.utils import PcapNgWriter

CONNS = 20000


def _size(rng):
    return min(1400 * 40, int(math.exp(rng.gauss(7.0, 1.5))))      # bytes per connection (median ~1 kB)


def _servers(rng, n):
    return ["203.0.%d.%d" % (113 + i // 250, 1 + i % 250) for i in range(n)]


def _zipf(rng, items):
    w = [1.0 / (i + 1) for i in range(len(items))]
    return rng.choices(items, weights=w)[0]


def flows(mix, rng):
    """[(src, sport, dst, dport, bytes)]"""
    out = []
    if mix == "nat":
        nat = ["198.51.100.%d" % i for i in range(1, 9)]
        nextport = {a: 1024 + rng.randrange(1000) for a in nat}
        servers = _servers(rng, 400)
        for _ in range(CONNS):
            a = rng.choice(nat)
            nextport[a] = 1024 + (nextport[a] - 1024 + 1) % 64000
            out.append((a, nextport[a], _zipf(rng, servers), rng.choice((80, 443)), _size(rng)))
    elif mix == "ports":
        clients = ["10.1.0.%d" % i for i in range(1, 5)]
        nextport = {a: 32768 for a in clients}
        servers = ["192.0.2.%d" % i for i in (10, 11, 12)]
        for _ in range(CONNS):
            a = rng.choice(clients)
            nextport[a] += 1
            out.append((a, nextport[a], rng.choice(servers), 80, _size(rng)))
    elif mix == "sites":
        clients = ["10.0.%d.%d" % (s, h) for s in range(20) for h in range(1, 11)]
        servers = _servers(rng, 400)
        for _ in range(CONNS):
            out.append((rng.choice(clients), rng.randrange(32768, 61000), _zipf(rng, servers), 80, _size(rng)))
    else:
        raise ValueError(mix)
    return out


def write(path, fl, rng):
    """One SYN and data packets of at most 1400 bytes (the bytes of the connection) per flow."""
    w = PcapNgWriter(path)
    t = 1700000000.0
    for src, sport, dst, dport, size in fl:
        base = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / IP(src=src, dst=dst)
        pkts = [base / TCP(sport=sport, dport=dport, flags="S")]
        while size > 0:
            n = min(1400, size)
            pkts.append(base / TCP(sport=sport, dport=dport, flags="PA") / (b"x" * n))
            size -= n
        for p in pkts:
            t += 0.0001
            p.time = t
            w.write(p)
    w.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="build/balance")
    ap.add_argument("--caches", type=int, default=4)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for mix in ("nat", "ports", "sites"):
        rng = random.Random(mix)
        path = os.path.join(args.out, "%s.pcapng" % mix)
        if not os.path.exists(path):
            write(path, flows(mix, rng), rng)
        for fields, mask in (("src_ip", "0x1741"), ("src_ip,src_port", None), ("dst_ip", "0x1741")):
            cells = {}
            for deal in ("blocks", "interleaved"):
                cmd = [sys.executable, "-m", "wccptool.cli", "balance", path, "--caches", str(args.caches),
                       "--method", "all", "--fields", fields, "--deal", deal, "--json"]
                if mask:
                    cmd += ["--mask", mask]
                res = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
                for r in res["results"]:
                    cells[(r["method"], deal)] = "%.2f (%.2f)%s" % (
                        r["flow_ratio"], r["byte_ratio"], ", %d idle" % r["idle_caches"] if r["idle_caches"] else "")
            rows.append((mix, fields, cells.get(("wccp-hash", "blocks")), cells.get(("wccp-hash", "interleaved")),
                         cells.get(("pearson", "blocks")), cells.get(("pearson", "interleaved")),
                         cells.get(("mask", "blocks"), "—") if mask else "—"))
    print("| mix | key | WCCP hash, blocks | WCCP hash, interleaved | Pearson, blocks | Pearson, interleaved "
          "| mask 0x1741 |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s |" % " | ".join(r))

if __name__ == "__main__":
    main()
