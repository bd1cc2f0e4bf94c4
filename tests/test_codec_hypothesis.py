"""Property tests: hypothesis-generated WCCPv2 messages survive encode -> decode unchanged."""
import pathlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wccp import codec

ROOT = pathlib.Path(__file__).resolve().parent.parent

u8 = st.integers(0, 0xFF)
u16 = st.integers(0, 0xFFFF)
u32 = st.integers(0, 0xFFFFFFFF)
addr = u32
small = dict(max_size=4)


def fixed(n):
    return st.binary(min_size=n, max_size=n)


masks = st.fixed_dictionaries({"src_addr": u32, "dst_addr": u32, "src_port": u16, "dst_port": u16})
value = st.fixed_dictionaries({"src_addr": u32, "dst_addr": u32, "src_port": u16, "dst_port": u16,
                               "cache_address": addr})
mvsets = st.lists(st.fixed_dictionaries({"masks": masks, "values": st.lists(value, max_size=6)}), **small)
altsets = st.lists(st.fixed_dictionaries({
    "masks": masks,
    "web_cache_values": st.lists(st.fixed_dictionaries({"cache_address": addr,
                                                        "vsns": st.lists(u32, max_size=5)}), **small)}),
    **small)
key = st.fixed_dictionaries({"address": addr, "change_number": u32})
rtr_assign = st.lists(st.fixed_dictionaries({"router_id": addr, "receive_id": u32,
                                             "member_change_number": u32}), **small)
# 4-byte values decode as ints, any other length stays bytes
tlv_value = st.one_of(u32, st.binary(max_size=12).filter(lambda b: len(b) != 4))


@st.composite
def identity(draw):
    dt = draw(st.sampled_from(["hash", "mask", "none", "extended"]))
    code = {"hash": 0, "mask": 1, "none": 2, "extended": 3}[dt]
    el = {"address": draw(addr), "hash_revision": draw(u16),
          "flags": (draw(u16) & 0xFFF9) | (code << 1), "data_type": dt}
    if dt == "hash":
        el["bucket_bitmap"] = draw(fixed(32))
    elif dt == "mask":
        el["mask_value_sets"] = draw(mvsets)
    if dt in ("hash", "mask"):
        el["weight"] = draw(u16)
        el["status"] = draw(u16)
    if dt == "extended":
        el["extended_type"] = draw(u16)
        el["extended_data"] = draw(st.binary(max_size=24))
    return el


security = st.one_of(st.just({"option": 0}), st.fixed_dictionaries({"option": st.just(1), "digest": fixed(16)}))
service = st.fixed_dictionaries({"service_type": u8, "service_id": u8, "priority": u8, "protocol": u8,
                                 "service_flags": u32, "ports": st.lists(u16, min_size=8, max_size=8)})
router_identity = st.fixed_dictionaries({"router_id": addr, "receive_id": u32, "sent_to": addr,
                                         "received_from": st.lists(addr, max_size=6)})
router_view = st.fixed_dictionaries({"member_change_number": u32, "assignment_key": key,
                                     "routers": st.lists(addr, **small),
                                     "web_caches": st.lists(identity(), max_size=5)})
wc_view = st.fixed_dictionaries({"change_number": u32,
                                 "routers": st.lists(st.fixed_dictionaries({"router_id": addr,
                                                                            "receive_id": u32}), **small),
                                 "web_caches": st.lists(addr, max_size=6)})
hash_buckets = {"web_caches": st.lists(addr, max_size=8), "buckets": fixed(256)}
assignment_info = st.fixed_dictionaries(dict({"assignment_key": key, "routers": rtr_assign}, **hash_buckets))
alt_assignment = st.one_of(
    st.fixed_dictionaries(dict({"assignment_type": st.just(0), "assignment_key": key, "routers": rtr_assign},
                               **hash_buckets)),
    st.fixed_dictionaries({"assignment_type": st.just(1), "assignment_key": key, "routers": rtr_assign,
                           "mask_value_sets": mvsets}),
    st.fixed_dictionaries({"assignment_type": st.just(2), "assignment_key": key, "routers": rtr_assign,
                           "alt_mask_value_sets": altsets}))
