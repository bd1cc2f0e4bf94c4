"""Start the router firmware under the MicroPython unix port (for `wccp run` and tests).

    from wccptool.launch import start_firmware
    fw = start_firmware({"services": [{"id": 0}]}, wccp_addr="127.31.0.1",
                        http_port=18080, state_dir=None)      # waits until /status answers
    try:
        st = fw.status()            # dict: GET http://<http_addr>:<http_port>/status
        ...
    finally:
        fw.stop()                   # SIGTERM, then SIGKILL after `timeout`; returns the exit code

    with start_firmware(cfg, "127.31.0.1", 18080) as fw: ...     # same, stops on exit

Arguments of ``start_firmware(config=None, wccp_addr="127.0.0.1", http_port=8080,
state_dir=None, http_addr=None, dataplane="model", micropython=None, timeout=15,
heapsize=None, extra_args=(), env=None)``:

* config: dict (written to <state_dir>/config.json), a path to a JSON file, or None for the
  embedded default (service 0, hash, GRE).
* wccp_addr: WCCP listen address(es) ("a" or "a,b" or a list); replaces the config's
  ``addresses`` and, when the config has no ``router_id``, becomes the router ID. None keeps
  the config's addresses.
* http_addr: HTTP listen address (default: the first WCCP address, else 127.0.0.1).
* state_dir: where the boot counter (wccp_state.json), config.json and firmware.log live.
  Pass the same directory again to simulate a reboot. None: a fresh temporary directory,
  removed by stop().
* dataplane: "model" (wccp.fwdmodel.ForwardingModel, default) or "none".

The handle has ``proc`` (subprocess.Popen), ``url``, ``http_addr``, ``http_port``,
``state_dir``, ``log_path``, ``status()``, ``get(path)``, ``log()`` (firmware output so
far), ``alive()``, ``stop(timeout=5)``, ``wait(timeout)``.
"""
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIRMWARE = ROOT / "firmware"
MAIN = FIRMWARE / "main.py"


class FirmwareError(RuntimeError):
    pass


def find_micropython():
    """The MicroPython unix port: next to sys.executable (the venv), else on PATH."""
    cand = pathlib.Path(sys.executable).parent / "micropython"
    if cand.exists():
        return str(cand)
    cand = ROOT / ".venv" / "bin" / "micropython"
    if cand.exists():
        return str(cand)
    exe = shutil.which("micropython")
    if exe:
        return exe
    raise FirmwareError("micropython (unix port) not found next to %s or on PATH; run `make setup`"
                        % sys.executable)


class Firmware:
    def __init__(self, proc, http_addr, http_port, state_dir, log_path, own_dir):
        self.proc = proc
        self.http_addr = http_addr
        self.http_port = http_port
        self.url = "http://%s:%d" % (http_addr, http_port)
        self.state_dir = state_dir
        self.log_path = log_path
        self._own_dir = own_dir
        self._logf = None

    def get(self, path="/status", timeout=5):
        with urllib.request.urlopen(self.url + path, timeout=timeout) as r:
            return r.read()

    def status(self, timeout=5):
        return json.loads(self.get("/status", timeout))

    def log(self):
        try:
            return pathlib.Path(self.log_path).read_text(errors="replace")
        except OSError:
            return ""

    def alive(self):
        return self.proc.poll() is None

    def wait(self, timeout=None):
        return self.proc.wait(timeout)

    def wait_ready(self, timeout=15):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if not self.alive():
                raise FirmwareError("firmware exited with %s:\n%s" % (self.proc.returncode, self.log()[-4000:]))
            try:
                return self.status(timeout=2)
            except Exception as e:  # noqa: BLE001 - not up yet
                last = e
                time.sleep(0.05)
        self.stop()
        raise FirmwareError("firmware did not answer %s/status within %ss (%s):\n%s"
                            % (self.url, timeout, last, self.log()[-4000:]))

    def stop(self, timeout=5):
        rc = self.proc.poll()
        if rc is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
                rc = self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                rc = self.proc.wait(timeout)
        if self._logf is not None:
            self._logf.close()
            self._logf = None
        if self._own_dir:
            shutil.rmtree(self.state_dir, ignore_errors=True)
            self._own_dir = False
        return rc

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def firmware_command(config_path=None, wccp_addr=None, http_addr=None, http_port=8080, state_dir=None,
                     dataplane="model", micropython=None, heapsize=None, extra_args=()):
    """The argv that runs the firmware (also printed by `wccp run`)."""
    cmd = [micropython or find_micropython()]
    if heapsize:
        cmd += ["-X", "heapsize=%s" % heapsize]
    cmd.append(str(MAIN))
    if config_path:
        cmd += ["--config", str(config_path)]
    if wccp_addr:
        cmd += ["--wccp-addr", wccp_addr]
    if http_addr:
        cmd += ["--http-addr", http_addr]
    cmd += ["--http-port", str(http_port)]
    if state_dir:
        cmd += ["--state-dir", str(state_dir)]
    cmd += ["--dataplane", dataplane]
    cmd += list(extra_args)
    return cmd


def start_firmware(config=None, wccp_addr="127.0.0.1", http_port=8080, state_dir=None, http_addr=None,
                   dataplane="model", micropython=None, timeout=15, heapsize=None, extra_args=(), env=None,
                   wait=True, stdout=None):
    own = state_dir is None
    if own:
        state_dir = tempfile.mkdtemp(prefix="wccp-fw-")
    os.makedirs(state_dir, exist_ok=True)
    if isinstance(wccp_addr, (list, tuple)):
        wccp_addr = ",".join(wccp_addr)
    config_path = None
    if isinstance(config, dict):
        config_path = os.path.join(state_dir, "config.json")
        with open(config_path, "w") as f:
            json.dump(config, f, indent=1)
    elif config is not None:
        config_path = str(config)
    if http_addr is None:
        if wccp_addr:
            http_addr = wccp_addr.split(",")[0]
        elif isinstance(config, dict):
            http_addr = (config.get("http") or {}).get("address") or (config.get("addresses") or ["127.0.0.1"])[0]
        else:
            http_addr = "127.0.0.1"
    cmd = firmware_command(config_path, wccp_addr, http_addr, http_port, state_dir, dataplane, micropython,
                           heapsize, extra_args)
    log_path = os.path.join(state_dir, "firmware.log")
    e = dict(os.environ)
    e.update(env or {})
    if stdout is None:
        logf = open(log_path, "ab")
        proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, cwd=str(ROOT), env=e)
    else:
        logf = None
        proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.STDOUT, cwd=str(ROOT), env=e)
    fw = Firmware(proc, http_addr, http_port, state_dir, log_path, own)
    fw._logf = logf
    fw.command = cmd
    if wait:
        fw.wait_ready(timeout)
    return fw
