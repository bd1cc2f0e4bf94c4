"""wccp.fpgalink: identity before arming, fail-open while the FPGA is absent or wrong,
retry, replay of the tables, recovery from an FPGA reset. The FPGA is the register-level
model (wccp.fwdmodel_regs.ModelRegisterFile) behind the real SPI framing."""
from wccp import regmap as R
from wccp.fpga import FpgaDataPlane, FpgaError
from wccp.fpgalink import FpgaLink, check_identity
from wccp.fwdmodel_regs import ModelRegisterFile
from wccp.transport import LoopbackTransport, TransportError


class Wire:
    """The SPI bus: an FPGA that can be unplugged, replaced or reset (a new register file)."""

    def __init__(self):
        self.fpga = None
        self.build = 0
        self.version = R.REGMAP_VERSION
        self.ident = R.ID_VALUE

    def transaction(self, mosi):
        if self.fpga is None:
            return bytearray(b"\xff" * len(mosi))      # nobody drives MISO: the pull-up
        miso = self.fpga.transaction(mosi)
        if mosi[0] == R.SPI_CMD_READ:
            a = (mosi[1] << 16) | (mosi[2] << 8) | mosi[3]
            n = (len(mosi) - 5) // 4
            for i in range(n):
                v = {R.ID: self.ident, R.VERSION: self.version, R.BUILD_ID: self.build}.get(a + i)
                if v is not None:
                    miso[5 + 4 * i:9 + 4 * i] = v.to_bytes(4, "big")
        return miso


class Broken:
    def read(self, addr, n):
        raise TransportError("SPI bus error")

    def write(self, addr, words):
        raise TransportError("SPI bus error")


def _break(link):
    """The SPI bus fails under the link: the next heartbeat takes it down."""
    link.t = Broken()
    try:
        link.heartbeat()
    except OSError:
        pass
    assert link.state == "down"


def _program(link):
    link.configure(0x0A000001, b"\x02\x00\x00\x00\x00\x01", 1500)
    link.set_group(0, {"service_type": 0, "service_id": 0})
    link.set_caches(0, [{"address": 0x0A000002}])
    link.set_hash(0, bytes(256))
    link.commit()
    link.arm(3000)
    link.heartbeat()


def test_identity_rules():
    assert check_identity(R.ID_VALUE, R.REGMAP_VERSION, 7) is None
    assert check_identity(R.ID_VALUE, R.REGMAP_VERSION, 7, 7) is None
    assert "no FPGA answers" in check_identity(0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF)
    assert "not the WCCP datapath" in check_identity(0x12345678, R.REGMAP_VERSION, 0)
    assert "register map 1.0" in check_identity(R.ID_VALUE, 0x00010000, 0)
    assert "register map 1.5" in check_identity(R.ID_VALUE, 0x00010005, 0)    # ran without the index
    assert "register map 3.0" in check_identity(R.ID_VALUE, 0x00030000, 0)
    assert check_identity(R.ID_VALUE, R.REGMAP_VERSION + 1, 0) is None     # a later minor: only additions
    assert "build 0x00000007" in check_identity(R.ID_VALUE, R.REGMAP_VERSION, 7, 8)


def test_absent_fpga_fail_open_then_comes_up_with_the_tables():
    w = Wire()
    log = []
    link = FpgaLink(LoopbackTransport(w), retry_ms=0, log=log.append)
    assert link.state == "down" and "no FPGA answers" in link.reason
    _program(link)                      # the router goes on; nothing reaches the (absent) FPGA
    assert link.counters()["fpga"] == "down"
    assert not link.redirect_enabled()
    w.fpga = ModelRegisterFile()
    link.heartbeat()                    # retry: identified, tables replayed, committed, armed
    assert link.state == "up", link.reason
    m = w.fpga.model
    assert m.redirect_enabled()
    assert w.fpga.commits == 1
    t = link.dp.tables()
    assert t["router_id"] == 0x0A000001 and t["slots"][0]["caches"] == [(0x0A000002, 1, 1)]
    assert t["slots"][0]["hash"] == bytes(256) and t["slots"][0]["enabled"]
    assert any("fail-open" in x for x in log) and any("tables written" in x for x in log)


