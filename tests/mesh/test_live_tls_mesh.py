"""Live TLS on a mesh (qdmesh): a staged CA rotation on three interior routers joined by
mutual-TLS inter-router connections (SASL EXTERNAL, hostnames verified), while producers keep
sending unsettled messages across the mesh. Each step is an sslProfile UPDATE through
management; no router restarts, no message is lost, released or modified
(docs/security.md, "Rotating a CA").

1. The new CA joins every router's caCertFile bundle.
2. Every router gets a leaf certificate from the new CA, with oldestValidOrdinal raised: each
   router replaces its connectors' connections, make-before-break, one at a time.
3. The old CA leaves the bundles (oldestValidOrdinal raised again)."""

from __future__ import annotations

import hashlib
import os
import re
import ssl
import time
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Tuple

import pytest

from qdrouter.tools.management_client import ManagementClient
from tests.mesh.meshproc import Mesh, MeshRouter, Timers, section
from tests.router.amqpclient import Net, ReceiverLink, SenderLink, msg
from tests.router.fixtures import stop_checked
from tests.router.routerproc import free_port
from tests.security.certs import CertAuthority

pytestmark = pytest.mark.qdmesh_only("sslProfile UPDATE is a qdmesh extension: qdrouterd 1.19 refuses it")

PROFILE = "org.apache.qpid.dispatch.sslProfile"
# (connecting router, listening router): a full mesh of three.
EDGES: List[Tuple[str, str]] = [("A", "B"), ("A", "C"), ("B", "C")]
# Every router's sslProfile UPDATE in this order: a router is updated after those it connects
# to, so that the connections it then remakes meet its peers' final material.
UPDATE_ORDER = ["C", "B", "A"]
WINDOW = 20   # unsettled messages each producer keeps in flight


class TlsMeshRouter(MeshRouter):
    """A mesh router whose inter-router connections are mutual TLS with SASL EXTERNAL."""

    def __init__(self, workdir: Path, router_id: str) -> None:
        self.tls_dir = workdir / "tls"
        self.tls_dir.mkdir(parents=True)
        super().__init__(workdir, router_id, Timers())
        self.tls_in: Dict[str, int] = {}       # peer -> port of its inter-router listener here
        self.tls_out: Dict[str, int] = {}      # peer -> port of the peer's listener

    def write_config(self) -> None:
        super().write_config()
        text = section("sslProfile", {"name": "mesh", "certFile": self.tls_dir / "tls.crt",
                                      "privateKeyFile": self.tls_dir / "tls.key",
                                      "caCertFile": self.tls_dir / "ca.pem"})
        for peer, port in self.tls_in.items():
            text += section("listener", {"name": f"ir-from-{peer}", "host": "127.0.0.1", "port": port,
                                         "role": "inter-router", "sslProfile": "mesh", "requireSsl": "true",
                                         "saslMechanisms": "EXTERNAL", "authenticatePeer": "true"})
        for peer, port in self.tls_out.items():
            # localhost: the name the certificates carry, checked (verifyHostname defaults to true).
            text += section("connector", {"name": f"ir-to-{peer}", "host": "localhost", "port": port,
                                          "role": "inter-router", "sslProfile": "mesh",
                                          "saslMechanisms": "EXTERNAL"})
        with self.config_path.open("a") as config:
            config.write(text)


def install(router: TlsMeshRouter, files: Dict[str, bytes]) -> None:
    """Replace files as a Secret update does: each written aside, then renamed into place."""
    for name, content in files.items():
        staged = router.tls_dir / f".{name}.new"
        staged.write_bytes(content)
        os.replace(staged, router.tls_dir / name)


def leaf(ca: CertAuthority, name: str) -> Dict[str, bytes]:
    cert = ca.issue(name, f"/O=Mesh/CN={name}", ("localhost", "127.0.0.1"))
    return {"tls.crt": cert.cert.read_bytes(), "tls.key": cert.key.read_bytes()}


class Traffic:
    """Producers sending unsettled messages continuously; consumers accepting them."""

    def __init__(self, net: Net, mesh: Mesh) -> None:
        self.net = net
        self.senders: List[SenderLink] = []
        self.receivers: List[ReceiverLink] = []
        # A to consumers on B and C (balanced), and B to a consumer on A.
        for consumer_at, address in (("B", "balanced/rotation"), ("C", "balanced/rotation"),
                                     ("A", "closest/back")):
            self.receivers.append(net.connect(mesh[consumer_at].url).receiver(address, credit=WINDOW * 2))
        for producer_at, address in (("A", "balanced/rotation"), ("B", "closest/back")):
            self.senders.append(net.connect(mesh[producer_at].url).sender(address))

    def run_until(self, done: Callable[[], bool], timeout: float, what: str) -> None:
        # ``done`` may ask every router through management (slow on a loaded machine): asked
        # at most every quarter second, so that traffic keeps flowing in between.
        next_check = 0.0

        def step() -> bool:
            nonlocal next_check
            for sender in self.senders:
                while sender.credit > 0 and sender.sent - sender.settled_count() < WINDOW:
                    sender.send(msg({"n": sender.sent}))
            if time.monotonic() < next_check:
                return False
            next_check = time.monotonic() + 0.25
            return done()
        self.net.wait(step, timeout, what)

    def sent(self) -> int:
        return sum(sender.sent for sender in self.senders)

    def received(self) -> int:
        return sum(len(receiver.received) for receiver in self.receivers)


