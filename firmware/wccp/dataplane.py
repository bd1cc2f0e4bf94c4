"""The data-plane interface: what the control plane programs into the forwarding hardware.

The control plane (router state machine) never touches registers or packets itself. It
programs *tables* through this interface; implementations are

* ``wccp.fwdmodel.ForwardingModel`` — the pure-Python reference model of forwarding
  decisions (given a frame: which cache, how, or forward normally). It is the control
  plane's data plane on the unix port and the scoreboard of the FPGA tests.
* ``wccp.fpga.FpgaDataPlane`` — writes the same tables into the FPGA's shadow bank through
  the register map (SPI on boards, a socket to the simulator on the unix port).

Model of the tables (mirrors the FPGA's):

* global: router_id (IPv4 as int; GRE outer source), mac (6 bytes; L2-rewrite source
  MAC), mtu (largest IP packet allowed after GRE encapsulation).
* up to ``MAX_GROUPS`` service-group slots, matched in slot order (the control plane puts
  them in priority order, highest first). Each slot holds
  - the service definition (dict, field names as the codec's Service Info):
    ``service_type``, ``service_id``, ``priority``, ``protocol`` (0 = any), ``service_flags``,
    ``ports`` (list of 8 ints, 0 = unused);
  - the cache table: list of at most ``MAX_CACHES`` dicts, list position = cache index:
    ``address`` (int), ``forward`` (FWD_GRE | FWD_L2), ``ret`` (RET_GRE | RET_L2),
    ``mac`` (6 bytes or None: not yet known/learnt);
  - the assignment: either ``set_hash`` (256 bucket bytes: cache index in the low 7 bits,
    0x80 = use the alternate hash, 0xFF = unassigned) or ``set_mask`` (ordered mask/value
    sets, see below). A slot with neither forwards everything normally.
* mask/value sets: list of dicts ``{"masks": (src_addr, dst_addr, src_port, dst_port),
  "values": [(src_addr, dst_addr, src_port, dst_port, cache_index), ...]}``.

Every write goes to a shadow copy; ``commit()`` makes all writes since the last commit
live at once, between two frames. ``heartbeat()`` re-arms the fail-open watchdog.
"""
try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

MAX_GROUPS = const(8)
MAX_CACHES = const(32)
NUM_BUCKETS = const(256)
BUCKET_UNASSIGNED = const(0xFF)
BUCKET_ALT = const(0x80)

FWD_GRE = const(1)
FWD_L2 = const(2)
RET_GRE = const(1)
RET_L2 = const(2)


class DataPlane:
    """Abstract data plane. Subclasses implement every method."""

    def configure(self, router_id, mac, mtu=1500):
        raise NotImplementedError

    def set_group(self, slot, service):
        """Program slot's service definition and enable it (shadow)."""
        raise NotImplementedError

    def set_caches(self, slot, caches):
        raise NotImplementedError

    def set_hash(self, slot, buckets):
        raise NotImplementedError

    def set_mask(self, slot, sets):
        raise NotImplementedError

    def clear_assignment(self, slot):
        """Flush the slot's assignment (hash and mask): everything forwarded normally."""
        raise NotImplementedError

    def clear_group(self, slot):
        """Disable the slot entirely."""
        raise NotImplementedError

    def commit(self):
        raise NotImplementedError

    def heartbeat(self):
        raise NotImplementedError

    def counters(self):
        """Return a dict of counters (implementation-defined keys, documented per implementation)."""
        raise NotImplementedError
