"""Processes started in a session of their own (start_new_session=True), stopped by process
group so that their children go with them; and whether a pid is still running. Used by the
twin (wccptool.twin) and the inline lab (wccptool.labnet, wccptool.lab)."""
import os
import signal
import subprocess


def stop_group(popen, sig=signal.SIGTERM, wait=5.0):
    """Send sig to the process group popen leads and wait up to `wait` seconds for popen to
    exit; SIGKILL the group when it has not. Returns False (and does nothing) when popen had
    already exited."""
    if popen.poll() is not None:
        return False
    try:
        os.killpg(popen.pid, sig)
    except ProcessLookupError:
        pass
    try:
        popen.wait(wait)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        popen.wait(5)
    return True


def pid_alive(pid):
    """True while pid runs (a zombie does not; another user's process does)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:                                   # a zombie is not alive
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
