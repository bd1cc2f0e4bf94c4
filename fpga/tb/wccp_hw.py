"""cocotb-side access to fpga_core: register bus (testbench shortcut), SPI master, and a
table programmer that mirrors ForwardingModel's DataPlane calls onto the register map."""
from cocotb.triggers import ReadOnly, RisingEdge, Timer
from wccp import dataplane
from wccp import regmap as R
from wccp.fpga import method_word


def _mac_int(mac):
    return int.from_bytes(bytes(mac), "big") if mac else 0


class RegBus:
    """The dbg_reg_* port of fpga_core (same register interface the SPI slave drives)."""

    def __init__(self, dut):
        self.dut = dut
        self.clk = dut.clk
        dut.dbg_reg_wr.value = 0
        dut.dbg_reg_rd.value = 0
        dut.dbg_reg_addr.value = 0
        dut.dbg_reg_wdata.value = 0

    async def write(self, addr, data):
        await RisingEdge(self.clk)
        self.dut.dbg_reg_addr.value = addr
        self.dut.dbg_reg_wdata.value = data & 0xFFFFFFFF
        self.dut.dbg_reg_wr.value = 1
        await RisingEdge(self.clk)
        self.dut.dbg_reg_wr.value = 0

    async def read(self, addr):
        await RisingEdge(self.clk)
        self.dut.dbg_reg_addr.value = addr
        self.dut.dbg_reg_rd.value = 1
        await RisingEdge(self.clk)
        self.dut.dbg_reg_rd.value = 0
        for _ in range(4096):     # counter RAMs answer late while clearing after reset
            await ReadOnly()
            if int(self.dut.dbg_reg_rvalid.value):
                v = int(self.dut.dbg_reg_rdata.value)
                await RisingEdge(self.clk)
                return v
            await RisingEdge(self.clk)
        raise AssertionError("register read 0x%06X: no rvalid" % addr)


class SpiMaster:
    """Bit-banged SPI mode 0 master on spi_sck/spi_cs_n/spi_mosi/spi_miso."""

    def __init__(self, dut, half_period_ns=40):
        self.dut = dut
        self.hp = half_period_ns
        dut.spi_cs_n.value = 1
        dut.spi_sck.value = 0
        dut.spi_mosi.value = 0

    async def _xfer(self, out_bytes):
        d = self.dut
        res = bytearray()
        for b in out_bytes:
            v = 0
            for i in range(8):
                d.spi_mosi.value = (b >> (7 - i)) & 1
                await Timer(self.hp, "ns")
                d.spi_sck.value = 1
                v = (v << 1) | int(d.spi_miso.value)
                await Timer(self.hp, "ns")
                d.spi_sck.value = 0
            res.append(v)
        return bytes(res)

    async def write(self, addr, words):
        self.dut.spi_cs_n.value = 0
        await Timer(self.hp, "ns")
        data = bytes([R.SPI_CMD_WRITE]) + addr.to_bytes(3, "big")
        for w in words:
            data += (w & 0xFFFFFFFF).to_bytes(4, "big")
        await self._xfer(data)
        await Timer(self.hp, "ns")
        self.dut.spi_cs_n.value = 1
        await Timer(4 * self.hp, "ns")

    async def read(self, addr, n=1):
        self.dut.spi_cs_n.value = 0
        await Timer(self.hp, "ns")
        await self._xfer(bytes([R.SPI_CMD_READ]) + addr.to_bytes(3, "big") + b"\x00")
        raw = await self._xfer(b"\x00" * (4 * n))
        await Timer(self.hp, "ns")
        self.dut.spi_cs_n.value = 1
        await Timer(4 * self.hp, "ns")
        return [int.from_bytes(raw[4 * i:4 * i + 4], "big") for i in range(n)]


