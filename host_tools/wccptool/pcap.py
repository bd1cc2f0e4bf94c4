"""Capture files, read and written with scapy: the one capture reader/writer of the project.

Reading takes classic pcap (either byte order, micro- or nanosecond timestamps) and pcapng
(any number of interfaces, each with its own link type and timestamp resolution); the frames
may be Ethernet, Linux cooked v1/v2, raw IPv4 or BSD null. Writing produces classic
microsecond pcap.

    for rec in read_pcap(path):                       # rec.index, rec.ts, rec.linktype, rec.data
        udp = extract_udp(rec.linktype, rec.data)     # UdpDatagram, or None (not IPv4/UDP)
    write_pcap(path, [frame, (ts, frame), ...])       # bytes frames, Ethernet by default
    with PcapWriter(path) as w:                       # one frame at a time, flushed as written
        w.write(frame)

Reader errors are PcapError with a readable message. A capture cut off in the middle of a
record yields the records before it and then raises PcapError (``partial_tail=True`` instead
ends quietly there: a file that a running capture is still writing).
"""
import io
import logging
import time

from scapy.error import Scapy_Exception
from scapy.layers.inet import IP, UDP
from scapy.packet import Raw
from scapy.data import MTU
from scapy.utils import RawPcapReader, RawPcapWriter

LINKTYPE_NULL = 0
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_LINUX_SLL2 = 276
_RAW_ALIASES = (LINKTYPE_RAW, LINKTYPE_IPV4, 12, 14)   # 12/14: DLT_RAW on some BSDs
SUPPORTED_LINKTYPES = (LINKTYPE_NULL, LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2) + _RAW_ALIASES

