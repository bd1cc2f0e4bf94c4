"""WCCPv2 wire codec: decode/encode the four v2 messages and all their components.

Runs on CPython and MicroPython. This module is the API; the work is in codec_decode,
codec_encode, codec_security (MD5) and codec_base (what they share). Data model and every bit-layout decision:
docs/protocol.md. Summary of the API (the contract other modules use):

    decode(data, out=None) -> dict      raises WccpError(reason) on anything malformed
    encode(msg, buf=None, password=None) -> int (bytes written into buf) | bytes
    verify_md5(data, password) -> bool
    sign_md5(buf, length, password)     (in place, used by encode)
    ip2int("1.2.3.4") / int2ip(n)

Decoding does not copy: byte fields (digest, bucket bitmap, bucket table, unknown
data) are memoryview slices of ``data``; use plain(msg) to detach them. Passing the
previous result as ``out`` reuses its dicts/lists (no allocation in steady state
when consecutive messages have the same shape).
"""
from wccp.codec_base import (  # noqa: F401 - the API
    COMPONENT_NAMES, WccpError, bitmap_has, bucket_bitmap, cisco_mask_view_element, identity_unassigned,
    int2ip, ip2int, plain,
)
from wccp.codec_decode import decode  # noqa: F401
from wccp.codec_encode import encode  # noqa: F401
from wccp.codec_security import sign_md5, verify_md5  # noqa: F401
from wccp.const import *  # noqa: F401,F403 - re-export the protocol numbers
