"""The virtual board behaves like a board for the real mpremote and a terminal."""
import hashlib
import os
import re
import select
import subprocess
import sys
import time

import pytest

from wccptool.vboard import VirtualBoard

MPREMOTE = os.path.join(os.path.dirname(sys.executable), "mpremote")


def mpremote(port, *args, timeout=60):
    p = subprocess.run([MPREMOTE, "connect", port] + list(args), capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, "mpremote %s failed: %s %s" % (args, p.stdout, p.stderr)
    return p.stdout


@pytest.fixture
def board(tmp_path):
    d = tmp_path / "fs"
    d.mkdir()
    vb = VirtualBoard(str(d))
    yield vb, d     # tests put files in place, then start()
    vb.stop()


def wait_for(cond, timeout=10):
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "condition not reached"
        time.sleep(0.05)


class Term:
    """A raw terminal on the board's pts, as a human's terminal program would be."""

    def __init__(self, port):
        import tty
        self.fd = os.open(port, os.O_RDWR | os.O_NOCTTY)
        tty.setraw(self.fd)
        self.buf = b""

    def write(self, b):
        os.write(self.fd, b)

    def expect(self, pattern, timeout=10):
        end = time.monotonic() + timeout
        while True:
            m = re.search(pattern, self.buf, re.S)
            if m:
                self.buf = self.buf[m.end():]
                return m
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError("timeout waiting for %r; got %r" % (pattern, self.buf[-500:]))
            r, _, _ = select.select([self.fd], [], [], min(left, 0.1))
            if r:
                self.buf += os.read(self.fd, 4096)

    def close(self):
        os.close(self.fd)


def test_mpremote_exec_fs_and_hash(board, tmp_path):
    vb, d = board
    vb.start()
    out = mpremote(vb.port, "exec", "import sys; print(sys.implementation.name, sys.implementation._mpy & 0xff)")
    assert out.split() == ["micropython", "6"]
    blob = os.urandom(50000)
    (tmp_path / "blob.bin").write_bytes(blob)
    (tmp_path / "x.py").write_text("X = 41 + 1\n")
    out = mpremote(vb.port, "fs", "mkdir", "lib", "+", "fs", "cp", str(tmp_path / "blob.bin"), ":blob.bin",
                   "+", "fs", "cp", str(tmp_path / "x.py"), ":lib/x.py", "+", "fs", "ls", "/")
    assert "blob.bin" in out and "lib/" in out
    assert re.search(r"\b50000 blob\.bin", out), out        # sizes listed as on a board
    # the files land in the board directory and nowhere else
    assert (d / "blob.bin").read_bytes() == blob
    assert (d / "lib" / "x.py").exists()
    out = mpremote(vb.port, "exec", "import hashlib, binascii, x, os; "
                   "print(binascii.hexlify(hashlib.sha256(open('/blob.bin','rb').read()).digest()).decode(), x.X, "
                   "sorted(os.listdir('/')))")
    digest, x, rest = out.split(None, 2)
    assert digest == hashlib.sha256(blob).hexdigest()
    assert x == "42"
    assert rest.strip() == "['blob.bin', 'lib']"


def test_raw_paste_used(board):
    vb, _ = board
    vb.start()
    # a large program goes through raw-paste flow control (window acknowledgements)
    code = "s = 0\n" + "".join("s += %d\n" % i for i in range(3000)) + "print(s)\n"
    out = mpremote(vb.port, "exec", code)
    assert out.strip() == str(sum(range(3000)))


def test_boot_and_main_run_and_reset(board):
    vb, d = board
    (d / "boot.py").write_text("import sys\nsys.path.append('/extra')\nBOOTED = 1\n")
    (d / "main.py").write_text(
        "try:\n    n = int(open('/count').read())\nexcept OSError:\n    n = 0\n"
        "open('/count', 'w').write(str(n + 1))\nimport time\nwhile True:\n    time.sleep(0.05)\n")
    vb.start()
    wait_for(lambda: (d / "count").exists())        # power-on: boot.py + main.py
    assert (d / "count").read_text() == "1"
    mpremote(vb.port, "reset")      # machine.reset() -> boot.py + main.py again
    wait_for(lambda: (d / "count").read_text() == "2")
    assert vb.resets == 1
    # mpremote interrupts the running main.py with Ctrl-C and soft-resets into the raw REPL:
    # boot.py runs again, main.py does not.
    out = mpremote(vb.port, "exec", "print(BOOTED, '/extra' in __import__('sys').path)")
    assert out.split() == ["1", "True"]
    assert (d / "count").read_text() == "2"


def test_friendly_repl_soft_reset_and_ctrl_c(board):
    vb, d = board
    (d / "main.py").write_text("print('main says hi')\nimport time\nwhile True:\n    time.sleep(0.05)\n")
    vb.start()
    t = Term(vb.port)
    try:
        t.expect(rb"main says hi")
        t.write(b"\x03")
        t.expect(rb"KeyboardInterrupt.*>>> ")
        t.write(b"\x04")  # Ctrl-D at the friendly prompt: soft reboot, main.py runs
        t.expect(rb"MPY: soft reboot\r\n")
        t.expect(rb"main says hi")
        t.write(b"\x03")  # Ctrl-C interrupts main.py like on a board
        t.expect(rb"KeyboardInterrupt")
        t.expect(rb">>> ")
        t.write(b"print(6 * 7)\r")
        t.expect(rb"42\r\n>>> ")
        t.write(b"import machine\rmachine.reset()\r")
        t.expect(rb"main says hi")
        assert vb.resets == 1
    finally:
        t.close()


def test_cli_vboard_with_link(tmp_path):
    d = tmp_path / "board"
    link = tmp_path / "ttyVB0"
    p = subprocess.Popen([sys.executable, "-m", "wccptool.cli", "vboard", "--dir", str(d), "--link", str(link)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        m = re.match(r"vboard: (/dev/pts/\d+) ", line)
        assert m, line + p.stderr.read()
        assert os.path.realpath(link) == m.group(1)
        out = mpremote(m.group(1), "exec", "import os; print(os.getcwd())")
        assert out.strip() == "/"
        assert d.is_dir()
    finally:
        p.terminate()
        p.wait(10)
    assert p.returncode == 0
    assert not os.path.lexists(link)


# ---------------------------------------------------------------- emulated boards (wccptool.vport)

def _emulated(tmp_path, name, **kw):
    d = tmp_path / ("fs_" + name)
    d.mkdir()
    vb = VirtualBoard(str(d), board=name, **kw)
    vb.start()
    return vb


def _run(vb, code):
    p = subprocess.run([MPREMOTE, "connect", vb.port, "exec", code], capture_output=True, text=True, timeout=60)
    return (p.stdout + p.stderr).strip()


def _raised(vb, imports, stmt, exc="ValueError"):
    """'<exception class> <message>' of the exc that stmt raises on the board (after `import imports`)."""
    return _run(vb, "import %s\ntry:\n %s\nexcept %s as e:\n print(type(e).__name__, e)" % (imports, stmt, exc))


def test_emulated_rp2_limits_and_errors(tmp_path):
    vb = _emulated(tmp_path, "w5500_evb_pico")
    try:
        # the rp2 port's WDT maximum (rp2/machine_wdt.c WDT_TIMEOUT_MAX on RP2040)
        assert _raised(vb, "machine", "machine.WDT(timeout=8389)") == "ValueError timeout exceeds 8388"
        # SPI1 pins must be SPI1 functions (rp2/machine_spi.c), GP12 is MISO not SCK
        assert _raised(vb, "machine", "machine.SPI(1, sck=machine.Pin(12))") == "ValueError bad SCK pin"
        assert _raised(vb, "machine", "machine.SPI(2)") == "ValueError SPI(2) doesn't exist"
        # hashlib without md5 before MicroPython 1.27 on rp2; sha256 still there
        assert _run(vb, "import hashlib\nprint(hasattr(hashlib, 'md5'), hasattr(hashlib, 'sha256'))") == "False True"
        # WIZNET5K on the wrong pins: the chip does not answer
        out = _raised(vb, "machine, network", "network.WIZNET5K(machine.SPI(0), machine.Pin(5), machine.Pin(20))",
                      "OSError")
        assert out.startswith("OSError"), out
        # the machine module identifies the emulated board for `wccp flash`
        assert _run(vb, "import machine\nprint(machine.VBOARD)") == "w5500_evb_pico"
    finally:
        vb.stop()


def test_emulated_esp32_and_stm32_errors(tmp_path):
    vb = _emulated(tmp_path, "olimex_esp32_poe")
    try:
        assert _raised(vb, "machine", "machine.Pin(34, machine.Pin.OUT)") == "ValueError pin can only be input"
        assert _raised(vb, "machine", "machine.Pin(24)") == "ValueError invalid pin"
        assert _run(vb, "import hashlib\nprint(hasattr(hashlib, 'md5'))") == "True"
        # network.LAN needs the PHY's pins; the wrong MDC pin finds no PHY
        out = _raised(vb, "machine, network", "network.LAN(mdc=machine.Pin(22), mdio=machine.Pin(18), "
                      "phy_type=network.PHY_LAN8720, phy_addr=0)", "OSError")
        assert out.startswith("OSError") and "mdc" in out, out
    finally:
        vb.stop()
    vb = _emulated(tmp_path, "nucleo_f429zi")
    try:
        # stm32 SPI buses have fixed pins: no pin arguments; the IWDG tops out below 32768 ms
        assert _raised(vb, "machine", "machine.SPI(1, sck=machine.Pin('B3'))", "TypeError").startswith("TypeError")
        assert _raised(vb, "machine", "machine.WDT(timeout=32768)") == "ValueError WDT timeout too long"
        assert _run(vb, "import machine\nprint(machine.Pin('PZ1') if 0 else machine.Pin('C13').value())") == "0"
    finally:
        vb.stop()


def test_emulated_watchdog_resets_the_board(tmp_path):
    d = tmp_path / "fs"
    d.mkdir()
    (d / "main.py").write_text(
        "import machine\nopen('/cause', 'a').write('%d ' % machine.reset_cause())\n"
        "if machine.reset_cause() != machine.WDT_RESET:\n"
        "    w = machine.WDT(timeout=500)\n    import time\n    while True:\n        time.sleep(0.05)\n")
    vb = VirtualBoard(str(d), board="w5500_evb_pico")
    vb.start()
    try:
        wait_for(lambda: vb.wdt_resets == 1, 10)
        wait_for(lambda: (d / "cause").exists() and (d / "cause").read_text().split() == ["1", "3"], 10)
    finally:
        vb.stop()


def test_markers_split_across_reads_are_still_seen(tmp_path):
    # under load the supervisor reads the child's terminal in 4 KiB pieces: a watchdog or boot
    # marker may straddle two reads and must still arm the watchdog, and never reach the host
    from wccptool import vboard as vbm
    arm = b"\x1b]vboard-wdt:3000\x07"
    for cut in range(1, len(arm)):
        vb = VirtualBoard(str(tmp_path))
        r, w = os.pipe()
        os.set_blocking(w, False)
        vb.master, vb._mode, vb._up, vb._swallow, vb._pending_in, vb._tail = w, "friendly", False, False, b"", b""
        try:
            out = b"log line\n" + arm + b"more\n" + vbm.MARK_UP
            vb._child_output(out[:len(b"log line\n") + cut])
            vb._child_output(out[len(b"log line\n") + cut:-3])
            vb._child_output(out[-3:])
            assert vb.wdt_timeout == 3000 and vb.wdt_fed is not None and vb._up, cut
            os.close(w)
            host = os.read(r, 4096)
            assert b"\x1b" not in host and host.replace(b"\r", b"") == b"log line\nmore\n", (cut, host)
        finally:
            os.close(r)
            vb.stop()


def test_cli_vboard_emulates_a_board(tmp_path):
    p = subprocess.Popen([sys.executable, "-m", "wccptool.cli", "vboard", "--dir", str(tmp_path / "b"),
                          "--board", "w5500_evb_pico", "--input", "GP27=0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        m = re.match(r"vboard: (/dev/pts/\d+) ", p.stdout.readline())
        assert m, p.stderr.read()
        out = mpremote(m.group(1), "exec", "import machine, gc\nprint(machine.VBOARD, machine.Pin(27, machine.Pin.IN, "
                                            "machine.Pin.PULL_UP).value(), gc.mem_free() + gc.mem_alloc())")
        name, level, heap = out.split()
        # the board's heap (boards/w5500_evb_pico.json ram.heap_kib) scaled for the 64-bit unix port
        assert name == "w5500_evb_pico" and level == "0" and int(heap) // 1024 in range(395, 401)
    finally:
        p.terminate()
        p.wait(10)
