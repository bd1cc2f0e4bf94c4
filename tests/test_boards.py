"""Board definitions: structure, pins valid for the MCU part, constraints accepted by nextpnr."""
import copy
import glob
import json
import os
import pathlib

import pytest

from wccptool import boards

ROOT = pathlib.Path(__file__).resolve().parent.parent
ALL = sorted(p.stem for p in (ROOT / "boards").glob("*.json") if p.name != "schema.json")
MCU = [b for b in ALL if json.loads((ROOT / "boards" / (b + ".json")).read_text())["kind"] == "mcu"]
FPGA = [b for b in ALL if b not in MCU]


def test_required_boards_present():
    for b in ("olimex_esp32_poe", "nucleo_f429zi", "w5500_evb_pico", "colorlight_5a75b", "colorlight_i5", "colorlight_i9"):
        assert b in ALL
    drivers = {boards.load(b)["network"]["driver"] for b in MCU}
    assert drivers == {"LAN", "WIZNET5K", "host"}


@pytest.mark.parametrize("name", ALL)
def test_board_valid(name):
    d = boards.load(name, check=False)
    assert d["name"] == name
    assert boards.validate(d) == []


def _mutated(name, fn):
    d = copy.deepcopy(boards.load(name))
    fn(d)
    return boards.validate(d)


def test_validator_rejects_bad_pins():
    # ESP32 flash pin, input-only pin driving PROGRAMN, nonexistent pin, double use
    p = _mutated("olimex_esp32_poe", lambda d: d["fpga_control"].__setitem__("cs", "GPIO7"))
    assert any("reserved" in x for x in p)
    p = _mutated("olimex_esp32_poe", lambda d: d["fpga_control"].__setitem__("programn", "GPIO35"))
    assert any("input-only" in x for x in p)
    p = _mutated("olimex_esp32_poe", lambda d: d["fpga_spi"]["pins"].__setitem__("sck", "GPIO40"))
    assert any("not a pin of esp32" in x for x in p)
    p = _mutated("olimex_esp32_poe", lambda d: d["fpga_control"].__setitem__("cs", "GPIO23"))
    assert any("already used" in x for x in p)
    # STM32: RMII pin PA7 taken by Ethernet; pin beyond port G
    p = _mutated("nucleo_f429zi", lambda d: d["fpga_spi"]["pins"].__setitem__("mosi", "PA7"))
    assert any("already used" in x for x in p)
    p = _mutated("nucleo_f429zi", lambda d: d["fpga_control"].__setitem__("done", "PI3"))
    assert any("not a pin of stm32f4" in x for x in p)
    p = _mutated("w5500_evb_pico", lambda d: d["fpga_control"].__setitem__("done", "GP25"))
    assert any("reserved" in x for x in p)
    p = _mutated("w5500_evb_pico", lambda d: d["network"]["pins"].pop("rst"))
    assert any("network.pins.rst" in x for x in p)


def test_validator_rejects_bad_structure():
    assert boards.validate([]) != []
    p = _mutated("olimex_esp32_poe", lambda d: d.pop("micropython"))
    assert any("micropython" in x for x in p)
    p = _mutated("olimex_esp32_poe", lambda d: d["micropython"].__setitem__("port", "rp2"))
    assert any("does not run on" in x for x in p)
    p = _mutated("olimex_esp32_poe", lambda d: d["micropython"].__setitem__("mpy_version", 5))
    assert any("unsupported" in x for x in p)
    p = _mutated("colorlight_5a75b", lambda d: d["fpga"].__setitem__("package", "CABGA999"))
    assert any("package" in x for x in p)
    p = _mutated("colorlight_5a75b", lambda d: d["fpga"].__setitem__("nextpnr", ["--45k"]))
    assert any("nextpnr" in x for x in p)
    p = _mutated("colorlight_5a75b", lambda d: d.__setitem__("phys", d["phys"][:1]))
    assert any("two Ethernet PHYs" in x for x in p)
    p = _mutated("colorlight_5a75b", lambda d: d["pnr"].__setitem__("core_mhz", 100))
    assert any("pnr.core_mhz" in x for x in p)
    p = _mutated("colorlight_5a75b", lambda d: d["pnr"].__setitem__("seed", "1"))
    assert any("pnr.seed" in x for x in p)
    p = _mutated("colorlight_5a75b", lambda d: d["pnr"].__setitem__("args", "--router router2"))
    assert any("pnr.args" in x and "list" in x for x in p)
    p = _mutated("colorlight_5a75b", lambda d: d["pnr"].__setitem__("args", ["--seed", "3"]))
    assert any("pnr.args" in x and "--seed" in x for x in p)
    assert _mutated("colorlight_5a75b", lambda d: d["pnr"].__setitem__("args", ["--router", "router2"])) == []
    p = _mutated("colorlight_i5", lambda d: d.__setitem__("synth", {"args": ["-top", "x"]}))
    assert any("synth.args" in x and "-nowidelut" in x for x in p)
    p = _mutated("colorlight_i5", lambda d: d.__setitem__("synth", "-nowidelut"))
    assert any("synth.args" in x for x in p)
    assert _mutated("colorlight_5a75b", lambda d: d.__setitem__("synth", {"args": ["-nowidelut", "-dff"]})) == []
    with pytest.raises(boards.BoardError, match="unknown board"):
        boards.load("no_such_board")


