"""The inline lab (wccptool.lab, `wccp lab`): a client, an origin web server and real Squid
caches in network namespaces around the simulated appliance (the real firmware under the
MicroPython unix port driving the FPGA twin). The six scenarios of the lab, with Squid's own
access logs as evidence. Nothing in these tests sends traffic from a cache through the
appliance before the redirection is checked: the appliance must find its caches itself.

Scenario 1 runs on the RTL twin and the fast model, the others on the fast model
(WCCP_LAB_FPGA=rtl: on the RTL; all six pass there too, the 6 MB transfer takes about a
minute). Squid runs under libfaketime at 10x (its hard-coded 10 s HERE_I_AM interval becomes
1 s) and the firmware's T is 1 s: the protocol's removal time is 3 s.

Every test makes its own namespaces (a random per-test prefix) and removes them, and every
process it started, also on failure. Root is required (CI runs as root).
"""
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from wccp.const import SF_SRC_IP_HASH
from wccp.fwdmodel import fold, hash_key
from wccptool import lab as L

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
# Scenarios 2-6 run on the fast model in `make test`; WCCP_LAB_FPGA=rtl runs them on the RTL twin.
FPGA = os.environ.get("WCCP_LAB_FPGA", "twin-model")


def _need_root():
    if os.geteuid() != 0:
        msg = "the lab needs root (network namespaces)"
        if IN_CI:
            pytest.fail(msg, pytrace=False)
        pytest.skip(msg)


@pytest.fixture
def make_lab():
    _need_root()
    made = []

    def make(**kw):
        d = tempfile.mkdtemp(prefix="wccp-lab-")
        os.chmod(d, 0o755)                    # Squid runs as nobody
        kw.setdefault("fpga", FPGA)
        lab = L.Lab(prefix="lt" + secrets.token_hex(3), state_dir=os.path.join(d, "s"), time_scale=10,
                    log=lambda *a: None, **kw)
        made.append((lab, d))
        lab.up()
        return lab

    yield make
    for lab, d in made:
        for name, p in lab.procs.items():        # shown by pytest when the test failed
            print("---- %s (%s)\n%s" % (name, p.log, p.tail(25)))
        lab.down()
        left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert lab.prefix + "-" not in left, "namespaces left behind: %s" % left
        shutil.rmtree(d, ignore_errors=True)


def _served(lab, source=L.CLIENT, path="/index.html", timeout=15.0):
    """Repeat a request until Squid serves it (redirection may start up to ~1 s after the
    assignment); returns (seconds it took, headers, body)."""
    t0 = time.monotonic()
    last = None
    while time.monotonic() - t0 < timeout:
        try:
            status, hdrs, body = lab.get(source=source, path=path, timeout=3)
            if status == 200 and lab.served_by(hdrs) is not None:
                return time.monotonic() - t0, hdrs, body
            last = (status, hdrs.get("server"), hdrs.get("via"))
        except OSError as e:
            last = e
        time.sleep(0.2)
    raise AssertionError("no request from %s served by a Squid within %.0f s (last: %r)" % (source, timeout, last))


def _logged(lab, i, pred, what):
    """Squid writes an access-log line once a transaction is over, which may be just after the
    client has read the whole response: wait (10 s at most) until pred(log) holds."""
    return L.wait_until(lambda: pred(lab.access_log(i)) and lab.access_log(i), 10,
                        "Squid %d's access log: %s" % (i + 1, what))


def _log_lines(lab, name):
    with open(lab.procs[name].log, errors="replace") as f:
        return f.read().splitlines()


def _expected_cache(group, client):
    """The cache the assignment in /status (what `wccp show` prints) gives a client of the
    src-hash service: bucket = fold(source address)."""
    a = group["assignment"]
    b = a["buckets"][fold(hash_key(SF_SRC_IP_HASH, int.from_bytes(socket.inet_aton(client), "big"), 0, 0, 0))]
    assert b != 0xFF, "bucket of %s unassigned" % client
    return a["caches"][b & 0x7F]


