"""Operator policies: group-list prefixes, cache subnets, service-list, closed services and
redirect-lists — config, router and the reference data plane (CPython and MicroPython)."""
from fwtest import raises
from test_fwdmodel import model, http, eth, ip as fip, SERVER_IP
from test_router import R, DYN, make, svc, hia, join, group, cache_state, _last_rid, ra_hash
from wccp import config
from wccp.dataplane import check_policy


def test_config_policies_validated_and_normalised():
    c = config.load({"cache_subnets": ["10.1.0.0/16"],
                     "services": [{"id": 0, "closed": True, "caches": ["192.0.2.0/28", "192.0.2.99"],
                                   "redirect_list": [{"action": "deny", "dst": "198.51.100.0/24"},
                                                     {"action": "permit", "src": "10.0.0.0/8"}]},
                                  {"id": 91, "service_list": {"protocols": [6], "ports": [8080], "max_priority": 200}}]})
    s0, s1 = c["services"]
    assert c["cache_subnets"] == ["10.1.0.0/16"]
    assert s0["closed"] is True and s0["caches"] == ["192.0.2.0/28", "192.0.2.99"]
    assert s0["redirect_list"][0] == {"action": "deny", "src": "0.0.0.0/0", "dst": "198.51.100.0/24"}
    assert s1["service_list"] == {"protocols": [6], "ports": [8080], "max_priority": 200}
    assert s1["closed"] is False and s1["redirect_list"] is None
    bad = [({"id": 0, "caches": ["10.0.0.1/24"]}, "services[0].caches[0]"),
           ({"id": 0, "redirect_list": [{"action": "permit"}] * 9}, "services[0].redirect_list"),
           ({"id": 0, "redirect_list": [{"action": "allow"}]}, "services[0].redirect_list[0].action"),
           ({"id": 0, "service_list": {"protocols": [6]}}, "services[0].service_list"),
           ({"id": 91, "service_list": {"ports": [70000]}}, "services[0].service_list.ports[0]"),
           ({"id": 0, "closed": "yes"}, "services[0].closed")]
    for s, field in bad:
        e = raises(config.ConfigError, config.load, {"services": [s]})
        assert e.field == field, (e.field, field)
    e = raises(config.ConfigError, config.load, {"cache_subnets": ["300.0.0.0/8"], "services": [{"id": 0}]})
    assert e.field == "cache_subnets[0]"


def test_group_list_prefixes_checked_against_the_sender():
    r, dp = make([{"id": 0, "caches": ["127.0.1.0/24"]}, {"id": 91}])
    join(r, "127.0.1.7")
    assert cache_state(r, "127.0.1.7") == "usable"
    assert r.receive(hia("127.0.2.7", 0), "127.0.2.7", 2048, R, 0) == []
    assert group(r).drops["cache_not_allowed"] == 1
    # the other group has no list: anyone may be a cache there
    join(r, "127.0.2.7", service=svc(91, **DYN))
    assert cache_state(r, "127.0.2.7", 91) == "usable"


def test_cache_subnets_bound_every_group_and_drop_others_unparsed():
    r, dp = make([{"id": 0}, {"id": 91}], cache_subnets=["127.0.3.0/24"])
    join(r, "127.0.3.9")
    assert cache_state(r, "127.0.3.9") == "usable"
    assert r.receive(hia("127.0.4.9", 0), "127.0.4.9", 2048, R, 0) == []
    assert r.receive(b"junk", "127.0.4.9", 2048, R, 0) == []           # not even parsed
    assert r.drops["cache_not_allowed"] == 2 and "malformed" not in r.drops
    assert r.status()["groups"][0]["policy"]["caches"] == ["127.0.3.0/24"]


def test_service_list_limits_what_caches_may_define():
    r, dp = make([{"id": 0}, {"id": 91, "service_list": {"protocols": [6], "ports": [8080, 3128],
                                                          "max_priority": 200}}])
    greedy = svc(91, priority=255, protocol=0)                       # everything, ahead of service 0
    assert r.receive(hia("127.0.0.5", 0, service=greedy), "127.0.0.5", 2048, R, 0) == []
    assert group(r, 91).drops["service_not_permitted"] == 1 and group(r, 91).definition is None
    for bad in (svc(91, priority=100, protocol=6, ports=[25]), svc(91, priority=100, protocol=6),
                svc(91, priority=201, protocol=6, ports=[8080])):
        assert r.receive(hia("127.0.0.5", 0, service=bad), "127.0.0.5", 2048, R, 0) == []
    assert group(r, 91).drops["service_not_permitted"] == 4
    join(r, "127.0.0.5", service=svc(91, **DYN))                      # TCP 8080, priority 100
    assert group(r, 91).definition["ports"][0] == 8080 and cache_state(r, "127.0.0.5", 91) == "usable"