def test_validator_checks_fpga_pin_file_and_sources():
    # every ball the definition names must be LOCATEd in its LPF, none twice
    p = _mutated("colorlight_i5", lambda d: d["mcu_link"]["pins"].__setitem__("sck", "A2"))
    assert any("mcu_link.pins.sck" in x and "not LOCATEd" in x for x in p), p
    p = _mutated("colorlight_i5", lambda d: d["phys"][1].__setitem__("rx_clk", "M1"))
    assert any("phys[1].rx_clk" in x for x in p), p
    p = _mutated("colorlight_5a75b", lambda d: d["clock"].__setitem__("pin", "A2"))
    assert any("clock.pin" in x and "not LOCATEd" in x for x in p), p
    p = _mutated("colorlight_i5", lambda d: d.__setitem__("constraints", "boards/colorlight_i5/none.lpf"))
    assert any("missing" in x for x in p), p
    # a list of pin files is read in order: together they place every named ball, once each
    p = _mutated("colorlight_i9", lambda d: d.__setitem__("constraints", ["boards/colorlight_i5/wccp.lpf"]))
    assert p == [], p         # the LED is not a named ball: test_lpf_places_every_port_of_the_board_top
    p = _mutated("colorlight_i9", lambda d: d["constraints"].append("boards/colorlight_i5/led.lpf"))
    assert any("led_n LOCATEd again in boards/colorlight_i5/led.lpf" in x for x in p), p
    p = _mutated("colorlight_i9", lambda d: d.__setitem__("constraints", []))
    assert any("non-empty list" in x for x in p), p
    p = _mutated("colorlight_i9", lambda d: d["constraints"].append("boards/colorlight_i9/led.txt"))
    assert any("not an .lpf file" in x for x in p), p
    # board-only RTL lives outside fpga/rtl/ (read for every board) and defines the top
    p = _mutated("colorlight_i5", lambda d: d["sources"].append("fpga/rtl/wccp_mdio.v"))
    assert any("under fpga/rtl/" in x for x in p), p
    p = _mutated("colorlight_i5", lambda d: d.__setitem__("sources", d["sources"][1:]))
    assert any("top: module 'fpga_colorlight_i5' is not defined" in x for x in p), p
    p = _mutated("colorlight_i5", lambda d: d["sources"].append("boards/colorlight_i5/rtl/none.v"))
    assert any("none.v missing" in x for x in p), p


def test_validator_rejects_a_ball_located_twice(tmp_path, monkeypatch):
    lpf = (ROOT / "boards" / "colorlight_i5" / "wccp.lpf").read_text()
    bad = tmp_path / "twice.lpf"
    bad.write_text(lpf.replace('LOCATE COMP "spi_miso" SITE "B20";', 'LOCATE COMP "spi_miso" SITE "B18";'))
    p = _mutated("colorlight_i5", lambda d: d.__setitem__("constraints", str(bad)))
    assert any("ball B18 LOCATEd for spi_miso, spi_mosi" in x for x in p), p


