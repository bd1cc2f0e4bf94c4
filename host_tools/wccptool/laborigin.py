"""The inline lab's origin web server (wccptool.lab): the content it serves and the server
itself (`python -m wccptool.lab origin`, run as `origin_main` inside the origin namespace).
"""
import hashlib
import random
import signal
import sys

BIG_SIZE = 6 * 1024 * 1024


def origin_content():
    """{path: bytes} the origin serves: a small page and a BIG_SIZE pseudo-random file."""
    rng = random.Random(6262)
    page = b"<html><body>wccp lab origin: served by 10.62.0.1</body></html>\n"
    return {"/index.html": page, "/big.bin": rng.randbytes(BIG_SIZE)}


def sha256(data):
    """Hex SHA-256 of data (what the origin answers a POST with)."""
    return hashlib.sha256(data).hexdigest()


def origin_main(argv):
    """http.server's file server, plus POST: answers the SHA-256 and length of the body it read
    (uploads through the redirect are checked byte for byte). Logs every request with the
    client address to stderr."""
    import argparse
    import functools
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    class Handler(SimpleHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            h = hashlib.sha256()
            left = n
            while left:
                chunk = self.rfile.read(min(left, 65536))
                if not chunk:
                    break
                h.update(chunk)
                left -= len(chunk)
            body = ("%s %d\n" % (h.hexdigest(), n - left)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, fmt, *args):
            sys.stderr.write("%s %s\n" % (self.client_address[0], fmt % args))
            sys.stderr.flush()

    ap = argparse.ArgumentParser(prog="python -m wccptool.lab origin")
    ap.add_argument("--port", type=int, default=80)
    ap.add_argument("--bind", default="0.0.0.0")
    ap.add_argument("--dir", required=True)
    a = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    srv = ThreadingHTTPServer((a.bind, a.port), functools.partial(Handler, directory=a.dir))
    srv.daemon_threads = True
    print("origin: http://%s:%d/ serving %s" % (a.bind, a.port, a.dir), file=sys.stderr, flush=True)
    srv.serve_forever()
