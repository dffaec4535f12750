"""Redeeming a MeshLink's token: the operator's redeemer against a REAL API server (its token
and credentials Secrets) and a REAL HTTPS redemption server (tests/operator/linkparts.py).
What the user sees is the MeshLink's Redeemed condition and the credentials Secret."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any, Iterator, Tuple

import pytest
from kubernetes import client

from qdmesh_operator.kube.api import KubeApi
from qdmesh_operator.links.credentials import parse_credentials
from qdmesh_operator.links.redeemer import LinkRedeemer
from qdmesh_operator.tls import certs
from tests.kube.controlplane import ControlPlane
from tests.operator.kube_operator import G, V, api_namespace
from tests.operator.linkparts import RedemptionServer, token_secret
from tests.router.routerproc import free_port

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def cluster(crds: ControlPlane) -> Tuple[Any, str]:
    api, ns = api_namespace(crds, "links")
    client.CustomObjectsApi(api).create_namespaced_custom_object(G, V, ns, "routermeshes", {
        "apiVersion": f"{G}/{V}", "kind": "RouterMesh", "metadata": {"name": "near"},
        "spec": {"size": 2, "image": "qdmesh/router:0.1.0"}})
    return api, ns


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedemptionServer]:
    found = RedemptionServer(tmp_path, remote_mesh="far", endpoints=[("localhost", 45999)],
                             link_ca=certs.new_ca("far link CA"))
    yield found
    found.stop()


def _link(api: Any, ns: str, name: str, token: str) -> None:
    client.CustomObjectsApi(api).create_namespaced_custom_object(G, V, ns, "meshlinks", {
        "apiVersion": f"{G}/{V}", "kind": "MeshLink", "metadata": {"name": name},
        "spec": {"meshName": "near", "tokenSecretRef": {"name": token}}})


def _condition(status: Any, type_: str) -> Any:
    return next(c for c in status["conditions"] if c["type"] == type_)


def test_a_token_redeems_once_and_its_credentials_are_kept(cluster: Tuple[Any, str],
                                                           server: RedemptionServer) -> None:
    api, ns = cluster
    core = client.CoreV1Api(api)
    core.create_namespaced_secret(ns, token_secret("tok-ok", server.token().data()))
    _link(api, ns, "ok", "tok-ok")
    redeemer = LinkRedeemer(KubeApi(api))
    first = redeemer.run(ns, "ok")
    assert first.redeemed and first.mesh == "near" and first.status is None and first.retry_in is None
    assert len(server.requests) == 1
    sent = server.requests[0]
    assert (sent["linkName"], sent["namespace"], sent["meshName"]) == ("ok", ns, "near")
    assert sent["routerIds"] == ["near-0", "near-1"] and sent["code"] == server.code
    secret = core.read_namespaced_secret("ok-credentials", ns)
    assert [o.kind for o in secret.metadata.owner_references] == ["MeshLink"]
    kept = parse_credentials(secret.data)
    assert kept.remote_mesh == "far" and [(e.host, e.port) for e in kept.endpoints] == [("localhost", 45999)]
    assert f"{ns}/ok@near" in str(certs.load_cert(kept.cert_pem.encode(), "client").subject.rfc4514_string())
    # Again (a resume, an update, another replica): never a second redemption.
    again = LinkRedeemer(KubeApi(api)).run(ns, "ok")
    assert again.mesh == "near" and not again.redeemed and len(server.requests) == 1


def test_a_wrong_code_is_refused_with_the_servers_message(cluster: Tuple[Any, str],
                                                          server: RedemptionServer) -> None:
    api, ns = cluster
    client.CoreV1Api(api).create_namespaced_secret(ns, token_secret("tok-bad", server.token("guess").data()))
    _link(api, ns, "bad", "tok-bad")
    done = LinkRedeemer(KubeApi(api)).run(ns, "bad")
    redeemed = _condition(done.status, "Redeemed")
    assert (redeemed["status"], redeemed["reason"]) == ("False", "Refused")
    assert "code: does not match the grant's (403)" in redeemed["message"]
    assert _condition(done.status, "Ready")["status"] == "False"
    assert done.mesh is None and done.retry_in is not None
    assert not _exists(api, ns, "bad-credentials")


def test_an_unreachable_url_is_retried_with_back_off(cluster: Tuple[Any, str],
                                                     server: RedemptionServer) -> None:
    api, ns = cluster
    nobody = server.token()
    data = {**nobody.data(), "url": f"https://localhost:{free_port()}/grants/remote/g1"}
    client.CoreV1Api(api).create_namespaced_secret(ns, token_secret("tok-away", data))
    _link(api, ns, "away", "tok-away")
    redeemer = LinkRedeemer(KubeApi(api))
    delays = []
    for _ in range(3):
        done = redeemer.run(ns, "away")
        redeemed = _condition(done.status, "Redeemed")
        assert (redeemed["status"], redeemed["reason"]) == ("False", "Unreachable"), redeemed
        delays.append(done.retry_in)
    assert delays == [5.0, 10.0, 20.0]
    assert server.requests == []


def test_a_server_certificate_not_of_the_tokens_ca_is_not_trusted(cluster: Tuple[Any, str],
                                                                  server: RedemptionServer) -> None:
    api, ns = cluster
    data = {**server.token().data(), "ca.crt": certs.new_ca("someone else").cert_pem.decode()}
    client.CoreV1Api(api).create_namespaced_secret(ns, token_secret("tok-mitm", data))
    _link(api, ns, "mitm", "tok-mitm")
    done = LinkRedeemer(KubeApi(api)).run(ns, "mitm")
    redeemed = _condition(done.status, "Redeemed")
    assert redeemed["reason"] == "Unreachable" and "not the token's CA" in redeemed["message"]
    assert server.requests == []  # the code never left


@pytest.mark.parametrize("forced, reason, said", [
    ((503, {"error": "not the leader"}), "Unreachable", "not the leader (503); trying again later"),
    ((200, {"padding": "x" * (300 * 1024)}), "Refused", "the answer is longer than 262144 bytes"),
    ((200, {"meshName": "far"}), "Refused", "the answer does not parse: role: must be a non-empty string"),
])
def test_a_misbehaving_server_is_said_so_and_nothing_is_kept(cluster: Tuple[Any, str],
                                                             server: RedemptionServer, forced: Any,
                                                             reason: str, said: str) -> None:
    api, ns = cluster
    name = f"odd-{forced[0]}-{len(str(forced[1])) % 997}"
    client.CoreV1Api(api).create_namespaced_secret(ns, token_secret(f"tok-{name}", server.token().data()))
    _link(api, ns, name, f"tok-{name}")
    server.forced = forced
    done = LinkRedeemer(KubeApi(api)).run(ns, name)
    redeemed = _condition(done.status, "Redeemed")
    assert redeemed["reason"] == reason and redeemed["message"].endswith(said), redeemed
    assert done.retry_in is not None and not _exists(api, ns, f"{name}-credentials")


@pytest.mark.parametrize("missing", ["url", "code", "ca.crt"])
def test_a_token_secret_missing_a_field_is_an_invalid_token_naming_it(
        cluster: Tuple[Any, str], server: RedemptionServer, missing: str) -> None:
    api, ns = cluster
    name = f"partial-{missing.replace('.', '-')}"
    data = {k: v for k, v in server.token().data().items() if k != missing}
    client.CoreV1Api(api).create_namespaced_secret(ns, token_secret(f"tok-{name}", data))
    _link(api, ns, name, f"tok-{name}")
    done = LinkRedeemer(KubeApi(api)).run(ns, name)
    redeemed = _condition(done.status, "Redeemed")
    assert (redeemed["status"], redeemed["reason"]) == ("False", "InvalidToken")
    assert f"{missing}: must be a non-empty string" in redeemed["message"]
    assert f"tok-{name}" in redeemed["message"] and server.requests == []


def test_a_token_secret_that_does_not_exist_is_named(cluster: Tuple[Any, str]) -> None:
    api, ns = cluster
    _link(api, ns, "orphan", "no-such-token")
    done = LinkRedeemer(KubeApi(api)).run(ns, "orphan")
    redeemed = _condition(done.status, "Redeemed")
    assert redeemed["reason"] == "InvalidToken"
    assert redeemed["message"] == "spec.tokenSecretRef.name: Secret 'no-such-token' not found"


def _exists(api: Any, ns: str, name: str) -> bool:
    try:
        client.CoreV1Api(api).read_namespaced_secret(name, ns)
    except client.ApiException as e:
        assert e.status == 404
        return False
    return True


def test_credentials_secret_data_is_base64_of_pem() -> None:
    """The Secret's own format (what a user reading it sees)."""
    pem = certs.new_ca("x").cert_pem.decode()
    data = {"tls.crt": pem, "tls.key": "-----BEGIN PRIVATE KEY-----", "ca.crt": pem,
            "endpoints": '["a.example:443"]', "remoteMesh": "far", "remoteNamespace": "r"}
    encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
    assert parse_credentials(encoded).endpoints[0].host == "a.example"
    broken = {**encoded, "endpoints": base64.b64encode(b'["no-port"]').decode()}
    with pytest.raises(ValueError, match="endpoints"):
        parse_credentials(broken)


