"""The ARP probe the firmware sends for active discovery (wccp.discovery), RFC 5227 style:
its Ethernet/ARP layout as named byte offsets, a builder and the per-probe target address.
A module of its own, apart from wccp.frame (CRC, checksums, hash helpers of the model and
tools): a board imports only this. MicroPython and CPython."""

# byte offsets in the frame (Ethernet header, then ARP for IPv4; no FCS). Plain ints: other
# modules import them (const() would only fold them inside this one).
ETH_DST = 0
ETH_SRC = 6
ETH_TYPE = 12
ARP_SHA = 22         # sender hardware address
ARP_SPA = 28         # sender protocol (IPv4) address
ARP_THA = 32         # target hardware address
ARP_TPA = 38         # target protocol (IPv4) address
ARP_FRAME_LEN = 42   # Ethernet header + ARP for IPv4 (the MAC pads it to 60)
# ethertype ARP, then htype Ethernet, ptype IPv4, hlen 6, plen 4, oper request
_ARP_REQUEST = b"\x08\x06\x00\x01\x08\x00\x06\x04\x00\x01"


def arp_probe(mac):
    """An ARP probe from mac: broadcast request, sender MAC = mac, sender IP 0.0.0.0 (no peer's
    ARP cache changes), target MAC 0. The target IP (ARP_TPA) is 0 until put_ipv4 sets it."""
    f = bytearray(ARP_FRAME_LEN)
    f[ETH_DST:ETH_DST + 6] = b"\xff" * 6
    f[ETH_SRC:ETH_SRC + 6] = mac
    f[ETH_TYPE:ARP_SHA] = _ARP_REQUEST
    f[ARP_SHA:ARP_SHA + 6] = mac
    return f


def put_ipv4(buf, o, a):
    """buf[o:o + 4] = the 32-bit address a, big-endian (no allocation)."""
    buf[o] = (a >> 24) & 0xFF
    buf[o + 1] = (a >> 16) & 0xFF
    buf[o + 2] = (a >> 8) & 0xFF
    buf[o + 3] = a & 0xFF
