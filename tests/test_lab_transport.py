"""The firmware's SPI link over a UNIX socket under the MicroPython unix port: what lets
`wccp lab` run the firmware in a network namespace of its own while the twin listens in
another (a UNIX path crosses namespaces). Before the fix, connect() answered EINVAL."""
import subprocess

from wccptool import launch, twin

SNIPPET = """
import sys
sys.path.insert(0, {fw!r})
from wccp import regmap as R
from wccp.transport import SocketTransport
from wccp.fpga import FpgaDataPlane
t = SocketTransport(path={path!r})
print("ID %08x" % t.read(R.ID, 1)[0])
dp = FpgaDataPlane(t)
print("DP", type(dp).__name__)
t.close()
"""


def test_micropython_socket_transport_unix_path(tmp_path):
    path = str(tmp_path / "spi.sock")
    tw = twin.start(fpga="model", spi=path, log_file=str(tmp_path / "twin.log"), ready_timeout=60)
    try:
        src = SNIPPET.format(fw=str(launch.FIRMWARE), path=path)
        r = subprocess.run([launch.find_micropython(), "-c", src], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "ID %08x" % 0x57434350 in r.stdout
        assert "DP FpgaDataPlane" in r.stdout
    finally:
        tw.stop()


def test_micropython_unix_path_too_long_is_a_clear_error(tmp_path):
    src = ("import sys\nsys.path.insert(0, %r)\nfrom wccp.transport import SocketTransport\n"
           "try:\n SocketTransport(path='/' + 'x' * 200)\nexcept ValueError as e:\n print('VE', e)\n"
           % str(launch.FIRMWARE))
    r = subprocess.run([launch.find_micropython(), "-c", src], capture_output=True, text=True, timeout=60)
    assert "VE UNIX socket path" in r.stdout, r.stdout + r.stderr
