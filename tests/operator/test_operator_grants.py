"""MeshAccessGrants end to end: the operator (a real ``qdmesh-operator`` process, with its
redemption server) against a REAL API server, a REAL accepting router it manages through
AMQP management, and REAL routers of "another cluster" that link to it with the certificate
a real HTTPS redemption gave them.

The test plays the kubelet: it copies the link listener's Secret into the accepting router's
mount directory whenever the Secret changes (tests/operator/test_operator_live_tls.py).  Only
what a cluster gives differs: the routers run on 127.0.0.1 and the mesh's linkAccess names
host ``localhost``."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from qdmesh_operator.linking.wire import RedeemResponse, Token
from qdmesh_operator.model.entities import Entity
from qdrouter.tools.management_client import ManagementClient
from tests.edge.helpers import send_until_accepted
from tests.kube.controlplane import ControlPlane
from tests.operator.grantparts import (
    LINK_LISTENER,
    MESH,
    Accepting,
    Kubelet,
    edge_router,
    exchange,
    inbound_connections,
    inbound_links,
    linking_router,
    post,
    request,
    secret_data,
)
from tests.operator.kube_operator import Cluster, api_namespace, eventually
from tests.operator.test_operator_live_tls import Mount
from tests.operator.test_operator_managed_tls_mesh import interior, nodes, section
from tests.router.amqpclient import REJECTED, Net, msg
from tests.router.fixtures import net
from tests.router.routerproc import Router, free_port

__all__ = ["net"]  # the fixture

pytestmark = pytest.mark.timeout(300)

# Vhost policy on, as a mesh with spec.policy.enableVhostPolicy has it; the default vhost lets
# the tests' clients and the operator do anything, so only the VhostPolicy of the edge test
# restricts anyone (inter-router links are never held to vhost rules).
POLICY = """policy {
    enableVhostPolicy: true
    defaultVhost: $default
}
vhost {
    hostname: $default
    allowUnknownUser: true
    groups: {
        $default: {
            remoteHosts: *
            sources: *
            targets: *
            allowDynamicSource: true
            allowAnonymousSender: true
            allowUserIdProxy: true
            allowAdminStatusUpdate: true
        }
    }
}
"""


@pytest.fixture(scope="module")
def started() -> Iterator[List[Router]]:
    routers: List[Router] = []
    yield routers
    for router in routers:
        router.stop(check=False)


@pytest.fixture(scope="module")
def accepting(crds: ControlPlane, tmp_path_factory: pytest.TempPathFactory,
              started: List[Router]) -> Iterator[Accepting]:
    _, namespace = api_namespace(crds, "grants")
    kube = Cluster(crds, namespace)
    tmp = tmp_path_factory.mktemp("grants")
    urls = tmp / "router-urls.json"
    urls.write_text("{}")
    server_port, link_port, metrics_port, edge_port = free_port(), free_port(), free_port(), free_port()
    env = {**crds.env(), "POD_NAMESPACE": namespace, "QDMESH_ROUTER_URLS": str(urls),
           "QDMESH_DRIFT_INTERVAL": "1", "QDMESH_GRANT_SERVER_HOST": "localhost"}
    log = tmp / "operator.log"
    operator = subprocess.Popen(
        [sys.executable, "-m", "qdmesh_operator.main", "-n", namespace, "--health-port", "0",
         "--metrics-port", str(metrics_port), "--grant-server-port", str(server_port)],
        env=env, stdout=subprocess.DEVNULL, stderr=open(log, "ab"))
    kubelet = None
    try:
        kube.create("routermeshes", "RouterMesh", MESH, {
            "size": 1, "image": "qdmesh/router:0.1.0", "interRouter": {"tls": {"mode": "Disabled"}},
            "linkAccess": {"type": "LoadBalancer", "host": "localhost", "port": link_port,
                           "edgePort": edge_port}})
        eventually(lambda: secret_data(kube, f"{MESH}-link-tls"), 60, "the link listener's Secret")
        mount = Mount(tmp / "link-mount")
        kubelet = Kubelet(kube, f"{MESH}-link-tls", mount)
        kubelet.sync()
        files = {"caCertFile": str(mount.directory / "ca.crt"), "certFile": str(mount.directory / "tls.crt"),
                 "privateKeyFile": str(mount.directory / "tls.key")}
        profile = Entity("sslProfile", "link-tls", {"name": "link-tls", **files})
        edge_profile = Entity("sslProfile", "link-edge-tls", {
            "name": "link-edge-tls", **files, "caCertFile": str(mount.directory / "edge-ca.crt")})
        router = interior(tmp, f"{MESH}-0", section(profile) + section(edge_profile) + POLICY, started)
        kubelet.start()
        urls.write_text(json.dumps({f"{namespace}/{MESH}-0": router.url}))
        with ManagementClient(router.url, timeout=5) as client:
            eventually(lambda: any(r["name"] == LINK_LISTENER for r in client.query("listener")), 60,
                       "the operator adding the link listener to the running router")
        yield Accepting(kube, router, server_port, link_port, metrics_port, edge_port)
    finally:
        if kubelet is not None:
            kubelet.stop()
        operator.terminate()
        try:
            operator.wait(30)
        except subprocess.TimeoutExpired:
            operator.kill()
            operator.wait(10)
        print(log.read_text()[-4000:])


def test_a_redeemed_grant_links_a_router_of_another_mesh_both_ways(
        accepting: Accepting, tmp_path: Path, started: List[Router]) -> None:
    token = accepting.grant("first", expirationWindow="1h")
    eventually(lambda: accepting.kube.condition("meshaccessgrants", "first", "Ready").get("status") == "True",
               30, "grant first Ready")
    status, body = post(token, request(token, "to-accept", "remote"))
    assert status == 200, body
    answer = RedeemResponse.from_json(body)
    assert answer.mesh_name == MESH and answer.router_ids == (f"{MESH}-0",)
    assert [(e.host, e.port) for e in answer.endpoints] == [("localhost", accepting.link_port)]
    grant = accepting.kube.get("meshaccessgrants", "first")["status"]
    assert grant["redemptions"] == 1
    assert [(x["linkName"], x["namespace"], x["meshName"]) for x in grant["links"]] == [
        ("to-accept", "elsewhere", "remote")]
    assert token.code not in json.dumps(grant)

    remote = linking_router(tmp_path, answer, "remote-0", started)
    eventually(lambda: "remote-0" in nodes(accepting.router) and f"{MESH}-0" in nodes(remote), 60,
               "the two routers linked across the clusters")
    assert inbound_links(accepting.router) == ["CN=elsewhere/to-accept@remote,O=qdmesh"]
    exchange(accepting.router, remote, "cross/out")
    exchange(remote, accepting.router, "cross/in")


def test_refusals_name_what_is_wrong(accepting: Accepting) -> None:
    token = accepting.grant("refusing", redemptionsAllowed=5, expirationWindow="1h")
    cases = [
        (b"not json", 400, "body"),
        ({"code": token.code, "namespace": "elsewhere", "meshName": "other"}, 400, "linkName"),
        ({**request(token, "l", "other"), "routerIds": "other-0"}, 400, "routerIds"),
        (request(token, "l", "other", code=token.code[:-2] + "xx"), 403, "code"),
        (request(token, "l", MESH), 409, "meshName"),
        (b"{" + b" " * (64 * 1024) + b"}", 413, "body"),
    ]
    for body, want, field in cases:
        status, answer = post(token, body)
        assert (status, answer["error"].split(":")[0]) == (want, field), (body if isinstance(body, dict) else
                                                                       body[:40], status, answer)
    missing = Token(url=token.url.replace("/refusing", "/no-such-grant"), code=token.code,
                    ca_pem=token.ca_pem)
    assert post(missing, request(token, "l", "other"))[0] == 404
    odd = Token(url=token.url.replace("/refusing", "/Not_A..Name%00"), code=token.code, ca_pem=token.ca_pem)
    assert post(odd, request(token, "l", "other"))[0] == 404
    assert accepting.kube.get("meshaccessgrants", "refusing").get("status", {}).get("redemptions", 0) == 0


def test_the_last_redemption_goes_to_exactly_one_of_two_racing(accepting: Accepting) -> None:
    token = accepting.grant("twice", redemptionsAllowed=2, expirationWindow="1h")
    assert post(token, request(token, "one", "m1"))[0] == 200
    results: List[Tuple[int, Dict[str, Any]]] = []
    barrier = threading.Barrier(2)

    def race(link: str) -> None:
        barrier.wait()
        results.append(post(token, request(token, link, f"m-{link}")))

    threads = [threading.Thread(target=race, args=(name,)) for name in ("two", "three")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(status for status, _ in results) == [200, 410], results
    status, answer = post(token, request(token, "four", "m4"))
    assert status == 410 and "redemptions" in answer["error"], answer
    grant = accepting.kube.get("meshaccessgrants", "twice")["status"]
    assert grant["redemptions"] == 2 and len(grant["links"]) == 2
    eventually(lambda: accepting.kube.condition("meshaccessgrants", "twice", "Ready").get("reason")
               == "Exhausted", 10, "grant twice Exhausted")


def test_an_expired_grant_is_refused(accepting: Accepting) -> None:
    token = accepting.grant("brief", expirationWindow="2s")
    expires = eventually(lambda: accepting.kube.get("meshaccessgrants", "brief")["status"]["expiresAt"], 30,
                         "the grant's expiresAt")
    at = dt.datetime.strptime(expires, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc).timestamp()
    time.sleep(max(0.0, at + 1 - time.time()))  # until the window the status names has closed
    status, answer = post(token, request(token, "late", "m5"))
    assert status == 410 and "expired" in answer["error"], answer


def test_deleting_a_grant_closes_its_link_and_only_its_link(
        accepting: Accepting, tmp_path: Path, started: List[Router]) -> None:
    first = next(r for r in started if r.router_id == "remote-0")  # linked by grant "first"
    token = accepting.grant("second", expirationWindow="1h")
    status, body = post(token, request(token, "to-accept", "other"))
    assert status == 200, body
    other = linking_router(tmp_path, RedeemResponse.from_json(body), "other-0", started)
    eventually(lambda: {"remote-0", "other-0"} <= set(nodes(accepting.router)), 60, "both links up")
    kept = {i: u for i, u in inbound_connections(accepting.router).items() if "@other" in u}
    assert len(kept) == 1, kept

    accepting.kube.delete("meshaccessgrants", "first")
    eventually(lambda: accepting.kube.gone("meshaccessgrants", "first"), 90,
               "grant first revoked and its deletion finished")
    eventually(lambda: "remote-0" not in nodes(accepting.router), 30, "the revoked link gone from routing")
    # The other grant's link was not touched: the same connection throughout.
    assert inbound_connections(accepting.router) == kept
    # The revoked certificate cannot connect again: its connector keeps trying, and fails.
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline:
        assert "remote-0" not in nodes(accepting.router), "the revoked certificate connected again"
        time.sleep(0.5)
    assert first.is_running()
    assert "other-0" in nodes(accepting.router)
    exchange(other, accepting.router, "cross/still")


def _costs(router: Router) -> Dict[str, Any]:
    with ManagementClient(router.url, timeout=5) as client:
        return {str(row["id"]): row.get("cost") for row in client.query("router.node")}


def test_the_link_listener_cost_is_the_least_a_link_costs_on_both_sides(
        accepting: Accepting, tmp_path: Path, started: List[Router]) -> None:
    """spec.linkAccess.cost: the accepting mesh's listener imposes it on links made after it is
    set, above the linking side's connector cost (10), and both sides route with it."""
    accepting.kube.patch_spec("routermeshes", MESH, {"linkAccess": {"cost": 40}})

    def listener_cost() -> Any:
        with ManagementClient(accepting.router.url, timeout=5) as client:
            return next((r.get("cost") for r in client.query("listener") if r["name"] == LINK_LISTENER), None)

    eventually(lambda: listener_cost() == 40, 60, "the link listener replaced with cost 40")
    token = accepting.grant("costly", expirationWindow="1h")
    status, body = post(token, request(token, "to-accept", "costly"))
    assert status == 200, body
    costly = linking_router(tmp_path, RedeemResponse.from_json(body), "costly-0", started)

    def both() -> Tuple[Any, Any]:
        return _costs(accepting.router).get("costly-0"), _costs(costly).get(f"{MESH}-0")

    eventually(lambda: both() == (40, 40), 60, "both ends of the new link at the listener's cost 40")
    # The link made before the change (connector cost 10, listener cost 1) keeps its cost.
    assert _costs(accepting.router).get("other-0") == 10


