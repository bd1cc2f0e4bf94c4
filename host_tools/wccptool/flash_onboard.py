"""What `wccp flash` runs on the board (MicroPython source, as text): the launcher it installs as
``/main.py`` (and ``/boot.py``), which runs the active firmware slot, and the helpers it
executes over the REPL while uploading and verifying (wccptool.flash)."""

LAUNCHER = '''# wccp launcher (installed by `wccp flash`): runs the active firmware slot.
# A slot on trial (/fw/try, written by `wccp flash`) runs once; if it has not committed itself
# (wccp.board.commit_slot, once it runs) by the next reset, the launcher returns to /fw/active.
# Safe mode: the board definition's safe_mode pin at its active level skips the firmware.
import os
import sys


def _wccp_read(name):
    try:
        with open(name) as f:
            return f.read().strip()
    except OSError:
        return None


def _wccp_safe():
    try:
        import json
        import machine
        with open("/board.json") as f:
            sm = json.loads(f.read()).get("safe_mode")
        if not sm:
            return False
        n = sm["pin"]
        pid = int(n[4:]) if n.startswith("GPIO") else int(n[2:]) if n.startswith("GP") else n[1:]
        if sm.get("pull") == "up":
            pin = machine.Pin(pid, machine.Pin.IN, machine.Pin.PULL_UP)
        else:
            pin = machine.Pin(pid, machine.Pin.IN)
        return pin.value() == sm.get("active", 0)
    except Exception as e:  # noqa: BLE001 - never block the boot on this
        print("wccp: safe-mode pin not read: %%s" %% e)
        return False


def _wccp_slot():
    trial = _wccp_read("/fw/try")
    if trial in ("a", "b") and "%(name)s" == "boot.py":
        # boot.py runs before main.py in the same boot: main.py's launcher does the bookkeeping
        if _wccp_read("/fw/try.boot") is None:
            return "/fw/" + trial, True
    elif trial in ("a", "b"):
        if _wccp_read("/fw/try.boot") is None:
            with open("/fw/try.boot", "w") as f:
                f.write("1")
            print("wccp: slot %%s on trial" %% trial)
            return "/fw/" + trial, True
        for p in ("/fw/try", "/fw/try.boot"):
            try:
                os.remove(p)
            except OSError:
                pass
        print("wccp: slot %%s did not come up; back to slot %%s" %% (trial, _wccp_read("/fw/active")))
    for name in ("/fw/active", "/fw/active.new"):
        s = _wccp_read(name)
        if s in ("a", "b"):
            return "/fw/" + s, False
    return None, False


_s, _trial = (None, False) if _wccp_safe() else _wccp_slot()
if _s is None:
    print("wccp: safe mode (safe-mode pin held): firmware not started" if _wccp_safe()
          else "wccp: no firmware slot active")
else:
    os.chdir(_s)
    if _s not in sys.path:
        sys.path.insert(1, _s)
    # the firmware's main.py takes its config as an argument on the unix port
    sys.argv[:] = [_s + "/%(name)s"]
    try:
        os.stat(_s + "/config.json")
        sys.argv.extend(["--config", _s + "/config.json"])
    except OSError:
        pass
    if sys.platform in ("linux", "darwin"):
        sys.argv.extend(["--state-dir", "/"])
    __file__ = _s + "/%(name)s"
    with open(_s + "/%(name)s") as _f:
        _src = _f.read()
    del _f
    try:
        exec(compile(_src, _s + "/%(name)s", "exec"), globals())
    except Exception as e:  # noqa: BLE001
        sys.print_exception(e)
        if _trial:
            # a slot on trial that crashes: reset now, the next boot returns to the old slot
            print("wccp: slot on trial failed; resetting to the previous slot")
            import machine
            machine.reset()
'''

ONBOARD_HELPERS = r'''
import os, sys, hashlib, binascii, json
def _w_rm(p):
    try:
        st = os.stat(p)
    except OSError:
        return
    if st[0] & 0x4000:
        for e in os.ilistdir(p):
            _w_rm(p + "/" + e[0])
        os.rmdir(p)
    else:
        os.remove(p)
def _w_mkdirs(p):
    cur = ""
    for part in p.strip("/").split("/"):
        cur += "/" + part
        try:
            os.mkdir(cur)
        except OSError:
            pass
def _w_sha(p):
    h = hashlib.sha256()
    b = bytearray(1024)
    with open(p, "rb") as f:
        while True:
            n = f.readinto(b)
            if not n:
                break
            h.update(b if n == 1024 else b[:n])
    return binascii.hexlify(h.digest()).decode()
_w_wdt = None
def _w_feed():
    if _w_wdt is not None:
        _w_wdt.feed()
def _w_read(p):
    try:
        with open(p) as f:
            return f.read().strip()
    except OSError:
        return None
'''
