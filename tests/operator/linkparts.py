"""The accepting side of a mesh link, as the linking side's tests need it: a REAL HTTPS
redemption server (stdlib http.server and ssl, certificates from the operator's own helpers)
answering linking/wire.py, and the configuration of a REAL router playing the remote mesh,
whose inter-router listener requires a client certificate of the grant's client CA."""

from __future__ import annotations

import base64
import json
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, List, Tuple

from qdmesh_operator.linking.wire import (
    MAX_BODY_BYTES,
    Endpoint,
    RedeemRequest,
    RedeemResponse,
    Token,
    WireError,
    error_body,
)
from qdmesh_operator.tls import certs
from tests.router.routerproc import free_port


class RedemptionServer:
    """Serves ``POST /grants/<ns>/<grant>``: the right code gets a RedeemResponse (a client
    certificate of ``client_ca`` for the link), anything else the wire's error statuses."""

    def __init__(self, tmp: Path, *, remote_mesh: str, endpoints: List[Tuple[str, int]],
                 link_ca: certs.KeyPair, code: str = "s3cret-code", redemptions: int = 1) -> None:
        self.code = code
        self.left = redemptions
        self.requests: List[Dict[str, Any]] = []
        #: When set, every request gets this (status, body) instead (a misbehaving server).
        self.forced: Tuple[int, Any] | None = None
        self.remote_mesh = remote_mesh
        self.endpoints = endpoints
        self.link_ca = link_ca
        self.client_ca = certs.new_ca("grant client CA")
        self.server_ca = certs.new_ca("grant server CA")
        server = certs.issue_leaf(self.server_ca, "redemption server", dns_names=["localhost"])
        (tmp / "srv.crt").write_bytes(server.cert_pem)
        (tmp / "srv.key").write_bytes(server.key_pem)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(tmp / "srv.crt"), str(tmp / "srv.key"))
        self.port = free_port()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                pass

            def do_POST(self) -> None:
                status, body = owner.answer(self.path, self.rfile.read(
                    min(int(self.headers.get("Content-Length") or 0), MAX_BODY_BYTES)))
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def token(self, code: str | None = None) -> Token:
        return Token(url=f"https://localhost:{self.port}/grants/remote/g1", code=code or self.code,
                     ca_pem=self.server_ca.cert_pem.decode())

    def answer(self, path: str, raw: bytes) -> Tuple[int, Any]:
        if self.forced is not None:
            self.requests.append({"forced": True})
            return self.forced
        try:
            request = RedeemRequest.from_json(json.loads(raw))
        except (ValueError, WireError) as e:
            return 400, error_body(e if isinstance(e, WireError) else WireError("body", "not JSON"))
        self.requests.append(request.to_json())
        if path != "/grants/remote/g1":
            return 404, {"error": f"grant {path}: not found"}
        if request.code != self.code:
            return 403, {"error": "code: does not match the grant's"}
        if self.left <= 0:
            return 410, {"error": "redemptionsAllowed: no redemptions left"}
        self.left -= 1
        cn = f"{request.namespace}/{request.link_name}@{request.mesh_name}"
        client = certs.issue_leaf(self.client_ca, cn, dns_names=[cn.replace("/", ".").replace("@", ".")])
        response = RedeemResponse(mesh_name=self.remote_mesh, namespace="remote", role="inter-router",
                                  endpoints=tuple(Endpoint(h, p) for h, p in self.endpoints),
                                  ca_pem=self.link_ca.cert_pem.decode(), cert_pem=client.cert_pem.decode(),
                                  key_pem=client.key_pem.decode(), router_ids=(f"{self.remote_mesh}-0",))
        return 200, response.to_json()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def token_secret(name: str, data: Dict[str, str]) -> Dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"qdmesh.io/access-token": "true"}}, "type": "Opaque",
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


def remote_link_listener(tmp: Path, link_ca: certs.KeyPair, client_ca: certs.KeyPair, port: int) -> str:
    """The remote router's link listener: its certificate from the link CA (naming localhost),
    clients must present a certificate of the grant's client CA."""
    server = certs.issue_leaf(link_ca, "remote link listener", dns_names=["localhost"])
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "tls.crt").write_bytes(server.cert_pem)
    (tmp / "tls.key").write_bytes(server.key_pem)
    (tmp / "ca.crt").write_bytes(client_ca.cert_pem)
    return (f"sslProfile {{\n    name: link-tls\n    certFile: {tmp / 'tls.crt'}\n"
            f"    privateKeyFile: {tmp / 'tls.key'}\n    caCertFile: {tmp / 'ca.crt'}\n}}\n"
            f"listener {{\n    host: 127.0.0.1\n    port: {port}\n    role: inter-router\n"
            f"    sslProfile: link-tls\n    authenticatePeer: yes\n    requireSsl: yes\n"
            f"    saslMechanisms: EXTERNAL\n}}\n")
