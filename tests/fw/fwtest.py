"""Tiny assertion helpers for firmware tests.

Firmware tests in tests/fw/ run twice: under CPython (collected by pytest as
usual) and under the real MicroPython unix port (tests/mpy_runner.py, driven by
tests/test_micropython.py, one pytest case per test function). They may only use
what both interpreters have: plain ``assert`` and the helpers here — no pytest.
"""


def raises(exc, fn, *args, **kwargs):
    """Call fn and return the exception of type exc it raised; fail otherwise."""
    try:
        fn(*args, **kwargs)
    except exc as e:  # noqa: B902
        return e
    raise AssertionError("%s not raised by %r" % (exc.__name__, fn))


def is_micropython():
    import sys
    return sys.implementation.name == "micropython"


def scratch_name(prefix):
    """A file or directory name no other run uses at the same time: these modules run under
    CPython and MicroPython, possibly at once on two pytest-xdist workers, both in the repo
    root. MicroPython's os has no getpid; os.urandom exists on both."""
    import os
    return "%s_%s" % (prefix, "".join("%02x" % b for b in os.urandom(6)))