def test_a_node_port_mesh_answers_with_the_node_port_kubernetes_chose(accepting: Accepting) -> None:
    kube = accepting.kube
    kube.create("routermeshes", "RouterMesh", "ports", {
        "size": 1, "image": "qdmesh/router:0.1.0", "interRouter": {"tls": {"mode": "Disabled"}},
        "linkAccess": {"type": "NodePort", "host": "node.example.com"}})
    service = eventually(lambda: kube.core.read_namespaced_service("ports-link", kube.ns), 60, "ports-link")
    node_port = service.spec.ports[0].node_port
    assert service.spec.type == "NodePort" and 30000 <= node_port <= 32767
    kube.create("meshaccessgrants", "MeshAccessGrant", "by-node-port", {"meshName": "ports"})
    data = eventually(lambda: secret_data(kube, "by-node-port-token"), 30, "the token Secret")
    token = Token.from_data({k: v.decode() for k, v in data.items()})

    def redeemed() -> Dict[str, Any] | None:
        # 409 until the mesh's first reconciliation made its link CA; a refusal counts nothing.
        status, body = post(token, request(token, "via-node", "far"))
        return body if status == 200 else None

    answer = RedeemResponse.from_json(eventually(redeemed, 60, "a redemption once the link CA is made"))
    assert [(e.host, e.port) for e in answer.endpoints] == [("node.example.com", node_port)]
    listener = secret_data(kube, "ports-link-tls")["tls.crt"]
    assert b"-----BEGIN CERTIFICATE-----" in listener


