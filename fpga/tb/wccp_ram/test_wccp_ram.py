"""wccp_ram: simple dual-port RAM, read data exactly 2 + RD_REG cycles after the address, zero
initialised, a read of the address written in the same cycle returns the new word, random traffic against a model."""
import os
import random

import pytest
import wccp_tb
from wccp_tb import Clock, ReadOnly, RisingEdge, Timer, cocotb, cocotb_test

AW, DW = 6, 12



@cocotb_test
async def test_random(dut):
    rng = random.Random(1)
    cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start())
    dut.wr_en.value = 0
    dut.wr_addr.value = 0
    dut.wr_data.value = 0
    dut.rd_addr.value = 0
    mem = [0] * (1 << AW)
    exp = []                 # expected rd_data per cycle (pipeline)
    lat = 2 + int(os.environ["RD_REG"])     # the RAM's address and output registers (+ fabric)
    for cyc in range(2000):
        await RisingEdge(dut.clk)
        await ReadOnly()
        if len(exp) >= lat:   # address set lat edges ago
            assert int(dut.rd_data.value) == exp[-lat], (cyc, lat, int(dut.rd_data.value), exp[-lat])
        await Timer(1, "ns")
        ra = rng.randrange(1 << AW)
        dut.rd_addr.value = ra
        if rng.random() < 0.5:
            wa = ra if rng.random() < 0.2 else rng.randrange(1 << AW)
            wd = rng.randrange(1 << DW)
            dut.wr_en.value, dut.wr_addr.value, dut.wr_data.value = 1, wa, wd
            mem[wa] = wd
        else:
            dut.wr_en.value = 0
        exp.append(mem[ra])          # a read of the address written this cycle sees the new data


@pytest.mark.parametrize("rd_reg", [0, 1])
@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_ram(sim, rd_reg):
    wccp_tb.run_sim(sim, "wccp_ram", __file__, sources=[wccp_tb.RTL / "wccp_ram.v", wccp_tb.RTL / "wccp_bram.v"],
                    parameters={"AW": AW, "DW": DW, "RD_REG": rd_reg}, extra_env={"RD_REG": str(rd_reg)},
                    tag="rd%d" % rd_reg)
