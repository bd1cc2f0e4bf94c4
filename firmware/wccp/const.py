"""WCCPv2 protocol numbers (see docs/protocol.md and the reference, sections 1-5).

Plain module constants so both CPython and MicroPython can import them; the
codec re-exports all of them (``from wccp.codec import HERE_I_AM`` works).
"""
try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

WCCP_PORT = const(2048)
VERSION = const(0x0200)        # what Squid insists on
VERSION_201 = const(0x0201)    # rev1 "2.01"

# Message types (header Type, 32-bit)
HERE_I_AM = const(10)
I_SEE_YOU = const(11)
REDIRECT_ASSIGN = const(12)
REMOVAL_QUERY = const(13)
MESSAGE_NAMES = {10: "HERE_I_AM", 11: "I_SEE_YOU", 12: "REDIRECT_ASSIGN", 13: "REMOVAL_QUERY"}

# Component types
SECURITY_INFO = const(0)
SERVICE_INFO = const(1)
ROUTER_ID_INFO = const(2)
WC_ID_INFO = const(3)
RTR_VIEW_INFO = const(4)
WC_VIEW_INFO = const(5)
REDIRECT_ASSIGNMENT = const(6)   # "Assignment Info"
QUERY_INFO = const(7)
CAPABILITY_INFO = const(8)
ALT_ASSIGNMENT = const(13)
ASSIGN_MAP = const(14)
COMMAND_EXTENSION = const(15)
ALT_ASSIGNMENT_MAP = const(16)   # rev1
ADDRESS_TABLE = const(17)        # rev1

# Security options
SECURITY_NONE = const(0)
SECURITY_MD5 = const(1)

# Service types and flags
SERVICE_STANDARD = const(0)
SERVICE_DYNAMIC = const(1)
SF_SRC_IP_HASH = const(0x0001)
SF_DST_IP_HASH = const(0x0002)
SF_SRC_PORT_HASH = const(0x0004)
SF_DST_PORT_HASH = const(0x0008)
SF_PORTS_DEFINED = const(0x0010)
SF_PORTS_SOURCE = const(0x0020)
SF_REDIRECT_ONLY_PROTOCOL_0 = const(0x0040)
SF_SRC_IP_ALT_HASH = const(0x0100)
SF_DST_IP_ALT_HASH = const(0x0200)
SF_SRC_PORT_ALT_HASH = const(0x0400)
SF_DST_PORT_ALT_HASH = const(0x0800)

# Web-Cache Identity Element flags (LSB-numbered, see docs/protocol.md)
WCI_U = const(0x0001)          # unassigned / historical data (current Wireshark, Squid view parser)
WCI_U_V201 = const(0x8000)     # same bit as the v2-01 diagram literally says (ATS, old Wireshark)
WCI_TYPE_MASK = const(0x0006)  # assignment-data type field, bits 1-2
WCI_V = const(0x0008)          # rev1 version-request bit
DATA_HASH = const(0)
DATA_MASK = const(1)
DATA_NONE = const(2)
DATA_EXTENDED = const(3)

# Capabilities
CAP_FORWARDING_METHOD = const(1)
CAP_ASSIGNMENT_METHOD = const(2)
CAP_RETURN_METHOD = const(3)
CAP_TRANSMIT_T = const(4)
CAP_TIMER_SCALE = const(5)
FORWARD_GRE = const(1)
FORWARD_L2 = const(2)
ASSIGN_HASH = const(1)
ASSIGN_MASK = const(2)
RETURN_GRE = const(1)
RETURN_L2 = const(2)

# Assignment types (Alternate Assignment / Alternate Assignment Map)
ASSIGNMENT_HASH = const(0)
ASSIGNMENT_MASK = const(1)
ASSIGNMENT_ALT_MASK = const(2)

# Command extension
CMD_SHUTDOWN = const(1)
CMD_SHUTDOWN_RESPONSE = const(2)

# Hash buckets
BUCKET_UNASSIGNED = const(0xFF)
BUCKET_ALT = const(0x80)
BUCKET_INDEX_MASK = const(0x7F)
