"""The cache-source index (SRCIDX, docs/regmap.md): what wccp.fpga.FpgaDataPlane writes before
COMMIT, checked against the documented layout and against the committed cache tables by the
register-level FPGA model (wccp.fwdmodel_regs.ModelRegisterFile.srcidx_mismatch).
CPython and MicroPython."""
from fwtest import raises
from test_router import ip, join, make

from wccp import regmap as RM
from wccp.dataplane import FWD_GRE, FWD_L2, RET_GRE, RET_L2
from wccp.fpga import FpgaDataPlane, FpgaError, method_word
from wccp.fwdmodel import ForwardingModel
from wccp.fwdmodel_regs import ModelRegisterFile
from wccp.regpack import srcidx_words
from wccp.transport import LoopbackTransport

SRCIDX_END = RM.SRCIDX_LIST + RM.SRCIDX_LIST_COUNT

# addresses whose folds (XOR of the four bytes) collide: A, B and G fold to 8, E and F to 11
A, B, C, D = 0x0A000002, 0x02000A00, 0xC0A80001, 0x0A000003
E, F, G = 0x0B000000, 0x0A000001, 0x08000000


class _Tap:
    """The driver's transport: records the writes (address, words) and can fail the writes
    into an address range `times` times."""

    def __init__(self, inner):
        self.inner = inner
        self.writes = []
        self.fail = None            # (first, end) addresses whose writes fail
        self.times = 0

    def write(self, addr, words):
        if self.fail is not None and self.fail[0] <= addr < self.fail[1] and self.times > 0:
            self.times -= 1
            raise OSError(5, "SPI write failed")
        self.writes.append((addr, list(words)))
        self.inner.write(addr, words)

    def read(self, addr, n):
        return self.inner.read(addr, n)

    def srcidx_writes(self):
        """The SRCIDX writes since the last call, as (address, number of words)."""
        w = [(a, len(ws)) for a, ws in self.writes if RM.SRCIDX_HEAD <= a < SRCIDX_END]
        self.writes = []
        return w


def _fpga():
    fm = ForwardingModel()
    rf = ModelRegisterFile(fm)
    tap = _Tap(LoopbackTransport(rf))
    return fm, rf, tap, FpgaDataPlane(tap)


def _fold(a):
    return (a ^ (a >> 8) ^ (a >> 16) ^ (a >> 24)) & 0xFF


def _c(address, fwd=FWD_GRE, ret=RET_GRE):
    return {"address": address, "forward": fwd, "ret": ret}


def _svc():
    return {"service_type": 0, "service_id": 0}


def _run(head, lst, f):
    start = head[f] & RM.SRCIDX_FIELD_MASK
    n = (head[f] >> RM.SRCIDX_COUNT_SHIFT) & RM.SRCIDX_FIELD_MASK
    assert start + n <= RM.SRCIDX_LIST_SIZE, (f, start, n)
    return lst[start:start + n]


def _check(fm, rf, dp):
    """The index in the FPGA's shadow is the one of the driver's mirrors (srcidx_words) and
    has the documented layout; the committed tables are the mirrors; the model found every
    committed index consistent."""
    slots = dp.tables()["slots"]
    g = rf.shadow.get
    head = [g(RM.SRCIDX_HEAD + f, 0) for f in range(RM.SRCIDX_HEAD_COUNT)]
    lst = [g(RM.SRCIDX_LIST + k, 0) for k in range(RM.SRCIDX_LIST_COUNT)]
    want_head, want_list = srcidx_words([[(c[0], method_word(c[1], c[2])) for c in sl["caches"]] for sl in slots])
    assert head == want_head
    assert lst[:len(want_list)] == want_list
    # the layout, from docs/regmap.md: every entry once in the run of its fold, the
    # L2-return entries once in the L2 run, nothing else
    n = 0
    l2 = []
    for s in range(RM.MAX_GROUPS):
        cs = slots[s]["caches"]
        assert [c for c in fm._live.slots[s].caches] == cs, s
        for i in range(len(cs)):
            e = s * RM.MAX_CACHES + i
            assert _run(head, lst, _fold(cs[i][0])).count(e) == 1, (s, i)
            n += 1
            if cs[i][2] == RET_L2:
                l2.append(e)
    assert sum(len(_run(head, lst, f)) for f in range(256)) == n
    assert sorted(_run(head, lst, RM.SRCIDX_L2)) == l2
    assert rf.srcidx_mismatch == 0


