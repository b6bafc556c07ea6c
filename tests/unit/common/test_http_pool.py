"""The Cinder/Glance adapters' session keeps a connection per concurrent caller.

Regression (attach storm, issue 15): requests' pool of 10 idle connections
per host made the conductor and compute, with dozens of threads calling
Cinder at once, close most connections after one request and open new ones.
"""

import http.server
import threading
from concurrent import futures

from volumesvc.conf import get_conf
from volumesvc.volume import cinder

THREADS = 24


class _Counting(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.connections = 0
        self.lock = threading.Lock()
        self.barrier = threading.Barrier(THREADS, timeout=10)

    def process_request(self, request, client_address):
        with self.lock:
            self.connections += 1
        super().process_request(request, client_address)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        # Every request of a round is in flight at once: one connection each.
        try:
            self.server.barrier.wait()
        except threading.BrokenBarrierError:
            pass
        body = b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_concurrent_requests_reuse_their_connections():
    server = _Counting()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        conf = get_conf(args=[], default_config_files=[])
        session = cinder.CinderAPI(conf)._get_session()
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        with futures.ThreadPoolExecutor(THREADS) as pool:
            for _round in range(3):
                list(pool.map(lambda _: session.get(url, authenticated=False).status_code,
                              range(THREADS)))
        assert server.connections == THREADS
    finally:
        server.shutdown()
        server.server_close()