def test_exposure_follows_the_link_access_type_and_goes_with_it(accepting: Accepting) -> None:
    kube = accepting.kube
    eventually(lambda: kube.core.read_namespaced_service("ports-link", kube.ns), 60, "ports-link")
    from kubernetes import client

    networking = client.NetworkingV1Api(kube.api)
    kube.patch_spec("routermeshes", "ports", {"linkAccess": {"type": "Ingress"}})
    ingress = eventually(lambda: networking.read_namespaced_ingress("ports-link", kube.ns), 60, "the Ingress")
    assert ingress.metadata.annotations["nginx.ingress.kubernetes.io/ssl-passthrough"] == "true"
    eventually(lambda: kube.core.read_namespaced_service("ports-link", kube.ns).spec.type == "ClusterIP", 60,
               "the Service turned ClusterIP")
    kube.patch_spec("routermeshes", "ports", {"linkAccess": {"type": "Route"}})

    def says_no_openshift() -> bool:
        conditions = kube.get("routermeshes", "ports").get("status", {}).get("conditions") or []
        return any("needs OpenShift" in str(c.get("message")) for c in conditions)

    eventually(says_no_openshift, 60, "the mesh's status naming the missing Route API")
    kube.patch_spec("routermeshes", "ports", {"linkAccess": {"type": "None"}})

    def gone(read: Any) -> bool:
        try:
            read("ports-link", kube.ns)
        except Exception as e:
            return getattr(e, "status", None) == 404
        return False

    eventually(lambda: gone(networking.read_namespaced_ingress) and gone(kube.core.read_namespaced_service),
               60, "the Ingress and the Service removed with linkAccess")


