"""fpga (board top, pin level) with simulation models of the ECP5 primitives
(fpga/tb/ecp5_sim.v): power-on reset sequencing and PHY reset, SPI register access on the
pins, and a frame received as RGMII on eth0 leaving as RGMII on eth1 exactly as
wccp.fwdmodel.ForwardingModel forwards it (redirection not armed)."""
import random

import pytest
import wccp_tb
from wccp import regmap as R
from wccp.fwdmodel import ForwardingModel
from wccp_hw import SpiMaster
from wccp_tb import Clock, FallingEdge, ReadOnly, RisingEdge, Timer, cocotb, cocotb_test


async def rgmii_send(clk, rxd, ctl, data):
    for b in data:
        await FallingEdge(clk)
        await Timer(2, "ns")
        rxd.value = b & 15
        ctl.value = 1
        await RisingEdge(clk)
        await Timer(2, "ns")
        rxd.value = b >> 4
        ctl.value = 1
    for _ in range(12):
        await FallingEdge(clk)
        await Timer(2, "ns")
        ctl.value = 0
        rxd.value = 0


async def rgmii_collect(txc, txd, ctl, frames):
    """Decode RGMII TX (sampled mid-phase) into frames (preamble/SFD stripped)."""
    cur = None
    while True:
        await RisingEdge(txc)
        await Timer(2, "ns")
        en, lo = int(ctl.value), int(txd.value)
        await FallingEdge(txc)
        await Timer(2, "ns")
        er = int(ctl.value) ^ en
        hi = int(txd.value)
        if en:
            assert not er, "TX_ER on the wire"
            cur = (cur or bytearray())
            cur.append(lo | hi << 4)
        elif cur is not None:
            i = cur.find(b"\xd5")
            assert i >= 1 and set(cur[:i]) == {0x55}, cur[:12].hex()
            frames.append(bytes(cur[i + 1:]))
            cur = None


@cocotb_test
async def test_board_top(dut):
    from wccp_frames import FrameGen, with_fcs
    cocotb.start_soon(Clock(dut.clk25, 8, unit="ns").start())      # PLL model passes it through
    cocotb.start_soon(Clock(dut.eth0_rxc, 8, unit="ns").start(start_high=False))
    cocotb.start_soon(Clock(dut.eth1_rxc, 8, unit="ns").start(start_high=False))
    for p in ("eth0", "eth1"):
        getattr(dut, p + "_rxd").value = 0
        getattr(dut, p + "_rx_ctl").value = 0
    spi = SpiMaster(dut, half_period_ns=25)
    for _ in range(10):
        await RisingEdge(dut.clk25)
    await ReadOnly()
    assert int(dut.phy_rst_n.value) == 0 and int(dut.rst.value) == 1
    # skip most of the 2**17-cycle power-on delay
    await Timer(1, "ns")
    dut.rst_cnt.value = (1 << 16) - 8
    for _ in range(20):
        await RisingEdge(dut.clk25)
    await ReadOnly()
    assert int(dut.phy_rst_n.value) == 1 and int(dut.rst.value) == 1, "PHY out of reset before the core"
    await Timer(1, "ns")
    dut.rst_cnt.value = (1 << 17) - 8
    for _ in range(20):
        await RisingEdge(dut.clk25)
    await ReadOnly()
    assert int(dut.rst.value) == 0 and int(dut.phy_rst_n.value) == 1
    assert int(dut.led_n.value) == 1          # not redirecting
    await Timer(1, "ns")
    # SPI on the pins
    assert await spi.read(R.ID, 2) == [R.ID_VALUE, R.REGMAP_VERSION]
    await spi.write(R.ROUTER_ID, [0x0A000001])
    assert await spi.read(R.ROUTER_ID) == [0x0A000001]
    # a frame in on eth0, out on eth1 unchanged
    got = [[], []]
    cocotb.start_soon(rgmii_collect(dut.eth0_txc, dut.eth0_txd, dut.eth0_tx_ctl, got[0]))
    cocotb.start_soon(rgmii_collect(dut.eth1_txc, dut.eth1_txd, dut.eth1_tx_ctl, got[1]))
    rng = random.Random(1)
    gen = FrameGen(rng, 0x0A000001, [0x0A010001], [b"\x02\xcc\0\0\0\1"], [0])
    model = ForwardingModel()
    exp = [[], []]
    for port in (0, 1, 0):
        f = with_fcs(gen.ip_frame(proto=6, dport=80, plen=(0, 200)))
        for o, data in model.process(port, f, now=0):
            exp[o].append(data)
        rx = (dut.eth0_rxc, dut.eth0_rxd, dut.eth0_rx_ctl) if port == 0 else \
            (dut.eth1_rxc, dut.eth1_rxd, dut.eth1_rx_ctl)
        await rgmii_send(*rx, b"\x55" * 7 + b"\xd5" + f)
    for _ in range(400):
        await RisingEdge(dut.clk25)
    assert exp[1] and exp[0]
    assert got == exp, ([len(x) for x in got[0]], [len(x) for x in got[1]])


@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_fpga(sim):
    # the board top runs the block RAMs as synthesis builds them: DP16KD tiles (ecp5_sim.v)
    wccp_tb.run_sim(sim, "fpga", __file__, sources=wccp_tb.rtl_sources(exclude=()) + [wccp_tb.TB / "ecp5_sim.v"],
                    defines={"WCCP_ECP5_BRAM": 1})
