"""The RTL twin: cocotb "test" module loaded by the simulator (run through
cocotb_tools.runner by wccptool.twin.rtl). One long-running coroutine serves the twin's
sockets/ports (wccptool.twin.hub) and drives fpga/twin/twin_top.v around fpga_core.

Python wakes up once per loop iteration, never per clock: frames and SPI transactions go
through the wrapper's memories (see twin_top.v). The loop keeps simulated time in step
with the wall clock while idle, so the watchdog (CLK_PER_US cycles per "microsecond")
expires in wall time when the firmware stops.
"""
import json
import os
import time

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import Timer

from wccptool.twin.hub import Hub, write_ready

CLK_NS = 8
SLOT_WORDS = 400                 # twin_top.v: 1600-byte frame slots
QUIET_CYCLES = 3000         # no port activity for this long after the last frame = processed
MAX_SLICE = 5000            # longest idle advance (cycles) before looking at the sockets again
MAX_DEBT_S = 0.5            # sim lagging the wall clock by more than this: forget the debt


def _int(v):
    """Value of a signal/memory word; X/Z bits (unwritten memory on Icarus) read as 0."""
    try:
        return int(v)
    except ValueError:
        return int("".join(c if c in "01" else "0" for c in str(v)), 2)


class _Port:
    def __init__(self, dut, p, nslot):
        self.p = p
        self.nslot = nslot
        self.inj = getattr(dut, "inj%d" % p)
        self.cap = getattr(dut, "cap%d" % p)
        self.head_sig = getattr(dut, "in%d_head" % p)
        self.tail_sig = getattr(dut, "in%d_tail" % p)
        self.cap_head_sig = getattr(dut, "cap%d_head" % p)
        self.cap_tail_sig = getattr(dut, "cap%d_tail" % p)
        self.cap_drop_sig = getattr(dut, "cap%d_drop" % p)
        self.head = 0
        self.cap_tail = 0
        self.head_sig.value = 0
        self.cap_tail_sig.value = 0
        self._inj_mem = {}
        self._inj_len = {}
        self._cap_mem = {}
        self._cap_len = {}

    def _h(self, cache, arr, i):
        h = cache.get(i)
        if h is None:
            h = cache[i] = arr[i]
        return h

    def tail(self):
        return int(self.tail_sig.value)

    def free(self):
        return self.nslot - ((self.head - self.tail()) & 0xFFFF)

    def busy(self):
        return self.head != self.tail()

    def load(self, frame):
        # A frame longer than a slot is sent as its first SLOT_WORDS * 4 bytes: that is still
        # longer than the longest frame the receive MAC takes (wccp_mac_rx MAX_LEN, 1522 bytes),
        # so the core drops and counts it as oversize exactly as it would the whole frame.
        n = min(len(frame), SLOT_WORDS * 4)
        slot = self.head % self.nslot
        base = slot * SLOT_WORDS
        b = bytes(frame[:n]) + bytes((-n) % 4)
        for i in range(len(b) // 4):
            self._h(self._inj_mem, self.inj.mem, base + i).value = int.from_bytes(b[4 * i:4 * i + 4], "big")
        self._h(self._inj_len, self.inj.len, slot).value = n
        self.head = (self.head + 1) & 0xFFFF
        self.head_sig.value = self.head

    def drain(self):
        out = []
        head = int(self.cap_head_sig.value)
        while self.cap_tail != head:
            slot = self.cap_tail % self.nslot
            v = _int(self._h(self._cap_len, self.cap.len, slot).value)
            n = v & 0xFFF
            base = slot * SLOT_WORDS
            words = [_int(self._h(self._cap_mem, self.cap.mem, base + i).value) for i in range((n + 3) // 4)]
            data = b"".join(w.to_bytes(4, "big") for w in words)[:n]
            out.append((data, bool(v & 0x8000), bool(v & 0x4000)))
            self.cap_tail = (self.cap_tail + 1) & 0xFFFF
        self.cap_tail_sig.value = self.cap_tail
        return out


class _Spi:
    def __init__(self, dut, half, regbus):
        self.dut = dut
        self.half = half
        self.regbus = regbus
        self.mosi = b""
        dut.bus_mode.value = 1 if regbus else 0
        self.req = 0
        self.client = None
        self.nbytes = 0
        self._tx = {}
        self._rx = {}
        dut.spi_req.value = 0
        dut.spi_len.value = 0

    def start(self, client, mosi):
        n = len(mosi)
        b = bytes(mosi) + bytes((-n) % 4)
        for i in range(len(b) // 4):
            h = self._tx.get(i)
            if h is None:
                h = self._tx[i] = self.dut.spi_tx[i]
            h.value = int.from_bytes(b[4 * i:4 * i + 4], "big")
        self.dut.spi_len.value = n
        self.req = (self.req + 1) & 0xFFFF
        self.dut.spi_req.value = self.req
        self.client = client
        self.nbytes = n
        self.mosi = bytes(mosi)
        self.waited = 0

    def cycles_left(self):
        if self.regbus:
            est = (self.nbytes // 4) * (6 if self.mosi[:1] == b"\x03" else 2) + 16
        else:
            est = self.nbytes * 16 * self.half + 4 * self.half + 24
        n = max(16, est - self.waited)
        self.waited += n
        return n

    def done(self):
        return self.client is not None and int(self.dut.spi_ack.value) == self.req

    def result(self):
        n = self.nbytes
        if self.regbus:
            miso = bytearray(n)
            if n >= 9 and self.mosi[0] == 0x03:
                for i in range((n - 5) // 4):
                    h = self._rx.get(i)
                    if h is None:
                        h = self._rx[i] = self.dut.rb_rx[i]
                    miso[5 + 4 * i:9 + 4 * i] = _int(h.value).to_bytes(4, "big")
            c = self.client
            self.client = None
            return c, bytes(miso)
        words = []
        for i in range((n + 3) // 4):
            h = self._rx.get(i)
            if h is None:
                h = self._rx[i] = self.dut.spi_rx[i]
            words.append(_int(h.value))
        c = self.client
        self.client = None
        return c, b"".join(w.to_bytes(4, "big") for w in words)[:n]


@cocotb.test()
async def twin(dut):
    cfg = json.loads(os.environ["WCCP_TWIN_CONFIG"])
    clk_per_us = int(cfg.get("clk_per_us", 125))
    half = int(cfg.get("spi_half", 4))
    nslot = 1 << int(cfg.get("nslot_lg", 5))
    log = dut._log.info if cfg.get("verbose") else (lambda m: None)

    if cfg.get("sim", "verilator") != "icarus":
        Clock(dut.clk, CLK_NS, unit="ns").start()     # GPI clock (C++), no Python per edge
    # (Icarus: generated inside twin_top, TWIN_INTERNAL_CLOCK)
    ports = [_Port(dut, p, nslot) for p in range(2)]
    spi = _Spi(dut, half, cfg.get("bus", "regbus") == "regbus")
    dut.rst.value = 1
    await Timer(20 * CLK_NS, "ns")
    dut.rst.value = 0
    await Timer(10 * CLK_NS, "ns")

    hub = Hub(spi=cfg.get("spi"), frames=cfg.get("frames"), num_ports=2, pcap_in=cfg.get("pcap_in"),
              pcap_out=cfg.get("pcap_out"), taps=cfg.get("taps"), pcap_in_delay=cfg.get("pcap_in_delay", 0),
              spi_log=cfg.get("spi_log"),
              log=dut._log.warning)
    write_ready(cfg.get("ready_file"), {"pid": os.getpid(), "fpga": "rtl", "sim": cfg.get("sim"),
                                         "spi": cfg.get("spi"), "frames": cfg.get("frames")})
    parent = cfg.get("parent_pid")
    cycles_per_s = 1e6 * clk_per_us
    sim_cycles = 0
    wall0 = time.monotonic()
    cyc0 = 0
    quiet = QUIET_CYCLES            # cycles since the last port activity
    last_parent_check = wall0
    tx_bad = 0
    cap_long = 0                # output frames longer than a capture slot (not delivered)
    rate = 100000.0
    while True:
        now = time.monotonic()
        if parent and now - last_parent_check > 0.5:
            last_parent_check = now
            if os.getppid() != parent and not _alive(parent):
                break
        inj_busy = any(p.busy() for p in ports) or any(hub.rx)
        busy = spi.client is not None or inj_busy or bool(hub.spi_queue) or \
            (bool(hub.barriers) and quiet < QUIET_CYCLES)
        debt = (now - wall0) * cycles_per_s - (sim_cycles - cyc0)
        if debt > MAX_DEBT_S * cycles_per_s:
            cyc0 = sim_cycles - int(MAX_DEBT_S * cycles_per_s)
            debt = MAX_DEBT_S * cycles_per_s
        if busy or debt > 0:
            hub.poll(0)
        else:
            hub.poll(min(0.05, -debt / cycles_per_s))
        if hub.stopped:
            break
        # SPI
        if spi.client is None and hub.spi_queue:
            c, mosi = hub.spi_queue.pop(0)
            spi.start(c, mosi)
        # frames in
        for p in ports:
            q = hub.rx[p.p]
            while q and p.free() > 0:
                p.load(q.pop(0))
        # advance
        inj_busy = any(p.busy() for p in ports)
        if spi.client is not None:
            n = spi.cycles_left()
        elif inj_busy:
            n = 400
        elif hub.barriers and quiet < QUIET_CYCLES:
            n = QUIET_CYCLES - quiet
        else:
            debt = (time.monotonic() - wall0) * cycles_per_s - (sim_cycles - cyc0)
            # idle: catch up with the wall clock in slices of at most ~5 ms of wall time
            n = int(min(max(debt, 0), MAX_SLICE, max(100, rate * 0.005)))
        if n > 0:
            t_adv = time.monotonic()
            await Timer(n * CLK_NS, "ns")
            dt = time.monotonic() - t_adv
            if dt > 0 and n >= 100:
                rate = 0.8 * rate + 0.2 * (n / dt)       # simulator speed, cycles per second
            sim_cycles += n
            quiet += n
        # outputs
        for p in ports:
            got = p.drain()
            if got:
                quiet = 0
            for data, er, long in got:
                if long:
                    # longer than a capture slot: only its start was kept, so it is not delivered
                    cap_long += 1
                    log("port %d: output frame longer than the capture's %d-byte slot, not delivered"
                        % (p.p, SLOT_WORDS * 4))
                    continue
                if er:
                    # a stomped frame (cut-through: its input turned out bad after its output
                    # had started): TX_ER and a bad FCS, which every receiver drops
                    tx_bad += 1
                    log("port %d: stomped frame (tx_er) not delivered" % p.p)
                    continue
                hub.tx(p.p, data)
        if any(p.busy() for p in ports):
            quiet = 0
        if spi.client is not None and spi.done():
            c, miso = spi.result()
            hub.spi_reply(c, miso)
        if hub.barriers and quiet >= QUIET_CYCLES and not any(hub.rx) and not any(p.busy() for p in ports):
            for c, token in hub.barriers:
                hub.barrier_done(c, token)
            hub.barriers = []
        drops = sum(int(p.cap_drop_sig.value) for p in ports)
        hub.stats["capture_drops"] = drops
        hub.stats["sim_cycles"] = sim_cycles
        hub.stats["tx_er_frames"] = tx_bad
        hub.stats["capture_too_long"] = cap_long
        hub.stats["sim_rate"] = int(rate)
    hub.close()


def _alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False
