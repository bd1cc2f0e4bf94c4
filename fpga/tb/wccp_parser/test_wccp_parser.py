"""wccp_parser: Ethernet (+802.1Q), IPv4 validity (IHL, options, fragments, lengths), ports;
the input is the MAC's early stream (the frame with its FCS, s_end after the last byte);
hdr_done exactly once per frame in the first cycle the header fields are final (the header
point: low ethertype byte of a non-IPv4 frame, IPv4 byte 19 and L4 byte 3 (GRE: 11) of an
IPv4 one; at byte 60 or later only once 4 more bytes have come, i.e. once it cannot be an FCS
byte; else with done for a frame that ends before it): in the cycle that byte is in the
parser's input register (the cycle after IPv4 byte 19 is there when that is the header point),
with the final header fields (L4 bytes 3 and 11 captured straight from the stream) and
ip_hdr_ok; done with every field of the frame without its FCS, frame_len, avail and ip_ok."""
import random
import struct

import pytest
import wccp_tb
from wccp_frames import fcs, header_point, header_point_is_ip19
from wccp_tb import Clock, ReadOnly, RisingEdge, cocotb, cocotb_test

# fields final at hdr_done (l4_byte4/len4/len8 only for GRE, see header_point)
HDR_FIELDS = ("dst_mac", "src_mac", "vlan", "vlan_tci", "is_ip", "proto", "sip", "dip", "sport", "dport",
              "totlen", "ihl", "l4_word0", "l4_byte4", "l4_len4", "l4_len8", "tcpudp", "ip_hdr_ok")
DONE_FIELDS = HDR_FIELDS + ("frame_len", "avail", "ip_ok")


def fires(s):
    """The stream s (frame + FCS) reaches its header point before its end: hdr_done fires at
    the header point (before byte 60) or 4 bytes after it (at 60 or later)."""
    hs = header_point(s)
    return hs < len(s) if hs < 60 else hs + 4 < len(s)


def ref(f, fcs_n=0):
    """What the parser holds after the bytes of `f`, the last fcs_n of which are an FCS: a
    register model (missing bytes leave cleared fields, L4 bytes taken from the FCS are
    cleared, the lengths leave the FCS out; MACs only compared for frames of >= 12 bytes)."""
    n = len(f)
    e = {"frame_len": (min(n, 2048) - fcs_n) & 0x7FF}
    if n >= 12:
        e["dst_mac"] = int.from_bytes(f[0:6], "big")
        e["src_mac"] = int.from_bytes(f[6:12], "big")
    vlan = n > 13 and f[12:14] == b"\x81\x00"
    e["vlan"] = int(vlan)
    e["vlan_tci"] = ((f[14] if n > 14 else 0) << 8 | (f[15] if n > 15 else 0)) if vlan else 0
    l3 = 18 if vlan else 14
    ipb = f[l3:] if n >= l3 and f[l3 - 2:l3] == b"\x08\x00" else b""
    m = len(ipb)

    def g(i):
        return ipb[i] if i < m else 0
    ihl = g(0) & 15
    tlen = g(2) << 8 | g(3)
    frag_hi0 = (ipb[6] & 0x3F) == 0 if m > 6 else True
    frag_lo0 = ipb[7] == 0 if m > 7 else True
    tcpudp = m > 9 and ipb[9] in (6, 17)
    l4 = []
    for k in range(12):
        pos = 4 * ihl + k if ihl else (k if k >= 1 else m)
        l4.append(ipb[pos] if pos < m - fcs_n else 0)
    ip_hdr_ok = (m > 0 and g(0) >> 4 == 4 and ihl >= 5 and (tlen >> 2) >= ihl and frag_hi0 and frag_lo0
                 and (not tcpudp or (tlen >> 2) > ihl))
    avail = (m == 0 or m - fcs_n >= tlen) and n < 2048
    # a frame that ends before its header point with its datagram cut short: not valid for
    # redirect (the decision's fields are not all in it)
    ip_hdr_ok = ip_hdr_ok and (avail or (fires(f) if fcs_n else header_point(f) < n))
    e.update(is_ip=int(m > 0), proto=g(9), sip=int.from_bytes(ipb[12:16], "big"),
             dip=int.from_bytes(ipb[16:20], "big"),
             sport=(l4[0] << 8 | l4[1]) if tcpudp else 0, dport=(l4[2] << 8 | l4[3]) if tcpudp else 0,
             totlen=tlen, ihl=ihl, l4_word0=int.from_bytes(bytes(l4[0:4]), "big"), l4_byte4=l4[4],
             l4_len4=l4[6] << 8 | l4[7], l4_len8=l4[10] << 8 | l4[11], tcpudp=int(tcpudp),
             ip_hdr_ok=int(ip_hdr_ok), avail=int(avail), ip_ok=int(ip_hdr_ok and avail))
    return e