def _top_ports(fb):
    """{port: width} of an FPGA board's top module, from its Verilog port list."""
    import re
    files = [ROOT / s for s in fb.get("sources", [])] + [ROOT / "fpga" / "rtl" / "fpga.v"]
    for f in files:
        m = re.search(r"^module\s+%s\b.*?\)\s*\(\s*(.*?)\);" % fb["top"], f.read_text(), re.S | re.M)
        if m:
            ports = {}
            for d in re.finditer(r"(input|output|inout)\s+wire\s+(?:\[(\d+):0\]\s*)?(\w+)", m.group(1)):
                ports[d.group(3)] = int(d.group(2)) + 1 if d.group(2) else 1
            return ports
    raise AssertionError("top %s not found" % fb["top"])


@pytest.mark.parametrize("name", FPGA)
def test_lpf_places_every_port_of_the_board_top(name):
    """Each FPGA board's pin file LOCATEs exactly the ports of the top module it is built with."""
    fb = boards.load(name)
    want = set()
    for port, width in _top_ports(fb).items():
        want |= {port} if width == 1 else {"%s[%d]" % (port, i) for i in range(width)}
    assert len(want) > 30
    assert set(boards.lpf_sites(boards.constraint_files(fb))) == want


def test_mcu_boards_name_fpga_board():
    for b in MCU:
        d = boards.load(b)
        if d["micropython"]["port"] == "unix":
            continue
        fb = boards.fpga_board_for(d)
        assert fb["kind"] == "fpga"
        assert fb["mcu_link"]["wired_straight"] is True, (b, fb["name"])


def test_mcu_board_pairs_only_with_an_fpga_board_it_can_reach():
    # the 5A-75B's connector buffers drive outwards only: its SPI inputs need a rework first
    assert boards.load("colorlight_5a75b")["mcu_link"]["wired_straight"] is False
    p = _mutated("w5500_evb_pico", lambda d: d.__setitem__("fpga_board", "colorlight_5a75b"))
    assert any("fpga_board" in x and "wired_straight" in x and "74HC245" in x for x in p), p
    assert _mutated("w5500_evb_pico", lambda d: d.__setitem__("fpga_board", "colorlight_i5")) == []
    # every FPGA board says how its MCU connector is wired
    p = _mutated("colorlight_i9", lambda d: d["mcu_link"].pop("wired_straight"))
    assert "mcu_link.wired_straight: missing" in p, p


def test_fpga_constraints_exist_and_every_pin_file_is_a_boards():
    used = set()
    for b in FPGA:
        for c in boards.constraint_files(boards.load(b)):
            assert os.path.exists(c), "constraints file %s of board %s missing" % (c, b)
            used.add(os.path.realpath(c))
    found = {os.path.realpath(p) for p in glob.glob(str(ROOT / "boards" / "**" / "*.lpf"), recursive=True)}
    assert found - used == set(), "pin files no board reads"


@pytest.mark.slow
@pytest.mark.parametrize("name", FPGA)
def test_lpf_accepted_by_nextpnr(name, tmp_path):
    """Each FPGA board's pin files, as the flow joins them, placed by nextpnr for its device."""
    defn = boards.load(name)
    lpf = boards.constraint_files(defn)
    sites = boards.lpf_sites(lpf)
    assert len(sites) >= 2
    ok, log = boards.nextpnr_check_lpf(lpf, defn, str(tmp_path))
    assert ok, log[-4000:]
    # the two RGMII PHYs' clock balls from the board definition are constrained in the LPF
    used = set(sites.values())
    for phy in defn["phys"]:
        assert phy["rx_clk"] in used, "%s rx clock ball %s not in %s" % (phy["name"], phy["rx_clk"], lpf)
        assert phy["tx_clk"] in used, "%s tx clock ball %s not in %s" % (phy["name"], phy["tx_clk"], lpf)
    assert defn["clock"]["pin"] in used
    for role, ball in defn["mcu_link"]["pins"].items():
        assert ball in used, "mcu_link %s ball %s not in %s" % (role, ball, lpf)


@pytest.mark.slow
def test_nextpnr_rejects_bad_site(tmp_path):
    lpf = tmp_path / "bad.lpf"
    lpf.write_text('LOCATE COMP "a" SITE "P3";\nLOCATE COMP "b" SITE "Z99";\n')
    ok, log = boards.nextpnr_check_lpf(str(lpf), boards.load("colorlight_5a75b"), str(tmp_path / "w"))
    assert not ok
