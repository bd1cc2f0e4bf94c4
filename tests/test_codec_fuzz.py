"""Large seeded mutation fuzz of the WCCP codec under CPython (>= 200,000 cases).

Split into independent seeded chunks so pytest-xdist can spread them over cores.
The mutator and invariants are those of tests/fw/test_codec.py (only WccpError may
escape decode; whatever decodes re-encodes and decodes to the same message).
"""
import pathlib

import pytest

import test_codec as fw

ROOT = pathlib.Path(__file__).resolve().parent.parent

CHUNKS = 8
PER_CHUNK = 25_000   # 8 x 25,000 = 200,000 cases


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_fuzz_chunk(chunk):
    ok, rejected = fw.fuzz(1000 + chunk, PER_CHUNK)
    assert ok + rejected == PER_CHUNK
    assert ok > 100 and rejected > 1000
