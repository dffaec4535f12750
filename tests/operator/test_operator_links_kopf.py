"""MeshLinks through the running operator (a process, against a REAL API server):
its handlers redeem a new link with a REAL HTTPS redemption server, write the link's status,
and on deletion take the link out of its mesh and delete its credentials Secret.  No router
answers here (tests/operator/test_operator_links_live.py has routers)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any, Dict, Iterator

import pytest
from kubernetes import client

from qdmesh_operator.tls import certs
from tests.kube.controlplane import ControlPlane
from tests.operator.kube_operator import Cluster, eventually, operator_process
from tests.operator.linkparts import RedemptionServer, token_secret

pytestmark = pytest.mark.timeout(180)
IMAGE = "qdmesh/router:0.1.0"


@pytest.fixture(scope="module")
def kube(crds: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """This module's own operator, a process (tests/operator/kube_operator.py)."""
    with operator_process(crds, tmp_path_factory, "links") as cluster:
        yield cluster


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedemptionServer]:
    found = RedemptionServer(tmp_path, remote_mesh="far", endpoints=[("far.example", 55671)],
                             link_ca=certs.new_ca("far link CA"))
    yield found
    found.stop()


def _secret(kube: Cluster, name: str) -> Dict[str, str] | None:
    try:
        data = kube.core.read_namespaced_secret(name, kube.ns).data or {}
    except client.ApiException as e:
        assert e.status == 404
        return None
    return {k: base64.b64decode(v).decode() for k, v in data.items()}


def _redeemed(kube: Cluster, name: str) -> Any:
    return kube.condition("meshlinks", name, "Redeemed")


def test_a_new_link_is_redeemed_and_a_deleted_one_leaves_nothing(kube: Cluster,
                                                                  server: RedemptionServer) -> None:
    kube.create("routermeshes", "RouterMesh", "kl", {"size": 2, "image": IMAGE})
    kube.core.create_namespaced_secret(kube.ns, token_secret("kl-token", server.token().data()))
    kube.create("meshlinks", "MeshLink", "kl-far", {"meshName": "kl", "tokenSecretRef": {"name": "kl-token"}})
    eventually(lambda: _redeemed(kube, "kl-far").get("status") == "True", 60,
               lambda: f"Redeemed: {kube.get('meshlinks', 'kl-far').get('status')}")
    status = kube.get("meshlinks", "kl-far")["status"]
    assert status["remoteMesh"]["name"] == "far" and status["endpoints"] == ["far.example:55671"]
    assert kube.condition("meshlinks", "kl-far", "Connected")["reason"] == "RoutersNotAnswering"
    assert len(server.requests) == 1
    files = eventually(lambda: _secret(kube, "kl-links"), 30, "the mesh's links Secret")
    assert sorted(files) == ["kl-far-ca.crt", "kl-far-tls.crt", "kl-far-tls.key"]
    volumes = kube.apps.read_namespaced_stateful_set("kl", kube.ns).spec.template.spec.volumes
    assert any(v.name == "links" and v.secret.secret_name == "kl-links" and v.secret.optional
               for v in volumes)

    kube.delete("meshlinks", "kl-far")
    eventually(lambda: kube.gone("meshlinks", "kl-far"), 60, "the MeshLink gone")
    eventually(lambda: _secret(kube, "kl-far-credentials") is None, 30, "its credentials Secret deleted")
    eventually(lambda: _secret(kube, "kl-links") == {}, 30, "its files out of the mesh's links Secret")
    assert len(server.requests) == 1


def test_a_refused_token_says_why_on_the_link(kube: Cluster, server: RedemptionServer) -> None:
    kube.create("routermeshes", "RouterMesh", "kr", {"size": 1, "image": IMAGE})
    kube.core.create_namespaced_secret(kube.ns, token_secret("kr-token", server.token("wrong").data()))
    kube.create("meshlinks", "MeshLink", "kr-far", {"meshName": "kr", "tokenSecretRef": {"name": "kr-token"}})
    eventually(lambda: _redeemed(kube, "kr-far").get("reason") == "Refused", 60,
               lambda: f"Refused: {kube.get('meshlinks', 'kr-far').get('status')}")
    assert "code: does not match the grant's (403)" in _redeemed(kube, "kr-far")["message"]
    assert _secret(kube, "kr-far-credentials") is None
