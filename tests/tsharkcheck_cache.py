"""Run real tshark over a pcap of WCCP datagrams and report expert warnings/errors.

Used by the cache-emulator tests and the integration tests. tshark must be
installed (Debian `tshark`); a missing tshark is a failure, never a skip.
"""
import shutil
import subprocess

SEVERITY_WARN = 0x00600000
SEVERITY_ERROR = 0x00800000
TYPE_NAMES = {10: "HERE_I_AM", 11: "I_SEE_YOU", 12: "REDIRECT_ASSIGN", 13: "REMOVAL_QUERY"}


def tshark_frames(pcap):
    """One dict per frame: number, wccp message type (int or None), expert [(text, severity)],
    malformed (bool)."""
    exe = shutil.which("tshark")
    assert exe, "tshark is not installed (scripts/setup-system.sh installs it)"
    sep = "\x1f"
    cmd = [exe, "-r", str(pcap), "-o", "udp.check_checksum:FALSE", "-T", "fields",
           "-E", "separator=/t", "-E", "aggregator=" + sep, "-E", "occurrence=a",
           "-e", "frame.number", "-e", "wccp.message", "-e", "_ws.expert.message",
           "-e", "_ws.expert.severity", "-e", "_ws.malformed"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, "tshark failed: %s" % res.stderr
    frames = []
    for line in res.stdout.splitlines():
        cols = line.split("\t")
        cols += [""] * (5 - len(cols))
        msgs = [m for m in cols[2].split(sep) if m]
        sevs = [int(s, 0) for s in cols[3].split(sep) if s]
        types = [int(t, 0) for t in cols[1].split(sep) if t]
        frames.append({"frame": int(cols[0]), "type": types[0] if types else None,
                       "expert": list(zip(msgs, sevs, strict=False)), "malformed": bool(cols[4])})
    return frames


def problems(pcap, allow=None):
    """List of human-readable problems: frames not decoded as WCCP, malformed frames, and
    expert items of severity warning or error. ``allow(frame, text)`` may excuse an item."""
    out = []
    frames = tshark_frames(pcap)
    for f in frames:
        if f["type"] is None:
            out.append("frame %d: not decoded as WCCP" % f["frame"])
        if f["malformed"]:
            out.append("frame %d: malformed" % f["frame"])
        for text, sev in f["expert"]:
            if sev >= SEVERITY_WARN and not (allow and allow(f, text)):
                out.append("frame %d (%s): %s" % (f["frame"], TYPE_NAMES.get(f["type"], f["type"]), text))
    return out, frames


def assert_clean(pcap, allow=None, min_frames=1):
    """Fail unless tshark decodes every frame as WCCP with no expert warning/error."""
    probs, frames = problems(pcap, allow)
    assert len(frames) >= min_frames, "pcap has %d frames, expected >= %d" % (len(frames), min_frames)
    assert not probs, "tshark expert problems:\n" + "\n".join(probs[:40])
    return frames
