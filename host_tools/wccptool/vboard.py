"""A virtual MicroPython board: the unix port behind a pseudo-terminal.

mpremote (and a human with a terminal program) sees /dev/pts/N and talks to it
as to a board on a USB serial port:

* friendly REPL, raw REPL (Ctrl-A) and raw-paste — served by the real unix
  port, whose REPL implements them;
* soft reset — Ctrl-D in the friendly REPL or on an empty raw-REPL line makes the
  unix port exit; the supervisor then prints ``MPY: soft reboot`` and starts a
  fresh interpreter, which runs boot.py and then main.py (friendly REPL) or only
  boot.py and re-enters the raw REPL (raw REPL), as the firmware on a board does;
* ``machine.reset()`` / ``machine.soft_reset()`` — the unix port has neither; the
  interpreter gets a ``machine`` stand-in whose ``reset`` ends the process with a
  reserved exit status, after which the supervisor boots it again (boot.py, main.py);
* a host directory is the board's filesystem: it is mounted (VfsPosix) at ``/``
  inside the interpreter, so ``/main.py``, ``/lib`` and mpremote ``fs`` commands
  stay inside it; ``sys.path`` is ``['', '.frozen', '/lib']`` as on a board.

The interpreter runs on a second, inner pseudo-terminal that is its controlling
terminal, so Ctrl-C interrupts a running main.py with KeyboardInterrupt as on a
board. The supervisor relays bytes between the outer and inner terminals and only
intervenes around restarts.
"""
import errno
import fcntl
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import termios
import threading
import time
import tty

RESET_EXIT = 77
SOFT_RESET_EXIT = 78
MARK_UP = b"\x1b]vboard-up\x07"
MARK_REPL = b"\x1b]vboard-repl\x07"
MARK_RESET = b"\x1b]vboard-reset\x07"
MARK_PREFIX = b"\x1b]vboard-"        # every marker: PREFIX name BEL, written in one piece by the child
RAW_BANNER = b"raw REPL; CTRL-B to exit\r\n"
FRIENDLY_BANNER = b'Type "help()" for more information.'
SOFT_REBOOT = b"MPY: soft reboot\r\n"

BOOTSTRAP = r'''
import sys, os
sys.stdout.write("\x1b]vboard-up\x07")
_vb_dir = sys.argv[1]
_vb_mode = sys.argv[2]
_vb_prof = sys.argv[3] if len(sys.argv) > 3 else ""
sys.argv[:] = []
if _vb_prof:
    # an emulated board: the port's machine/network/hashlib (wccptool/vport.py), loaded
    # before "/" becomes the board's filesystem
    sys.path.insert(0, _vb_prof.rsplit("/", 1)[0])
    import vport as _vb_vport
    _vb_vport.install(_vb_prof, (%(reset)d, %(soft)d))
    sys.path.pop(0)
try:
    os.umount("/")
except OSError:
    pass
os.mount(os.VfsPosix(_vb_dir), "/")
os.chdir("/")
sys.path[:] = ["", ".frozen", "/lib"]
import machine as _vb_machine


class _VbMachine:
    # the plain virtual board: the unix port's machine plus reset (an emulated board's
    # machine module is wccptool/vport.py and has its own)
    def __getattr__(self, name):
        return getattr(_vb_machine, name)

    def reset(self):
        sys.stdout.write("\x1b]vboard-reset\x07")
        raise SystemExit(%(reset)d)

    def soft_reset(self):
        sys.stdout.write("\x1b]vboard-reset\x07")
        raise SystemExit(%(soft)d)

    def unique_id(self):
        return b"vboard"


if not _vb_prof:
    sys.modules["machine"] = _VbMachine()
del _VbMachine
import os as _vb_os


class _VbOs:
    # os.rename with absolute paths fails on a VfsPosix mounted at "/" (unix port
    # 1.29: ENOENT); relative paths work, so rename from "/".
    def __getattr__(self, name):
        return getattr(_vb_os, name)

    def rename(self, a, b):
        cwd = _vb_os.getcwd()

        def _abs(p):
            if not p.startswith("/"):
                p = cwd.rstrip("/") + "/" + p
            return p.lstrip("/")
        _vb_os.chdir("/")
        try:
            _vb_os.rename(_abs(a), _abs(b))
        finally:
            _vb_os.chdir(cwd)


    def ilistdir(self, path="."):
        # VfsPosix yields (name, type, inode); boards (littlefs/FAT) add the size, mpremote shows it
        base = path.rstrip("/") + "/" if path not in ("", ".") else ""
        for e in _vb_os.ilistdir(path):
            if len(e) >= 4:
                yield e
                continue
            try:
                size = _vb_os.stat(base + e[0])[6] if e[1] == 0x8000 else 0
            except OSError:
                size = 0
            yield (e[0], e[1], e[2], size)


sys.modules["os"] = _VbOs()
del _VbOs


def _vb_run(name):
    try:
        os.stat(name)
    except OSError:
        return
    try:
        with open(name) as f:
            src = f.read()
        exec(compile(src, name, "exec"), globals())
    except SystemExit as e:
        if e.args and e.args[0] in (%(reset)d, %(soft)d):
            raise
    except BaseException as e:  # noqa: B036 - a board prints the traceback and goes on
        sys.print_exception(e)


_vb_run("boot.py")
if _vb_mode == "friendly":
    _vb_run("main.py")
del _vb_run, _vb_dir, _vb_mode, _vb_prof
sys.stdout.write("\x1b]vboard-repl\x07")
'''


