"""wccp_decide_cfg: the decision core's registered copy of the values that depend on
the configuration only. Random configurations; two cycles after a change every output matches
the register map's meaning (slot protocol, any-protocol and port-match flags,
hash / mask assignment flags, primary hash key flags, redirect-list flag and entry count, MTU), and rid_sum completes a real IPv4 header checksum of the GRE outer header."""
import random
import struct

import pytest
import wccp_tb
from wccp import regmap
from wccp.fwdmodel import ip_checksum
from wccp_tb import Clock, ReadOnly, RisingEdge, Timer, cocotb, cocotb_test


def expected(ctrl, svc, flags, mtu):
    svp = [(svc[s] >> 24) & 0xFF for s in range(8)]
    pr0 = [p == 0 for p in svp]
    needp = [(p in (6, 17)) and bool(flags[s] >> 4 & 1) for s, p in enumerate(svp)]
    return svp, pr0, needp, mtu


@cocotb_test
async def test_config_copy(dut):
    rng = random.Random(11)
    cocotb.start_soon(Clock(dut.clk, 8, unit="ns").start())
    for rnd in range(60):
        ctrl = [rng.getrandbits(32) for _ in range(8)]
        # protocols: mostly the interesting ones (any, TCP, UDP), sometimes anything
        svc = [(rng.choice([0, 6, 17, rng.getrandbits(8)]) << 24) | rng.getrandbits(24) for _ in range(8)]
        flags = [rng.getrandbits(32) for _ in range(8)]
        mtu = rng.getrandbits(16)
        rid = rng.getrandbits(32)
        await Timer(1, "ns")
        dut.grp_ctrl.value = sum(v << (32 * s) for s, v in enumerate(ctrl))
        dut.grp_svc.value = sum(v << (32 * s) for s, v in enumerate(svc))
        dut.grp_flags.value = sum(v << (32 * s) for s, v in enumerate(flags))
        dut.mtu.value = mtu
        dut.router_id.value = rid
        for _ in range(2):
            await RisingEdge(dut.clk)
        await ReadOnly()
        svp, pr0, needp, mtu_e = expected(ctrl, svc, flags, mtu)
        got_svp = int(dut.svp.value)
        assert [(got_svp >> (8 * s)) & 0xFF for s in range(8)] == svp, rnd
        assert [bool(int(dut.pr0.value) >> s & 1) for s in range(8)] == pr0, rnd
        assert [bool(int(dut.needp.value) >> s & 1) for s in range(8)] == needp, rnd
        assert int(dut.mtu_r.value) == mtu_e
        # assignment (control bits 2:1, WCCP_ASSIGN_*): hash; mask only with mask sets (10:8)
        hsel = [((ctrl[s] >> 1) & 3) == regmap.ASSIGN_HASH for s in range(8)]
        msel = [((ctrl[s] >> 1) & 3) == regmap.ASSIGN_MASK and ((ctrl[s] >> 8) & 7) != 0 for s in range(8)]
        assert [bool(int(dut.hsel.value) >> s & 1) for s in range(8)] == hsel, rnd
        assert [bool(int(dut.msel.value) >> s & 1) for s in range(8)] == msel, rnd
        # primary hash key flags (flags bits 3:0: source IP, destination IP, ports), 4 per slot
        hkf = int(dut.hkf.value)
        assert [(hkf >> (4 * s)) & 0xF for s in range(8)] == [f & 0xF for f in flags], rnd
        # Pearson hash (GROUP_FLAGS_PEARSON, bit 16), one per slot
        assert [bool(int(dut.psel.value) >> s & 1) for s in range(8)] == \
            [bool(f & regmap.GROUP_FLAGS_PEARSON) for f in flags], rnd
        # redirect-list: NUM_ACL (GROUP_CTRL [27:24]) not 0, and its value with 9..15 as 8
        nacl = [(c >> regmap.GROUP_CTRL_NUM_ACL_SHIFT) & 0xF for c in ctrl]
        assert [bool(int(dut.acl.value) >> s & 1) for s in range(8)] == [n != 0 for n in nacl], rnd
        assert [(int(dut.nacl.value) >> (4 * s)) & 0xF for s in range(8)] == \
            [min(n, regmap.MAX_ACL_ENTRIES) for n in nacl], rnd
        # rid_sum + total length + cache address, folded and inverted, is the checksum of the
        # outer header the builder sends (4500, DF, TTL 64, protocol 47, router ID -> cache)
        rid_sum = int(dut.rid_sum.value)
        for _ in range(4):
            tl = rng.randrange(20, 1 << 16)
            cip = rng.getrandbits(32)
            s = rid_sum + tl + (cip >> 16) + (cip & 0xFFFF)
            while s >> 16:
                s = (s & 0xFFFF) + (s >> 16)
            hdr = struct.pack("!BBHHHBBHII", 0x45, 0, tl, 0, 0x4000, 64, 47, 0, rid, cip)
            assert (~s & 0xFFFF) == ip_checksum(hdr), (rnd, hex(rid), tl, hex(cip))


@pytest.mark.parametrize("sim", wccp_tb.SIMULATORS)
def test_wccp_decide_cfg(sim):
    wccp_tb.run_sim(sim, "wccp_decide_cfg", __file__, sources=[wccp_tb.RTL / "wccp_decide_cfg.v"])
