"""Sample WCCPv2 messages for the codec's tests and benchmark (CPython and MicroPython):
samples() holds one per message and component shape, isy_hash(n) an I_SEE_YOU with n caches."""
from wccp import codec
from wccp.codec import ip2int

IP = ip2int


def _service(dynamic=False):
    if dynamic:
        return {"service_type": 1, "service_id": 90, "priority": 200, "protocol": 6,
                "service_flags": 0x0001 | 0x0010 | 0x0200, "ports": [80, 8080, 3128, 0, 0, 0, 0, 0]}
    return {"service_type": 0, "service_id": 0, "priority": 0, "protocol": 0,
            "service_flags": 0, "ports": [0] * 8}


def _hash_el(addr, flags=0, buckets=(), weight=10000, status=0):
    return {"address": IP(addr), "hash_revision": 0, "flags": flags, "data_type": "hash",
            "bucket_bitmap": bytes(codec.bucket_bitmap(buckets)), "weight": weight, "status": status}


def _masks(src=0, dst=0, sp=0, dp=0):
    return {"src_addr": src, "dst_addr": dst, "src_port": sp, "dst_port": dp}


def _mv_sets(caches, nvalues=4, mask=0x1741):
    values = []
    for i in range(nvalues):
        values.append({"src_addr": 0, "dst_addr": i << 8, "src_port": 0, "dst_port": 0,
                       "cache_address": IP(caches[i % len(caches)])})
    return [{"masks": _masks(dst=mask), "values": values}]


def _buckets(ncaches):
    b = bytearray(256)
    for i in range(256):
        b[i] = i % ncaches if ncaches else 0xFF
    if ncaches:
        b[7] = 0xFF          # an unassigned bucket
        b[9] = 0x80 | 1 % ncaches  # alternate-hash flag
    return bytes(b)


def _caps(fwd=1, asg=1, ret=1, extra=()):
    c = [{"type": 1, "value": fwd}, {"type": 2, "value": asg}, {"type": 3, "value": ret}]
    c.extend(extra)
    return c


def _sec(md5=False):
    return {"option": 1, "digest": bytes(16)} if md5 else {"option": 0}


