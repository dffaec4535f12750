"""Mode Managed end to end on real router processes: routers configured with the sslProfile,
inter-router listener and inter-router connector the operator renders, and the certificate
files the operator generates, form a mesh over mutual TLS; a router presenting a certificate
from another CA, or none, is refused, and so is a listener whose certificate does not name the
host the connector dialled.

Only host, port and file paths differ from what the operator renders: the routers run on
127.0.0.1, so the routers' certificate here names ``localhost`` (issued by the same function
the operator uses, which in a cluster names ``*.<mesh>-routers.<namespace>.svc``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Dict, Iterator, List

import pytest

from qdmesh_operator.desired.state import INTER_ROUTER_PROFILE, inter_router_connectors
from qdmesh_operator.model.entities import Entity
from qdmesh_operator.render.conf import conf_value, static_sections
from qdmesh_operator.tls import certs
from qdrouter.tools.management_client import ManagementClient
from tests.operator.specs import mesh
from tests.router.routerproc import Router, free_port

pytestmark = pytest.mark.timeout(120)


def section(entity: Entity) -> str:
    lines = [f"{entity.type} {{"] + [f"    {k}: {conf_value(v)}" for k, v in entity.attributes.items()]
    return "\n".join(lines) + "\n}\n"


def write_pair(directory: Path, pair: certs.KeyPair | None, ca_pem: bytes) -> Dict[str, str]:
    """The files of the mounted Secret (tls.crt, tls.key, ca.crt); without ``pair`` no
    certificate at all."""
    directory.mkdir(parents=True)
    (directory / "ca.crt").write_bytes(ca_pem)
    files = {"caCertFile": str(directory / "ca.crt")}
    if pair is not None:
        (directory / "tls.crt").write_bytes(pair.cert_pem)
        (directory / "tls.key").write_bytes(pair.key_pem)
        files.update(certFile=str(directory / "tls.crt"), privateKeyFile=str(directory / "tls.key"))
    return files


class Rendered:
    """The operator's inter-router sections for a default (mode Managed) RouterMesh."""

    def __init__(self) -> None:
        spec = mesh({"size": 2, "image": "qdmesh/router:0.1.0"})
        assert spec.inter_router_tls.mode == "Managed"
        by_type = {e.type: e for e in static_sections(spec)
                   if e.type == "sslProfile" or e.name == "inter-router"}
        self.profile = by_type["sslProfile"]
        self.listener = by_type["listener"]
        (self.connector,) = inter_router_connectors(spec, 1)
        assert self.profile.attributes["name"] == INTER_ROUTER_PROFILE
        assert self.listener.attributes["requireSsl"] is True and self.listener.attributes["authenticatePeer"]
        assert self.connector.attributes["sslProfile"] == INTER_ROUTER_PROFILE

    def profile_with(self, files: Dict[str, str]) -> str:
        attrs = {k: v for k, v in self.profile.attributes.items()
                 if k not in ("caCertFile", "certFile", "privateKeyFile")}
        return section(Entity("sslProfile", INTER_ROUTER_PROFILE, {**attrs, **files}))

    def listener_on(self, port: int) -> str:
        return section(Entity("listener", "inter-router",
                              {**self.listener.attributes, "host": "127.0.0.1", "port": str(port)}))

    def connector_to(self, port: int) -> str:
        return section(Entity("connector", self.connector.name,
                              {**self.connector.attributes, "host": "localhost", "port": str(port)}))


@pytest.fixture
def routers() -> Iterator[List[Router]]:
    started: List[Router] = []
    yield started
    for router in started:
        router.stop(check=True)


def interior(tmp_path: Path, router_id: str, body: str, started: List[Router]) -> Router:
    workdir = tmp_path / router_id
    workdir.mkdir()
    router = Router(workdir, router_id=router_id)
    router.config_path.write_text(
        f"router {{\n    mode: interior\n    id: {router_id}\n}}\n"
        f"listener {{\n    host: 127.0.0.1\n    port: {router.port}\n    saslMechanisms: ANONYMOUS\n}}\n"
        + body)
    started.append(router.start())
    return router


def nodes(router: Router) -> List[str]:
    """The other routers this one has a route to (its own row, next hop "(self)", left out)."""
    with ManagementClient(router.url) as client:
        return sorted(str(row["id"]) for row in client.query("router.node") if row.get("nextHop") != "(self)")


def test_routers_with_the_operators_certificates_mesh_and_strangers_are_refused(
        tmp_path: Path, routers: List[Router]) -> None:
    rendered = Rendered()
    ca = certs.new_ca("demo inter-router CA")
    leaf = certs.issue_leaf(ca, "demo inter-router", dns_names=["localhost"])
    rogue_ca = certs.new_ca("demo inter-router CA")  # same name, different key
    rogue = certs.issue_leaf(rogue_ca, "demo inter-router", dns_names=["localhost"])
    port = free_port()
    a = interior(tmp_path, "A", rendered.profile_with(write_pair(tmp_path / "a-tls", leaf, ca.cert_pem))
                 + rendered.listener_on(port), routers)
    interior(tmp_path, "B", rendered.profile_with(write_pair(tmp_path / "b-tls", leaf, ca.cert_pem))
             + rendered.connector_to(port), routers)
    interior(tmp_path, "C", rendered.profile_with(write_pair(tmp_path / "c-tls", rogue, ca.cert_pem))
             + rendered.connector_to(port), routers)
    interior(tmp_path, "D", rendered.profile_with(write_pair(tmp_path / "d-tls", None, ca.cert_pem))
             + rendered.connector_to(port), routers)
    deadline = time.monotonic() + 20
    while "B" not in nodes(a) and time.monotonic() < deadline:
        time.sleep(0.3)
    time.sleep(3)  # C and D keep retrying meanwhile: give them time to (wrongly) get in
    assert nodes(a) == ["B"]
    with ManagementClient(a.url) as client:
        mesh_rows = [row for row in client.query("connection") if row["role"] == "inter-router"]
    assert len(mesh_rows) == 1, mesh_rows
    assert mesh_rows[0]["ssl"] and mesh_rows[0]["sasl"] == "EXTERNAL" and mesh_rows[0]["isAuthenticated"]
    assert "CN=demo inter-router" in str(mesh_rows[0]["user"])


def test_connector_refuses_a_listener_whose_certificate_names_other_hosts(
        tmp_path: Path, routers: List[Router]) -> None:
    rendered = Rendered()
    ca = certs.new_ca("demo inter-router CA")
    cluster_names = certs.issue_leaf(ca, "demo inter-router",
                                     dns_names=certs.inter_router_dns_names("demo", "messaging"))
    local = certs.issue_leaf(ca, "demo inter-router", dns_names=["localhost"])
    port = free_port()
    a_files = write_pair(tmp_path / "a-tls", cluster_names, ca.cert_pem)
    a = interior(tmp_path, "A", rendered.profile_with(a_files) + rendered.listener_on(port), routers)
    b = interior(tmp_path, "B", rendered.profile_with(write_pair(tmp_path / "b-tls", local, ca.cert_pem))
                 + rendered.connector_to(port), routers)
    time.sleep(4)
    assert nodes(a) == [] and nodes(b) == []
