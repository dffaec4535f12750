"""Parts of the MeshAccessGrant tests (test_operator_grants.py): the kubelet the test plays,
the accepting cluster, real HTTPS redemptions, and routers of "another cluster" linked with
what a redemption gave them."""

from __future__ import annotations

import base64
import json
import ssl
import threading
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Dict, List, Tuple

from proton import Message
from proton.utils import BlockingConnection

from qdmesh_operator.linking.wire import RedeemRequest, RedeemResponse, Token
from qdmesh_operator.model.entities import Entity
from qdrouter.tools.management_client import ManagementClient
from tests.operator.kube_operator import Cluster, eventually
from tests.operator.test_operator_live_tls import Mount
from tests.operator.test_operator_managed_tls_mesh import interior, section
from tests.router.routerproc import Router

MESH = "accept"
LINK_LISTENER = "qdmesh/linkListener/link"


def secret_data(kube: Cluster, name: str) -> Dict[str, bytes]:
    data = kube.core.read_namespaced_secret(name, kube.ns).data or {}
    return {k: base64.b64decode(v) for k, v in data.items()}


class Kubelet:
    """Copies a Secret into a mount directory each time it changes, as the kubelet does."""

    def __init__(self, kube: Cluster, secret: str, mount: Mount) -> None:
        self.kube, self.secret, self.mount = kube, secret, mount
        self.last: Dict[str, bytes] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sync(self) -> None:
        data = secret_data(self.kube, self.secret)
        if data != self.last:
            self.mount.sync(data)
            self.last = data

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            try:
                self.sync()
            except Exception:  # the API server busy for a moment: the next turn copies it
                continue

    def start(self) -> Kubelet:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


class Accepting:
    """The accepting cluster: its operator, its RouterMesh (one router) and the token URLs."""

    def __init__(self, kube: Cluster, router: Router, server_port: int, link_port: int,
                 metrics_port: int, edge_port: int) -> None:
        self.kube, self.router, self.server_port, self.link_port = kube, router, server_port, link_port
        self.metrics_port, self.edge_port = metrics_port, edge_port

    def grant(self, name: str, **spec: Any) -> Token:
        self.kube.create("meshaccessgrants", "MeshAccessGrant", name, {"meshName": MESH, **spec})
        data = eventually(lambda: secret_data(self.kube, f"{name}-token"), 30, f"the token Secret of {name}")
        token = Token.from_data({k: v.decode() for k, v in data.items()})
        assert token.url == f"https://localhost:{self.server_port}/grants/{self.kube.ns}/{name}"
        return token


def post(token: Token, body: bytes | Dict[str, Any]) -> Tuple[int, Dict[str, Any]]:
    """A real HTTPS POST to the token's URL, verifying the server with the token's CA."""
    context = ssl.create_default_context(cadata=token.ca_pem)
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(token.url, data=raw, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def request(token: Token, link: str, mesh: str, code: str | None = None,
            roles: Tuple[str, ...] = ("inter-router",)) -> Dict[str, Any]:
    return RedeemRequest(code=token.code if code is None else code, link_name=link, namespace="elsewhere",
                         mesh_name=mesh, router_ids=(f"{mesh}-0",), roles=roles).to_json()


def _link_sections(tmp_path: Path, answer: RedeemResponse, router_id: str, role: str) -> str:
    """The issued certificate in an sslProfile, a connector of ``role`` to the first endpoint."""
    directory = tmp_path / f"{router_id}-link"
    directory.mkdir()
    for key, text in (("ca.crt", answer.ca_pem), ("tls.crt", answer.cert_pem), ("tls.key", answer.key_pem)):
        (directory / key).write_text(text)
    profile = Entity("sslProfile", "link", {"name": "link", "caCertFile": str(directory / "ca.crt"),
                                            "certFile": str(directory / "tls.crt"),
                                            "privateKeyFile": str(directory / "tls.key")})
    endpoint = answer.endpoints[0]
    attrs: Dict[str, Any] = {"name": "to-accept", "host": endpoint.host, "port": str(endpoint.port),
                             "role": role, "sslProfile": "link", "saslMechanisms": "EXTERNAL",
                             "verifyHostname": True}
    if role == "inter-router":
        attrs["cost"] = 10
    return section(profile) + section(Entity("connector", "to-accept", attrs))


def linking_router(tmp_path: Path, answer: RedeemResponse, router_id: str, started: List[Router]) -> Router:
    """A router of the other cluster's mesh, linked as its operator would link it: the issued
    certificate in an sslProfile, an inter-router connector to the first endpoint."""
    return interior(tmp_path, router_id, _link_sections(tmp_path, answer, router_id, "inter-router"), started)


def edge_router(tmp_path: Path, answer: RedeemResponse, router_id: str, started: List[Router]) -> Router:
    """An edge router of the other cluster, attached with an edge grant's certificate: an edge
    connector to the accepting mesh's edge link listener."""
    workdir = tmp_path / router_id
    workdir.mkdir()
    router = Router(workdir, router_id=router_id)
    router.config_path.write_text(
        f"router {{\n    mode: edge\n    id: {router_id}\n}}\n"
        f"listener {{\n    host: 127.0.0.1\n    port: {router.port}\n    saslMechanisms: ANONYMOUS\n}}\n"
        + _link_sections(tmp_path, answer, router_id, "edge"))
    started.append(router.start())
    return router


def exchange(sender: Router, receiver: Router, address: str) -> None:
    """One message from a client of ``sender`` reaches a client of ``receiver`` (retried while
    the address propagates across the link)."""
    incoming = BlockingConnection(receiver.url, timeout=10)
    outgoing = BlockingConnection(sender.url, timeout=10)
    try:
        recv = incoming.create_receiver(address, credit=10)
        send = outgoing.create_sender(address)
        body = uuid.uuid4().hex

        def one() -> bool:
            try:
                send.send(Message(body=body), timeout=3)
                got = recv.receive(timeout=3)
            except Exception:  # released while the address is unknown there, or a timeout
                return False
            recv.accept()
            return got.body == body

        eventually(one, 60, f"a message from {sender.router_id} to {receiver.router_id} on {address}")
    finally:
        outgoing.close()
        incoming.close()


def inbound_links(router: Router) -> List[str]:
    """The users (certificate subjects) of the inter-router connections the router accepted."""
    return sorted(inbound_connections(router).values())


def inbound_connections(router: Router) -> Dict[str, str]:
    """Those connections' users, by connection identity."""
    with ManagementClient(router.url, timeout=5) as client:
        return {str(r["identity"]): str(r.get("user")) for r in client.query("connection")
                if r.get("role") == "inter-router" and r.get("dir") == "in"}