def isy_hash(ncaches, md5=False):
    """An I_SEE_YOU whose Router View lists ncaches hash caches (used by the benchmark too)."""
    caches = [_hash_el("10.1.%d.%d" % (i // 200, 2 + i % 200), buckets=range(i, 256, max(ncaches, 1)),
                       flags=0 if i % 3 else 0x0001)
              for i in range(ncaches)]
    return {"type": 11, "version": 0x0200, "security": _sec(md5), "service": _service(),
            "router_identity": {"router_id": IP("10.0.0.1"), "receive_id": 7, "sent_to": IP("10.0.0.1"),
                                "received_from": [IP("10.1.0.2")]},
            "router_view": {"member_change_number": 3,
                            "assignment_key": {"address": IP("10.1.0.2"), "change_number": 2},
                            "routers": [IP("10.0.0.1")], "web_caches": caches},
            "capabilities": _caps()}


def samples():
    """name -> message dict, every message type and component shape the codec knows."""
    s = {}
    s["hia_squid_hash"] = {
        "type": 10, "version": 0x0200, "security": _sec(), "service": _service(),
        "web_cache_identity": _hash_el("10.1.0.2"),
        "web_cache_view": {"change_number": 1, "routers": [{"router_id": IP("10.0.0.1"), "receive_id": 0}],
                           "web_caches": []},
        "capabilities": _caps()}
    s["hia_squid_mask_md5"] = {
        "type": 10, "version": 0x0200, "security": _sec(True), "service": _service(True),
        "web_cache_identity": {"address": IP("10.1.0.3"), "hash_revision": 0, "flags": 0x0002,
                               "data_type": "mask",
                               "mask_value_sets": [{"masks": _masks(src=0x1741), "values": []}],
                               "weight": 0, "status": 0},
        "web_cache_view": {"change_number": 1,
                           "routers": [{"router_id": IP("10.0.0.1"), "receive_id": 12},
                                       {"router_id": IP("10.0.0.9"), "receive_id": 3}],
                           "web_caches": [IP("10.1.0.2"), IP("10.1.0.3")]},
        "capabilities": _caps(2, 2, 2),
        "command_extension": [{"type": 1, "data": IP("10.1.0.3")}]}
    s["hia_u8000_timers"] = {
        "type": 10, "version": 0x0200, "security": _sec(), "service": _service(True),
        "web_cache_identity": _hash_el("10.1.0.4", flags=0x8000, buckets=(0, 1, 2, 255), weight=5, status=9),
        "web_cache_view": {"change_number": 77, "routers": [], "web_caches": []},
        "capabilities": _caps(extra=[{"type": 4, "value": 10000}, {"type": 5, "value": 0x00010001}])}
    s["isy_hash"] = isy_hash(3)
    s["isy_hash_md5_shutdown_resp"] = dict(isy_hash(2, md5=True))
    s["isy_hash_md5_shutdown_resp"]["command_extension"] = [{"type": 2, "data": IP("10.1.0.2")}]
    s["isy_empty_view"] = {
        "type": 11, "version": 0x0200, "security": _sec(), "service": _service(),
        "router_identity": {"router_id": IP("10.0.0.1"), "receive_id": 1, "sent_to": IP("224.0.0.9"),
                            "received_from": [IP("10.1.0.2"), IP("10.1.0.3")]},
        "router_view": {"member_change_number": 0, "assignment_key": {"address": 0, "change_number": 0},
                        "routers": [], "web_caches": []}}
    caches = ["10.1.0.2", "10.1.0.3"]
    s["isy_mask_cisco_shapes"] = {
        "type": 11, "version": 0x0200, "security": _sec(), "service": _service(True),
        "router_identity": {"router_id": IP("10.0.0.1"), "receive_id": 5, "sent_to": IP("10.0.0.1"),
                            "received_from": [IP("10.1.0.3")]},
        "router_view": {"member_change_number": 2,
                        "assignment_key": {"address": IP("10.1.0.2"), "change_number": 1},
                        "routers": [IP("10.0.0.1")],
                        "web_caches": [codec.cisco_mask_view_element(IP("10.1.0.2"), False),
                                       codec.cisco_mask_view_element(IP("10.1.0.3"), True,
                                                                     _masks(src=0x1741))]},
        "assignment_map": {"mask_value_sets": _mv_sets(caches, 8)},
        "capabilities": _caps(2, 2, 2)}
    s["isy_32_caches"] = isy_hash(32)
    s["ra_hash"] = {
        "type": 12, "version": 0x0200, "security": _sec(), "service": _service(),
        "assignment_info": {"assignment_key": {"address": IP("10.1.0.2"), "change_number": 4},
                            "routers": [{"router_id": IP("10.0.0.1"), "receive_id": 9,
                                         "member_change_number": 3}],
                            "web_caches": [IP("10.1.0.2"), IP("10.1.0.3")], "buckets": _buckets(2)}}
    s["ra_mask_64_md5"] = {
        "type": 12, "version": 0x0200, "security": _sec(True), "service": _service(True),
        "alternate_assignment": {"assignment_type": 1,
                                 "assignment_key": {"address": IP("10.1.0.2"), "change_number": 1},
                                 "routers": [{"router_id": IP("10.0.0.1"), "receive_id": 4,
                                              "member_change_number": 2}],
                                 "mask_value_sets": _mv_sets(caches, 64)}}
    s["ra_mask_zero_bits"] = {
        "type": 12, "version": 0x0200, "security": _sec(), "service": _service(True),
        "alternate_assignment": {"assignment_type": 1,
                                 "assignment_key": {"address": IP("10.1.0.2"), "change_number": 1},
                                 "routers": [{"router_id": IP("10.0.0.1"), "receive_id": 4,
                                              "member_change_number": 2}],
                                 "mask_value_sets": [{"masks": _masks(),
                                                      "values": [{"src_addr": 0, "dst_addr": 0, "src_port": 0,
                                                                  "dst_port": 0,
                                                                  "cache_address": IP("10.1.0.2")}]}]}}
    s["ra_alt_hash"] = {
        "type": 12, "version": 0x0200, "security": _sec(), "service": _service(),
        "alternate_assignment": {"assignment_type": 0,
                                 "assignment_key": {"address": IP("10.1.0.2"), "change_number": 5},
                                 "routers": [{"router_id": IP("10.0.0.1"), "receive_id": 9,
                                              "member_change_number": 3},
                                             {"router_id": IP("10.0.0.9"), "receive_id": 2,
                                              "member_change_number": 8}],
                                 "web_caches": [IP("10.1.0.2")], "buckets": _buckets(1)}}
    s["ra_alt_mask_rev1"] = {
        "type": 12, "version": 0x0201, "security": _sec(), "service": _service(True),
        "alternate_assignment": {"assignment_type": 2,
                                 "assignment_key": {"address": IP("10.1.0.2"), "change_number": 5},
                                 "routers": [{"router_id": IP("10.0.0.1"), "receive_id": 9,
                                              "member_change_number": 3}],
                                 "alt_mask_value_sets": [
                                     {"masks": _masks(src=0x0F00),
                                      "web_cache_values": [{"cache_address": IP("10.1.0.2"), "vsns": [0, 1, 2, 3]},
                                                           {"cache_address": IP("10.1.0.3"), "vsns": [4]}]}]}}
    s["rq"] = {
        "type": 13, "version": 0x0200, "security": _sec(), "service": _service(),
        "router_query": {"router_id": IP("10.0.0.1"), "receive_id": 33, "sent_to": IP("10.0.0.1"),
                         "target": IP("10.1.0.2")}}
    s["rq_md5"] = dict(s["rq"])
    s["rq_md5"]["security"] = _sec(True)
    for at, extra in ((0, {"web_caches": [IP("10.1.0.2")], "buckets": _buckets(1)}),
                      (1, {"mask_value_sets": _mv_sets(caches, 2)}),
                      (2, {"alt_mask_value_sets": [{"masks": _masks(dst=1),
                                                    "web_cache_values": [{"cache_address": IP("10.1.0.2"),
                                                                          "vsns": [0, 1]}]}]})):
        m = isy_hash(1)
        m["version"] = 0x0201
        am = {"assignment_type": at}
        am.update(extra)
        m["alternate_assignment_map"] = am
        s["isy_rev1_altmap_%d" % at] = m
    m = {"type": 10, "version": 0x0201, "security": _sec(), "service": _service(),
         "web_cache_identity": {"address": 1, "hash_revision": 0, "flags": 0x0004 | 0x0008, "data_type": "none"},
         "web_cache_view": {"change_number": 1, "routers": [{"router_id": 2, "receive_id": 1}], "web_caches": [1]},
         "address_table": {"family": 2, "address_length": 16,
                           "addresses": [bytes(range(16)), bytes(range(16, 32))]}}
    s["hia_rev1_addrtable_nodata"] = m
    s["hia_rev1_extended"] = {
        "type": 10, "version": 0x0201, "security": _sec(), "service": _service(),
        "web_cache_identity": {"address": IP("10.1.0.5"), "hash_revision": 0, "flags": 0x0006,
                               "data_type": "extended", "extended_type": 3, "extended_data": b"\x00\x10\x00\x00"},
        "web_cache_view": {"change_number": 1, "routers": [], "web_caches": []}}
    m = isy_hash(1)
    m["unknown_components"] = [{"type": 11, "length": 4, "data": b"abcd"}]
    s["isy_unknown_component"] = m
    return s
