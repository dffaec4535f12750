"""An interior and an edge router joined by a mutual-TLS edge connection whose material
changes at run time (qdmesh's sslProfile UPDATE), and clients keeping unsettled messages in
flight up and down the uplink meanwhile: for the live-TLS tests of the router and of the
operator."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Dict, List, Tuple

from qdrouter.tools.management_client import ManagementClient
from tests.edge.edgeproc import Routers
from tests.router.amqpclient import Net, ReceiverLink, SenderLink, msg
from tests.router.routerproc import Router
from tests.security.certs import CertAuthority

PROFILE = "org.apache.qpid.dispatch.sslProfile"
CONNECTION = "org.apache.qpid.dispatch.connection"
WINDOW = 20   # unsettled messages each producer keeps in flight


def tls_profile(directory: Path, name: str = "uplink") -> str:
    return ("sslProfile {\n"
            f"    name: {name}\n"
            f"    certFile: {directory / 'tls.crt'}\n    privateKeyFile: {directory / 'tls.key'}\n"
            f"    caCertFile: {directory / 'ca.pem'}\n}}\n")


def install(directory: Path, files: Dict[str, bytes]) -> None:
    """Replace files as a Secret update does: each written aside, then renamed into place."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        staged = directory / f".{name}.new"
        staged.write_bytes(content)
        os.replace(staged, directory / name)


def leaf(ca: CertAuthority, name: str) -> Dict[str, bytes]:
    cert = ca.issue(name, f"/O=Mesh/CN={name}", ("localhost", "127.0.0.1"))
    return {"tls.crt": cert.cert.read_bytes(), "tls.key": cert.key.read_bytes()}


def update(router: Router, changes: Dict[str, int], name: str = "uplink") -> Dict[str, object]:
    with ManagementClient(router.url, timeout=10) as client:
        return client.update(PROFILE, changes, name=name)


def edge_ordinals(router: Router) -> List[Tuple[str, int]]:
    """(direction, sslProfile ordinal) of the router's edge connections (-1: still in its
    TLS handshake)."""
    with ManagementClient(router.url, timeout=10) as client:
        return sorted((row["dir"], -1 if row["sslProfileOrdinal"] is None else row["sslProfileOrdinal"])
                      for row in client.query(CONNECTION) if row["role"] == "edge")


class Traffic:
    """Producers on both routers sending unsettled messages continuously, each to a consumer
    on the other router: up the uplink and down it."""

    def __init__(self, net: Net, interior: Router, edge: Router) -> None:
        self.net = net
        self.receivers: List[ReceiverLink] = [
            net.connect(interior.url).receiver("up/rotation", credit=WINDOW * 2),
            net.connect(edge.url).receiver("down/rotation", credit=WINDOW * 2)]
        self.senders: List[SenderLink] = [net.connect(edge.url).sender("up/rotation"),
                                          net.connect(interior.url).sender("down/rotation")]

    def run_until(self, done: Callable[[], bool], timeout: float, what: str) -> None:
        def step() -> bool:
            for sender in self.senders:
                if sender.credit > 0 and sender.sent - sender.settled_count() < WINDOW:
                    sender.send(msg({"n": sender.sent}))
            return done()
        self.net.wait(step, timeout, what)

    def received(self) -> int:
        return sum(len(receiver.received) for receiver in self.receivers)

    def each_received(self) -> List[int]:
        return [len(receiver.received) for receiver in self.receivers]

    def grew(self, since: List[int], count: int) -> bool:
        """Each consumer received ``count`` more since ``since`` (an each_received())."""
        return all(now >= then + count for now, then in zip(self.each_received(), since))


def tls_pair(routers: Routers, dirs: Dict[str, Path], edge_profile: str = "uplink") -> Tuple[Router, Router]:
    """Interior "I" and edge "E", each with the TLS files of ``dirs`` (keys "I", "E"), the
    edge's uplink up (mutual TLS, SASL EXTERNAL)."""
    interior = routers.interior(
        "I", extra=tls_profile(dirs["I"]),
        edge_listener={"sslProfile": "uplink", "requireSsl": "true", "saslMechanisms": "EXTERNAL",
                       "authenticatePeer": "true"})
    # localhost: the name the certificates carry, checked (verifyHostname defaults to true).
    edge = routers.edge("E", [interior.ports["edge"]], extra=tls_profile(dirs["E"], edge_profile),
                        connector={"host": "localhost", "sslProfile": edge_profile,
                                   "saslMechanisms": "EXTERNAL"})
    return interior, edge
