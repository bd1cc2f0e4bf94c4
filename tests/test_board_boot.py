"""Every MCU board in boards/ on its emulated board (wccptool.vport under the unix port): `wccp flash`
through the real mpremote, main.py's board boot path, the SPI link to the RTL twin (through the
RTL SPI slave: the bytes the board's machine.SPI clocks), the FPGA identity, a cache-sim cache
with an MD5 password joining and traffic redirected; fail-open with the reason when the FPGA is
absent or the wrong build; boards that cannot run the product refused with the reason; recovery
(bad config, a slot that does not boot, a watchdog timeout, safe mode).

Addresses: 127.62.N.x on loopback, ports 17400+ (fixed, this module only)."""
import asyncio
import json
import os
import socket
import struct
import threading
import time
import urllib.request

import pytest
from twin_helpers import build_rtl, by_port, ether, ip2int, ipv4, mac, tcp

from wccp import regmap as R
from wccp.fwdmodel_regs import ModelRegisterFile
from wccptool import boards, cachesim as cs, twin
from wccptool import flash as fl
from wccptool.vboard import VirtualBoard

MCU_BOARDS = [b for b in boards.list_boards("mcu") if b != "virtual"]
# boards `wccp flash` must refuse, and why (docs/quickstart.md, docs/performance.md)
REFUSED = {"olimex_esp32_poe": "heap after network start-up", "nucleo_f429zi": "cannot hold two firmware slots"}
RUNS = [b for b in MCU_BOARDS if b not in REFUSED]
T_MS = 2000     # HERE_I_AM interval: the RTL twin behind SPI makes a /status take seconds


def _net(name):
    return 1 + sorted(MCU_BOARDS + ["_fail", "_rec"]).index(name)


def _config(path, router, http_port, password="pw", **extra):
    cfg = {"network": {"dhcp": True}, "http": {"address": router, "port": http_port},
           "timers": {"here_i_am_ms": T_MS}, "services": [{"id": 0, "type": "standard", "password": password}]}
    cfg.update(extra)
    path.write_text(json.dumps(cfg))
    return str(path)


def _status(router, port, timeout=20):
    with urllib.request.urlopen("http://%s:%d/status" % (router, port), timeout=timeout) as r:
        return json.loads(r.read().decode())


def _wait(pred, timeout, what, every=0.2):
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        try:
            v = pred()
            if v:
                return v
        except (OSError, KeyError, ValueError, IndexError, TypeError) as e:
            last = e
        time.sleep(every)
    raise AssertionError("timed out waiting for %s (last error %r)" % (what() if callable(what) else what, last))


def _assigned(st, cache):
    g = st["groups"][0]
    return g["assignment"] is not None and [c["address"] for c in g["caches"]] == [cache] and \
        all(c["state"] == "usable" for c in g["caches"])


def _with_cache(cache, router, fn, password="pw"):
    """Run fn() (blocking) while a cache-sim cache talks WCCP to the router."""
    async def main():
        async with cs.CacheSim([cs.Member(cache, [router], interval=T_MS / 1000, password=password)]):
            return await asyncio.get_running_loop().run_in_executor(None, fn)
    return asyncio.run(main())


