"""Tiny persistent key/value storage (boot counter and similar small state).

``FileStorage(dir)`` keeps one JSON file ``<dir>/wccp_state.json`` (a file on the board's
flash or on the unix port's file system); ``MemStorage()`` keeps nothing across restarts.
Both offer ``get(key, default)`` and ``put(key, value)`` (value: JSON-serialisable). A
missing or corrupt file reads as empty: storage trouble never stops the router.
"""
import json


class MemStorage:
    def __init__(self, data=None):
        self.data = dict(data or {})

    def get(self, key, default=None):
        return self.data.get(key, default)

    def put(self, key, value):
        self.data[key] = value


class FileStorage:
    NAME = "wccp_state.json"

    def __init__(self, directory):
        self.path = directory.rstrip("/") + "/" + self.NAME
        self.data = {}
        try:
            with open(self.path) as f:
                d = json.loads(f.read())
            if isinstance(d, dict):
                self.data = d
        except Exception:  # noqa: BLE001 - absent/corrupt file = empty state
            self.data = {}

    def get(self, key, default=None):
        return self.data.get(key, default)

    def put(self, key, value):
        self.data[key] = value
        tmp = self.path + ".tmp"
        try:
            with open(tmp, "w") as f:
                f.write(json.dumps(self.data))
            try:
                import os
                os.rename(tmp, self.path)
            except Exception:  # noqa: BLE001
                with open(self.path, "w") as f:
                    f.write(json.dumps(self.data))
        except OSError:
            pass


def next_boot(storage):
    """Increment and persist the boot counter; return the new value (1 on first boot)."""
    n = storage.get("boot", 0)
    if not isinstance(n, int) or n < 0:
        n = 0
    n = (n + 1) & 0xFFFF
    if n == 0:
        n = 1
    storage.put("boot", n)
    return n