def test_model_closed_service_drops_unassigned_traffic():
    m = model(buckets=[0xFF] * 256)
    f = eth(http())
    assert m.decide(0, f).reason == "unassigned" and m.decide(0, f).action == "forward"
    m.set_policy(0, True, ())
    assert m.decide(0, f).action == "forward"                        # shadow until the commit
    m.commit()
    d = m.decide(0, f)
    assert (d.action, d.reason) == ("drop", "closed")
    before = m.counters()
    assert m.process(0, f) == []
    after = m.counters()
    assert after["closed_drop"] == before["closed_drop"] + 1 and after["unassigned"] == before["unassigned"]
    assert after["slot_frames"] == before["slot_frames"]
    m.set_hash(0, [0] * 256)                                          # a cache for it: redirected
    m.commit()
    assert m.decide(0, f).action == "redirect_gre"
    m.disarm()                                                        # fail-open wins over closed
    assert m.decide(0, f).action == "forward"


def test_model_redirect_list_first_match_no_match_not_redirected():
    m = model()
    net = fip("203.0.113.0")
    m.set_policy(0, False, [(False, 0, 0, net, 0xFFFFFF00), (True, fip("192.168.0.0"), 0xFFFF0000, 0, 0)])
    m.commit()
    assert m.decide(0, eth(http())).reason == "no_match"                        # denied destination
    assert m.decide(0, eth(http(dst=fip("198.51.100.7")))).action == "redirect_gre"
    assert m.decide(0, eth(http(src=fip("10.9.9.9"), dst=fip("198.51.100.7")))).reason == "no_match"
    m.set_policy(0, False, ())                                        # empty list: everything
    m.commit()
    assert m.decide(0, eth(http(dst=SERVER_IP))).action == "redirect_gre"
    raises(ValueError, check_policy, False, [(True, 0, 0, 0, 0)] * 9)
    raises(ValueError, check_policy, False, [(True, 1, 0, 0, 0)])
    raises(ValueError, check_policy, 1, ())


def test_router_programs_policies_and_keeps_a_closed_dynamic_definition():
    from wccp.fwdmodel import ForwardingModel
    fm = ForwardingModel()
    r, _ = make([{"id": 0, "redirect_list": [{"action": "deny", "dst": "203.0.113.0/24"}, {"action": "permit"}]},
                 {"id": 91, "closed": True}], dp=fm)
    live = fm._live.slots[0]
    assert live.acl == [(False, 0, 0, fip("203.0.113.0"), 0xFFFFFF00), (True, 0, 0, 0, 0)] and not live.closed
    join(r, "127.0.0.4", service=svc(91, **DYN))
    g = group(r, 91)
    assert fm._live.slots[g.slot].closed
    r.receive(hia("127.0.0.4", _last_rid(r, "127.0.0.4", 91), service=svc(91, **DYN), shutdown=True),
              "127.0.0.4", 2048, R, 1)
    assert not g.order and g.definition is not None and g.slot >= 0
    sl = fm._live.slots[g.slot]
    assert sl.enabled and sl.closed and sl.service["ports"][0] == 8080 and sl.hash is None
    assert r.status()["groups"][1]["policy"]["closed"] is True


def test_fpga_driver_writes_policies_into_the_register_map():
    """set_policy: CLOSED and NUM_ACL in GROUP_CTRL (with the slot's other fields), the entries
    as ACL_SRC, ACL_DST, ACL_CTRL (prefix lengths, PERMIT); live at the commit; the register
    file decodes them into the model as they were given."""
    from wccp import regmap as RM
    from wccp.fpga import FpgaDataPlane, group_addr
    from wccp.fwdmodel import ForwardingModel
    from wccp.fwdmodel_regs import ModelRegisterFile
    from wccp.transport import LoopbackTransport
    fm = ForwardingModel()
    rf = ModelRegisterFile(fm)
    dp = FpgaDataPlane(LoopbackTransport(rf))
    dp.set_group(3, {"service_type": 0, "service_id": 0, "priority": 0, "protocol": 6, "service_flags": 0,
                     "ports": [0] * 8})
    dp.set_caches(3, [{"address": 0x0A000002}, {"address": 0x0A000003}])
    acl = [(False, 0xC0A80100, 0xFFFFFF00, 0, 0), (True, 0x0A000000, 0xFF000000, 0x08080808, 0xFFFFFFFF),
           (True, 0, 0, 0, 0)]
    dp.set_policy(3, True, acl)
    g = group_addr(3, 0)
    assert rf.shadow[g + RM.GROUP_CTRL] == 1 | RM.GROUP_CTRL_CLOSED | 2 << 16 | 3 << RM.GROUP_CTRL_NUM_ACL_SHIFT
    assert [rf.shadow[g + RM.ACL_SRC + i] for i in range(9)] == [
        0xC0A80100, 0, 24, 0x0A000000, 0x08080808, 8 | 32 << 8 | RM.ACL_PERMIT, 0, 0, RM.ACL_PERMIT]
    assert fm._live.slots[3].acl == () and not fm._live.slots[3].closed       # shadow until the commit
    dp.commit()
    assert fm._live.slots[3].acl == acl and fm._live.slots[3].closed
    assert fm._live.slots[3].enabled and len(fm._live.slots[3].caches) == 2
    dp.set_caches(3, [{"address": 0x0A000002}])          # GROUP_CTRL rewritten: the policy kept
    dp.set_policy(3, False, acl[:1])
    dp.commit()
    assert rf.shadow[g + RM.GROUP_CTRL] == 1 | 1 << 16 | 1 << RM.GROUP_CTRL_NUM_ACL_SHIFT
    assert fm._live.slots[3].acl == acl[:1] and not fm._live.slots[3].closed
    dp.set_policy(3, False, ())
    dp.commit()
    assert fm._live.slots[3].acl == [] and rf.shadow[g + RM.GROUP_CTRL] == 1 | 1 << 16
    raises(ValueError, dp.set_policy, 3, False, [(True, 0x0A000000, 0xFF00FF00, 0, 0)])   # not a prefix
    assert dp.tables()["slots"][3]["redirect_list"] == []


