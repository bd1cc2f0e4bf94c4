"""Network namespaces around the twin's TAP ports: real Linux hosts on both sides of the
simulated FPGA (root only).

    topo = Topology(prefix="wccp")        # namespaces wccp-p0 / wccp-p1, TAPs wccp-t0 / wccp-t1
    tw = twin.start(fpga="rtl", netns=topo)
    topo.run(0, ["ping", "-c", "3", "10.61.0.2"])    # host on port 0 pings the host on port 1
    tw.stop()                             # removes the namespaces

The twin creates the TAP devices (it holds their file descriptors); ``up()`` then moves each
into its namespace, gives it an address and brings it up. Port p's TAP is the wire of FPGA
port p: frames Linux sends there enter the FPGA on port p, frames the FPGA sends on port p
arrive in that namespace. Both namespaces share one subnet (the FPGA is a bump in the wire).
"""
import subprocess


class NetnsError(RuntimeError):
    pass


def _ip(*args, check=True):
    r = subprocess.run(["ip"] + list(args), capture_output=True, text=True)
    if check and r.returncode != 0:
        raise NetnsError("ip %s: %s" % (" ".join(args), (r.stderr or r.stdout).strip()))
    return r


class Topology:
    def __init__(self, prefix="wccp", addresses=("10.61.0.1/24", "10.61.0.2/24"), macs=None):
        if len(prefix) > 9:
            raise ValueError("namespace prefix too long (at most 9 characters)")
        self.prefix = prefix
        self.addresses = list(addresses)
        self.macs = list(macs) if macs else ["02:61:00:00:00:01", "02:61:00:00:00:02"]
        self.namespaces = ["%s-p0" % prefix, "%s-p1" % prefix]
        self.taps = ["%s-t0" % prefix, "%s-t1" % prefix]
        self.is_up = False

    def tap_names(self):
        return {0: self.taps[0], 1: self.taps[1]}

    def address(self, port):
        return self.addresses[port].split("/")[0]

    def up(self):
        for ns in self.namespaces:
            _ip("netns", "del", ns, check=False)
            _ip("netns", "add", ns)
        self.is_up = True
        for p in range(2):
            ns, tap = self.namespaces[p], self.taps[p]
            _ip("link", "set", "dev", tap, "netns", ns)
            _ip("-n", ns, "link", "set", "dev", tap, "address", self.macs[p])
            _ip("-n", ns, "addr", "add", self.addresses[p], "dev", tap)
            _ip("-n", ns, "link", "set", "dev", tap, "up")
            _ip("-n", ns, "link", "set", "dev", "lo", "up")

    def down(self):
        if not self.is_up:
            return
        for ns in self.namespaces:
            _ip("netns", "del", ns, check=False)
        self.is_up = False

    def cmd(self, port, argv):
        return ["ip", "netns", "exec", self.namespaces[port]] + list(argv)

    def run(self, port, argv, timeout=30, **kw):
        return subprocess.run(self.cmd(port, argv), capture_output=True, text=True, timeout=timeout, **kw)

    def describe(self):
        return "namespaces %s (%s on %s, port 0) and %s (%s on %s, port 1): ip netns exec %s ping %s" % (
            self.namespaces[0], self.addresses[0], self.taps[0], self.namespaces[1], self.addresses[1],
            self.taps[1], self.namespaces[0], self.address(1))
