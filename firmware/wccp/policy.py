"""Operator policies per service group (docs/config.md), as the router enforces them.

* group-list (``caches``, or the top-level ``cache_subnets``): prefixes a cache's address
  (= the HERE_I_AM sender) must fall in — ``wccp.admission.Prefixes``;
* service-list (``service_list``, dynamic services): which definitions caches may set —
  ``definition_permitted(policy, definition)``;
* redirect-list (``redirect_list``): ordered permit/deny entries on (source, destination)
  prefixes, first match wins, no match = not redirected; ``acl(entries)`` turns the config
  into the data plane's tuples ``(permit, src_net, src_mask, dst_net, dst_mask)``;
* closed (``closed``): traffic of the service that no cache is assigned for is dropped,
  not forwarded (the data plane enforces it; the router keeps a closed dynamic service's
  definition when its last cache leaves so the data plane keeps matching it).
"""
from wccp.admission import parse_prefix

MAX_REDIRECT_ENTRIES = 8     # per group, what the data plane holds (wccp.dataplane.MAX_ACL_ENTRIES)


def acl(entries):
    out = []
    for e in entries or ():
        sn, sm = parse_prefix(e.get("src", "0.0.0.0/0"))
        dn, dm = parse_prefix(e.get("dst", "0.0.0.0/0"))
        out.append((e["action"] == "permit", sn, sm, dn, dm))
    return out


def definition_permitted(policy, d):
    """None when the dynamic definition d (Service Info dict) is allowed, else why not."""
    if policy is None:
        return None
    protos = policy.get("protocols")
    if protos is not None and d["protocol"] not in protos:
        return "protocol %d not in service_list" % d["protocol"]
    mp = policy.get("max_priority")
    if mp is not None and d["priority"] > mp:
        return "priority %d above service_list max_priority %d" % (d["priority"], mp)
    ports = policy.get("ports")
    if ports is not None:
        used = [p for p in d["ports"] if p]
        if not used:
            return "no ports defined (service_list allows only %s)" % ports
        for p in used:
            if p not in ports:
                return "port %d not in service_list" % p
    return None