# -- pure: what the routers get -------------------------------------------------------------------

def _credentials(*endpoints: Tuple[str, int]) -> Any:
    from qdmesh_operator.linking.wire import Endpoint
    from qdmesh_operator.links.credentials import Credentials

    return Credentials(remote_mesh="far", remote_namespace="r",
                       endpoints=tuple(Endpoint(h, p) for h, p in endpoints),
                       ca_pem="CA", cert_pem="CERT", key_pem="KEY")


def test_connectors_go_to_the_first_routers_and_the_endpoints_in_turn() -> None:
    from qdmesh_operator.desired.state import mesh_state
    from qdmesh_operator.links.entities import LINKS_DIR, link_entities
    from qdmesh_operator.links.spec import parse_link
    from qdmesh_operator.model.mesh import parse_mesh
    from qdmesh_operator.render.conf import render_all

    mesh = parse_mesh("near", "ns", {"size": 4, "image": "r:1"})
    spec = parse_link("to-far", "ns", {"meshName": "near", "tokenSecretRef": {"name": "t"}, "connections": 3,
                                       "cost": 25})
    made = link_entities(mesh, [(spec, _credentials(("a.example", 443), ("b.example", 8443)))])
    connectors = {rid: [e.attributes for e in found if e.type == "connector"] for rid, found in made.items()}
    assert [(c[0]["host"], c[0]["port"]) for c in (connectors[f"near-{i}"] for i in range(3))] == [
        ("a.example", "443"), ("b.example", "8443"), ("a.example", "443")]
    assert connectors["near-3"] == []
    first = connectors["near-0"][0]
    assert [first[k] for k in ("role", "cost", "sslProfile", "saslMechanisms", "verifyHostname")] == \
        ["inter-router", 25, "qdmesh/linkTls/to-far", "EXTERNAL", True]
    profile = next(e for e in made["near-0"] if e.type == "sslProfile")
    assert profile.attributes["certFile"] == f"{LINKS_DIR}/to-far-tls.crt" and not profile.restart_only
    # In the config files too, so a restarted router keeps its link.
    confs = render_all(mesh_state(mesh, [], links=made))
    assert "qdmesh/link/to-far" in confs["near-2.conf"] and "qdmesh/link/to-far" not in confs["near-3.conf"]


