"""Mask-assignment advisor: how evenly a WCCP mask spreads traffic over N caches.

With mask assignment the router ANDs a packet field with the mask; the masked
value selects one of the 2^bits values, and the values are dealt to the caches
round-robin (value with sequence number k -> cache k mod N, as Squid and the
cache emulator do; sequence bit i = the i-th set mask bit counted from the least
significant). Two things unbalance the load (see the NetScaler note in
../shared/seeds and reference section 7.3):

* structure — 2^bits values cannot be split evenly over N caches (3 bits, 5
  caches: 2:1; 6 bits: 13:12), and with 2^bits < N some caches stay idle;
* traffic — when the mask selects bits that hardly vary in the real addresses
  (e.g. inside the 10.0 prefix that every site shares) most packets carry the
  same masked value and land on one cache.

``analyse`` evaluates candidate masks over weighted samples (addresses from a
capture, or a synthetic model) and ``recommend`` picks the best one: among the
masks whose measured imbalance (busiest cache / mean) is within ``tolerance`` of
the best found it prefers fewer bits (each bit doubles the router's TCAM use).
"""
import random

from wccptool import balance
from wccptool.balance import set_bits, value_index  # noqa: F401 - the shared engine's mask arithmetic

FIELDS = {"src_addr": 32, "dst_addr": 32, "src_port": 16, "dst_port": 16}
WELL_KNOWN = {"src_addr": [(0x1741, "Cisco/Squid default"), (0xF00, "WAAS 4.2.1+ default")],
              "dst_addr": [(0x1741, "Squid default (standard service)"), (0xF00, "WAAS 4.2.1+ default")],
              "src_port": [], "dst_port": []}
MAX_BITS = 7
_BALANCE_FIELD = {"src_addr": "src_ip", "dst_addr": "dst_ip", "src_port": "src_port", "dst_port": "dst_port"}


class AdvisorError(Exception):
    pass


def cache_loads(samples, mask, caches):
    """Per-cache load for a mask: samples is {field value: weight}."""
    bits = set_bits(mask)
    per_value = {}
    for v, w in samples.items():
        m = v & mask
        per_value[m] = per_value.get(m, 0) + w
    loads = [0] * caches
    for m, w in per_value.items():
        loads[value_index(m, bits) % caches] += w
    return loads


def imbalance(loads):
    """Busiest cache / mean load (1.0 = perfect, N = everything on one cache)."""
    total = sum(loads)
    if total == 0:
        return float("inf")
    return max(loads) * len(loads) / total