# ---------------------------------------------------------------- emulated ports
#
# What wccptool/vport.py enforces per MicroPython port, with the source of each rule (MicroPython
# sources, tag v1.27.0 unless said otherwise):
# * "pins": the GPIO numbers machine.Pin accepts (esp32/machine_pin.c: GPIO0..39 minus the ones
#   the ESP32 does not bond out, "invalid pin"; rp2/machine_pin.c: GPIO0..29 on RP2040, 0..47 on
#   RP2350B; stm32: the pins of the board's pins.csv, "Pin(%s) doesn't exist");
# * "input_only": esp32 GPIO34..39 ("pin can only be input", esp32/machine_pin.c);
# * "spi": hardware SPI bus numbers and their default pins (rp2/machine_spi.c: SPI0/SPI1 with the
#   IS_VALID_SCK/MOSI/MISO function table; esp32/machine_hw_spi.c: SPI(1) HSPI and SPI(2) VSPI on
#   any pins through the GPIO matrix; stm32: the buses mpconfigboard.h defines, pins fixed);
# * "wdt_max_ms": rp2/machine_wdt.c WDT_TIMEOUT_MAX, 8388 ms on RP2040, 16777 ms on RP2350
#   ("timeout exceeds ..."); stm32/machine_wdt.c make_iwdt: "WDT timeout too long" from 32768 ms;
# * "hashlib_lacks": rp2 builds hashlib without md5 before v1.27 (MICROPY_PY_HASHLIB_MD5 is
#   enabled for rp2 by commit b5fcb33, first in v1.27.0); "emulates" is the version emulated.
_RP2_SPI = {"0": {"sck": 18, "mosi": 19, "miso": 16}, "1": {"sck": 10, "mosi": 11, "miso": 8}}
PORTS = {
    "esp32": {"name": "esp32", "emulates": "1.24.1", "freq": 240000000, "spi_max_hz": 80000000,
              "pins": list(range(0, 20)) + [21, 22, 23, 25, 26, 27] + list(range(32, 40)),
              "input_only": list(range(34, 40)),
              "spi": {"1": {"sck": 14, "mosi": 13, "miso": 12}, "2": {"sck": 18, "mosi": 23, "miso": 19}},
              "wdt_max_ms": {}, "hashlib_lacks": []},
    "rp2": {"name": "rp2", "emulates": "1.24.1", "freq": 125000000, "spi_max_hz": 62500000,
            "pins": list(range(0, 30)), "spi": _RP2_SPI,
            "wdt_max_ms": {"rp2040": 8388, "rp2350": 16777}, "hashlib_lacks": ["md5"]},
    # NUCLEO_F429ZI/mpconfigboard.h: SPI1 = PB3/PB5/PB4 (NSS PA4), SPI4 = PE2/PE6/PE5, SPI5 = PF7/PF9/PF8
    "stm32": {"name": "stm32", "emulates": "1.24.1", "freq": 168000000, "spi_max_hz": 42000000,
              "pins": ["%s%d" % (p, n) for p in "ABCDEFG" for n in range(16)] + ["H0", "H1"],
              "spi": {"1": {"sck": "B3", "mosi": "B5", "miso": "B4"}, "4": {"sck": "E2", "mosi": "E6", "miso": "E5"},
                      "5": {"sck": "F7", "mosi": "F9", "miso": "F8"}},
              "wdt_max_ms": {}, "hashlib_lacks": []},
}
WORD_RATIO = 2      # unix port (64-bit) heap per byte of a 32-bit board's heap: see heap_for()


def _pid(name, port):
    if port == "esp32":
        return int(name[4:])
    if port == "rp2":
        return int(name[2:])
    return name[1:]


