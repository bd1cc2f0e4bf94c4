"""What the WCCPv2 codec's parts share (wccp.codec is the API): WccpError, address and
bucket-bitmap helpers, big-endian reads, the component tables. Runs on CPython and MicroPython."""
import struct

from wccp.const import (
    SECURITY_INFO, SERVICE_INFO, ROUTER_ID_INFO, WC_ID_INFO, RTR_VIEW_INFO, WC_VIEW_INFO,
    REDIRECT_ASSIGNMENT, QUERY_INFO, CAPABILITY_INFO, ALT_ASSIGNMENT, ASSIGN_MAP,
    COMMAND_EXTENSION, ALT_ASSIGNMENT_MAP, ADDRESS_TABLE,
    WCI_U, WCI_U_V201,
)

pack_into = struct.pack_into


class WccpError(ValueError):
    """The only exception decode() raises; .reason says what is wrong."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason

    def __str__(self):
        return self.reason


# --------------------------------------------------------------------------------------------
# small helpers

def ip2int(s):
    """'1.2.3.4' -> 0x01020304 (WccpError on bad text). Parses in place: no allocation
    (the router converts two addresses per datagram)."""
    if not isinstance(s, str):
        raise WccpError("address must be a dotted string")
    n = 0
    v = 0
    digits = 0
    dots = 0
    for ch in s:
        o = ord(ch)
        if o == 46 and digits and dots < 3 and v <= 255:     # "."
            n = (n << 8) | v
            v = 0
            digits = 0
            dots += 1
        elif 48 <= o <= 57 and digits < 3:
            v = v * 10 + o - 48
            digits += 1
        else:
            raise WccpError("bad IPv4 address %r" % s)
    if not digits or dots != 3 or v > 255:
        raise WccpError("bad IPv4 address %r" % s)
    return (n << 8) | v


def int2ip(n):
    return "%d.%d.%d.%d" % ((n >> 24) & 255, (n >> 16) & 255, (n >> 8) & 255, n & 255)


def _g32(b, o):
    return (b[o] << 24) | (b[o + 1] << 16) | (b[o + 2] << 8) | b[o + 3]


def _g16(b, o):
    return (b[o] << 8) | b[o + 1]


def identity_unassigned(el):
    """U flag of a Web-Cache Identity element; accepts both encodings (0x0001 and 0x8000)."""
    return bool(el.get("flags", 0) & (WCI_U | WCI_U_V201))


def bucket_bitmap(buckets):
    """Build the 32-byte identity bitmap (MSB-first per byte) from bucket numbers."""
    bm = bytearray(32)
    for n in buckets:
        bm[n >> 3] |= 0x80 >> (n & 7)
    return bm


def bitmap_has(bm, n):
    """Is bucket n set in a 32-byte identity bitmap (MSB-first per byte)?"""
    return bool(bm[n >> 3] & (0x80 >> (n & 7)))


def cisco_mask_view_element(address, unassigned, masks=None, weight=0, status=0):
    """A Router View cache element for mask mode in the shapes Squid (and Cisco) use.

    assigned -> 16 bytes: address, flags 0x0002 (mask data), 0 mask/value sets, weight, status.
    unassigned -> 32 bytes: flags word 0x00000003 (U + mask data), one set with `masks`, 0 values.
    Squid reads 16 bytes per element unless the 32-bit word after the address is exactly 3.
    """
    el = {"address": address, "hash_revision": 0, "data_type": "mask", "weight": weight, "status": status}
    if unassigned:
        m = masks or {"src_addr": 0, "dst_addr": 0, "src_port": 0, "dst_port": 0}
        el["flags"] = 0x0003
        el["mask_value_sets"] = [{"masks": m, "values": []}]
    else:
        el["flags"] = 0x0002
        el["mask_value_sets"] = []
    return el


def plain(obj):
    """Deep copy of a decoded message with every memoryview turned into bytes."""
    if isinstance(obj, dict):
        d = {}
        for k in obj:
            d[k] = plain(obj[k])
        return d
    if isinstance(obj, list):
        return [plain(x) for x in obj]
    if isinstance(obj, memoryview):
        return bytes(obj)
    return obj


# component type -> its key in a message dict, and its name
_COMP_KEYS = {
    SECURITY_INFO: "security", SERVICE_INFO: "service", ROUTER_ID_INFO: "router_identity",
    WC_ID_INFO: "web_cache_identity", RTR_VIEW_INFO: "router_view", WC_VIEW_INFO: "web_cache_view",
    REDIRECT_ASSIGNMENT: "assignment_info", QUERY_INFO: "router_query", CAPABILITY_INFO: "capabilities",
    ALT_ASSIGNMENT: "alternate_assignment", ASSIGN_MAP: "assignment_map",
    COMMAND_EXTENSION: "command_extension", ALT_ASSIGNMENT_MAP: "alternate_assignment_map",
    ADDRESS_TABLE: "address_table",
}
COMPONENT_NAMES = {
    SECURITY_INFO: "Security Info", SERVICE_INFO: "Service Info", ROUTER_ID_INFO: "Router Identity Info",
    WC_ID_INFO: "Web-Cache Identity Info", RTR_VIEW_INFO: "Router View Info",
    WC_VIEW_INFO: "Web-Cache View Info", REDIRECT_ASSIGNMENT: "Assignment Info",
    QUERY_INFO: "Router Query Info", CAPABILITY_INFO: "Capabilities Info",
    ALT_ASSIGNMENT: "Alternate Assignment", ASSIGN_MAP: "Assignment Map",
    COMMAND_EXTENSION: "Command Extension", ALT_ASSIGNMENT_MAP: "Alternate Assignment Map",
    ADDRESS_TABLE: "Address Table",
}