class HwTables:
    """Programs fpga_core's tables through a register bus, mirroring the model's API."""

    def __init__(self, bus):
        self.bus = bus
        self.ctrl = [{"en": 0, "assign": 0, "nsets": 0, "ncaches": 0} for _ in range(R.MAX_GROUPS)]
        self.shadow_addr = [[] for _ in range(R.MAX_GROUPS)]
        self.pending_loc = []

    async def _ctrl(self, slot):
        c = self.ctrl[slot]
        v = c["en"] | (c["assign"] << 1) | (c["nsets"] << 8) | (c["ncaches"] << 16)
        await self.bus.write(R.GROUP_BASE + slot * R.GROUP_STRIDE + R.GROUP_CTRL, v)

    async def configure(self, router_id, mac, mtu=1500):
        hi, lo = R.mac_words(mac)
        await self.bus.write(R.ROUTER_ID, router_id)
        await self.bus.write(R.MAC_HI, hi)
        await self.bus.write(R.MAC_LO, lo)
        await self.bus.write(R.MTU, mtu)

    async def set_next_hop(self, port, mac):
        hi, lo = R.mac_words(mac or b"\x00" * 6)
        await self.bus.write(R.NEXTHOP_MAC_HI + port * R.NEXTHOP_MAC_HI_STRIDE, hi)
        await self.bus.write(R.NEXTHOP_MAC_LO + port * R.NEXTHOP_MAC_LO_STRIDE, lo)

    async def set_group(self, slot, service):
        sv = dataplane.effective_service(service)
        base = R.GROUP_BASE + slot * R.GROUP_STRIDE
        await self.bus.write(base + R.GROUP_SERVICE, sv["service_type"] | (sv["service_id"] << 8) |
                             (sv["priority"] << 16) | (sv["protocol"] << 24))
        await self.bus.write(base + R.GROUP_FLAGS, sv["service_flags"])
        p = sv["ports"]
        for i in range(4):
            await self.bus.write(base + R.GROUP_PORTS + i, (p[2 * i] << 16) | p[2 * i + 1])
        self.ctrl[slot]["en"] = 1
        await self._ctrl(slot)

    async def set_caches(self, slot, caches):
        caches = dataplane.check_caches(caches)
        base = R.CACHE_BASE + slot * R.CACHE_STRIDE
        old = self.shadow_addr[slot]
        for i, c in enumerate(caches):
            a = base + i * R.CACHE_ADDRESS_STRIDE
            await self.bus.write(a + R.CACHE_ADDRESS, c["address"])
            await self.bus.write(a + R.CACHE_METHOD, method_word(c["forward"], c["ret"]))
            if i >= len(old) or old[i] != c["address"]:
                # new cache at this index: forget the location before the commit
                await self.bus.write(a + R.CACHE_MAC_LO, 0)
                await self.bus.write(a + R.CACHE_MAC_HI, 0)
            if c["mac"] is not None or c["port"] is not None:
                self.pending_loc.append((slot, i, c["mac"], c["port"]))
        self.shadow_addr[slot] = [c["address"] for c in caches]
        self.ctrl[slot]["ncaches"] = len(caches)
        await self._ctrl(slot)

    async def set_cache_location(self, slot, index, mac, port):
        self.pending_loc.append((slot, index, mac, port))

    async def _write_loc(self, slot, index, mac, port):
        a = R.CACHE_BASE + slot * R.CACHE_STRIDE + index * R.CACHE_ADDRESS_STRIDE
        hi, lo = R.mac_words(mac or b"\x00" * 6)
        hi |= (R.CACHE_MAC_KNOWN if mac else 0) | (R.CACHE_PORT_KNOWN if port is not None else 0)
        hi |= ((port or 0) << R.CACHE_PORT_SHIFT)
        await self.bus.write(a + R.CACHE_MAC_LO, lo)
        await self.bus.write(a + R.CACHE_MAC_HI, hi)

    async def set_hash(self, slot, buckets):
        words = R.pack_bytes(bytes(buckets))
        base = R.BUCKET_BASE + slot * R.BUCKET_STRIDE
        for i, w in enumerate(words):
            await self.bus.write(base + i, w)
        self.ctrl[slot]["assign"] = R.ASSIGN_HASH
        self.ctrl[slot]["nsets"] = 0
        await self._ctrl(slot)

    async def set_mask(self, slot, sets):
        sets = dataplane.check_mask(sets)
        for s, (masks, values) in enumerate(sets):
            w0, w1, table = R.compile_mask_set(masks, values)
            b = R.MASKSET_BASE + slot * R.MASKSET_STRIDE
            await self.bus.write(b + R.MASK_BITPOS0 + s * R.MASK_BITPOS0_STRIDE, w0)
            await self.bus.write(b + R.MASK_BITPOS1 + s * R.MASK_BITPOS1_STRIDE, w1)
            t = R.MASKTAB_BASE + slot * R.MASKTAB_STRIDE + s * 32
            for i, w in enumerate(R.pack_bytes(table)):
                await self.bus.write(t + i, w)
        self.ctrl[slot]["assign"] = R.ASSIGN_MASK
        self.ctrl[slot]["nsets"] = len(sets)
        await self._ctrl(slot)

    async def clear_assignment(self, slot):
        self.ctrl[slot]["assign"] = R.ASSIGN_NONE
        self.ctrl[slot]["nsets"] = 0
        await self._ctrl(slot)

    async def clear_group(self, slot):
        self.ctrl[slot] = {"en": 0, "assign": 0, "nsets": 0, "ncaches": 0}
        self.shadow_addr[slot] = []
        await self._ctrl(slot)

    async def commit(self):
        await self.bus.write(R.COMMIT, 1)
        for _ in range(100000):
            st = await self.bus.read(R.STATUS)
            if not st & R.STATUS_COMMIT_BUSY:
                break
        else:
            raise AssertionError("commit never completed")
        for loc in self.pending_loc:
            await self._write_loc(*loc)
        self.pending_loc = []

    async def arm(self, timeout_us):
        await self.bus.write(R.WDT_TIMEOUT, timeout_us)
        await self.bus.write(R.CONTROL, 0)
        await self.bus.write(R.CONTROL, R.CONTROL_REDIRECT_EN)

    async def disarm(self):
        await self.bus.write(R.CONTROL, 0)

    async def heartbeat(self):
        await self.bus.write(R.HEARTBEAT, 1)


class Both:
    """Apply every table call to the model (synchronously) and the hardware (awaited)."""

    def __init__(self, model, hw):
        self.model = model
        self.hw = hw

    def __getattr__(self, name):
        async def call(*args, **kwargs):
            if name in ("arm", "heartbeat"):
                pass
            else:
                getattr(self.model, name)(*args, **kwargs)
            await getattr(self.hw, name)(*args, **kwargs)
        return call
