"""WCCPv2 router firmware (MicroPython; also importable on CPython)."""
VERSION = "0.1.0"