def test_wrong_identity_is_never_written_or_armed():
    w = Wire()
    w.fpga = ModelRegisterFile()
    w.build = 0x1234
    link = FpgaLink(LoopbackTransport(w), expect_build=0x5678, retry_ms=0, log=lambda m: None)
    _program(link)
    assert link.state == "down" and "build 0x00001234" in link.reason
    assert link.info()["build_id"] == "0x00001234"
    assert w.fpga.commits == 0 and not w.fpga.model.redirect_enabled()
    w.version = 0x00010000
    w.build = 0x5678
    link.heartbeat()
    assert link.state == "down" and "register map 1.0" in link.reason
    w.version = R.REGMAP_VERSION
    link.heartbeat()
    assert link.state == "up" and w.fpga.model.redirect_enabled()


def test_another_major_is_refused_never_written():
    """A bitstream of register map 1.x decides cache frames without the cache-source index
    this firmware writes (2.0 made it required): it is refused, left fail-open, and so is the
    driver alone; a later minor of 2 is driven."""
    w = Wire()
    w.fpga = ModelRegisterFile()
    w.version = 0x00010005
    link = FpgaLink(LoopbackTransport(w), retry_ms=0, check_ms=0, log=lambda m: None)
    _program(link)
    assert link.state == "down" and "register map 1.5" in link.reason and "drives 2.x" in link.reason
    assert w.fpga.commits == 0 and not w.fpga.model.redirect_enabled()
    try:
        FpgaDataPlane(LoopbackTransport(w))
        raise AssertionError("the driver accepted register map 1.5")
    except FpgaError as e:
        assert "register map 1.5" in str(e), e
    w.version = R.REGMAP_VERSION + 1
    link.heartbeat()
    assert link.state == "up" and link.info()["version"] == "2.1" and w.fpga.model.redirect_enabled()


def test_spi_errors_fail_open_and_fpga_reset_is_reprogrammed():
    w = Wire()
    w.fpga = ModelRegisterFile()
    link = FpgaLink(LoopbackTransport(w), retry_ms=0, check_ms=0, log=lambda m: None)
    assert link.state == "up"
    _program(link)
    assert w.fpga.commits == 2      # replay at connect + the router's commit
    w.fpga = ModelRegisterFile()    # reconfigured behind our back: tables gone, COMMIT back to 0
    link.heartbeat()
    assert link.state == "up" and w.fpga.commits == 1 and w.fpga.model.redirect_enabled()
    t = link.t
    _break(link)
    link.t = t
    link.heartbeat()
    assert link.state == "up"


def test_bad_tables_rejected_while_down():
    link = FpgaLink(LoopbackTransport(Wire()), log=lambda m: None)
    for fn, args in ((link.set_hash, (0, bytes(10))), (link.set_caches, (0, [{"address": -1}])),
                     (link.set_group, (9, {}))):
        try:
            fn(*args)
        except ValueError:
            continue
        raise AssertionError("accepted %r" % (args,))