def _wccp_show_json(lab):
    import json
    r = subprocess.run(L.nsx(lab.ns["firmware"], [sys.executable, "-m", "wccptool.cli", "show", "--json", "--host",
                                                  L.ROUTER, "--port", str(L.HTTP_PORT)]),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# ---------------------------------------------------------------- scenario 1

@pytest.mark.parametrize("fpga", ["twin-model", "rtl"])
def test_s1_hash_gre_one_squid(make_lab, fpga):
    """Hash + GRE, one Squid: the client's request is served by Squid, byte for byte the
    origin's; Squid's access log names the client. Non-HTTP traffic (TCP 8080) and traffic
    from the cache go straight through."""
    lab = make_lab(fpga=fpga, caches=1, service="web-cache")
    lab.wait_assigned()
    took, hdrs, body = _served(lab)
    assert body == lab.content["/index.html"]
    assert "MISS from %s" % lab.cache_name(0) in hdrs.get("x-cache", "") or "HIT" in hdrs.get("x-cache", "")
    _logged(lab, 0, lambda log: any(e["client"] == L.CLIENT and e["url"] == "http://%s/index.html" % L.ORIGIN
                                    and e["status"] == 200 for e in log), "the client's request")
    # the origin saw the request from the cache, not from the client
    org = _log_lines(lab, "origin80")
    assert any(ln.startswith(lab.caches[0] + " ") and "GET /index.html" in ln for ln in org), org
    assert not any(ln.startswith(L.CLIENT + " ") for ln in org), org
    # non-HTTP (not the service's port): straight to the origin
    status, hdrs8080, body8080 = lab.get(port=8080, timeout=5)
    assert status == 200 and body8080 == lab.content["/index.html"] and "via" not in hdrs8080
    assert any(ln.startswith(L.CLIENT + " ") for ln in _log_lines(lab, "origin8080"))
    assert not any(":8080" in e["url"] for e in lab.access_log(0))
    # traffic from the cache through the appliance: a port-80 server on the client side
    lab.spawn_in("client", "clientweb", [sys.executable, "-m", "wccptool.lab", "origin", "--port", "80",
                                         "--bind", L.CLIENT, "--dir", str(lab.state / "www")])
    L.in_netns(lab.ns["client"], L.wait_until, lambda: L.tcp_open(L.CLIENT, 80), 20, "the client-side server")
    status, hc, bc = L.in_netns(lab.cache_ns(0), L.http_get, L.CLIENT, "/index.html", 80, lab.caches[0], 5)
    assert status == 200 and "via" not in hc and bc == lab.content["/index.html"]
    assert any(ln.startswith(lab.caches[0] + " ") for ln in _log_lines(lab, "clientweb"))
    print("scenario 1 (%s): served by Squid %.2f s after the assignment; lab up in %.1f s"
          % (fpga, took, lab.timings["up"]))


# ---------------------------------------------------------------- scenario 2

def test_s2_two_squids_hash_split(make_lab):
    """Two Squids, hash on the client address: many clients spread over both, each access
    log holds exactly the clients the assignment in `wccp show` gives its cache."""
    lab = make_lab(caches=2, service="src-hash", clients=32)
    lab.wait_assigned()
    _served(lab)
    g = lab.group(_wccp_show_json(lab))
    want = {c: _expected_cache(g, c) for c in lab.clients}
    got = {}
    for c in lab.clients:
        status, hdrs, body = lab.get(source=c, path="/index.html?client=%s" % c)
        assert status == 200 and body == lab.content["/index.html"]
        i = lab.served_by(hdrs)
        assert i is not None, "request from %s not served by a Squid: %r" % (c, hdrs)
        got[c] = lab.caches[i]
    assert got == want
    for i, cache in enumerate(lab.caches):
        mine = {c for c, k in want.items() if k == cache}
        _logged(lab, i, lambda log, m=mine: {e["client"] for e in log if "client=" in e["url"]} >= m, "its clients")
        logged = {e["client"] for e in lab.access_log(i) if "client=" in e["url"]}
        assert logged == mine, (cache, sorted(logged ^ mine))
        assert len(mine) >= 4, "cache %s got %d of %d clients" % (cache, len(mine), len(lab.clients))


# ---------------------------------------------------------------- scenario 3

def test_s3_mask_l2_dynamic_service(make_lab):
    """Mask assignment, L2 forwarding and return, dynamic service 80."""
    lab = make_lab(caches=1, service="mask-l2")
    g = lab.wait_assigned()
    assert g["assignment"]["type"] == "mask"
    c = g["caches"][0]
    assert (c["forwarding"], c["return"], c["assignment"]) == ("l2", "l2", "mask")
    took, hdrs, body = _served(lab)
    assert body == lab.content["/index.html"]
    for src in lab.clients[1:5]:
        status, hdrs, body = lab.get(source=src, path="/index.html?l2=%s" % src)
        assert status == 200 and lab.served_by(hdrs) == 0 and body == lab.content["/index.html"]
    want = {L.CLIENT} | set(lab.clients[1:5])
    _logged(lab, 0, lambda log: {e["client"] for e in log} >= want, "the clients %s" % sorted(want))


# ---------------------------------------------------------------- scenario 4

def test_s4_squid_killed_survivor_takes_over(make_lab):
    """Kill one of two Squids: once WCCP removes it, its clients are served by the survivor.
    A request fails (no answer, or refused by the dead cache's host) for no longer than the
    removal time (3 T, plus 1 s for the request timeout and polling); after the removal and
    before the survivor's new assignment a request may be answered by the origin itself (not
    a failure). The survivor's clients are always served by it (nothing black-holed)."""
    lab = make_lab(caches=2, service="src-hash", clients=24)
    lab.wait_assigned()
    _served(lab)
    g = lab.group()
    owner = {c: _expected_cache(g, c) for c in lab.clients}
    victim = lab.caches[1]
    theirs = [c for c in lab.clients if owner[c] == victim][:4]
    ours = [c for c in lab.clients if owner[c] != victim][:2]
    assert theirs and ours
    for c in theirs + ours:
        assert lab.served_by(lab.get(source=c)[1]) == lab.caches.index(owner[c])
    t_kill = time.monotonic()
    lab.kill_squid(1)
    results = {c: [] for c in theirs + ours}
    deadline = t_kill + 30
    recovered_at = None
    while time.monotonic() < deadline:
        for c in theirs + ours:
            try:
                status, hdrs, body = lab.get(source=c, path="/index.html?k=%s" % c, timeout=1.0)
                how = "fail"
                if status == 200 and body == lab.content["/index.html"]:
                    how = {0: "survivor", None: "origin"}.get(lab.served_by(hdrs), "fail")
            except OSError:
                how = "fail"
            results[c].append((time.monotonic() - t_kill, how))
        if all(results[c][-1][1] == "survivor" for c in theirs + ours):
            recovered_at = recovered_at or time.monotonic() - t_kill
            if time.monotonic() - t_kill > recovered_at + 1.5:
                break
        else:
            recovered_at = None
        time.sleep(0.1)
    assert recovered_at is not None, {c: r[-3:] for c, r in results.items()}
    bound = lab.removal_s + 1.0
    windows = []
    for c in theirs:
        fails = [t for t, how in results[c] if how == "fail"]
        window = (max(fails) - min(fails)) if fails else 0.0
        windows.append(window)
        assert window <= bound, "client %s failed for %.1f s (bound %.1f s): %r" % (c, window, bound, results[c])
    for c in ours:
        assert all(how == "survivor" for _t, how in results[c]), "survivor's client %s: %r" % (c, results[c])
    g = lab.group()
    assert [x["address"] for x in g["caches"] if x["state"] == "usable"] == [lab.caches[0]]
    for c in lab.clients:                      # every client, not just the sampled ones
        status, hdrs, body = lab.get(source=c, path="/index.html?after=%s" % c)
        assert status == 200 and lab.served_by(hdrs) == 0 and body == lab.content["/index.html"], (c, hdrs)
    _logged(lab, 0, lambda log: {e["client"] for e in log if "k=" in e["url"]} >= set(theirs),
            "the dead cache's clients %s" % theirs)
    print("scenario 4: victim's clients failed for at most %.1f s (bound %.1f s), all served by the survivor "
          "%.1f s after the kill" % (max(windows), bound, recovered_at))


# ---------------------------------------------------------------- scenario 5

def test_s5_firmware_killed_fail_open_then_resume(make_lab):
    """Kill the firmware: the FPGA's watchdog fails open and the client reaches the origin
    directly; restart it: the cache rejoins and redirection resumes with a new change number."""
    lab = make_lab(caches=1, service="web-cache")
    lab.wait_assigned()
    _served(lab)
    before = lab.group()["member_change_number"]
    n_log = len(lab.access_log(0))
    lab.kill_firmware()
    t0 = time.monotonic()

    tries = []

    def direct():
        tries.append("open=%d" % len(tries))
        status, hdrs, body = lab.get(path="/index.html?" + tries[-1], timeout=2)
        return status == 200 and "via" not in hdrs and body == lab.content["/index.html"]
    L.wait_until(direct, 60, "the FPGA to fail open (a request answered by the origin itself)", step=0.3)
    fail_open = time.monotonic() - t0
    org = _log_lines(lab, "origin80")
    assert any(ln.startswith(L.CLIENT + " ") and tries[-1] + " " in ln for ln in org), org[-5:]
    assert not any(e["url"].endswith(tries[-1]) for e in lab.access_log(0))
    lab.start_firmware()
    g = lab.wait_assigned()
    assert g["member_change_number"] != before
    took, hdrs, body = _served(lab, path="/index.html?again=1")
    assert body == lab.content["/index.html"]
    _logged(lab, 0, lambda log: any("again=1" in e["url"] and e["client"] == L.CLIENT for e in log[n_log:]),
            "the request after the restart")
    print("scenario 5: fail-open %.1f s after the kill; change number %s -> %s"
          % (fail_open, before, g["member_change_number"]))


# ---------------------------------------------------------------- scenario 6

def test_s6_large_transfers_byte_exact(make_lab):
    """A 6 MB download and a 2 MB upload through the redirect, byte for byte (the upload's
    full-size client segments are GRE-encapsulated: the client-side MTU rule keeps them
    within the appliance's 1500 bytes)."""
    lab = make_lab(caches=1, service="web-cache")
    lab.wait_assigned()
    _served(lab)
    t0 = time.monotonic()
    status, hdrs, body = lab.get(path="/big.bin", timeout=300)
    dt = time.monotonic() - t0
    assert status == 200 and lab.served_by(hdrs) == 0
    assert len(body) == L.BIG_SIZE and L.sha256(body) == L.sha256(lab.content["/big.bin"])
    up = lab.content["/big.bin"][:2 * 1024 * 1024]
    status, hdrs, answer = lab.get(path="/upload", method="POST", body=up, timeout=300)
    assert status == 200 and lab.served_by(hdrs) == 0
    assert answer.decode().split() == [L.sha256(up), str(len(up))]
    _logged(lab, 0, lambda log: any(e["url"].endswith("/big.bin") and e["bytes"] >= L.BIG_SIZE
                                    and e["client"] == L.CLIENT for e in log), "the download")
    _logged(lab, 0, lambda log: any(e["method"] == "POST" and e["client"] == L.CLIENT for e in log), "the upload")
    print("scenario 6: 6 MB through the redirect in %.1f s" % dt)


@pytest.mark.parametrize("fpga", ["twin-model", "rtl"])
def test_s7_larger_cache_side_mtu_redirects_full_size_packets_whole(make_lab, fpga):
    """The caches' links at MTU 1528 and the appliance's `mtu` 1528: the client runs 1500, its
    full-size upload segments (1500-byte packets) are GRE-encapsulated whole (1528 bytes) and
    reach Squid; none goes to the origin beside the cache (`gre_too_big` stays 0)."""
    lab = make_lab(caches=1, service="web-cache", cache_mtu=1528, fpga=fpga)
    assert lab.client_mtu == 1500
    lab.wait_assigned()
    _served(lab)
    up = lab.content["/big.bin"][:(1 if fpga == "rtl" else 2) * 1024 * 1024]
    status, hdrs, answer = lab.get(path="/upload", method="POST", body=up, timeout=300)
    assert status == 200 and lab.served_by(hdrs) == 0
    assert answer.decode().split() == [L.sha256(up), str(len(up))]
    dp = lab.status()["dataplane"]
    assert dp["gre_too_big"] == 0 and dp["redirect_gre"] > len(up) // 1460, dp
    _logged(lab, 0, lambda log: any(e["method"] == "POST" and e["client"] == L.CLIENT for e in log), "the upload")


# ---------------------------------------------------------------- the tool itself

def test_gre_payload_strips_gre_and_wccp_header():
    from scapy.layers.inet import IP, TCP
    from scapy.layers.l2 import GRE
    inner = bytes(IP(src="10.62.0.10", dst="10.62.0.1") / TCP(dport=80, flags="S"))
    wccp_hdr = bytes(4)
    for gre, extra in ((GRE(proto=0x883E), wccp_hdr), (GRE(proto=0x0800), b""),
                       (GRE(proto=0x883E, key_present=1, key=7, seqnum_present=1, sequence_number=3), wccp_hdr)):
        pkt = bytes(IP(src=L.ROUTER, dst="10.62.0.21", proto=47) / gre) + extra + inner
        assert L.gre_payload(pkt) == inner
    assert L.gre_payload(bytes(IP(proto=47) / GRE(proto=0x86DD)) + inner) is None       # not IPv4 inside
    assert L.gre_payload(bytes(IP(proto=17)) + inner) is None
    assert L.gre_payload(b"\x45" + bytes(10)) is None


def test_cache_commands_are_the_quickstarts():
    """docs/quickstart.md's cache-side commands are the ones the lab runs."""
    text = (L.ROOT / "docs" / "quickstart.md").read_text()
    for fwd, gre in (("gre", "ip_gre"), ("gre", "decap"), ("l2", None)):
        for argv in L.cache_setup_commands("192.0.2.10", "192.0.2.1", fwd, gre=gre or "ip_gre"):
            line = " ".join(argv)
            assert line in text, line
    assert " ".join(L.decap_command("192.0.2.10", "192.0.2.1")) in text
    assert "wccp lab" in text.split("## 2.")[0]


@pytest.mark.parametrize("stop", ["down", "ctrl-c"])
def test_cli_up_banner_and_down(tmp_path, stop):
    """`wccp lab` prints its banner; `wccp lab --down` from another shell, or Ctrl-C, removes
    every namespace, interface and process it made."""
    _need_root()
    prefix = "lc" + secrets.token_hex(3)
    d = tempfile.mkdtemp(prefix="wccp-lab-")
    os.chmod(d, 0o755)
    state = os.path.join(d, "s")
    wccp = [sys.executable, "-m", "wccptool.cli", "lab"]
    out = open(tmp_path / "lab.out", "w+")
    p = subprocess.Popen(wccp + ["--fpga", "twin-model", "--time-scale", "10", "--prefix", prefix,
                                 "--state-dir", state], stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        L.wait_until(lambda: "Stop: Ctrl-C" in (tmp_path / "lab.out").read_text() or p.poll() is not None, 120,
                     "the banner")
        text = (tmp_path / "lab.out").read_text()
        assert p.poll() is None, text
        assert "ip netns exec %s-cl curl -v http://%s/index.html" % (prefix, L.ORIGIN) in text
        assert "wccp show --host %s" % L.ROUTER in text
        assert "decapsulator" in text or "ip_gre" in text
        if stop == "down":
            # a second lab on the same prefix is refused, and leaves the running one alone
            r = subprocess.run(wccp + ["--fpga", "twin-model", "--prefix", prefix, "--state-dir", state],
                               capture_output=True, text=True, timeout=60)
            assert r.returncode == 1 and "is running (pid %d)" % p.pid in r.stderr, r.stderr
            assert p.poll() is None
            r = subprocess.run(wccp + ["--down", "--prefix", prefix, "--state-dir", state], capture_output=True,
                               text=True, timeout=60)
            assert r.returncode == 0, r.stderr
            assert "removed the lab process %d" % p.pid in r.stdout, r.stdout
        else:
            os.kill(p.pid, signal.SIGINT)
        assert p.wait(30) == 0
        assert "removed its namespaces and processes" in (tmp_path / "lab.out").read_text()
        left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert prefix not in left
        assert prefix not in subprocess.run(["ip", "link"], capture_output=True, text=True).stdout
        assert not [ln for ln in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
                    .splitlines() if state in ln]
    finally:
        if p.poll() is None:
            os.killpg(p.pid, 9)
        L.down_from_state(state, prefix, quiet=True)
        shutil.rmtree(d, ignore_errors=True)


def test_cli_says_root_is_needed():
    if os.geteuid() != 0:
        r = subprocess.run([sys.executable, "-m", "wccptool.cli", "lab"], capture_output=True, text=True, timeout=60)
    else:
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m",
                            "wccptool.cli", "lab"], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, HOME="/tmp"))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "needs root" in r.stderr
