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
import os
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
RAW_BANNER = b"raw REPL; CTRL-B to exit\r\n"
FRIENDLY_BANNER = b'Type "help()" for more information.'
SOFT_REBOOT = b"MPY: soft reboot\r\n"

BOOTSTRAP = r'''
import sys, os
sys.stdout.write("\x1b]vboard-up\x07")
_vb_dir = sys.argv[1]
_vb_mode = sys.argv[2]
sys.argv[:] = []
try:
    os.umount("/")
except OSError:
    pass
os.mount(os.VfsPosix(_vb_dir), "/")
os.chdir("/")
sys.path[:] = ["", ".frozen", "/lib"]
import machine as _vb_machine


class _VbMachine:
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
del _vb_run, _vb_dir, _vb_mode
sys.stdout.write("\x1b]vboard-repl\x07")
'''


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

    def __init__(self, directory, micropython=None, heapsize="8m", log=None):
        self.directory = os.path.abspath(directory)
        if not os.path.isdir(self.directory):
            raise ValueError("%s is not a directory" % directory)
        self.micropython = micropython or micropython_exe()
        self.heapsize = heapsize
        self.log = log or (lambda msg: None)
        self.port = None
        self.boots = 0
        self.resets = 0
        self._tmp = tempfile.mkdtemp(prefix="vboard-")
        self._boot = os.path.join(self._tmp, "vboard_boot.py")
        with open(self._boot, "w") as f:
            f.write(BOOTSTRAP % {"reset": RESET_EXIT, "soft": SOFT_RESET_EXIT})
        self._stop = threading.Event()
        self._thread = None
        self._child = None
        self._inner = None
        self.master = self.slave = None

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
    def _spawn(self, mode):
        m, s = os.openpty()
        _inner_termios(s)
        self._child = subprocess.Popen(
            [self.micropython, "-X", "heapsize=" + self.heapsize, "-i", self._boot, self.directory, mode],
            stdin=s, stdout=s, stderr=s, cwd=self.directory, close_fds=True,
            start_new_session=True, preexec_fn=_set_ctty)
        os.close(s)
        self._inner = m
        self._mode = mode
        self._up = False            # bootstrap started (input may be delivered)
        self._swallow = False       # raw restart: hide the friendly banner
        self._pending_in = getattr(self, "_pending_in", b"")
        self._tail = b""
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

    def _child_output(self, data):
        # markers from the bootstrap
        if MARK_RESET in data:
            # the interpreter is going down: what the host sends from now on is for the next boot
            data = data.replace(MARK_RESET, b"")
            self._up = False
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
        self._spawn("raw" if was_raw and rc != SOFT_RESET_EXIT else "friendly")

    def serve(self):
        """Relay until stop(): host <-> interpreter, restarting it on resets."""
        while not self._stop.is_set():
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
