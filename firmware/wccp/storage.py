"""Tiny persistent key/value storage (boot counter and similar small state).

``FileStorage(dir)`` keeps one JSON file ``<dir>/wccp_state.json`` (a file on the board's
flash or on the unix port's file system); ``MemStorage()`` keeps nothing across restarts.
Both offer ``get(key, default)`` and ``put(key, value)`` (value: JSON-serialisable).
``put`` raises OSError when the value could not be written; ``error`` holds the last
problem (a corrupt or unreadable file, a failed write) or None. A missing file is a first
boot; a corrupt one reads as empty but is reported, because state was lost.
"""
import json


class MemStorage:
    def __init__(self, data=None):
        self.data = dict(data or {})
        self.error = None

    def get(self, key, default=None):
        return self.data.get(key, default)

    def put(self, key, value):
        self.data[key] = value


class FileStorage:
    NAME = "wccp_state.json"

    def __init__(self, directory):
        self.path = directory.rstrip("/") + "/" + self.NAME
        self.data = {}
        self.error = None
        try:
            f = open(self.path)
        except OSError:
            return                  # absent: first boot (an unwritable place shows on put)
        try:
            with f:
                d = json.loads(f.read())
            if not isinstance(d, dict):
                raise ValueError("not a JSON object")
            self.data = d
        except Exception as e:  # noqa: BLE001 - corrupt or unreadable: empty, but say so
            self.error = "%s unreadable (%s): previous state lost" % (self.path, e)
            self.data = {}

    def get(self, key, default=None):
        return self.data.get(key, default)

    def put(self, key, value):
        self.data[key] = value
        text = json.dumps(self.data)
        tmp = self.path + ".tmp"
        try:
            with open(tmp, "w") as f:
                if f.write(text) != len(text):
                    raise OSError(28, "short write")
            try:
                import os
                os.rename(tmp, self.path)
            except OSError:
                with open(self.path, "w") as f:
                    if f.write(text) != len(text):
                        raise OSError(28, "short write")
        except OSError as e:
            self.error = "cannot write %s: %s" % (self.path, e)
            raise


def _random16():
    try:
        import os
        b = os.urandom(2)
        return ((b[0] << 8) | b[1]) or 1
    except Exception:  # noqa: BLE001 - no entropy source
        import time
        return (int(time.time() * 1000) & 0xFFFF) or 1


def next_boot(storage):
    """Increment and persist the boot counter. Returns (boot, persisted).

    boot is 1 on the first boot. When the previous value was lost (corrupt file) or the new
    one cannot be written, persisted is False and boot is random: the caller must then not
    rely on it alone to keep change numbers from repeating (the router seeds them randomly)."""
    n = storage.get("boot", 0)
    if not isinstance(n, int) or n < 0:
        n = 0
    lost = getattr(storage, "error", None) is not None
    if lost:
        n = _random16()
    n = (n + 1) & 0xFFFF
    if n == 0:
        n = 1
    try:
        storage.put("boot", n)
    except OSError:
        return (_random16() if not lost else n), False
    return n, not lost