def structural(bits, caches):
    """(values per busiest cache, values per least busy cache, idle caches) with uniform traffic."""
    values = 1 << bits
    hi = -(-values // caches)
    lo = values // caches
    idle = max(0, caches - values)
    return hi, lo, idle


def describe(mask, caches, samples, label=""):
    loads = cache_loads(samples, mask, caches)
    nb = len(set_bits(mask))
    hi, lo, idle = structural(nb, caches)
    total = sum(loads) or 1
    return {"mask": mask, "bits": nb, "values": 1 << nb, "label": label, "loads": loads,
            "share": [x / total for x in loads], "imbalance": imbalance(loads),
            "idle_caches": sum(1 for x in loads if x == 0), "structural": (hi, lo, idle)}


def candidates(field, max_bits, samples, caches, extra=()):
    """Masks worth evaluating: contiguous windows, well-known defaults, a greedy search, extras."""
    width = FIELDS[field]
    out = {}
    for m in extra:
        out[m] = "given"
    for m, label in WELL_KNOWN[field]:
        if m < (1 << width) and len(set_bits(m)) <= max_bits:
            out.setdefault(m, label)
    for nb in range(1, max_bits + 1):
        for lo in range(0, width - nb + 1):
            out.setdefault(((1 << nb) - 1) << lo, "bits %d-%d" % (lo, lo + nb - 1))
    # greedy: add the bit that balances best, one at a time
    mask = 0
    for _ in range(max_bits):
        best = None
        for b in range(width):
            if (mask >> b) & 1:
                continue
            m = mask | (1 << b)
            score = imbalance(cache_loads(samples, m, caches))
            if best is None or score < best[0] - 1e-12:
                best = (score, m)
        if best is None:
            break
        mask = best[1]
        out.setdefault(mask, "greedy")
    return out


def recommend(results, caches, tolerance=0.02):
    """Among results (from describe) without idle caches, the fewest bits within tolerance of the best."""
    usable = [r for r in results if r["idle_caches"] == 0 and r["values"] >= caches]
    if not usable:
        return None
    best = min(r["imbalance"] for r in usable)
    ok = [r for r in usable if r["imbalance"] <= best * (1 + tolerance)]
    return min(ok, key=lambda r: (r["bits"], r["imbalance"], r["mask"]))


def structural_loads(mask, caches):
    """Loads with uniformly distributed traffic: the number of values each cache is dealt."""
    values = 1 << len(set_bits(mask))
    return [values // caches + (1 if c < values % caches else 0) for c in range(caches)]


def analyse_uniform(caches, field="dst_addr", max_bits=MAX_BITS, masks=(), tolerance=0.02):
    """Exact evaluation for uniform traffic: only the number of mask bits matters."""
    width = FIELDS[field]
    known = {len(set_bits(m)): (m, label) for m, label in reversed(WELL_KNOWN[field])}
    cands = {m: "given" for m in masks}
    for nb in range(1, max_bits + 1):
        m, label = known.get(nb, (((1 << nb) - 1), "low %d bits" % nb))
        if m < (1 << width):
            cands.setdefault(m, label)
    results = []
    for m, label in cands.items():
        loads = structural_loads(m, caches)
        r = describe(m, caches, {}, label)
        total = sum(loads)
        r.update(loads=loads, share=[x / total for x in loads], imbalance=imbalance(loads),
                 idle_caches=sum(1 for x in loads if x == 0))
        results.append(r)
    results.sort(key=lambda r: (r["imbalance"], r["bits"], r["mask"]))
    return results, recommend(results, caches, tolerance)


def analyse(samples, caches, field="dst_addr", max_bits=MAX_BITS, masks=(), tolerance=0.02):
    """Evaluate masks over samples ({value: weight}); samples None = uniform traffic (exact)."""
    if caches < 1:
        raise AdvisorError("--caches must be at least 1")
    if not 1 <= max_bits <= 12:
        raise AdvisorError("--bits must be 1..12")
    if field not in FIELDS:
        raise AdvisorError("unknown field %r" % field)
    if samples is None:
        return analyse_uniform(caches, field, max_bits, masks, tolerance)
    if not samples:
        raise AdvisorError("no samples (no IPv4 packets in the capture?)")
    cands = candidates(field, max_bits, samples, caches, masks)
    results = [describe(m, caches, samples, label) for m, label in cands.items()]
    results.sort(key=lambda r: (r["imbalance"], r["bits"], r["mask"]))
    return results, recommend(results, caches, tolerance)


# ---------------------------------------------------------------- samples

def samples_from_pcap(path, field, weight="packets"):
    """{field value: packets (or bytes)} over the IPv4 packets of a capture."""
    out = {}
    n = 0
    key = _BALANCE_FIELD[field]
    for f in balance.read_packets(path):
        w = f["len"] if weight == "bytes" else 1
        v = f[key]
        out[v] = out.get(v, 0) + w
        n += 1
    return out, n


def synthetic_samples(model, field, count=20000, seed=1):
    """Synthetic traffic: 'uniform' (None: every value equally likely, evaluated exactly), or 'sites:K' — K remote /24 sites 10.0.<site>.0/24
    with 50 users each (the vendor note's example where the 10.0 prefix is identical everywhere)."""
    rnd = random.Random(seed)
    width = FIELDS[field]
    out = {}
    if model == "uniform":
        return None     # evaluated exactly (analyse_uniform)
    if model.startswith("sites:"):
        try:
            k = int(model.split(":", 1)[1])
        except ValueError:
            raise AdvisorError("model sites:K needs a number of sites") from None
        if not 1 <= k <= 256 or width != 32:
            raise AdvisorError("sites:K needs 1..256 sites and an address field")
        for _ in range(count):
            site = rnd.randrange(k)
            host = 1 + rnd.randrange(50)
            v = (10 << 24) | (site << 8) | host
            out[v] = out.get(v, 0) + 1
        return out
    raise AdvisorError("unknown synthetic model %r (uniform or sites:K)" % model)


def fmt_mask(mask, field):
    if FIELDS[field] == 32:
        return "0x%08X" % mask
    return "0x%04X" % mask
