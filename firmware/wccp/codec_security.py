"""WCCPv2 MD5 security (draft §5.6.1): the digest over the whole message with the 16-byte
password in place of the digest field."""
try:
    from hashlib import md5 as _md5
except ImportError:     # rp2 before MicroPython 1.27 builds hashlib without md5
    from wccp.md5 import md5 as _md5

from wccp.codec_base import WccpError, _g16, _g32
from wccp.const import SECURITY_INFO, SECURITY_MD5


def _pad_password(password):
    if isinstance(password, str):
        password = password.encode()
    if len(password) > 8:
        raise WccpError("password longer than 8 octets")
    return bytes(password) + bytes(8 - len(password))


def _find_digest(b, n):
    """Offset of the 16-byte MD5 digest in message b (first n bytes), or -1."""
    if n < 8:
        return -1
    end = 8 + _g16(b, 6)
    if end > n:
        return -1
    o = 8
    while o + 4 <= end:
        t = _g16(b, o)
        cl = _g16(b, o + 2)
        if o + 4 + cl > end:
            return -1
        if t == SECURITY_INFO:
            if cl == 20 and _g32(b, o + 4) == SECURITY_MD5:
                return o + 8
            return -1
        o += 4 + cl
    return -1


def sign_md5(buf, length, password):
    """Write the MD5 digest into an encoded message in place (no-op if not MD5)."""
    pw = _pad_password(password)
    d = _find_digest(buf, length)
    if d < 0:
        return False
    for i in range(d, d + 16):
        buf[i] = 0
    h = _md5(pw)
    h.update(memoryview(buf)[:length])
    buf[d:d + 16] = h.digest()
    return True


def verify_md5(data, password):
    """True when data (UDP payload as received) carries a valid MD5 digest for password.

    The digest covers password (zero-padded to 8) + the message (header + Length bytes)
    with the digest field zeroed. Messages without MD5 security give False.
    """
    try:
        pw = _pad_password(password)
        b = memoryview(data)
        d = _find_digest(b, len(b))
        if d < 0:
            return False
        end = 8 + _g16(b, 6)
        got = bytes(b[d:d + 16])
        tmp = bytearray(b[:end])
        for i in range(d, d + 16):
            tmp[i] = 0
        h = _md5(pw)
        h.update(tmp)
        want = h.digest()
    except WccpError:
        raise
    except Exception:
        return False
    diff = 0
    for i in range(16):
        diff |= got[i] ^ want[i]
    return diff == 0