def board_profile(defn, fpga=None, lease="127.0.0.1", inputs=None, reset_cause=1):
    """The JSON profile vport.install() reads for the MCU board definition `defn`."""
    port = defn["micropython"]["port"]
    if port not in PORTS:
        raise ValueError("no emulation of the MicroPython %s port" % port)
    P = json.loads(json.dumps(PORTS[port]))
    wires = []
    fs = defn.get("fpga_spi")
    if fs:
        pins = fs["pins"]
        if port == "stm32":
            b = P["spi"].get(str(fs["bus"]), {})
            tri = [b.get("sck"), b.get("mosi"), b.get("miso")]
        else:
            tri = [_pid(pins["sck"], port), _pid(pins["mosi"], port), _pid(pins["miso"], port)]
        wires.append({"kind": "fpga", "bus": fs["bus"], "pins": tri, "cs": _pid(defn["fpga_control"]["cs"], port)})
    ins = {}
    sm = defn.get("safe_mode")
    if sm and sm.get("pull") == "external":
        # the board's own pull resistor on the safe-mode button: released reads the inactive level
        ins[str(_pid(sm["pin"], port))] = 1 - sm.get("active", 0)
    for name, level in (inputs or {}).items():
        ins[str(_pid(name, port))] = level
    return {"board": defn, "port": P, "fpga": fpga, "lease": lease, "inputs": ins, "wires": wires,
            "reset_cause": reset_cause}


def heap_for(defn):
    """-X heapsize for an emulated board: the board's free heap after network start-up
    (defn["ram"]["heap_kib"], sourced there) times WORD_RATIO: the unix port is a 64-bit build,
    where every object header, pointer and small int takes twice the bytes of the 32-bit
    MCUs (bytes and str contents do not grow, so x2 is the upper bound of the ratio)."""
    ram = defn.get("ram") or {}
    kib = ram.get("heap_kib")
    if not kib:
        return "8m"
    return "%dk" % (kib * WORD_RATIO)


def micropython_exe():
    cand = os.path.join(os.path.dirname(sys.executable), "micropython")
    if os.path.exists(cand):
        return cand
    exe = shutil.which("micropython")
    if exe is None:
        raise RuntimeError("micropython (unix port) not found; `make setup` installs it")
    return exe


def _inner_termios(fd):
    a = termios.tcgetattr(fd)
    a[0] &= ~(termios.ICRNL | termios.INLCR | termios.IGNCR | termios.IXON | termios.IXOFF | termios.ISTRIP)
    a[1] &= ~termios.OPOST
    a[3] &= ~(termios.ECHO | termios.ECHONL | termios.ICANON | termios.IEXTEN)
    a[3] |= termios.ISIG | termios.NOFLSH
    cc = a[6]
    cc[termios.VMIN] = 1
    cc[termios.VTIME] = 0
    cc[termios.VINTR] = b"\x03"
    for k in (termios.VQUIT, termios.VSUSP):
        cc[k] = b"\x00"
    termios.tcsetattr(fd, termios.TCSANOW, a)