def _edge_users(router: Router) -> List[str]:
    with ManagementClient(router.url, timeout=5) as client:
        return [str(r.get("user")) for r in client.query("connection")
                if r.get("role") == "edge" and r.get("dir") == "in"]


def test_an_edge_grant_attaches_an_edge_router_held_to_the_mesh_vhost_policy(
        accepting: Accepting, tmp_path: Path, started: List[Router], net: Net) -> None:
    """A grant of role edge: the other cluster's router attaches to the edge link listener with
    the certificate it was issued, and the accepting mesh's VhostPolicy (for the hostname the
    edge opens with) holds what it sends as it holds a local client: an allowed address is
    delivered, a denied one rejected.  Deleting the grant closes the edge link."""
    kube = accepting.kube
    kube.create("vhostpolicies", "VhostPolicy", "edge-links", {
        "meshRef": MESH, "hostname": "localhost", "allowUnknownUser": True,
        "groups": {"$default": {"remoteHosts": ["*"], "sources": ["*"], "targets": ["app.*"],
                                "allowAnonymousSender": True, "allowDynamicSource": True,
                                "allowUserIdProxy": True}}})
    token = accepting.grant("edgy", role="edge", expirationWindow="1h")
    # A linking side that makes inter-router links only is refused before anything is counted.
    status, body = post(token, request(token, "edge-link", "edgy"))
    assert status == 409 and body["error"].startswith("role:"), body
    status, body = post(token, request(token, "edge-link", "edgy", roles=("inter-router", "edge")))
    assert status == 200, body
    answer = RedeemResponse.from_json(body)
    assert answer.role == "edge", answer.role
    assert [(e.host, e.port) for e in answer.endpoints] == [("localhost", accepting.edge_port)]
    assert kube.get("meshaccessgrants", "edgy")["status"]["redemptions"] == 1
    # Its client CA is in the edge listener's bundle, never in the inter-router one's.
    client_ca = secret_data(kube, "edgy-client-ca")["ca.crt"]

    def trusted() -> Tuple[bool, bool]:
        data = secret_data(kube, f"{MESH}-link-tls")
        return client_ca in data.get("edge-ca.crt", b""), client_ca in data.get("ca.crt", b"")

    eventually(lambda: trusted() == (True, False), 60, "the edge grant's CA in the edge bundle only")
    with ManagementClient(accepting.router.url, timeout=5) as client:
        eventually(lambda: any(r.get("hostname") == "localhost" for r in client.query("vhost")), 60,
                   "the VhostPolicy on the router")
    edge = edge_router(tmp_path, answer, "edgy-0", started)
    user = "CN=elsewhere/edge-link@edgy,O=qdmesh"
    eventually(lambda: _edge_users(accepting.router) == [user], 60, "the edge router attached")

    app = net.connect(accepting.router.url).receiver("app.x")
    hidden = net.connect(accepting.router.url).receiver("secret.x")
    client = net.connect(edge.url)
    send_until_accepted(net, client.sender("app.x"), "over the edge link", timeout=60)
    forbidden = client.sender(None)
    net.wait(lambda: forbidden.credit > 0, 30, "credit for the anonymous sender on the edge")
    tag = forbidden.send(msg("stolen", to="secret.x"))
    net.wait(lambda: tag in forbidden.outcomes, 30, "the denied message's outcome")
    assert forbidden.outcomes[tag].state == REJECTED, forbidden.outcomes[tag]
    net.pump(0.3)
    assert [r.message.body for r in app.received] == ["over the edge link"] and not hidden.received

    kube.delete("meshaccessgrants", "edgy")
    eventually(lambda: kube.gone("meshaccessgrants", "edgy"), 90, "grant edgy revoked and deleted")
    eventually(lambda: _edge_users(accepting.router) == [], 30, "the revoked edge link closed")


def test_every_redemption_answered_is_counted_by_status(accepting: Accepting) -> None:
    """After the tests above: each status they met is in the operator's metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{accepting.metrics_port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    counted = {int(line.split('status="')[1].split('"')[0]): int(line.rsplit(" ", 1)[1])
               for line in text.splitlines() if line.startswith("qdmesh_operator_grant_redemptions_total{")}
    assert counted.get(200, 0) >= 5 and counted.get(410, 0) >= 3, counted
    assert all(counted.get(status, 0) >= 1 for status in (400, 403, 404, 409, 413)), counted
