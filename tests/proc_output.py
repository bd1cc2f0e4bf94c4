"""Read a child process's text output in a thread, so a test can wait for a line (e.g. the end
of `wccp run`'s banner) before it acts, and still get the whole output at the end.

Waiting for the banner, not just for the firmware's /status, matters: /status answers as soon
as the firmware is up, a moment before `wccp run` prints its banner, and a signal sent in that
moment stops it with no banner printed.
"""
import threading
import time


class Output:
    def __init__(self, proc):
        self.proc = proc
        self._chunks = []
        self._lock = threading.Lock()
        self._t = threading.Thread(target=self._pump, daemon=True)
        self._t.start()

    def _pump(self):
        for line in self.proc.stdout:
            with self._lock:
                self._chunks.append(line)

    def text(self):
        with self._lock:
            return "".join(self._chunks)

    def wait_for(self, needle, timeout):
        """True once `needle` has been printed; False if the process exits or `timeout` passes first."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if needle in self.text():
                return True
            if self.proc.poll() is not None:
                self._t.join(5)
                return needle in self.text()
            time.sleep(0.05)
        return False

    def finish(self, timeout):
        """Wait for the process to exit and its output to end; return all of it."""
        self.proc.wait(timeout)
        self._t.join(timeout)
        return self.text()
