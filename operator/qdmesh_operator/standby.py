"""A standby replica's health endpoint: while it waits for the Lease (leader.py), kopf is not
running, so nothing would answer the kubelet's probes on the health port and the pod would be
restarted over and over. This answers GET /healthz until the replica becomes the leader, then
frees the port for kopf's own endpoint."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator


class _Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        found = self.path.split("?", 1)[0] == "/healthz"
        body = b"standby: waiting for the leader's Lease\n" if found else b"not found\n"
        self.send_response(200 if found else 404)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass  # a probe every few seconds is not news


@contextmanager
def standby_health(port: int) -> Iterator[None]:
    """Serves GET /healthz on ``port`` (none when 0) for the duration of the block."""
    if not port:
        yield
        return
    server = ThreadingHTTPServer(("0.0.0.0", port), _Health)
    thread = threading.Thread(target=server.serve_forever, name="standby-health", daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