_PCAP_MAGICS = (b"\xa1\xb2\xc3\xd4", b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\x3c\x4d", b"\x4d\x3c\xb2\xa1")
_PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
_MAX_RECORD = 256 * 1024        # a larger record is corruption (scapy reads at most this much)
_SNAPLEN = 262144


class PcapError(Exception):
    pass


def _not_a_capture_warning(record):
    """scapy logs what it finds wrong in a capture as it reads; this module reports the same as
    PcapError, so those log lines are dropped (a CLI prints one clean error line)."""
    return not str(record.msg).startswith(("Pcap:", "PcapNg:"))


logging.getLogger("scapy.runtime").addFilter(_not_a_capture_warning)


class Record:
    __slots__ = ("index", "ts", "linktype", "data", "orig_len")

    def __init__(self, index, ts, linktype, data, orig_len):
        self.index = index
        self.ts = ts
        self.linktype = linktype
        self.data = data
        self.orig_len = orig_len


class UdpDatagram:
    __slots__ = ("src", "dst", "sport", "dport", "payload", "truncated")

    def __init__(self, src, dst, sport, dport, payload, truncated):
        self.src = src
        self.dst = dst
        self.sport = sport
        self.dport = dport
        self.payload = payload
        self.truncated = truncated


class _Watched(io.RawIOBase):
    """The file scapy reads through. It hands back the four bytes already read to tell the
    format, and remembers whether the last read came back short: that is how a capture cut off
    inside a record is told from one that ends between records (scapy reports both as the end
    of the file)."""

    def __init__(self, f, head):
        super().__init__()
        self.f = f
        self.head = head
        self.name = getattr(f, "name", "<stream>")
        self.short = False

    def read(self, n=-1):
        if self.head:
            b, self.head = self.head[:n], self.head[n:]
            if len(b) < n:
                b += self.f.read(n - len(b))
        else:
            b = self.f.read(n)
        self.short = n is not None and n > 0 and 0 < len(b) < n
        return b

    def readable(self):
        return True

    def close(self):
        self.f.close()
        super().close()


def _supported(path, linktype):
    if linktype not in SUPPORTED_LINKTYPES:
        raise PcapError("%s: unsupported link type %d (supported: Ethernet, Linux cooked, raw IP, null)"
                        % (path, linktype))


def read_pcap(path, partial_tail=False):
    """Yield Record objects from a pcap or pcapng file; PcapError on a bad/truncated file.

    ``path`` may also be a binary file object (a pipe from dumpcap for live capture): records
    are yielded as they arrive."""
    if hasattr(path, "read"):
        f = path
        path = getattr(f, "name", "<stream>")
    else:
        try:
            f = open(path, "rb")
        except OSError as e:
            raise PcapError("cannot open %s: %s" % (path, e.strerror or e)) from None
    magic = f.read(4)
    watch = _Watched(f, magic)
    with watch:
        if partial_tail and len(magic) < 4:
            return
        if not magic:
            raise PcapError("%s: empty file, not a pcap capture" % path)
        ng = magic == _PCAPNG_MAGIC
        if magic not in _PCAP_MAGICS and not ng:
            raise PcapError("%s: not a pcap file (magic %s)" % (path, magic.hex()))
        try:
            reader = RawPcapReader(watch)       # a RawPcapNgReader for pcapng
        except (Scapy_Exception, EOFError):
            if partial_tail:
                return
            if ng:
                raise PcapError("%s: malformed pcapng file (its section header block)" % path) from None
            raise PcapError("%s: truncated pcap file header" % path) from None
        if not ng:
            _supported(path, reader.linktype & 0x0FFFFFFF)      # upper bits: FCS info
        index = 0
        while True:
            index += 1
            try:
                data, meta = next(reader)
            except StopIteration:
                if watch.short and not partial_tail:
                    raise PcapError("%s: capture truncated in the header of packet %d" % (path, index)) from None
                return
            except Scapy_Exception as e:
                raise PcapError("%s: malformed capture at packet %d: %s" % (path, index, e)) from None
            if ng:
                linktype = meta.linktype & 0x0FFFFFFF
                _supported(path, linktype)
                caplen = len(data)
                ts = ((meta.tshigh << 32) | meta.tslow) / meta.tsresol if meta.tshigh is not None else 0.0
            else:
                linktype = reader.linktype & 0x0FFFFFFF
                caplen = meta.caplen
                ts = meta.sec + meta.usec * (1e-9 if reader.nano else 1e-6)
            if caplen > _MAX_RECORD:
                raise PcapError("%s: packet %d claims %d captured bytes: corrupt capture" % (path, index, caplen))
            if len(data) < min(caplen, MTU):
                if partial_tail:
                    return
                raise PcapError("%s: capture truncated in packet %d (%d of %d bytes)"
                                % (path, index, len(data), caplen))
            yield Record(index, ts, linktype, data, meta.wirelen)


def ip_offset(linktype, d):
    """Offset of the IPv4 header in a captured frame, or -1 when the frame does not carry IPv4."""
    if linktype == LINKTYPE_ETHERNET:
        if len(d) < 14:
            return -1
        o = 12
        et = (d[o] << 8) | d[o + 1]
        while et in (0x8100, 0x88A8, 0x9100) and len(d) >= o + 6:
            o += 4
            et = (d[o] << 8) | d[o + 1]
        return o + 2 if et == 0x0800 else -1
    if linktype == LINKTYPE_LINUX_SLL:
        if len(d) < 16:
            return -1
        return 16 if (d[14] << 8 | d[15]) == 0x0800 else -1
    if linktype == LINKTYPE_LINUX_SLL2:
        if len(d) < 20:
            return -1
        return 20 if (d[0] << 8 | d[1]) == 0x0800 else -1
    if linktype == LINKTYPE_NULL:
        if len(d) < 4:
            return -1
        fam = int.from_bytes(d[:4], "little")
        if fam != 2:
            fam = int.from_bytes(d[:4], "big")
        return 4 if fam == 2 else -1
    if linktype in _RAW_ALIASES:
        return 0
    return -1


def extract_udp(linktype, data):
    """UdpDatagram from one captured frame, or None when it is not an unfragmented IPv4/UDP packet.

    Decoded by hand rather than by scapy: a frame cut short by the capture's snap length still
    yields the part of the payload it holds, flagged ``truncated``."""
    o = ip_offset(linktype, data)
    if o < 0 or len(data) < o + 20:
        return None
    if data[o] >> 4 != 4:
        return None
    ihl = (data[o] & 15) * 4
    if ihl < 20 or len(data) < o + ihl + 8:
        return None
    if data[o + 9] != 17:
        return None
    frag = (data[o + 6] << 8) | data[o + 7]
    if frag & 0x3FFF:      # MF set or non-zero offset: fragment, not reassembled
        return None
    total = (data[o + 2] << 8) | data[o + 3]
    src = ".".join(str(x) for x in data[o + 12:o + 16])
    dst = ".".join(str(x) for x in data[o + 16:o + 20])
    u = o + ihl
    sport = (data[u] << 8) | data[u + 1]
    dport = (data[u + 2] << 8) | data[u + 3]
    ulen = (data[u + 4] << 8) | data[u + 5]
    end = u + ulen
    limit = min(len(data), o + total) if total >= ihl + 8 else len(data)
    truncated = ulen < 8 or end > limit
    payload = data[u + 8:min(end, limit)] if ulen >= 8 else data[u + 8:limit]
    return UdpDatagram(src, dst, sport, dport, payload, truncated)


# ----------------------------------------------------------------------------------------------
# writing

def ipv4_udp(payload, src, dst, sport, dport, ip_id=1, dont_fragment=False):
    """IPv4/UDP packet bytes, both checksums computed (by scapy)."""
    pkt = IP(src=src, dst=dst, id=ip_id & 0xFFFF, ttl=64, flags="DF" if dont_fragment else 0) / \
        UDP(sport=sport, dport=dport) / Raw(bytes(payload))
    return bytes(pkt)


def udp_frame(payload, src="10.1.0.2", dst="10.0.0.1", sport=2048, dport=2048, ip_id=1,
              linktype=LINKTYPE_ETHERNET):
    """An Ethernet (or raw / Linux cooked) frame carrying IPv4/UDP with correct checksums."""
    ip = ipv4_udp(payload, src, dst, sport, dport, ip_id)
    if linktype == LINKTYPE_ETHERNET:
        return b"\x02\x00\x00\x00\x00\x01" + b"\x02\x00\x00\x00\x00\x02" + b"\x08\x00" + ip
    if linktype == LINKTYPE_LINUX_SLL:
        return (b"\x00\x00" + b"\x00\x01" + b"\x00\x06" + b"\x02\x00\x00\x00\x00\x02\x00\x00"
                + b"\x08\x00" + ip)
    if linktype in _RAW_ALIASES:
        return ip
    raise ValueError("cannot build frames for link type %d" % linktype)


class PcapWriter:
    """A classic microsecond pcap file written one frame at a time; each frame is flushed, so a
    reader (or tshark) sees it at once."""

    def __init__(self, path, linktype=LINKTYPE_ETHERNET):
        self._w = RawPcapWriter(str(path), linktype=linktype, snaplen=_SNAPLEN, sync=True)
        self._w.write_header(None)

    def write(self, frame, ts=None):
        """Append one frame (bytes-like) captured at ``ts`` (seconds since the epoch; now if None)."""
        if ts is None:
            ts = time.time()
        sec = int(ts)
        usec = int(round((ts - sec) * 1e6))
        if usec >= 1000000:
            sec, usec = sec + 1, usec - 1000000
        self._w.write_packet(bytes(frame), sec=sec, usec=usec)

    def close(self):
        self._w.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def write_pcap(path, frames, linktype=LINKTYPE_ETHERNET, t0=1700000000.0):
    """Write frames (bytes, or (timestamp, bytes)) to a classic microsecond pcap file; frames
    without a timestamp are spaced 1 ms apart from ``t0``."""
    with PcapWriter(path, linktype) as w:
        for i, fr in enumerate(frames):
            if isinstance(fr, tuple):
                ts, fr = fr
            else:
                ts = t0 + i * 0.001
            w.write(fr, ts)