def test_index_follows_the_cache_tables_of_every_slot():
    assert _fold(A) == _fold(B) == _fold(G) and _fold(E) == _fold(F) and _fold(C) != _fold(A)
    fm, rf, tap, dp = _fpga()
    for s in (0, 3, 7):
        dp.set_group(s, _svc())
    dp.set_caches(0, [_c(A), _c(B, FWD_L2, RET_L2), _c(C, FWD_GRE, RET_L2)])
    dp.set_caches(3, [_c(C, FWD_L2, RET_GRE), _c(D), _c(E, FWD_L2, RET_L2), _c(F)])   # C in two slots
    dp.set_caches(7, [_c(G, FWD_L2, RET_L2)])
    for s in (0, 3, 7):
        dp.set_hash(s, bytes(256))
    dp.commit()
    _check(fm, rf, dp)
    w = tap.srcidx_writes()
    # the heads, and only the list words in use (8 entries, 4 of them L2-return)
    assert sorted(w) == [(RM.SRCIDX_HEAD, RM.SRCIDX_HEAD_COUNT), (RM.SRCIDX_LIST, 8 + 4)], w
    # a cache count shrinking
    dp.set_caches(3, [_c(C, FWD_L2, RET_GRE), _c(D)])
    dp.commit()
    _check(fm, rf, dp)
    assert tap.srcidx_writes()
    # a return method alone changing (out of the L2 run), then a forward method alone
    dp.set_caches(7, [_c(G, FWD_L2, RET_GRE)])
    dp.commit()
    _check(fm, rf, dp)
    assert tap.srcidx_writes()
    dp.set_caches(7, [_c(G, FWD_GRE, RET_GRE)])
    dp.commit()
    _check(fm, rf, dp)
    # a slot cleared: its entries leave the index
    dp.clear_group(0)
    dp.commit()
    _check(fm, rf, dp)
    assert tap.srcidx_writes()
    # every slot emptied: an empty index (no list word), still written
    dp.clear_group(3)
    dp.set_caches(7, [])
    dp.commit()
    _check(fm, rf, dp)
    assert tap.srcidx_writes() == [(RM.SRCIDX_HEAD, RM.SRCIDX_HEAD_COUNT)]


def test_index_under_random_cache_tables():
    """Full tables, shared addresses and colliding folds: a small address pool."""
    fm, rf, tap, dp = _fpga()
    x = 12345
    pool = [0x0A000000 | (k * 0x0101) for k in range(12)] + [A, B, G, E, F]
    for _ in range(30):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        s = x % RM.MAX_GROUPS
        if (x >> 8) % 7 == 0:
            dp.clear_group(s)
        else:
            n = (x >> 12) % (RM.MAX_CACHES + 1)
            caches = []
            for _ in range(n):
                x = (x * 1103515245 + 12345) & 0x7FFFFFFF
                caches.append(_c(pool[(x >> 4) % len(pool)], 1 + (x >> 9) % 2, 1 + (x >> 10) % 2))
            dp.set_group(s, _svc())
            dp.set_caches(s, caches)
        dp.commit()
        _check(fm, rf, dp)
    # every entry of every slot, all L2-return: the list full (256 + 256 words)
    for s in range(RM.MAX_GROUPS):
        dp.set_group(s, _svc())
        dp.set_caches(s, [_c(pool[(s + i) % len(pool)], FWD_L2, RET_L2) for i in range(RM.MAX_CACHES)])
    dp.commit()
    _check(fm, rf, dp)
    assert (RM.SRCIDX_LIST, RM.SRCIDX_LIST_SIZE) in tap.srcidx_writes()
    assert rf.commits == 31


def test_assignment_alone_writes_no_index():
    fm, rf, tap, dp = _fpga()
    dp.set_group(1, _svc())
    caches = [_c(A), _c(B, FWD_L2, RET_L2)]
    dp.set_caches(1, caches)
    dp.set_hash(1, bytes(256))
    dp.commit()
    assert tap.srcidx_writes()
    dp.set_caches(1, caches)                # the same tables again, a new hash assignment
    dp.set_hash(1, bytes([0, 1] * 128))
    dp.commit()
    assert tap.srcidx_writes() == [] and rf.commits == 2
    assert bytes(fm._live.slots[1].hash) == bytes([0, 1] * 128)
    dp.clear_assignment(1)
    dp.commit()
    assert tap.srcidx_writes() == [] and rf.commits == 3
    _check(fm, rf, dp)