def test_two_connections_by_default_one_on_a_mesh_of_one() -> None:
    from qdmesh_operator.links.spec import parse_link

    spec = parse_link("l", "ns", {"meshName": "m", "tokenSecretRef": {"name": "t"}})
    assert (spec.routers(3), spec.routers(1), spec.cost, spec.verify_hostname) == (2, 1, 10, True)
    with pytest.raises(ValueError, match=r"spec\.connections"):
        parse_link("l", "ns", {"meshName": "m", "tokenSecretRef": {"name": "t"}, "connections": 0})
    with pytest.raises(ValueError, match=r"spec\.tokenSecretRef\.name"):
        parse_link("l", "ns", {"meshName": "m"})


def test_the_links_secret_is_mounted_by_new_meshes_and_not_added_by_an_upgrade() -> None:
    from qdmesh_operator.links.observe import MeshLinks, links_volume
    from qdmesh_operator.links.spec import parse_link

    old = {"spec": {"template": {"spec": {"volumes": [{"name": "config"}]}}}}
    mounted = {"spec": {"template": {"spec": {"volumes": [{"name": "config"}, {"name": "links"}]}}}}
    assert links_volume(MeshLinks(), None)  # a new mesh
    assert not links_volume(MeshLinks(), old)  # a mesh from before: no roll for an upgrade
    assert links_volume(MeshLinks(), mounted)  # kept once there: links come and go live
    spec = parse_link("l", "ns", {"meshName": "m", "tokenSecretRef": {"name": "t"}})
    assert links_volume(MeshLinks(ready=[(spec, _credentials(("a", 1)))]), old)  # its first link


def test_routers_of_a_linked_mesh_are_told_from_the_meshs_own() -> None:
    from qdmesh_operator.contract import is_foreign

    assert is_foreign("near", "far-0") and is_foreign("near", "near-east-2")
    assert not is_foreign("near", "near-3") and not is_foreign("near", "A")
