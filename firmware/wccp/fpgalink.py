"""The FPGA as the boards drive it: identity check first, fail-open until it passes.

``FpgaLink(transport)`` is the data plane ``main.py`` gives the router on a board. It
implements ``wccp.dataplane.DataPlane`` and:

* at start and then every ``retry_ms`` while it has not succeeded, reads the FPGA's
  identity over the register link — ID, VERSION, CAPS and BUILD_ID (docs/regmap.md) — and
  accepts it only when ID is the WCCP datapath's, the register-map major version is the
  firmware's (``wccp.regpack.version_problem``: any minor of it), and BUILD_ID is the one the firmware
  slot was flashed with (when ``wccp flash --bitstream`` recorded one);
* until then writes nothing to the FPGA: an FPGA that was just configured (or reset)
  has REDIRECT_EN clear, so it forwards everything untouched (fail-open). The router's
  tables are kept (the latest value of every table call), validated as the driver would;
* once identified, creates the register driver (``wccp.fpga.FpgaDataPlane``) and replays
  the tables into every slot — a slot the router has no tables for is cleared (disabled, no
  caches), as the FPGA may have kept its registers across the outage — commits and arms the
  FPGA watchdog if the router had armed it: the committed tables are then the router's;
* while up, checks every ``check_ms`` (from ``heartbeat``) that ID still reads right and
  that the FPGA's commit counter has not gone backwards (an FPGA reconfigured or reset
  behind the firmware's back has lost its tables); on a failure, or an SPI error in any
  call, it goes back to fail-open and retries;
* ``info()`` says which state it is in and why (``/status`` shows it under ``fpga``).

Runs on MicroPython and CPython.
"""
import time

from wccp import regmap as R
from wccp.regpack import version_problem
from wccp.dataplane import (
    DEFAULT_WATCHDOG_MS, MAX_GROUPS, DataPlane, check_buckets, check_caches, check_mac, check_mask, check_policy,
    check_send, check_slot, effective_service,
)

_NOT_SET = object()


def _ms():
    if hasattr(time, "ticks_ms"):
        return time.ticks_ms()
    return int(time.monotonic() * 1000)


def _since(t0):
    if hasattr(time, "ticks_diff"):
        return time.ticks_diff(_ms(), t0)
    return _ms() - t0


def check_identity(ident, version, build_id, expect_build=None):
    """None when (ID, VERSION, BUILD_ID) read from an FPGA are the ones this firmware drives,
    else the reason in words."""
    if ident in (0, 0xFFFFFFFF):
        return ("no FPGA answers on the SPI link (ID reads 0x%08x: nothing drives MISO; check power, "
                "configuration (DONE) and the SPI wiring)" % ident)
    if ident != R.ID_VALUE:
        return "not the WCCP datapath: ID 0x%08x, expected 0x%08x" % (ident, R.ID_VALUE)
    why = version_problem(version)
    if why:
        return why
    if expect_build is not None and build_id != expect_build:
        return ("FPGA runs bitstream build 0x%08x, the firmware slot was flashed with build 0x%08x"
                % (build_id, expect_build))
    return None