def test_failed_index_write_refuses_commits_until_rewritten():
    fm, rf, tap, dp = _fpga()
    dp.set_group(2, _svc())
    dp.set_caches(2, [_c(A)])
    dp.commit()
    for first, end in ((RM.SRCIDX_HEAD, RM.SRCIDX_LIST), (RM.SRCIDX_LIST, SRCIDX_END)):
        n = rf.commits
        dp.set_caches(2, [_c(C, FWD_L2, RET_L2), _c(A)])
        tap.fail, tap.times = (first, end), 2
        raises(FpgaError, dp.commit)
        assert rf.commits == n and [c[0] for c in fm._live.slots[2].caches] == [A]     # nothing published
        # a commit of an assignment alone is refused as long as the index is not rewritten
        dp.set_hash(2, bytes(256))
        raises(FpgaError, dp.commit)
        assert rf.commits == n and fm._live.slots[2].hash is None
        dp.commit()                         # the index written whole: published
        assert rf.commits == n + 1 and [c[0] for c in fm._live.slots[2].caches] == [C, A]
        _check(fm, rf, dp)
        dp.set_caches(2, [_c(A)])
        dp.clear_assignment(2)
        dp.commit()
        _check(fm, rf, dp)


def test_router_retries_a_failed_index_write():
    """A cache joining changes the cache table; its index write fails: the router's commit is
    refused (the FPGA keeps the previous tables) and its next tick rewrites and commits."""
    fm = ForwardingModel()
    rf = ModelRegisterFile(fm)
    tap = _Tap(LoopbackTransport(rf))
    dp = FpgaDataPlane(tap)
    r, _ = make(dp=dp)
    join(r, "127.0.0.2")
    assert [c[0] for c in fm._live.slots[0].caches] == [ip("127.0.0.2")]
    _check(fm, rf, dp)
    errors = r.counters["dataplane_errors"]
    tap.fail, tap.times = (RM.SRCIDX_HEAD, SRCIDX_END), 1
    join(r, "127.0.0.3")
    assert tap.times == 0 and r.counters["dataplane_errors"] == errors + 1 and "index" in r.last_error
    assert [c[0] for c in fm._live.slots[0].caches] == [ip("127.0.0.2")]
    r.tick(1)
    assert [c[0] for c in fm._live.slots[0].caches] == [ip("127.0.0.2"), ip("127.0.0.3")]
    assert r.counters["dataplane_errors"] == errors + 1
    _check(fm, rf, dp)


def test_index_written_with_the_first_commit():
    fm, rf, tap, dp = _fpga()
    dp.set_group(0, _svc())
    dp.set_caches(0, [_c(A, FWD_L2, RET_L2), _c(B)])
    dp.commit()
    assert [c[0] for c in fm._live.slots[0].caches] == [A, B]
    assert tap.srcidx_writes() and rf.srcidx_mismatch == 0


def test_model_counts_an_index_that_does_not_match():
    fm, rf, tap, dp = _fpga()
    dp.set_group(0, _svc())
    dp.set_caches(0, [_c(A), _c(B, FWD_L2, RET_L2), _c(C)])
    dp.commit()
    assert rf.srcidx_mismatch == 0
    assert rf.read_word(RM.SRCIDX_HEAD + _fold(A)) == 0 and rf.read_word(RM.SRCIDX_LIST) == 0   # write-only
    # list words no head points to are never read; bits outside the fields are not kept
    rf.write_word(RM.SRCIDX_LIST + RM.SRCIDX_LIST_SIZE - 1, 0x55)
    f = _fold(A)
    rf.write_word(RM.SRCIDX_HEAD + f, rf.shadow[RM.SRCIDX_HEAD + f] | 0xFE00)
    dp.commit()
    assert rf.srcidx_mismatch == 0
    start = rf.shadow[RM.SRCIDX_HEAD + f] & RM.SRCIDX_FIELD_MASK
    good = rf.shadow[RM.SRCIDX_LIST + start]
    rf.write_word(RM.SRCIDX_LIST + start, good ^ 1)         # a listed entry
    dp.commit()
    assert rf.srcidx_mismatch == 1
    rf.write_word(RM.SRCIDX_LIST + start, good)
    h = rf.shadow[RM.SRCIDX_HEAD + RM.SRCIDX_L2]
    rf.write_word(RM.SRCIDX_HEAD + RM.SRCIDX_L2, h - (1 << RM.SRCIDX_COUNT_SHIFT))   # the L2 run short
    dp.commit()
    assert rf.srcidx_mismatch == 2
    rf.write_word(RM.SRCIDX_HEAD + RM.SRCIDX_L2, h)
    dp.commit()
    assert rf.srcidx_mismatch == 2