def test_fpga_driver_failed_policy_write_is_never_committed():
    """A redirect-list whose register write fails leaves the slot's policy unknown: the commit
    is refused (the previous policy stays live) until set_policy rewrites it whole."""
    from test_hardening import _FlakyTransport
    from wccp import regmap as RM
    from wccp.fpga import FpgaDataPlane, FpgaError, group_addr
    from wccp.fwdmodel import ForwardingModel
    from wccp.fwdmodel_regs import ModelRegisterFile
    from wccp.transport import LoopbackTransport
    fm = ForwardingModel()
    t = _FlakyTransport(LoopbackTransport(ModelRegisterFile(fm)))
    dp = FpgaDataPlane(t)
    old = [(True, 0, 0, 0x08080800, 0xFFFFFF00)]
    dp.set_policy(2, False, old)
    dp.commit()
    t.fail_at = group_addr(2, RM.ACL_SRC)
    new = [(False, 0xC0A80000, 0xFFFF0000, 0, 0), (True, 0, 0, 0, 0)]
    raises(OSError, dp.set_policy, 2, True, new)
    assert dp.stale_slots() == [2]
    raises(FpgaError, dp.commit)
    assert fm._live.slots[2].acl == old and not fm._live.slots[2].closed
    dp.set_policy(2, True, new)
    dp.commit()
    assert fm._live.slots[2].acl == new and fm._live.slots[2].closed and dp.stale_slots() == []


def test_fpga_applies_an_mtu_above_1500():
    from test_fpgalink import Wire
    from wccp.fpga import FpgaDataPlane
    from wccp.fwdmodel import ForwardingModel
    from wccp.fwdmodel_regs import ModelRegisterFile
    from wccp.transport import LoopbackTransport
    fm = ForwardingModel()
    w = Wire()
    w.fpga = ModelRegisterFile(fm)
    dp = FpgaDataPlane(LoopbackTransport(w))
    dp.configure(0x0A000001, b"\x02\x00\x00\x00\x00\x01", 1528)
    dp.commit()
    assert dp.mtu == 1528 and fm._live.mtu == 1528, (dp.mtu, fm._live.mtu)
    dp.configure(0x0A000001, b"\x02\x00\x00\x00\x00\x01", 1400)
    assert dp.mtu == 1400


def test_data_plane_that_cannot_hold_a_policy_router_says_so():
    """A data plane that refuses a closed service or a redirect-list (ValueError, like any
    table it cannot hold): the router reports it, leaves that group unredirected, programs
    the others, and does not retry in a storm."""
    from wccp.fwdmodel import ForwardingModel

    class NoPolicies(ForwardingModel):
        def set_policy(self, slot, closed=False, redirect_list=()):
            if closed or redirect_list:
                raise ValueError("this data plane cannot hold a closed service or a redirect-list")
            ForwardingModel.set_policy(self, slot, closed, redirect_list)

    fm = NoPolicies()
    fm.set_policy(0, False, ())                                       # nothing to hold: fine
    raises(ValueError, fm.set_policy, 0, True, ())
    r, _ = make([{"id": 0, "closed": True}, {"id": 91}], dp=fm)
    assert r.counters["dataplane_errors"] == 1 and "closed service" in r.last_error
    join(r, "127.0.0.2")
    mcn = group(r).mcn
    r.receive(ra_hash("127.0.0.2", [(R, _last_rid(r, "127.0.0.2"), mcn)], ["127.0.0.2"]), "127.0.0.2", 2048, R, 0)
    assert r.drops["ra_dataplane_refused"] == 1                     # never redirected without the policy
    assert fm._live.slots[0].hash is None
    join(r, "127.0.0.4", service=svc(91, **DYN))
    g = group(r, 91)
    r.receive(ra_hash("127.0.0.4", [(R, _last_rid(r, "127.0.0.4", 91), g.mcn)], ["127.0.0.4"], service=svc(91, **DYN)),
              "127.0.0.4", 2048, R, 0)
    assert g.counters["ra_accepted"] == 1 and fm._live.slots[g.slot].hash is not None
    errors = r.counters["dataplane_errors"]
    r.tick(1000)
    r.tick(2000)
    assert r.counters["dataplane_errors"] == errors