def test_discovery_and_policy_reach_the_fpga_and_survive_a_reprogramming():
    """The boards' data plane passes active discovery (packet out, ARP capture, learn) and the
    group policies through to the FPGA, and replays the policies and the caches' learnt locations
    when it reprograms a reset FPGA."""
    w = Wire()
    w.fpga = ModelRegisterFile()
    link = FpgaLink(LoopbackTransport(w), retry_ms=0, check_ms=0, log=lambda m: None)
    _program(link)
    acl = [(False, 0xC0A80100, 0xFFFFFF00, 0, 0), (True, 0, 0, 0x08080000, 0xFFFF0000)]
    link.set_policy(0, True, acl)
    link.commit()
    assert w.fpga.model._live.slots[0].closed and w.fpga.model._live.slots[0].acl == acl
    frame = b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x06" + bytes(28)
    link.send_frame(3, frame)
    assert w.fpga.model.pktout_sent == 2                    # out of both ports
    n, replies = link.arp_replies(0)
    assert (n, replies) == (0, [])
    mac = b"\x02\x00\x00\x00\x00\x02"
    link.learn(0x0A000002, mac, 1)
    assert w.fpga.model.cache_location(0, 0) == (mac, 1)
    w.fpga = ModelRegisterFile()    # reconfigured behind our back: tables and locations gone
    link.heartbeat()
    assert link.state == "up" and w.fpga.commits == 1
    assert w.fpga.model.cache_location(0, 0) == (mac, 1)   # the learnt location, written again
    assert w.fpga.model._live.slots[0].closed and w.fpga.model._live.slots[0].acl == acl
    # while the FPGA is away nothing is sent and no capture is consumed
    _break(link)
    assert link.arp_replies(5) == (5, [])
    link.send_frame(3, frame)


def test_cache_locations_forgotten_with_their_caches():
    w = Wire()
    w.fpga = ModelRegisterFile()
    link = FpgaLink(LoopbackTransport(w), log=lambda m: None)
    _program(link)
    link.learn(0x0A000002, b"\x02\x00\x00\x00\x00\x02", 0)
    assert 0x0A000002 in link._learnt
    link.set_caches(0, [{"address": 0x0A000003}])
    assert link._learnt == {}


def _outage_clears_a_slot(reset):
    """Two groups programmed; the SPI link fails; while it is down the router clears slot 1
    (its cache left) and shrinks slot 0's cache table; the link comes back to an FPGA that
    kept its registers (reset False) or was reset (reset True)."""
    from test_fwdmodel import CACHE_MAC, eth, http, svc
    a, b, c = 0x0A000002, 0x0A000003, 0x0A000004
    w = Wire()
    w.fpga = ModelRegisterFile()
    link = FpgaLink(LoopbackTransport(w), retry_ms=0, check_ms=0, log=lambda m: None)
    link.configure(0x0A000001, b"\x02\x00\x00\x00\x00\x01", 1500)
    link.set_group(0, svc(sid=90, ports=(8080,)))
    link.set_caches(0, [{"address": a}, {"address": c}])
    link.set_hash(0, bytes(256))
    link.set_group(1, svc(sid=91, ports=(80,)))
    link.set_caches(1, [{"address": b}])
    link.set_hash(1, bytes(256))
    link.commit()
    link.arm(3000)
    link.heartbeat()
    link.learn(b, CACHE_MAC, 1)
    web = eth(http())
    fm = w.fpga.model
    d = fm.decide(0, web)
    assert (d.action, d.slot) == ("redirect_gre", 1), d
    t = link.t
    _break(link)
    link.clear_group(1)
    link.set_caches(0, [{"address": a}])
    link.commit()
    if reset:
        w.fpga = ModelRegisterFile()
        fm = w.fpga.model
    link.t = t
    link.heartbeat()
    assert link.state == "up", link.reason
    live = fm._live.slots
    assert not live[1].enabled and live[1].caches == [] and live[1].hash is None
    assert live[0].enabled and [x[0] for x in live[0].caches] == [a]
    assert w.fpga.srcidx_mismatch == 0
    d = fm.decide(0, web)
    assert (d.action, d.slot) == ("forward", None), d      # not to b, the cache the router removed


def test_slot_cleared_during_an_outage_is_cleared_in_an_fpga_that_kept_its_registers():
    _outage_clears_a_slot(False)


def test_slot_cleared_during_an_outage_stays_cleared_in_a_reset_fpga():
    _outage_clears_a_slot(True)
