"""Check that WCCP datagrams decode in real tshark with no expert warning or error.

    from tsharkcheck import assert_datagrams_clean
    assert_datagrams_clean(out)        # out: router output [(dst_ip, dst_port, src_ip, payload)...]
                                       # or plain payload bytes (sent 10.1.0.2 -> 10.0.0.1)

Builds an Ethernet/IPv4/UDP pcap with wccptool.pcap and runs tshark through
tests/tsharkcheck_cache.py (frames must be WCCP, not malformed, no expert item of
severity warning or error). A missing tshark fails, never skips.
"""
import os
import pathlib
import tempfile

from tsharkcheck_cache import assert_clean, problems
from wccptool import pcap

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _frames(datagrams):
    frames = []
    for i, d in enumerate(datagrams):
        if isinstance(d, (bytes, bytearray, memoryview)):
            frames.append(pcap.udp_frame(bytes(d), ip_id=i + 1))
        else:
            dst, dport, src, payload = d
            frames.append(pcap.udp_frame(bytes(payload), src=src, dst=dst, sport=2048, dport=dport, ip_id=i + 1))
    return frames


def write(path, datagrams):
    pcap.write_pcap(str(path), _frames(datagrams))


def datagram_problems(datagrams, allow=None):
    fd, path = tempfile.mkstemp(suffix=".pcap", prefix="wccp-tshark-")
    os.close(fd)
    try:
        write(path, datagrams)
        return problems(path, allow)
    finally:
        os.unlink(path)


def assert_datagrams_clean(datagrams, allow=None, keep=None):
    """Fail unless tshark decodes every datagram as WCCP with no warning/error.
    keep: optional path to keep the pcap (for debugging)."""
    datagrams = list(datagrams)
    assert datagrams, "no datagrams to check"
    path = keep
    if path is None:
        fd, path = tempfile.mkstemp(suffix=".pcap", prefix="wccp-tshark-")
        os.close(fd)
    try:
        write(path, datagrams)
        return assert_clean(path, allow, min_frames=len(datagrams))
    finally:
        if keep is None:
            os.unlink(path)