class FpgaLink(DataPlane):
    def __init__(self, transport, expect_build=None, retry_ms=5000, check_ms=10000, log=print, driver=None):
        self.t = transport
        self.expect_build = expect_build
        self.retry_ms = retry_ms
        self.check_ms = check_ms
        self.log = log
        self._driver = driver           # FpgaDataPlane class (tests may pass another)
        self.dp = None                  # the register driver once identified
        self.state = "down"
        self.reason = "not checked yet"
        self.identity = None
        self.attempts = 0
        self.ups = 0
        self.commits = 0                # commits since the driver came up (FPGA's COMMIT must not be below)
        self._last_try = None
        self._last_check = _ms()
        # the tables, as the router last set them
        self._cfg = None
        self._nh = {}
        self._group = [None] * MAX_GROUPS        # service dict, or None (slot cleared)
        self._caches = [None] * MAX_GROUPS
        self._assign = [None] * MAX_GROUPS       # ("hash", bytes) | ("mask", sets) | None
        self._policy = [None] * MAX_GROUPS       # (closed, redirect_list) | None
        self._learnt = {}                        # cache address -> (mac, port), from discovery
        self._armed = _NOT_SET
        self.connect()

    # ---------------------------------------------------------------- link state
    def info(self):
        d = {"state": self.state, "reason": self.reason, "attempts": self.attempts, "ups": self.ups,
             "expected_build_id": None if self.expect_build is None else "0x%08x" % self.expect_build}
        if self.identity is not None:
            ident, ver, caps, build = self.identity
            d["id"] = "0x%08x" % ident
            d["version"] = "%d.%d" % (ver >> 16, ver & 0xFFFF)
            d["caps"] = "0x%08x" % caps
            d["build_id"] = "0x%08x" % build
        return d

    def _down(self, reason):
        if self.state != "down" or reason != self.reason:
            self.log("fpga: fail-open: %s" % reason)
        self.state = "down"
        self.reason = reason
        self.dp = None
        self._last_try = _ms()

    def connect(self):
        """Read the identity; on success program the FPGA from the kept tables. True when up."""
        self.attempts += 1
        self._last_try = _ms()
        try:
            ident, ver, caps = self.t.read(R.ID, 3)
            build = self.t.read(R.BUILD_ID, 1)[0]
        except Exception as e:  # noqa: BLE001 - no link: stay fail-open and retry
            self._down("no answer on the SPI link: %s" % (e,))
            return False
        self.identity = (ident, ver, caps, build)
        why = check_identity(ident, ver, build, self.expect_build)
        if why is not None:
            self._down(why)
            return False
        try:
            if self._driver is None:
                from wccp.fpga import FpgaDataPlane
                self._driver = FpgaDataPlane
            dp = self._driver(self.t)
            self._replay(dp)
        except Exception as e:  # noqa: BLE001
            self._down("programming the FPGA failed: %s: %s" % (type(e).__name__, e))
            return False
        self.dp = dp
        self.state = "up"
        self.reason = None
        self.ups += 1
        self._last_check = _ms()
        self.log("fpga: WCCP datapath %d.%d, build 0x%08x: tables written%s" % (
            ver >> 16, ver & 0xFFFF, build, ", redirection armed" if self._armed is not _NOT_SET else ""))
        return True

    def _replay(self, dp):
        self.commits = 0
        if self._cfg is not None:
            dp.configure(*self._cfg)
        for port in sorted(self._nh):
            dp.set_next_hop(port, self._nh[port])
        for s in range(MAX_GROUPS):
            if self._group[s] is None:
                # an FPGA that kept its registers may still hold tables the router cleared
                # meanwhile: the next COMMIT would make them live again
                dp.clear_group(s)
                continue
            dp.set_group(s, self._group[s])
            if self._caches[s] is not None:
                dp.set_caches(s, self._caches[s])
            if self._policy[s] is not None:
                dp.set_policy(s, *self._policy[s])
            a = self._assign[s]
            if a is None:
                dp.clear_assignment(s)
            elif a[0] == "hash":
                dp.set_hash(s, a[1])
            else:
                dp.set_mask(s, a[1])
        dp.commit()
        self.commits += 1
        for addr in sorted(self._learnt):           # the caches' locations found by discovery
            dp.learn(addr, *self._learnt[addr])
        if self._armed is not _NOT_SET:
            dp.arm(self._armed)
            dp.heartbeat()

    def _call(self, name, *args):
        if self.dp is None:
            return None
        try:
            return getattr(self.dp, name)(*args)
        except OSError as e:
            self._down("SPI link error in %s: %s" % (name, e))
            raise

    # ---------------------------------------------------------------- DataPlane
    def configure(self, router_id, mac, mtu=1500):
        check_mac(mac)
        self._cfg = (router_id, mac, mtu)
        self._call("configure", router_id, mac, mtu)

    def set_group(self, slot, service):
        check_slot(slot)
        effective_service(service)
        self._group[slot] = service
        self._call("set_group", slot, service)

    def set_caches(self, slot, caches):
        check_slot(slot)
        caches = list(caches)
        check_caches(caches)
        self._caches[slot] = caches
        live = set(c["address"] for cs in self._caches if cs for c in cs)
        for a in [a for a in self._learnt if a not in live]:
            del self._learnt[a]
        self._call("set_caches", slot, caches)

    def set_hash(self, slot, buckets):
        check_slot(slot)
        b = check_buckets(buckets)
        self._assign[slot] = ("hash", b)
        self._call("set_hash", slot, b)

    def set_mask(self, slot, sets):
        check_slot(slot)
        check_mask(sets)
        self._assign[slot] = ("mask", sets)
        self._call("set_mask", slot, sets)

    def clear_assignment(self, slot):
        check_slot(slot)
        self._assign[slot] = None
        self._call("clear_assignment", slot)

    def clear_group(self, slot):
        check_slot(slot)
        self._group[slot] = None
        self._caches[slot] = None
        self._assign[slot] = None
        self._policy[slot] = None
        self._call("clear_group", slot)

    def set_policy(self, slot, closed=False, redirect_list=()):
        check_slot(slot)
        closed, acl = check_policy(closed, redirect_list)
        self._policy[slot] = (closed, acl)
        self._call("set_policy", slot, closed, acl)

    def set_next_hop(self, port, mac):
        check_mac(mac)
        self._nh[port] = mac
        self._call("set_next_hop", port, mac)

    def set_cache_location(self, slot, index, mac, port):
        self._call("set_cache_location", slot, index, mac, port)

    def cache_location(self, slot, index):
        return self._call("cache_location", slot, index)

    # active discovery (wccp.discovery): while the FPGA is down nothing is sent or captured
    def send_frame(self, ports, frame):
        check_send(ports, frame)
        self._call("send_frame", ports, frame)

    def arp_replies(self, since):
        if self.dp is None:
            return since, []
        return self._call("arp_replies", since)

    def learn(self, address, mac, port):
        self._learnt[address] = (mac, port)
        self._call("learn", address, mac, port)

    def commit(self):
        if self.dp is not None:
            self._call("commit")
            self.commits += 1

    def arm(self, timeout_ms=None):
        self._armed = DEFAULT_WATCHDOG_MS if timeout_ms is None and self._armed is _NOT_SET else (
            timeout_ms if timeout_ms is not None else self._armed)
        self._call("arm", self._armed)

    def disarm(self):
        self._armed = _NOT_SET
        self._call("disarm")

    def heartbeat(self, now=None):
        if self.dp is None:
            if self._last_try is None or _since(self._last_try) >= self.retry_ms:
                self.connect()
            return
        self._call("heartbeat")
        if _since(self._last_check) >= self.check_ms:
            self.verify()

    def verify(self):
        """Still the FPGA we programmed? (ID, and COMMIT not below the commits made)"""
        self._last_check = _ms()
        try:
            ident = self.t.read(R.ID, 1)[0]
            done = self.t.read(R.COMMIT, 1)[0]
        except Exception as e:  # noqa: BLE001
            self._down("no answer on the SPI link: %s" % (e,))
            return False
        if ident != R.ID_VALUE:
            self._down(check_identity(ident, R.REGMAP_VERSION, 0) or "ID changed")
            return False
        if done < self.commits:
            self._down("the FPGA was reset or reconfigured (%d commits, %d made): reprogramming" % (done, self.commits))
            self.connect()
            return self.dp is not None
        return True

    def redirect_enabled(self, now=None):
        if self.dp is None:
            return False
        return self._call("redirect_enabled")

    def counters(self):
        """The driver's counters, the per-slot tables (cache_frames, cache_bytes, bucket_hits) only
        for the slots in use, keyed by slot: eight slots' 256 bucket counters do not fit the JSON
        a small board's heap can build for /status."""
        if self.dp is None:
            return {"fpga": self.state, "reason": self.reason}
        c = self._call("counters")
        used = [s for s in range(MAX_GROUPS) if self._group[s] is not None]
        for k in ("cache_frames", "cache_bytes", "bucket_hits", "slot_frames", "slot_bytes"):
            v = c.get(k)
            if isinstance(v, list) and len(v) == MAX_GROUPS:
                c[k] = {str(s): v[s] for s in used}
        return c

    def clear_counters(self):
        self._call("clear_counters")

    def status(self):
        if self.dp is None:
            return {"active": False, "fail_open": True, "reason": self.reason}
        return self._call("status")