@pytest.mark.parametrize("name", RUNS)
def test_board_boots_reaches_rtl_twin_and_redirects(name, tmp_path):
    n = _net(name)
    router, cache = "127.62.%d.1" % n, "127.62.%d.11" % n
    http_port = 17400 + 10 * n
    spi, frames = "127.62.%d.1:%d" % (n, 17401 + 10 * n), "127.62.%d.1:%d" % (n, 17402 + 10 * n)
    build_rtl()
    spi_log = tmp_path / "spi.log"
    tw = twin.start(fpga="rtl", bus="spi", spi=spi, frames=frames, spi_log=str(spi_log),
                    log_file=str(tmp_path / "twin.log"))
    fs = tmp_path / "fs"
    fs.mkdir()
    vb = VirtualBoard(str(fs), board=name, fpga=spi, lease=router)
    try:
        vb.start()
        log = []
        res = fl.flash(name, vb.port, config=_config(tmp_path / "config.json", router, http_port),
                       progress=log.append, boot_wait=2)
        text = "\n".join(log)
        assert "emulated %s" % name in text and "Traceback" not in text, text
        assert res["slot"] == "a"
        st = _wait(lambda: _status(router, http_port), 20, "/status")
        # the board definition alone brought it up: DHCP address, FPGA identity over SPI
        assert st["board"]["name"] == name and st["board"]["address"] == router
        assert st["board"]["config_errors"] == [] and st["board"]["watchdog_ms"] > 0
        assert st["fpga"]["state"] == "up" and st["fpga"]["id"] == "0x%08x" % R.ID_VALUE, st["fpga"]
        assert st["fpga"]["version"] == "%d.%d" % (R.REGMAP_VERSION >> 16, R.REGMAP_VERSION & 0xFFFF)
        # the identity reads went over the SPI link as the board clocks them (the twin's log: length,
        # MOSI bytes): READ of ID/VERSION/CAPS (3 words) and of BUILD_ID, before any write
        log_bytes = spi_log.read_bytes()
        id_read = struct.pack(">I", 17) + b"\x03\x00\x00\x00" + bytes(13)
        build_read = struct.pack(">I", 9) + bytes([3, 0, 0, R.BUILD_ID]) + bytes(5)
        assert log_bytes.startswith(id_read + build_read), log_bytes[:60].hex()

        t = tw.transport()
        fc = tw.frame_client()
        cache_mac, gw_mac = mac("02:62:%02x:00:00:11" % n), mac("02:62:%02x:00:00:fe" % n)

        def joined_then_redirect():
            _wait(lambda: _assigned(_status(router, http_port), cache), 90, "cache assigned (MD5 password)", every=1)
            _wait(lambda: t.read(R.STATUS, 1)[0] & R.STATUS_ACTIVE, 20, "FPGA redirecting")
            assert t.read(R.ROUTER_ID, 1)[0] == ip2int(router)
            # the cache's location is learnt from its traffic on port 1; clients on port 0
            fc.send(1, ether(gw_mac, cache_mac, ipv4(ip2int(cache), ip2int("10.62.9.9"), 6, tcp(3128, 40000))))
            fc.barrier()
            web = [ether(gw_mac, mac("02:62:05:00:00:%02x" % i),
                         ipv4(ip2int("10.62.5.%d" % (i + 1)), ip2int("10.62.200.%d" % (i + 7)), 6,
                              tcp(20000 + i, 80, b"GET / HTTP/1.0\r\n\r\n"))) for i in range(6)]
            fc.send_many([(0, f) for f in web])
            return by_port(fc.barrier())

        got = _with_cache(cache, router, joined_then_redirect)
        out = got.get(1, [])
        assert len(out) == 6, got
        for f in out:        # GRE toward the cache: its MAC, IP protocol 47, outer destination the cache
            assert f[:6] == cache_mac and f[12:14] == b"\x08\x00" and f[23] == 47, f[:40].hex()
            assert struct.unpack(">I", f[30:34])[0] == ip2int(cache)
        st = _status(router, http_port)
        assert st["groups"][0]["counters"].get("here_i_am_rx", 1) >= 1 and st["drops"].get("md5_failure", 0) == 0
        # the slot that booted and answered is committed
        assert (fs / "fw" / "active").read_text() == "a" and not (fs / "fw" / "try").exists()
    finally:
        vb.stop()
        tw.stop()


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_board_that_cannot_run_the_product_is_refused(name, tmp_path):
    fs = tmp_path / "fs"
    fs.mkdir()
    vb = VirtualBoard(str(fs), board=name)
    try:
        vb.start()
        with pytest.raises(fl.FlashError, match=REFUSED[name]):
            fl.flash(name, vb.port, progress=lambda m: None)
        assert not (fs / "fw").exists()         # refused before anything was written
    finally:
        vb.stop()


def test_every_mcu_board_is_booted_or_refused():
    assert set(REFUSED) <= set(MCU_BOARDS)
    assert RUNS, "no MCU board can run the product"


# ---------------------------------------------------------------- fail-open: FPGA absent / wrong build

class FakeFpga:
    """An FPGA on a SPI socket (the twin's framing) that can hang (stop answering) once."""

    def __init__(self, addr):
        self.regs = ModelRegisterFile()
        self.hang = threading.Event()
        self.hung = threading.Event()
        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        host, port = addr.rsplit(":", 1)
        self.srv.bind((host, int(port)))
        self.srv.listen(4)
        self.stop = False
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while not self.stop:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            threading.Thread(target=self._client, args=(c,), daemon=True).start()

    def _client(self, c):
        try:
            while True:
                hdr = c.recv(4, socket.MSG_WAITALL)
                if len(hdr) < 4:
                    return
                mosi = c.recv(struct.unpack(">I", hdr)[0], socket.MSG_WAITALL)
                if self.hang.is_set() and not self.hung.is_set():
                    self.hung.set()
                    time.sleep(3600)        # the bus never answers: the board's SPI read blocks
                c.sendall(bytes(self.regs.transaction(bytearray(mosi))))
        except OSError:
            return
        finally:
            c.close()

    def close(self):
        self.stop = True
        self.srv.close()