alt_map = st.one_of(
    st.fixed_dictionaries(dict({"assignment_type": st.just(0)}, **hash_buckets)),
    st.fixed_dictionaries({"assignment_type": st.just(1), "mask_value_sets": mvsets}),
    st.fixed_dictionaries({"assignment_type": st.just(2), "alt_mask_value_sets": altsets}))
assignment_map = st.fixed_dictionaries({"mask_value_sets": mvsets})
router_query = st.fixed_dictionaries({"router_id": addr, "receive_id": u32, "sent_to": addr, "target": addr})
capabilities = st.lists(st.fixed_dictionaries({"type": u16, "value": tlv_value}), max_size=6)
commands = st.lists(st.fixed_dictionaries({"type": u16, "data": tlv_value}), max_size=3)
address_table = st.one_of(
    st.fixed_dictionaries({"family": st.just(2), "address_length": st.just(16),
                           "addresses": st.lists(fixed(16), max_size=4)}),
    st.fixed_dictionaries({"family": st.just(1), "address_length": st.just(4),
                           "addresses": st.lists(fixed(4), max_size=4)}))
unknown = st.lists(st.fixed_dictionaries({"type": st.one_of(st.integers(9, 12), st.integers(18, 0xFFFF)),
                                          "data": st.binary(max_size=16)}), max_size=2)

MANDATORY = {
    10: {"web_cache_identity": identity(), "web_cache_view": wc_view},
    11: {"router_identity": router_identity, "router_view": router_view},
    12: {},
    13: {"router_query": router_query},
}
OPTIONAL = {
    10: {},
    11: {"assignment_info": assignment_info, "alternate_assignment": alt_assignment,
         "assignment_map": assignment_map, "alternate_assignment_map": alt_map},
    12: {"assignment_info": assignment_info, "alternate_assignment": alt_assignment,
         "assignment_map": assignment_map, "alternate_assignment_map": alt_map},
    13: {},
}


@st.composite
def message(draw):
    t = draw(st.sampled_from([10, 11, 12, 13]))
    version = draw(st.sampled_from([0x0200, 0x0201, 0x02FF]))
    m = {"type": t, "version": version, "security": draw(security), "service": draw(service)}
    for k, s in MANDATORY[t].items():
        m[k] = draw(s)
    for k, s in OPTIONAL[t].items():
        if draw(st.booleans()):
            m[k] = draw(s)
    if t == 12 and not any(k in m for k in OPTIONAL[12]):
        m["assignment_info"] = draw(assignment_info)
    if draw(st.booleans()):
        m["capabilities"] = draw(capabilities)
    if draw(st.booleans()):
        m["command_extension"] = draw(commands)
    if version != 0x0200 and draw(st.booleans()):
        m["address_table"] = draw(address_table)
    u = draw(unknown)
    if u:
        m["unknown_components"] = [{"type": x["type"], "length": len(x["data"]), "data": x["data"]} for x in u]
    return m


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message())
def test_round_trip(msg):
    data = codec.encode(msg)
    got = codec.plain(codec.decode(data))
    assert got.pop("length") == len(data) - 8
    assert got == msg
    # re-encoding the decoded message gives the same bytes, also through a caller buffer
    buf = bytearray(len(data) + 7)
    n = codec.encode(codec.decode(data), memoryview(buf)[3:])
    assert bytes(buf[3:3 + n]) == data


@settings(max_examples=300, deadline=None)
@given(message(), st.binary(min_size=0, max_size=8))
def test_md5_round_trip(msg, password):
    msg = dict(msg, security={"option": 1, "digest": bytes(16)})
    data = codec.encode(msg, password=password)
    assert codec.verify_md5(data, password)
    other = bytes(password[:-1]) if password else b"x"
    if other.rstrip(b"\0") != bytes(password).rstrip(b"\0"):
        assert not codec.verify_md5(data, other)


@settings(max_examples=1000, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_only_wccp_error(data):
    try:
        codec.decode(data)
    except codec.WccpError as e:
        assert not e.reason.startswith("internal")


@settings(max_examples=500, deadline=None)
@given(message(), st.data())
def test_any_truncation_rejected_or_equal(msg, data):
    enc = codec.encode(msg)
    cut = data.draw(st.integers(0, len(enc) - 1))
    try:
        codec.decode(enc[:cut])
    except codec.WccpError as e:
        assert "header length" in e.reason or "truncated header" in e.reason
    else:
        raise AssertionError("truncated message decoded")
