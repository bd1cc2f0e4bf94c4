"""Register contents for the FPGA register map (docs/regmap.md): addresses, MAC words, byte
tables packed into words, compiled mask/value sets. The map's constants are generated into
wccp.regmap (from fpga/regmap.json); these helpers are written here, once, for the firmware
driver, the register-level model, the testbenches and the tools. MicroPython and CPython."""
try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

from wccp.regmap import (
    BITPOS_VALID, MASK_BITS, MASK_NO_MATCH, MASK_TABLE_SIZE, MAX_CACHES, METHOD_FIELD_MASK, METHOD_RET_SHIFT, RET_L2,
    REGMAP_VERSION, SRCIDX_COUNT_SHIFT, SRCIDX_HEAD_COUNT, SRCIDX_L2,
)

_KEY_BITS = const(96)           # the mask key: src_ip<<64 | dst_ip<<32 | src_port<<16 | dst_port
_CACHE_INDEX = const(0x7F)      # a mask table entry's cache index bits
_PAD = const(0xFF)              # pack_bytes fill byte


def reg_addr(block_base, block_stride, index, offset, reg_stride=0, reg_index=0):
    """Word address of register `offset` (element reg_index) in instance `index` of a block."""
    return block_base + block_stride * index + offset + reg_stride * reg_index


def mac_words(mac):
    """(HI, LO) register words for a 6-byte MAC."""
    return (mac[0] << 8) | mac[1], (mac[2] << 24) | (mac[3] << 16) | (mac[4] << 8) | mac[5]


def pack_bytes(data):
    """Pack bytes 4 per 32-bit word, big-endian (first byte in [31:24]); pads with 0xFF."""
    words = []
    for i in range(0, len(data), 4):
        w = 0
        for j in range(4):
            b = data[i + j] if i + j < len(data) else _PAD
            w = (w << 8) | b
        words.append(w)
    return words


def mask_key(src_addr, dst_addr, src_port, dst_port):
    """The 96-bit mask key: src_ip<<64 | dst_ip<<32 | src_port<<16 | dst_port."""
    return (src_addr << 64) | (dst_addr << 32) | (src_port << 16) | dst_port


def compile_mask_set(masks, values):
    """Compile one mask/value set for the hardware.

    masks: (src_addr, dst_addr, src_port, dst_port); values: [(src, dst, sport, dport, cache_index)].
    Returns (bitpos0_word, bitpos1_word, table) where table is MASK_TABLE_SIZE bytes
    (cache index or MASK_NO_MATCH). Raises ValueError when the mask has more than MASK_BITS bits.
    The first value (in order) wins; values with bits outside the mask never match.
    """
    m = mask_key(masks[0], masks[1], masks[2], masks[3])
    pos = []
    for i in range(_KEY_BITS):
        if (m >> i) & 1:
            pos.append(i)
    if len(pos) > MASK_BITS:
        raise ValueError("mask has more than %d bits" % MASK_BITS)
    table = bytearray(bytes((MASK_NO_MATCH,)) * MASK_TABLE_SIZE)
    for v in values:
        k = mask_key(v[0], v[1], v[2], v[3])
        if k & ~m:
            continue
        idx = 0
        for j in range(len(pos)):
            idx |= ((k >> pos[j]) & 1) << j
        if table[idx] == MASK_NO_MATCH:
            table[idx] = v[4] & _CACHE_INDEX
    pb = [0] * 7
    for j in range(len(pos)):
        pb[j] = pos[j] | BITPOS_VALID
    w0 = pb[0] | (pb[1] << 8) | (pb[2] << 16) | (pb[3] << 24)
    w1 = pb[4] | (pb[5] << 8) | (pb[6] << 16)
    return w0, w1, table


def addr_fold(address):
    """The cache-source index's key of an IPv4 address: the XOR of its four bytes."""
    return (address ^ (address >> 8) ^ (address >> 16) ^ (address >> 24)) & 0xFF


def srcidx_words(tables):
    """The cache-source index (SRCIDX block) of the cache tables.

    tables: per slot, its cache entries in index order as (address, method word) pairs (the
    entries the slot's NUM_CACHES counts). Returns (head, entries): SRCIDX_HEAD_COUNT head
    words and the SRCIDX_LIST words they point into. The entries of fold f (ascending, as
    slot*32 + index) form one run, the runs of folds 0..255 follow one another from word 0,
    and the run of the L2-return entries (SRCIDX_L2) comes after them.
    """
    count = [0] * 256
    nent = 0
    for slot in tables:
        for address, _method in slot:
            count[addr_fold(address)] += 1
            nent += 1
    start = [0] * 256
    pos = 0
    for f in range(256):
        start[f] = pos
        pos += count[f]
    entries = [0] * nent
    fill = list(start)
    l2 = []
    for s in range(len(tables)):
        for i in range(len(tables[s])):
            address, method = tables[s][i]
            e = s * MAX_CACHES + i
            f = addr_fold(address)
            entries[fill[f]] = e
            fill[f] += 1
            if (method >> METHOD_RET_SHIFT) & METHOD_FIELD_MASK == RET_L2:
                l2.append(e)
    head = [0] * SRCIDX_HEAD_COUNT
    for f in range(256):
        head[f] = start[f] | (count[f] << SRCIDX_COUNT_SHIFT)
    head[SRCIDX_L2] = nent | (len(l2) << SRCIDX_COUNT_SHIFT)
    return head, entries + l2


def version_problem(version):
    """None when a register-map VERSION (major<<16 | minor) is one this firmware drives: its
    major (any minor: a later minor only adds what may be left unwritten), else the reason."""
    if (version >> 16) != (REGMAP_VERSION >> 16):
        return ("register map %d.%d in the FPGA, this firmware drives %d.x: load the bitstream built "
                "with this firmware" % (version >> 16, version & 0xFFFF, REGMAP_VERSION >> 16))
    return None