def test_fpga_absent_or_wrong_build_stays_fail_open_and_says_why(tmp_path):
    name = RUNS[0]
    n = _net("_fail")
    router, cache = "127.62.%d.1" % n, "127.62.%d.11" % n
    http_port = 17400 + 10 * n
    spi = "127.62.%d.1:%d" % (n, 17401 + 10 * n)
    fs = tmp_path / "fs"
    fs.mkdir()
    # DHCP would hand out .99: the static address in the config's network object is the one used
    vb = VirtualBoard(str(fs), board=name, fpga=None, lease="127.62.%d.99" % n)
    fpga = None
    try:
        vb.start()
        cfg = _config(tmp_path / "config.json", router, http_port,
                      network={"dhcp": False, "ip": router, "netmask": "255.0.0.0", "gateway": "127.0.0.1"})
        fl.flash(name, vb.port, config=cfg, progress=lambda m: None, boot_wait=2)
        st = _wait(lambda: _status(router, http_port), 20, "/status")
        assert st["board"]["address"] == router
        assert st["fpga"]["state"] == "down" and "no FPGA answers" in st["fpga"]["reason"], st["fpga"]
        # the router still serves its caches (the FPGA stays fail-open)
        _with_cache(cache, router, lambda: _wait(lambda: _assigned(_status(router, http_port), cache), 30,
                                                 "cache assigned without an FPGA"))
        # now an FPGA that answers but is not the build this slot was flashed with
        fpga = FakeFpga(spi)
        vb.fpga = spi
        fl.flash(name, vb.port, config=cfg, fpga_build_id="0x0badb01d", progress=lambda m: None, boot_wait=2)
        st = _wait(lambda: _status(router, http_port), 20, "/status")
        assert st["fpga"]["state"] == "down", st["fpga"]
        assert "build 0x00000000" in st["fpga"]["reason"] and "0x0badb01d" in st["fpga"]["reason"]
        assert st["fpga"]["attempts"] >= 1
        # nothing was written: never armed, never committed, redirection off
        assert fpga.regs.commits == 0 and fpga.regs.live[R.CONTROL] == 0
        assert not fpga.regs.model.redirect_enabled()
    finally:
        vb.stop()
        if fpga is not None:
            fpga.close()


# ---------------------------------------------------------------- recovery

def test_recovery_bad_config_rollback_watchdog_safe_mode(tmp_path):
    name = "w5500_evb_pico" if "w5500_evb_pico" in RUNS else RUNS[0]
    defn = boards.load(name)
    n = _net("_rec")
    router = "127.62.%d.1" % n
    http_port = 17400 + 10 * n
    spi = "127.62.%d.1:%d" % (n, 17401 + 10 * n)
    fpga = FakeFpga(spi)
    fs = tmp_path / "fs"
    fs.mkdir()
    events = []                 # the supervisor's boots and resets, shown when a step times out
    vb = VirtualBoard(str(fs), board=name, fpga=spi, lease=router, log=events.append)
    try:
        vb.start()
        good = _config(tmp_path / "good.json", router, http_port, watchdog_ms=3000)
        fl.flash(name, vb.port, config=good, progress=lambda m: None, boot_wait=2)
        _wait(lambda: (fs / "wccp_last_good.json").exists(), 20, "the config remembered as good")

        # 1. a bad config: the last good one runs, the errors are on /status and the console; no reboot loop
        (fs / "fw" / "a" / "config.json").write_text(json.dumps({"services": [{"id": 0, "type": "nonsense"}],
                                                                  "network": {"dhcp": "yes"}}))
        os.system("%s connect %s reset >/dev/null 2>&1" % (fl_mpremote(), vb.port))
        st = _wait(lambda: _status(router, http_port), 20, "/status after a bad config")
        boots = vb.boots
        errs = " ".join(st["board"]["config_errors"])
        assert "network.dhcp" in errs and "services[0].type" in errs, errs
        assert st["board"]["config"].endswith("wccp_last_good.json") and len(st["groups"]) == 1
        time.sleep(3)
        assert vb.boots == boots and _status(router, http_port)["app"]["uptime_ms"] >= 3000   # no reboot loop
        # ... and with no good config at all: fail-open, no service groups, still answering
        (fs / "wccp_last_good.json").unlink()
        os.system("%s connect %s reset >/dev/null 2>&1" % (fl_mpremote(), vb.port))
        # (no config: HTTP on the board's address, default port 8080)
        st = _wait(lambda: _status(router, 8080), 20, "/status without any usable config")
        assert st["groups"] == [] and st["board"]["config"] is None and st["board"]["config_errors"]
        (fs / "fw" / "a" / "config.json").write_text((tmp_path / "good.json").read_text())

        # 2. a new slot that does not boot: the next reset is back on the old one
        bad = tmp_path / "badfw"
        (bad / "wccp").mkdir(parents=True)
        (bad / "wccp" / "__init__.py").write_text('VERSION = "9.9.9"\n')
        (bad / "main.py").write_text("raise RuntimeError('this firmware does not boot')\n")
        with pytest.raises(fl.FlashError, match="previous slot"):
            fl.flash(name, vb.port, firmware_dir=str(bad), config=good, progress=lambda m: None, boot_wait=3)
        st = _wait(lambda: _status(router, http_port), 30, "the old slot answering again")
        assert st["board"]["slot"] == "/fw/a" and (fs / "fw" / "active").read_text() == "a"
        assert not (fs / "fw" / "try").exists()

        # 3. a watchdog timeout: the FPGA bus hangs, the firmware stops feeding, the board resets and
        # comes back (reset cause WDT), the FPGA is programmed again
        # (the old slot's first link attempt may have met the FPGA link still busy with the failed boot:
        # the firmware retries every retry_ms, fail-open meanwhile)
        st = _wait(lambda: (lambda s: s if s["fpga"]["state"] == "up" else None)(_status(router, http_port)),
                   20, "the FPGA link up on the old slot")
        assert st["board"]["watchdog_ms"] == 3000
        fpga.hang.set()
        _wait(lambda: vb.wdt_resets >= 1, 30, lambda: "the watchdog to reset the board (armed: %r ms; %s)"
              % (vb.wdt_timeout, "; ".join(events[-6:])))
        st = _wait(lambda: _status(router, http_port), 30, "/status after the watchdog reset")
        assert st["board"]["reset_cause"] == "WDT_RESET"
        _wait(lambda: _status(router, http_port)["fpga"]["state"] == "up", 20, "FPGA up again")

        # 4. safe mode: the board's safe-mode pin held -> the firmware does not start
        sm = defn["safe_mode"]
        vb.set_inputs({sm["pin"]: sm["active"]})
        os.system("%s connect %s reset >/dev/null 2>&1" % (fl_mpremote(), vb.port))
        time.sleep(3)
        with pytest.raises(OSError):
            _status(router, http_port, timeout=1)
        out = os.popen("%s connect %s exec \"print(open('/board.json').read()[:1])\"" % (fl_mpremote(), vb.port)).read()
        assert out.strip() == "{"               # the REPL answers: the board is reachable to fix it
    finally:
        vb.stop()
        fpga.close()