def expect(frame):
    """Reference field extraction (datapath spec) for a frame >= 60 bytes without FCS:
    an independent check of the register model above."""
    e = {"dst_mac": int.from_bytes(frame[0:6], "big"), "src_mac": int.from_bytes(frame[6:12], "big"),
         "frame_len": len(frame)}
    l3 = 14
    et = struct.unpack_from(">H", frame, 12)[0]
    e["vlan"] = int(et == 0x8100)
    if et == 0x8100:
        e["vlan_tci"] = struct.unpack_from(">H", frame, 14)[0]
        et = struct.unpack_from(">H", frame, 16)[0]
        l3 = 18
    e["is_ip"] = int(et == 0x0800)
    if not e["is_ip"]:
        e["ip_ok"] = 0
        e["ip_hdr_ok"] = 0
        return e
    vihl = frame[l3]
    ihl = (vihl & 15) * 4
    tl = struct.unpack_from(">H", frame, l3 + 2)[0]
    frag = struct.unpack_from(">H", frame, l3 + 6)[0]
    proto = frame[l3 + 9]
    hok = (vihl >> 4) == 4 and ihl >= 20 and tl >= ihl and (frag & 0x3FFF) == 0
    sp = dp = 0
    if hok and proto in (6, 17):
        if ihl + 4 <= tl:
            sp, dp = struct.unpack_from(">HH", frame, l3 + ihl)
        else:
            hok = False
    e["ip_hdr_ok"] = int(hok)
    e["avail"] = int(l3 + tl <= len(frame))
    e["ip_ok"] = int(hok and l3 + tl <= len(frame))
    if e["ip_ok"]:
        e.update(proto=proto, sip=struct.unpack_from(">I", frame, l3 + 12)[0],
                 dip=struct.unpack_from(">I", frame, l3 + 16)[0], sport=sp, dport=dp, totlen=tl,
                 ihl=ihl // 4)
        if proto == 47:
            e["l4_word0"] = struct.unpack_from(">I", frame, l3 + ihl)[0]
    return e


def raw_ip(rng, n, proto=6, vlan=None, ihl=5, tl=None, ver_ihl=None, frag=0x4000, ethertype=0x0800):
    """An IPv4 frame of exactly n bytes (without FCS), any IHL (options are random bytes)."""
    l2 = bytes([0x02, 0, 0, 0, 0, 1]) + bytes([0x02, 0x10] + [rng.randrange(256) for _ in range(4)])
    if vlan is not None:
        l2 += b"\x81\x00" + struct.pack(">H", vlan)
    l2 += struct.pack(">H", ethertype)
    tl = n - len(l2) if tl is None else tl
    ip = bytes([ver_ihl if ver_ihl is not None else 0x40 | ihl, 0]) + struct.pack(">HHH", tl & 0xFFFF,
                                                                                  rng.randrange(65536), frag)
    ip += bytes([64, proto]) + bytes(rng.randrange(256) for _ in range(10))
    ip += bytes(rng.randrange(256) for _ in range(4 * max(0, (ip[0] & 15) - 5)))
    body = l2 + ip + bytes(rng.randrange(256) for _ in range(max(0, n - len(l2) - len(ip))))
    return body[:n]


def frames(rng):
    from wccp_frames import MALFORMED, FrameGen
    g = FrameGen(rng, 0x0A000001, [0x0A010001], [b"\x02\xcc\x00\x00\x00\x01"], [0])
    out = []
    for _ in range(40):
        out.append(g.ip_frame(vlan=rng.choice([None, None, 5])))
    out.append(g.gre_return(0))
    out.append(g.gre_return(0, vlan=7, redirect_header=False))
    for _ in range(4):
        out.append(g.non_ip())
    for k in MALFORMED:
        if k in ("runt", "bad_fcs", "oversize"):
            continue
        for _ in range(3):
            out.append(g.malformed(k)[:-4])
    return [f + b"\x00" * max(0, 60 - len(f)) for f in out]


def crafted(rng):
    """Every header-point path: non-IPv4 (tagged, double-tagged, 0x8101), IPv4 TCP/UDP/other
    and GRE with IHL 0..15, with and without a tag, and frames that end around and before
    their header point."""
    out = []
    for vlan in (None, 0x2005):
        for proto in (6, 17, 1, 47):
            for ihl in range(16):
                n = rng.randrange(60, 140)
                out.append(raw_ip(rng, n, proto=proto, vlan=vlan, ihl=ihl))
                # truncated datagram (avail 0), header fine
                out.append(raw_ip(rng, n, proto=proto, vlan=vlan, ihl=ihl, tl=n + 40))
        out.append(raw_ip(rng, 64, vlan=vlan, ethertype=0x0806))
        out.append(raw_ip(rng, 64, vlan=vlan, ethertype=0x8101))
        out.append(raw_ip(rng, 64, vlan=vlan, ethertype=0x8100))      # tagged twice: not IPv4
        out.append(raw_ip(rng, 64, vlan=vlan, ethertype=0x0801))
        out.append(raw_ip(rng, 64, vlan=vlan, ethertype=0x0000))
    # ends at, one and two bytes after, and before the header point; tiny frames
    # (IHL 11 and 15: header points at byte 60 or later, which wait for 4 more bytes: the
    # frame may end inside them, its header point then being in its FCS)
    base = [raw_ip(rng, 120, proto=p, vlan=v, ihl=i) for p in (6, 47) for v in (None, 9) for i in (5, 7, 11, 15)]
    base.append(raw_ip(rng, 120, ethertype=0x0806))
    base.append(raw_ip(rng, 120, vlan=3, ethertype=0x86DD))
    for f in base:
        hp = header_point(f)
        for n in sorted({1, 2, 6, 12, 13, 14, 15, 17, 18, 20, hp - 1, hp, hp + 1, hp + 2, hp + 3, hp + 4, hp + 5}):
            if 0 < n <= len(f):
                out.append(f[:n])
    return out


def _val(sig):
    v = sig.value
    return int(v) if v.is_resolvable else None


@cocotb_test
async def test_fields(dut):
    cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start())
    dut.rst.value = 1
    dut.s_valid.value = 0
    dut.s_end.value = 0
    dut.s_data.value = 0
    dut.s_nz.value = 0
    for _ in range(3):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    rng = random.Random(11)
    gen = frames(rng)
    fs = gen + crafted(rng)
    gen_ids = {id(f) for f in gen}
    rng.shuffle(fs)
    # schedule: one (valid, data, end) per cycle; each frame is sent with its FCS (the MAC's
    # early stream), random gaps inside some frames, s_end in the cycle after the last byte
    # and 0..3 more idle cycles
    sched, bcyc, streams = [], [], []
    for f in fs:
        st = f + fcs(f)
        streams.append(st)
        gaps = rng.randrange(2) == 1
        cyc = []
        for b in st:
            if gaps and rng.random() < 0.15:
                sched.append((0, rng.randrange(256), 0))
            cyc.append(len(sched))
            sched.append((1, b, 0))
        cyc.append(len(sched))          # s_end
        sched.append((0, rng.randrange(256), 1))
        bcyc.append(cyc)
        for _ in range(rng.randrange(0, 4)):
            sched.append((0, rng.randrange(256), 0))
    sched += [(0, 0, 0)] * 8
    hdr, done = {}, {}
    for c, (v, b, end) in enumerate(sched):
        await RisingEdge(dut.clk)
        dut.s_valid.value = v
        dut.s_data.value = b
        dut.s_nz.value = int(b != 0)        # as the MAC gives it with the byte
        dut.s_end.value = end
        await ReadOnly()
        # outputs in this cycle: registered from the inputs of cycles < c
        h, dn = int(dut.hdr_done.value), int(dut.done.value)
        if h or dn:
            snap = {k: _val(getattr(dut, k)) for k in DONE_FIELDS}
            if h:
                hdr[c] = snap
            if dn:
                done[c] = snap
    # byte on s_data in cycle c: in the input register in c + 1, fields in c + 2; s_end in
    # cycle c: done in c + 2. The header point hp (of the stream: in a runt it may be an FCS
    # byte): hdr_done in c + 1 for byte hp (hp < 60; c + 2 where hp is IPv4 byte 19) or
    # hp + 4 (hp >= 60, 4 more bytes: not in the FCS), else at done
    exp_hdr, exp_done, hdr_upto, stream_of = {}, {}, {}, {}
    for f, st, cyc in zip(fs, streams, bcyc, strict=True):
        hp = header_point(st)
        dc = cyc[-1] + 2
        last = hp if hp < 60 else hp + 4
        hc = cyc[last] + (2 if header_point_is_ip19(st) else 1) if fires(st) else dc
        assert hc not in exp_hdr and dc not in exp_done
        exp_hdr[hc] = f
        exp_done[dc] = f
        # the fields then hold the bytes before `last` and `last` itself (captured from the
        # stream where it is the header point; 4 bytes after one at 60 or later it is not part
        # of the header and not captured yet)
        hdr_upto[id(f)] = (last + 1 if hp < 60 else last) if fires(st) else None
        stream_of[id(f)] = st
    assert sorted(hdr) == sorted(exp_hdr), "hdr_done cycles differ: %s" % sorted(set(hdr) ^ set(exp_hdr))
    assert sorted(done) == sorted(exp_done), "done cycles differ"
    for c, f in exp_hdr.items():
        st = stream_of[id(f)]
        upto = hdr_upto[id(f)]
        e = ref(st[:upto]) if upto is not None else ref(st, 4)
        for k in HDR_FIELDS:
            if k in e:
                assert hdr[c][k] == e[k], ("hdr_done", k, hex(hdr[c][k]), hex(e[k]), upto, f.hex())
    for c, f in exp_done.items():
        e = ref(stream_of[id(f)], 4)
        if len(f) >= 60:
            # not a runt: every header byte is a data byte, the FCS is left out
            assert e == ref(f), (e, ref(f), f.hex())
        for k in DONE_FIELDS:
            if k in e:
                assert done[c][k] == e[k], ("done", k, hex(done[c][k]), hex(e[k]), f.hex())
        if id(f) in gen_ids:
            for k, v in expect(f).items():
                assert done[c][k] == v, ("expect", k, hex(done[c][k]), hex(v), f.hex())
    # the decision's fields do not change from hdr_done to done (l4 bytes 4.. only for GRE;
    # frames of at least 60 bytes: a runt's header may be in its FCS, cleared at the end)
    hc_of = {id(f): c for c, f in exp_hdr.items()}
    for c, f in exp_done.items():
        if len(f) < 60:
            continue
        h = hdr[hc_of[id(f)]]
        hp = header_point(f)
        gre_or_end = hp >= len(f) or ref(f)["proto"] == 47
        for k in HDR_FIELDS:
            if k in ("l4_byte4", "l4_len4", "l4_len8") and not gre_or_end:
                continue
            if k in ("dst_mac", "src_mac") and len(f) < 12:
                continue
            assert h[k] == done[c][k], ("changed after hdr_done", k, f.hex())
    dut._log.info("%d frames, %d ended before their header point, %d with it at byte 60 or later",
                  len(fs), sum(1 for f in fs if header_point(f) >= len(f)),
                  sum(1 for f in fs if 60 <= header_point(f) < len(f)))


@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_parser(sim):
    wccp_tb.run_sim(sim, "wccp_parser", __file__, sources=[wccp_tb.RTL / "wccp_parser.v"])