def _set_ctty():
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class VirtualBoard:
    """Supervisor for one virtual board. ``start()`` returns the pts path for mpremote."""

    def __init__(self, directory, micropython=None, heapsize=None, log=None, board=None, fpga=None,
                 lease="127.0.0.1", inputs=None):
        """board: an MCU board definition (name or dict) to emulate (its port's machine/network/
        hashlib, its heap); fpga: "HOST:PORT" of the twin's SPI socket wired to the board's FPGA
        bus (None: no FPGA); lease: the address the emulated DHCP hands out; inputs: {pin name:
        level} read by input pins (change with set_inputs(), seen at the next boot)."""
        self.directory = os.path.abspath(directory)
        if not os.path.isdir(self.directory):
            raise ValueError("%s is not a directory" % directory)
        self.micropython = micropython or micropython_exe()
        if isinstance(board, str):
            from wccptool import boards
            board = boards.load(board)
        if board is not None and board["micropython"]["port"] == "unix":
            board = None                # the plain virtual board
        self.board = board
        self.fpga = fpga
        self.lease = lease
        self.inputs = dict(inputs or {})
        self.heapsize = heapsize or (heap_for(board) if board else "8m")
        self.wdt_timeout = None         # ms, armed by machine.WDT in the interpreter
        self.wdt_fed = None
        self.wdt_resets = 0
        self._reset_cause = 1
        self.log = log or (lambda msg: None)
        self.port = None
        self.boots = 0
        self.resets = 0
        self._tmp = tempfile.mkdtemp(prefix="vboard-")
        self._boot = os.path.join(self._tmp, "vboard_boot.py")
        with open(self._boot, "w") as f:
            f.write(BOOTSTRAP % {"reset": RESET_EXIT, "soft": SOFT_RESET_EXIT})
        self._profile = None
        if self.board is not None:
            shutil.copyfile(os.path.join(os.path.dirname(os.path.abspath(__file__)), "vport.py"),
                            os.path.join(self._tmp, "vport.py"))
            self._profile = os.path.join(self._tmp, "profile.json")
        self._stop = threading.Event()
        self._thread = None
        self._child = None
        self._inner = None
        self.master = self.slave = None
        self._carry = b""

    # ---- outer terminal ----
    def start(self, background=True):
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)
        os.set_blocking(self.master, False)
        self.port = os.ttyname(self.slave)
        self._spawn("friendly")
        if background:
            self._thread = threading.Thread(target=self.serve, name="vboard", daemon=True)
            self._thread.start()
        return self.port

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self._kill()
        for fd in (self.master, self.slave):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.master = self.slave = None
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *a):
        self.stop()

    # ---- interpreter ----
    def set_inputs(self, inputs):
        self.inputs = dict(inputs)

    def _spawn(self, mode, keep_wdt=False):
        m, s = os.openpty()
        _inner_termios(s)
        extra = []
        if self._profile is not None:
            with open(self._profile, "w") as f:
                json.dump(board_profile(self.board, self.fpga, self.lease, self.inputs, self._reset_cause), f)
            extra = [self._profile]
        self._reset_cause = 5 if keep_wdt else 1      # SOFT_RESET / PWRON_RESET
        if not keep_wdt:
            self.wdt_timeout = None
        self._reset_at = None
        self._child = subprocess.Popen(
            [self.micropython, "-X", "heapsize=" + self.heapsize, "-i", self._boot, self.directory, mode] + extra,
            stdin=s, stdout=s, stderr=s, cwd=self.directory, close_fds=True,
            start_new_session=True, preexec_fn=_set_ctty)
        os.close(s)
        self._inner = m
        self._mode = mode
        self._up = False            # bootstrap started (input may be delivered)
        self._swallow = False       # raw restart: hide the friendly banner
        self._pending_in = getattr(self, "_pending_in", b"")
        self._tail = b""
        self._carry = b""           # a partial marker at the end of the last read
        self._raw = False
        self._spawned_at = time.monotonic()
        self.boots += 1
        self.log("vboard: boot #%d (%s)" % (self.boots, mode))

    def _kill(self):
        c = self._child
        if c is not None and c.poll() is None:
            try:
                os.killpg(c.pid, signal.SIGKILL)
            except OSError:
                pass
            c.wait(5)
        if self._inner is not None:
            try:
                os.close(self._inner)
            except OSError:
                pass
            self._inner = None

    def _to_host(self, data):
        if not data:
            return
        try:
            os.write(self.master, data)
        except BlockingIOError:
            pass    # nobody reading: a UART drops bytes too
        except OSError:
            pass

    def _to_child(self, data):
        if not self._up or self._inner is None:
            self._pending_in += data
            return
        try:
            os.write(self._inner, data)
        except OSError:
            self._pending_in += data

    _WDT_RE = re.compile(rb"\x1b\]vboard-(wdt:\d+|feed)\x07")

    def _child_output(self, data):
        # a read may end inside a marker (the pty hands over whatever has accumulated, in 4 KiB
        # pieces under load): hold a trailing partial marker back until the rest arrives
        data = self._carry + data
        self._carry = b""
        i = data.rfind(b"\x1b")
        if i >= 0 and b"\x07" not in data[i:] and len(data) - i < 64 \
                and MARK_PREFIX.startswith(data[i:i + len(MARK_PREFIX)]):
            data, self._carry = data[:i], data[i:]
        # watchdog markers from vport's machine.WDT: arm / feed
        if MARK_PREFIX in data:
            for m in self._WDT_RE.finditer(data):
                tok = m.group(1)
                if tok.startswith(b"wdt:"):
                    self.wdt_timeout = int(tok[4:])
                self.wdt_fed = time.monotonic()
            data = self._WDT_RE.sub(b"", data)
        # markers from the bootstrap
        if MARK_RESET in data:
            # the interpreter is going down: what the host sends from now on is for the next boot
            data = data.replace(MARK_RESET, b"")
            self._up = False
            self._reset_at = time.monotonic()
        if MARK_UP in data:
            data = data.replace(MARK_UP, b"")
            self._up = True
            if self._pending_in and self._mode == "friendly":
                pend, self._pending_in = self._pending_in, b""
                self._to_child(pend)
        if MARK_REPL in data:
            before, after = data.split(MARK_REPL, 1)
            self._to_host(self._cook(before))
            data = after
            if self._mode == "raw":
                self._swallow = True
        if self._swallow:
            self._banner_buf = getattr(self, "_banner_buf", b"") + data
            if b">>> " in self._banner_buf:
                data = self._banner_buf.split(b">>> ", 1)[1]
                self._banner_buf = b""
                self._swallow = False
                os.write(self._inner, b"\x01")
                if self._pending_in:
                    pend, self._pending_in = self._pending_in, b""
                    self._to_child(pend)
            else:
                return
        t = self._tail + data
        ri = t.rfind(RAW_BANNER)
        fi = t.rfind(FRIENDLY_BANNER)
        if ri >= 0 or fi >= 0:
            self._raw = ri > fi
        self._tail = t[-64:]
        self._to_host(self._cook(data))

    def _cook(self, data):
        # A board's stdout turns "\n" into "\r\n"; the unix port leaves that to the tty.
        if b"\n" not in data:
            if data:
                self._last = data[-1:]
            return data
        out = bytearray()
        prev = getattr(self, "_last", b"")
        for i in range(len(data)):
            c = data[i:i + 1]
            if c == b"\n" and prev != b"\r":
                out += b"\r"
            out += c
            prev = c
        self._last = prev
        return bytes(out)

    def _child_exited(self):
        rc = self._child.wait()
        lived = time.monotonic() - self._spawned_at
        was_raw = self._raw
        self._kill()
        if self._stop.is_set():
            return
        if lived < 0.5:
            time.sleep(0.2)     # a crashing boot must not spin
        if rc == RESET_EXIT:
            self.resets += 1
            self.log("vboard: machine.reset()")
            self._spawn("friendly")
            return
        self._to_host(b"\r\n" + SOFT_REBOOT)
        # a soft reset restarts the interpreter, not the chip: a running watchdog keeps counting
        self._spawn("raw" if was_raw and rc != SOFT_RESET_EXIT else "friendly", keep_wdt=True)

    def _reset_stuck(self):
        # machine.reset() raised SystemExit; from the REPL that ends the interpreter, but from a
        # script run with -i (main.py) the unix port drops into its REPL: a board resets anyway
        at = getattr(self, "_reset_at", None)
        if at is None or self._child is None or time.monotonic() - at < 0.5:
            return False
        self._reset_at = None
        if self._child.poll() is not None:
            return False
        self.resets += 1
        self.log("vboard: machine.reset()")
        self._kill()
        self._spawn("friendly")
        return True

    def _watchdog_expired(self):
        if self.wdt_timeout is None or self._child is None or self._child.poll() is not None:
            return False
        if (time.monotonic() - self.wdt_fed) * 1000 <= self.wdt_timeout:
            return False
        # the hardware resets the chip: no output, no clean-up
        self.wdt_resets += 1
        self.log("vboard: watchdog reset (not fed for %d ms)" % self.wdt_timeout)
        self._kill()
        self._reset_cause = 3       # machine.WDT_RESET
        self._spawn("friendly")
        return True

    def serve(self):
        """Relay until stop(): host <-> interpreter, restarting it on resets."""
        while not self._stop.is_set():
            if self._watchdog_expired() or self._reset_stuck():
                continue
            fds = [self.master]
            if self._inner is not None:
                fds.append(self._inner)
            try:
                r, _, _ = select.select(fds, [], [], 0.1)
            except (OSError, ValueError):
                if self._stop.is_set():
                    break
                continue
            if self.master in r:
                try:
                    data = os.read(self.master, 4096)
                except BlockingIOError:
                    data = b""
                except OSError:
                    data = b""
                if data:
                    self._to_child(data)
            if self._inner is not None and self._inner in r:
                try:
                    data = os.read(self._inner, 4096)
                except OSError as e:
                    if e.errno != errno.EIO:
                        raise
                    data = b""
                if data:
                    self._child_output(data)
                else:
                    # EIO/EOF: the interpreter closed its terminal (it exited)
                    try:
                        self._child.wait(5)
                    except subprocess.TimeoutExpired:
                        self._kill()
                    self._child_exited()
            elif self._child is not None and self._child.poll() is not None and self._inner is not None:
                # exited without the terminal reporting EOF yet: drain and restart
                try:
                    while True:
                        rr, _, _ = select.select([self._inner], [], [], 0.05)
                        if not rr:
                            break
                        d = os.read(self._inner, 4096)
                        if not d:
                            break
                        self._child_output(d)
                except OSError:
                    pass
                self._child_exited()