@pytest.fixture
def tls_mesh(tmp_path: Path) -> Iterator[Tuple[Mesh, CertAuthority]]:
    old_ca = CertAuthority(tmp_path / "old-ca", "Old mesh CA")
    routers = {name: TlsMeshRouter(tmp_path / name, name) for name in "ABC"}
    for connecting, listening in EDGES:
        port = free_port()
        routers[listening].tls_in[connecting] = port
        routers[connecting].tls_out[listening] = port
    for name, router in routers.items():
        install(router, {**leaf(old_ca, name), "ca.pem": old_ca.cert.read_bytes()})
        router.write_config()
    mesh = Mesh(routers, [(a, b, 1) for a, b in EDGES], Timers())
    try:
        for name in UPDATE_ORDER:
            routers[name].start()
        mesh.wait_converged(timeout=60)
        yield mesh, old_ca
    finally:
        mesh.close()
        stop_checked(routers.values())


def inter_router_ordinals(router: MeshRouter) -> List[Tuple[str, int]]:
    with ManagementClient(router.url, timeout=10) as client:
        # A connection still in its TLS handshake has no ordinal yet (-1 here).
        return sorted((row["dir"], -1 if row["sslProfileOrdinal"] is None else row["sslProfileOrdinal"])
                      for row in client.query("connection") if row["role"] == "inter-router")


def expected_links(name: str, ordinal: int) -> List[Tuple[str, int]]:
    return sorted([("out", ordinal)] * sum(a == name for a, _ in EDGES)
                  + [("in", ordinal)] * sum(b == name for _, b in EDGES))


def fingerprint(cert: Path) -> str:
    return hashlib.sha256(ssl.PEM_cert_to_DER_cert(cert.read_text())).hexdigest()


def update(router: MeshRouter, changes: Dict[str, int]) -> Dict[str, object]:
    with ManagementClient(router.url, timeout=10) as client:
        return client.update(PROFILE, changes, name="mesh")


def test_staged_ca_rotation_loses_nothing(tls_mesh: Tuple[Mesh, CertAuthority], net: Net,
                                          tmp_path: Path) -> None:
    mesh, old_ca = tls_mesh
    new_ca = CertAuthority(tmp_path / "new-ca", "New mesh CA")
    pids = {name: mesh[name].pid for name in "ABC"}
    traffic = Traffic(net, mesh)
    traffic.run_until(lambda: traffic.received() >= 100, 60, "traffic across the mesh")

    def all_at(ordinal: int) -> bool:
        return all(inter_router_ordinals(mesh[name]) == expected_links(name, ordinal) for name in "ABC")

    # 1. Trust both CAs.
    bundle = old_ca.cert.read_bytes() + new_ca.cert.read_bytes()
    for name in UPDATE_ORDER:
        install(mesh[name], {"ca.pem": bundle})
        assert update(mesh[name], {"ordinal": 1})["ordinal"] == 1
    traffic.run_until(lambda: traffic.received() >= 200, 60, "traffic after the CA bundle update")
    # 2. Leaf certificates from the new CA; connections made with older material are replaced.
    before_replacing = traffic.received()
    for name in UPDATE_ORDER:
        install(mesh[name], leaf(new_ca, name))
        update(mesh[name], {"ordinal": 2, "oldestValidOrdinal": 2})
    traffic.run_until(lambda: all_at(2), 120, "every inter-router connection remade with ordinal 2")
    # 3. The old CA is no longer trusted.
    for name in UPDATE_ORDER:
        install(mesh[name], {"ca.pem": new_ca.cert.read_bytes()})
        update(mesh[name], {"ordinal": 3, "oldestValidOrdinal": 3})
    traffic.run_until(lambda: all_at(3), 120, "every inter-router connection remade with ordinal 3")
    # The traffic went on while connections were replaced (not only before and after).
    assert traffic.received() > before_replacing + 100
    sent_during_rotation = traffic.sent()
    traffic.run_until(lambda: traffic.received() >= sent_during_rotation + 100, 60, "traffic afterwards")

    # Every message sent is accepted, once; nothing released, modified or lost.
    for sender in traffic.senders:
        net.wait(sender.all_settled, 30, "every message settled")
        assert sender.outcome_counts() == {"accepted": sender.sent}, sender.outcome_counts()
    assert traffic.received() == traffic.sent()
    for receiver in traffic.receivers:
        numbers = [rec.message.body["n"] for rec in receiver.received]
        assert len(numbers) == len(set(numbers)), "a message arrived twice"
    # The same processes throughout, and no router ever lost a neighbour.
    assert {name: mesh[name].pid for name in "ABC"} == pids
    assert all(mesh[name].is_running() for name in "ABC")
    for name in "ABC":
        log = mesh[name].stderr_text()
        lost = re.findall(r"Neighbour \S+ lost", log)
        assert lost == [], f"{name}: {lost}"
        # One connection at a time: each replacement finished before the next began.
        steps = re.findall(r"replacing connection (\d+) |connection (\d+) replaced", log)
        assert len(steps) == 2 * 2 * sum(a == name for a, _ in EDGES), steps
        for begun, done in zip(steps[::2], steps[1::2]):
            assert begun[0] and done[1] == begun[0], steps
        with ManagementClient(mesh[name].url, timeout=10) as client:
            state = client.read(PROFILE, name="mesh")
        assert (state["ordinal"], state["oldestValidOrdinal"]) == (3, 3)
        assert state["certificateSha256"] == fingerprint(mesh[name].tls_dir / "tls.crt")
