"""`qdmesh console`: a read-only web console of a mesh (static pages + a JSON API polled by
the pages), served by the standard library's threading HTTP server."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, Tuple
from urllib.parse import parse_qs, urlsplit

from .collector import MeshCollector

STATIC = Path(__file__).resolve().parent / "static"
PAGES = {"/": "index.html", "/index.html": "index.html", "/router": "router.html",
         "/router.html": "router.html"}
CONTENT_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                 ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
log = logging.getLogger("qdmesh.console")


def make_handler(collector: MeshCollector) -> type:
    class ConsoleHandler(BaseHTTPRequestHandler):
        server_version = "qdmesh-console"

        def do_GET(self) -> None:
            self._answer(send_body=True)

        def do_HEAD(self) -> None:
            self._answer(send_body=False)

        def _refuse(self) -> None:
            self._send(405, "text/plain; charset=utf-8", b"the console is read-only: GET or HEAD only\n",
                       True, {"Allow": "GET, HEAD"})

        do_POST = do_PUT = do_DELETE = do_PATCH = _refuse

        def _answer(self, send_body: bool) -> None:
            parts = urlsplit(self.path)
            status, content_type, body = route(collector, parts.path, parse_qs(parts.query))
            self._send(status, content_type, body, send_body)

        def _send(self, status: int, content_type: str, body: bytes, send_body: bool,
                  headers: Dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Content-Security-Policy", "default-src 'self'")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            if send_body:
                self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("%s " + format, self.address_string(), *args)

    return ConsoleHandler


def route(collector: MeshCollector, path: str, query: Dict[str, Any]) -> Tuple[int, str, bytes]:
    """(status, content type, body) for one GET."""
    if path == "/api/mesh":
        return 200, "application/json", json.dumps(collector.mesh_view()).encode()
    if path == "/api/router":
        router_id = (query.get("id") or [""])[0]
        view = collector.router_view(router_id)
        if view is None:
            message = {"error": f"no router {router_id!r} in the mesh (yet)"}
            return 404, "application/json", json.dumps(message).encode()
        return 200, "application/json", json.dumps(view).encode()
    name = PAGES.get(path)
    if name is None and path.startswith("/static/"):
        name = path[len("/static/"):]
    files = {entry.name: entry for entry in STATIC.iterdir()}
    if name is None or name not in files:  # only the files shipped, never a path built from input
        return 404, "text/plain; charset=utf-8", f"no page at {path}\n".encode()
    content_type = CONTENT_TYPES.get(files[name].suffix, "application/octet-stream")
    return 200, content_type, files[name].read_bytes()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--router", required=True, metavar="HOST:PORT",
                        help="any router of the mesh (its normal AMQP listener)")
    parser.add_argument("--port", type=int, default=8080, help="HTTP port of the console (default 8080)")
    parser.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1)")
    parser.add_argument("--interval", type=float, default=2.0,
                        help="seconds between polls of the mesh (default 2)")
    parser.add_argument("--timeout", type=float, default=3.0,
                        help="seconds to wait for one router's answer (default 3)")


def check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if not 0 <= args.port <= 65535:
        parser.error(f"--port must be between 0 and 65535: {args.port}")
    if args.interval <= 0:
        parser.error(f"--interval must be > 0 seconds, not {args.interval:g}")
    if args.timeout <= 0:
        parser.error(f"--timeout must be > 0 seconds, not {args.timeout:g}")
    if not args.router or args.router.startswith("-"):
        parser.error(f"--router must be HOST:PORT of a router: {args.router!r}")


class BackgroundConsole:
    """The console served from threads of the calling process (``qdmesh local --console-port``);
    raises OSError when it cannot listen."""

    def __init__(self, router: str, host: str, port: int, interval: float = 2.0,
                 timeout: float = 3.0) -> None:
        self.collector = MeshCollector(router, interval, timeout)
        self.httpd = ThreadingHTTPServer((host, port), make_handler(self.collector))
        self.httpd.daemon_threads = True
        self.port = int(self.httpd.server_address[1])
        self.collector.start()
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="console-http", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.collector.stop()


def run_console(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="qdmesh console: %(message)s")
    collector = MeshCollector(args.router, args.interval, args.timeout)
    try:
        httpd = ThreadingHTTPServer((args.host, args.port), make_handler(collector))
    except OSError as error:
        print(f"qdmesh: error: console: cannot serve on {args.host}:{args.port}: {error.strerror}",
              file=sys.stderr, flush=True)
        return 1
    httpd.daemon_threads = True
    host, port = args.host, int(httpd.server_address[1])
    collector.start()
    stopping = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        if not stopping.is_set():
            stopping.set()
            threading.Thread(target=httpd.shutdown, daemon=True).start()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    print(f"qdmesh console: http://{host}:{port}/ (mesh read through {args.router}; Ctrl-C stops)",
          flush=True)
    try:
        httpd.serve_forever(poll_interval=0.2)
    finally:
        httpd.server_close()
        collector.stop()
    return 0
