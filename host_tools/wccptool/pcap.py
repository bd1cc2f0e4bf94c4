"""Classic libpcap files: read (Ethernet, Linux cooked v1/v2, raw IP, BSD null) and write.

No pcapng. Reader errors are PcapError with a readable message; a capture cut off in
the middle of a record yields the records before it and then raises PcapError.

    for rec in read_pcap(path):            # rec.index, rec.ts, rec.linktype, rec.data
        udp = extract_udp(rec.linktype, rec.data)   # UdpDatagram or None (not IPv4/UDP)
"""
import struct

LINKTYPE_NULL = 0
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_LINUX_SLL2 = 276
_RAW_ALIASES = (LINKTYPE_RAW, LINKTYPE_IPV4, 12, 14)   # 12/14: DLT_RAW on some BSDs
SUPPORTED_LINKTYPES = (LINKTYPE_NULL, LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2) + _RAW_ALIASES

_MAGICS = {
    b"\xa1\xb2\xc3\xd4": (">", 1e-6), b"\xd4\xc3\xb2\xa1": ("<", 1e-6),
    b"\xa1\xb2\x3c\x4d": (">", 1e-9), b"\x4d\x3c\xb2\xa1": ("<", 1e-9),
}
_MAX_RECORD = 256 * 1024


class PcapError(Exception):
    pass


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


def read_pcap(path):
    """Yield Record objects from a classic pcap file; PcapError on a bad/truncated file.

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
    with f:
        hdr = f.read(24)
        if len(hdr) == 0:
            raise PcapError("%s: empty file, not a pcap capture" % path)
        if hdr[:4] == b"\x0a\x0d\x0d\x0a":
            raise PcapError("%s: pcapng is not supported; convert with: editcap -F pcap IN OUT" % path)
        if hdr[:4] not in _MAGICS:
            raise PcapError("%s: not a pcap file (magic %s)" % (path, hdr[:4].hex()))
        if len(hdr) < 24:
            raise PcapError("%s: truncated pcap file header (%d of 24 bytes)" % (path, len(hdr)))
        endian, tsres = _MAGICS[hdr[:4]]
        _vmaj, _vmin, _tz, _sig, _snap, linktype = struct.unpack(endian + "HHiIII", hdr[4:24])
        linktype &= 0x0FFFFFFF   # upper bits: FCS info
        if linktype not in SUPPORTED_LINKTYPES:
            raise PcapError("%s: unsupported link type %d (supported: Ethernet, Linux cooked, raw IP, null)"
                            % (path, linktype))
        rh = struct.Struct(endian + "IIII")
        index = 0
        while True:
            r = f.read(16)
            if not r:
                return
            index += 1
            if len(r) < 16:
                raise PcapError("%s: capture truncated in the header of packet %d" % (path, index))
            sec, frac, incl, orig = rh.unpack(r)
            if incl > _MAX_RECORD:
                raise PcapError("%s: packet %d claims %d captured bytes: corrupt capture" % (path, index, incl))
            data = f.read(incl)
            if len(data) < incl:
                raise PcapError("%s: capture truncated in packet %d (%d of %d bytes)"
                                % (path, index, len(data), incl))
            yield Record(index, sec + frac * tsres, linktype, data, orig)


def _ip_payload_offset(linktype, d):
    """(offset of the IPv4 header, or -1 when the frame does not carry IPv4)."""
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
        fam = struct.unpack("<I", d[:4])[0]
        if fam != 2:
            fam = struct.unpack(">I", d[:4])[0]
        return 4 if fam == 2 else -1
    if linktype in _RAW_ALIASES:
        return 0
    return -1


def extract_udp(linktype, data):
    """UdpDatagram from one captured frame, or None when it is not an unfragmented IPv4/UDP packet."""
    o = _ip_payload_offset(linktype, data)
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
# writing (used by tests and tools)

def _csum(b):
    if len(b) & 1:
        b = b + b"\x00"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def _ip4(s):
    return bytes(int(x) for x in s.split("."))


def udp_frame(payload, src="10.1.0.2", dst="10.0.0.1", sport=2048, dport=2048, ip_id=1,
              linktype=LINKTYPE_ETHERNET):
    """An Ethernet (or raw / Linux cooked) frame carrying IPv4/UDP with correct checksums."""
    payload = bytes(payload)
    ulen = 8 + len(payload)
    sa, da = _ip4(src), _ip4(dst)
    pseudo = sa + da + struct.pack("!BBH", 0, 17, ulen)
    uh = struct.pack("!HHHH", sport, dport, ulen, 0)
    uc = _csum(pseudo + uh + payload) or 0xFFFF
    udp = struct.pack("!HHHH", sport, dport, ulen, uc) + payload
    iph = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), ip_id, 0, 64, 17, 0, sa, da)
    iph = iph[:10] + struct.pack("!H", _csum(iph)) + iph[12:]
    ip = iph + udp
    if linktype == LINKTYPE_ETHERNET:
        return b"\x02\x00\x00\x00\x00\x01" + b"\x02\x00\x00\x00\x00\x02" + b"\x08\x00" + ip
    if linktype == LINKTYPE_LINUX_SLL:
        return struct.pack("!HHH8sH", 0, 1, 6, b"\x02\x00\x00\x00\x00\x02\x00\x00", 0x0800) + ip
    if linktype in _RAW_ALIASES:
        return ip
    raise ValueError("cannot build frames for link type %d" % linktype)


def write_pcap(path, frames, linktype=LINKTYPE_ETHERNET, t0=1700000000.0):
    """Write frames (bytes, or (timestamp, bytes)) to a classic microsecond pcap file."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, linktype))
        for i, fr in enumerate(frames):
            if isinstance(fr, tuple):
                ts, fr = fr
            else:
                ts = t0 + i * 0.001
            sec = int(ts)
            usec = int(round((ts - sec) * 1e6))
            f.write(struct.pack("<IIII", sec, usec, len(fr), len(fr)))
            f.write(fr)