def fl_mpremote():
    import sys
    return os.path.join(os.path.dirname(sys.executable), "mpremote")


def test_quickstart_wiring_table_matches_the_board_definitions():
    """docs/quickstart.md section 2: every MCU board's column names the pins of its JSON."""
    import re
    with open(os.path.join(boards.ROOT, "docs", "quickstart.md")) as f:
        text = f.read()
    sec = text[text.index("### MCU pins"):text.index("### FPGA pins")]
    rows = [r.strip().strip("|").split("|") for r in sec.splitlines() if r.startswith("| ")]
    head = [c.strip().strip("`").split("`")[0] for c in rows[0]]
    table = {r[0].strip(): [c.strip() for c in r[1:]] for r in rows[1:]}
    assert sorted(head[1:]) == sorted(MCU_BOARDS)
    for i, name in enumerate(head[1:]):
        d = boards.load(name)
        want = {"SPI SCK": d["fpga_spi"]["pins"]["sck"], "SPI MOSI": d["fpga_spi"]["pins"]["mosi"],
                "SPI MISO": d["fpga_spi"]["pins"]["miso"], "SPI CS": d["fpga_control"]["cs"],
                "PROGRAMN": d["fpga_control"]["programn"], "INITN": d["fpga_control"]["initn"],
                "DONE": d["fpga_control"]["done"], "Safe mode (skip the firmware)": d["safe_mode"]["pin"]}
        for row, pin in want.items():
            cell = table[row][i]
            assert re.search(r"\b%s\b" % re.escape(pin), cell), (name, row, cell, pin)
        bus = table["SPI bus / clock"][i]
        assert bus.startswith("%d / " % d["fpga_spi"]["bus"]), (name, bus)


def test_rp2040_emulation_assigns_its_full_limits():
    """The RP2040 (the smallest board that runs) at its limits: 2 groups x 8 caches joined by
    cache-sim must all be assigned. Fails when the heap has no room for the block every
    datagram's recvfrom allocates (fragmentation; docs/performance.md, per-board heap). Same
    run as bench/bench_board_heap.py, which records the figures."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench", "bench_board_heap.py")
    spec = importlib.util.spec_from_file_location("bench_board_heap", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    row = bench.measure("w5500_evb_pico")
    assert row.get("all_assigned"), row.get("why")
    assert row["free_at_limits"] > 0
