"""cocotb-side access to fpga_core: register bus (testbench shortcut), SPI master, and the
firmware's FPGA driver (wccp.fpga) replayed onto either, so that the testbenches program the
RTL with exactly the firmware's register writes."""
from cocotb.triggers import ReadOnly, RisingEdge, Timer
from wccp import regmap as R
from wccp.fpga import FpgaDataPlane
from wccp.transport import RecordingTransport, read_transaction, write_transaction


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
        await self._xfer(bytes(write_transaction(addr, words)))
        await Timer(self.hp, "ns")
        self.dut.spi_cs_n.value = 1
        await Timer(4 * self.hp, "ns")

    async def read(self, addr, n=1):
        self.dut.spi_cs_n.value = 0
        await Timer(self.hp, "ns")
        raw = (await self._xfer(bytes(read_transaction(addr, n))))[5:]
        await Timer(self.hp, "ns")
        self.dut.spi_cs_n.value = 1
        await Timer(4 * self.hp, "ns")
        return [int.from_bytes(raw[4 * i:4 * i + 4], "big") for i in range(n)]


class HwDriver:
    """fpga_core programmed by the firmware's own driver: wccp.fpga.FpgaDataPlane writes into
    a RecordingTransport and every recorded write is replayed, in order, on a register bus
    (RegBus or SpiMaster); after a write to COMMIT the replay waits until STATUS.COMMIT_BUSY
    clears. Every DataPlane call is awaitable here (``await hw.set_caches(...)``) and returns
    the driver's result. The driver's reads see zeros (a commit completes at once on its
    side), or ``rec.read_fn`` when a test sets it. ``on_write(addr, word)`` sees every word
    written (a register-level model kept in step, for instance)."""

    def __init__(self, bus, on_write=None):
        self.bus = bus
        self.on_write = on_write
        self.rec = RecordingTransport()
        self.dp = FpgaDataPlane(self.rec, check_id=False)

    async def flush(self):
        for addr, words in self.rec.take():
            await self._write(addr, words)
            if self.on_write is not None:
                for i, w in enumerate(words):
                    self.on_write(addr + i, w)
            if addr == R.COMMIT:
                for _ in range(100000):
                    if not await self._read(R.STATUS) & R.STATUS_COMMIT_BUSY:
                        break
                else:
                    raise AssertionError("commit never completed")

    async def _write(self, addr, words):
        if isinstance(self.bus, SpiMaster):
            await self.bus.write(addr, words)      # one SPI transaction, as the firmware sends it
        else:
            for i, w in enumerate(words):
                await self.bus.write(addr + i, w)

    async def _read(self, addr):
        if isinstance(self.bus, SpiMaster):
            return (await self.bus.read(addr, 1))[0]
        return await self.bus.read(addr)

    def __getattr__(self, name):
        fn = getattr(self.dp, name)

        async def call(*args, **kwargs):
            r = fn(*args, **kwargs)
            await self.flush()
            return r
        return call


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
