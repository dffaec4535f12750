"""Inter-router TLS with SASL EXTERNAL between qdmesh and the C router (qdrouterd 1.19), each
way: a line Q1 <- C1 <- Q2 (C1 connects to Q1's listener, Q2 to C1's), every listener
requiring TLS and a client certificate from the mesh CA (`authenticatePeer`, EXTERNAL). A
router of either kind with a certificate from another CA cannot join."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Iterator, List

import pytest

from tests.interop.cpeer import CRouter, require_c_router, section
from tests.interop.mixed_topology import AnyRouter, node_ids, query, routes_complete
from tests.mesh.meshproc import MeshRouter, Timers
from tests.ports import free_port
from tests.router.amqpclient import Net, msg, send_and_settle
from tests.security.certs import Cert, CertAuthority

MESH = ["Q1", "C1", "Q2"]
CONNECTION_TYPE = "org.apache.qpid.dispatch.connection"


def tls_profile(cert: Cert, ca: Path) -> str:
    return section("sslProfile", {"name": "mesh", "certFile": cert.cert, "privateKeyFile": cert.key,
                                  "caCertFile": ca})


def tls_listener(port: int) -> str:
    return section("listener", {"host": "127.0.0.1", "port": port, "role": "inter-router",
                                "sslProfile": "mesh", "requireSsl": "true", "saslMechanisms": "EXTERNAL",
                                "authenticatePeer": "true"})


def tls_connector(port: int) -> str:
    # localhost: the certificates name it (proton matches a host name against DNS names).
    return section("connector", {"host": "localhost", "port": port, "role": "inter-router",
                                 "sslProfile": "mesh", "saslMechanisms": "EXTERNAL", "cost": 1})


@pytest.fixture(scope="module")
def mesh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dict[str, AnyRouter]]:
    binary = require_c_router()
    workdir: Path = tmp_path_factory.mktemp("tls")
    ca = CertAuthority(workdir / "ca", "Mesh CA")
    rogue_ca = CertAuthority(workdir / "rogue", "Rogue CA")
    certs = {name: ca.issue(name, f"/O=Mesh/CN={name}", ("localhost", "127.0.0.1")) for name in MESH}
    certs.update({name: rogue_ca.issue(name, f"/O=Mesh/CN={name}", ("localhost", "127.0.0.1"))
                  for name in ("QX", "CX")})
    q1_port, c1_port = free_port(), free_port()
    extra = {
        "Q1": tls_profile(certs["Q1"], ca.cert) + tls_listener(q1_port),
        "C1": tls_profile(certs["C1"], ca.cert) + tls_listener(c1_port) + tls_connector(q1_port),
        "Q2": tls_profile(certs["Q2"], ca.cert) + tls_connector(c1_port),
        # Trusting the mesh CA, but holding certificates the mesh does not trust.
        "CX": tls_profile(certs["CX"], ca.cert) + tls_connector(q1_port),
        "QX": tls_profile(certs["QX"], ca.cert) + tls_connector(c1_port),
    }
    routers: Dict[str, AnyRouter] = {}
    for name in ["Q1", "C1", "Q2", "CX", "QX"]:
        (workdir / name).mkdir()
        if name.startswith("C"):
            routers[name] = CRouter(binary, workdir / name, name, sections=extra[name])
        else:
            q = MeshRouter(workdir / name, name, Timers(), extra_config=extra[name])
            q.write_config()
            routers[name] = q
    started: List[AnyRouter] = []
    try:
        for router in routers.values():
            started.append(router)
            router.start()
        net = Net()
        try:
            net.wait(lambda: all(routes_complete(routers[n], MESH) for n in MESH), 30,
                     "Q1, C1 and Q2 to connect over TLS and learn each other")
        finally:
            net.close()
        yield routers
    finally:
        errors = []
        for router in started:
            if isinstance(router, MeshRouter):
                try:
                    router.stop(check=True)
                except AssertionError as exc:
                    errors.append(str(exc))
            else:
                router.stop()
        assert not errors, "\n\n".join(errors)


def test_messages_cross_tls_links_between_the_kinds(mesh: Dict[str, AnyRouter], net: Net) -> None:
    for producer_at, consumer_at in (("Q2", "Q1"), ("Q1", "Q2")):
        address = f"closest/tls-{producer_at}-{consumer_at}"
        receiver = net.connect(mesh[consumer_at].url).receiver(address)
        sender = net.connect(mesh[producer_at].url).sender(address)
        net.wait(lambda s=sender: s.credit > 0, 30, f"credit on {producer_at}, its consumer known")
        outcomes = send_and_settle(net, sender, [msg(f"over TLS {n}") for n in range(5)], 15)
        assert {o.name for o in outcomes} == {"accepted"}
        net.wait(lambda r=receiver: len(r.received) == 5, 10, f"5 messages at {consumer_at}")


def inter_router_connections(router: AnyRouter) -> List[Dict[str, object]]:
    rows = query(router.url, CONNECTION_TYPE,
                 ["role", "isEncrypted", "sasl", "isAuthenticated", "user", "container"])
    return [r for r in rows if r["role"] == "inter-router"]


def test_each_kind_authenticates_the_other_by_certificate(mesh: Dict[str, AnyRouter]) -> None:
    """The listening side of each link, qdmesh's Q1 and the C router C1, shows its peer's
    connection encrypted and authenticated by SASL EXTERNAL as the certificate's subject."""
    for listener, peer in (("Q1", "C1"), ("C1", "Q2")):
        [row] = [r for r in inter_router_connections(mesh[listener]) if r["container"] == peer]
        assert row["isEncrypted"] is True and row["isAuthenticated"] is True, (listener, row)
        assert str(row["sasl"]).upper() == "EXTERNAL", (listener, row)
        assert "CN=" + peer in str(row["user"]), (listener, row)


def test_a_router_with_a_certificate_of_another_ca_cannot_join(mesh: Dict[str, AnyRouter]) -> None:
    for name in MESH:
        assert node_ids(mesh[name]) == set(MESH), name
        assert all(r["container"] not in ("QX", "CX") for r in inter_router_connections(mesh[name])), name
