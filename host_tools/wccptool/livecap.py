"""Live capture for the capture-reading tools: dumpcap writes pcapng (its default format) to
a pipe that ``wccptool.pcap.read_pcap`` reads as the packets arrive."""
import subprocess


class LiveCaptureError(Exception):
    pass


def start(iface, capture_filter=None, duration=None):
    """A running dumpcap on ``iface`` (Popen; read its stdout with pcap.read_pcap)."""
    cmd = ["dumpcap", "-q", "-i", iface, "-w", "-"]
    if capture_filter:
        cmd += ["-f", capture_filter]
    if duration:
        cmd += ["-a", "duration:%d" % max(1, int(duration))]
    try:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as e:
        raise LiveCaptureError("cannot start dumpcap (install tshark/dumpcap): %s" % e) from None


def stop(proc):
    """Stop dumpcap; its error text when it failed (not when it was stopped or ran out its time)."""
    if proc.poll() is None:
        proc.terminate()
    try:
        err = proc.communicate(timeout=5)[1]
    except subprocess.TimeoutExpired:
        proc.kill()
        err = proc.communicate()[1]
    if proc.returncode not in (0, -15):
        return err.decode(errors="replace").strip()[-500:] or "exit status %d" % proc.returncode
    return None
