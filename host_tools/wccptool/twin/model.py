"""The twin's fast mode: wccp.fwdmodel_regs.ModelRegisterFile + ForwardingModel in place of the RTL,
behind the same sockets and ports (wccptool.twin.hub)."""
import os
import time

from wccp.fwdmodel import ForwardingModel
from wccp.fwdmodel_regs import ModelRegisterFile

from wccptool.twin.hub import Hub, write_ready


def serve(cfg):
    rf = ModelRegisterFile(ForwardingModel())
    hub = Hub(spi=cfg.get("spi"), frames=cfg.get("frames"), num_ports=2, pcap_in=cfg.get("pcap_in"),
              pcap_out=cfg.get("pcap_out"), taps=cfg.get("taps"), pcap_in_delay=cfg.get("pcap_in_delay", 0),
              spi_log=cfg.get("spi_log"))
    write_ready(cfg.get("ready_file"), {"pid": os.getpid(), "fpga": "model", "spi": cfg.get("spi"),
                                         "frames": cfg.get("frames")})
    parent = cfg.get("parent_pid")
    last_check = time.monotonic()
    try:
        while not hub.stopped:
            hub.poll(0 if hub.pending_input() else 0.05)
            for c, mosi in hub.spi_queue:
                hub.spi_reply(c, rf.transaction(mosi))
            hub.spi_queue = []
            for out, data in rf.model.take_sent():      # PKTOUT (active discovery)
                hub.tx(out, data)
            for p in range(hub.num_ports):
                q = hub.rx[p]
                hub.rx[p] = []
                for fr in q:
                    for out, data in rf.model.process(p, fr):
                        hub.tx(out, data)
            for c, token in hub.barriers:
                hub.barrier_done(c, token)
            hub.barriers = []
            now = time.monotonic()
            if parent and now - last_check > 0.5:
                last_check = now
                try:
                    os.kill(parent, 0)
                except OSError:
                    break
    finally:
        hub.close()
