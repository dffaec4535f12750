"""A MeshLink end to end on REAL routers: the operator (its redeemer and mesh reconciler,
against a REAL API server) redeems a token with a REAL HTTPS redemption server, keeps the
credentials, and gives two REAL local routers link connectors through management; a REAL
router plays the remote mesh, its link listener requiring the grant's client certificate.
The test plays the kubelet: it copies the mesh's links Secret into the routers' mount
directory (tests/operator/test_operator_live_tls.py's Mount), some time after it changed.

Only what a cluster gives differs: the routers run on 127.0.0.1 (the remote listener's
certificate names ``localhost``, the endpoint the redemption answers), and the local routers'
own inter-router connection is in their config file rather than the operator's connectors."""

from __future__ import annotations

import base64
import json
import signal
import threading
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from kubernetes import client
from proton import Message
from proton.utils import BlockingConnection

from qdmesh_operator import canary
from qdmesh_operator.apply.management import sync_mesh
from qdmesh_operator.desired.state import mesh_state
from qdmesh_operator.kube.api import KubeApi
from qdmesh_operator.links import entities
from qdmesh_operator.links.redeemer import LinkRedeemer
from qdmesh_operator.model.mesh import parse_mesh
from qdmesh_operator.reconcile import MeshReconciler, mesh_converged
from qdmesh_operator.status.mesh import router_entry
from qdmesh_operator.tls import certs
from qdrouter.tools.management_client import ManagementClient
from tests.kube.controlplane import ControlPlane
from tests.mesh.drain_traffic import settle_all, stream, tally
from tests.mesh.traffic import trace_of
from tests.operator.kube_operator import G, V, api_namespace, eventually
from tests.operator.linkparts import RedemptionServer, remote_link_listener, token_secret
from tests.operator.test_operator_live_tls import Mount
from tests.operator.test_operator_managed_tls_mesh import nodes, routers
from tests.router.amqpclient import Net
from tests.router.fixtures import net
from tests.router.routerproc import Router, free_port

__all__ = ["net", "routers"]  # the fixtures

pytestmark = pytest.mark.timeout(300)

MULTICAST = "address {\n    prefix: mc\n    distribution: multicast\n}\n"


def _router(tmp: Path, router_id: str, body: str, started: List[Router]) -> Router:
    workdir = tmp / router_id
    workdir.mkdir()
    router = Router(workdir, router_id=router_id, args=["--drain-timeout", "15"])
    router.config_path.write_text(
        f"router {{\n    mode: interior\n    id: {router_id}\n}}\n"
        f"listener {{\n    host: 127.0.0.1\n    port: {router.port}\n    saslMechanisms: ANONYMOUS\n"
        f"    stripAnnotations: no\n}}\n" + body)  # the trace annotation shows the path taken
    started.append(router.start())
    return router


def _secret(api: Any, ns: str, name: str) -> Dict[str, bytes]:
    data = client.CoreV1Api(api).read_namespaced_secret(name, ns).data or {}
    return {k: base64.b64decode(v) for k, v in data.items()}


class Linked:
    """near-0 and near-1 (a local mesh of two), far-0 (the remote mesh), the operator's parts."""

    def __init__(self, api: Any, ns: str, tmp: Path, started: List[Router], monkeypatch: pytest.MonkeyPatch,
                 size: int = 2) -> None:
        self.api, self.ns = api, ns
        link_ca = certs.new_ca("far link CA")
        far_port = free_port()
        self.server = RedemptionServer(tmp, remote_mesh="far", endpoints=[("localhost", far_port)],
                                       link_ca=link_ca)
        remote = remote_link_listener(tmp / "far-tls", link_ca, self.server.client_ca, far_port)
        self.far = _router(tmp, "far-0", remote + MULTICAST, started)
        # A full mesh of ``size`` local routers, each connecting to the ones before it; each
        # drains for up to 15 s when stopped, as a router pod does.
        ports = [free_port() for _ in range(size)]
        self.near = []
        for i in range(size):
            body = (f"listener {{\n    host: 127.0.0.1\n    port: {ports[i]}\n    role: inter-router\n"
                    f"    saslMechanisms: ANONYMOUS\n}}\n")
            body += "".join(f"connector {{\n    name: to-near-{j}\n    host: 127.0.0.1\n"
                            f"    port: {ports[j]}\n    role: inter-router\n}}\n" for j in range(i))
            self.near.append(_router(tmp, f"near-{i}", body + MULTICAST, started))
        eventually(lambda: all(len(nodes(r)) == size - 1 for r in self.near), 30, "the local mesh")
        self.mount = Mount(tmp / "links-mount")
        monkeypatch.setattr(entities, "LINKS_DIR", str(self.mount.directory))
        urls_file = tmp / "urls.json"
        urls_file.write_text(json.dumps({f"{ns}/{r.router_id}": r.url for r in self.near}))
        monkeypatch.setenv("QDMESH_ROUTER_URLS", str(urls_file))
        custom = client.CustomObjectsApi(api)
        custom.create_namespaced_custom_object(G, V, ns, "routermeshes", {
            "apiVersion": f"{G}/{V}", "kind": "RouterMesh", "metadata": {"name": "near"},
            "spec": {"size": size, "image": "qdmesh/router:0.1.0"}})
        token = token_secret("far-token", self.server.token().data())
        client.CoreV1Api(api).create_namespaced_secret(ns, token)
        self.reconciler = MeshReconciler(KubeApi(api))
        self.redeemer = LinkRedeemer(KubeApi(api))

    def link(self, name: str = "to-far", **spec: Any) -> None:
        client.CustomObjectsApi(self.api).create_namespaced_custom_object(G, V, self.ns, "meshlinks", {
            "apiVersion": f"{G}/{V}", "kind": "MeshLink", "metadata": {"name": name},
            "spec": {"meshName": "near", "tokenSecretRef": {"name": "far-token"}, **spec}})
        done = self.redeemer.run(self.ns, name)
        assert done.redeemed and done.mesh == "near", done

    def reconcile(self) -> Dict[Tuple[str, str], Dict[str, Any]]:
        report = self.reconciler.reconcile(self.ns, "near", why="drift")
        kube = KubeApi(self.api)
        for (plural, name), status in report.statuses.items():
            kube.patch_status(plural, self.ns, name, status)
        # The kubelet: the mounted Secret's files follow the Secret, a little later.
        try:
            self.mount.sync(_secret(self.api, self.ns, "near-links"))
        except client.ApiException as e:
            assert e.status == 404
        return report.statuses

    def status(self, plural: str, name: str) -> Dict[str, Any]:
        found = client.CustomObjectsApi(self.api).get_namespaced_custom_object(G, V, self.ns, plural, name)
        return dict(found.get("status") or {})

    def connected(self, name: str = "to-far") -> bool:
        self.reconcile()
        conditions = {c["type"]: c for c in self.status("meshlinks", name).get("conditions", [])}
        return conditions.get("Connected", {}).get("status") == "True"

    def stop(self) -> None:
        self.server.stop()


@pytest.fixture
def linked(crds: ControlPlane, tmp_path: Path, routers: List[Router],
           monkeypatch: pytest.MonkeyPatch) -> Any:
    api, ns = api_namespace(crds, "linked")
    found = Linked(api, ns, tmp_path, routers, monkeypatch)
    yield found
    found.stop()


def _send(url: str, address: str, bodies: List[str]) -> None:
    connection = BlockingConnection(url, timeout=30)
    try:
        sender = connection.create_sender(address)
        for body in bodies:
            sender.send(Message(body=body))  # waits for the outcome; raises unless accepted
    finally:
        connection.close()


def _exchange(url: str, address: str, receivers: List[Any], bodies: List[str]) -> List[List[str]]:
    """Send ``bodies`` (each accepted before the next) while ``receivers`` take and accept
    them; what each receiver got."""
    got: List[List[str]] = [[] for _ in receivers]
    sent = threading.Event()

    def take(i: int) -> None:
        while True:
            try:
                message = receivers[i].receive(timeout=1)
            except Exception:  # nothing within 1 s: done once every message was accepted
                if sent.is_set():
                    return
                continue
            receivers[i].accept()
            got[i].append(str(message.body))

    threads = [threading.Thread(target=take, args=(i,), daemon=True) for i in range(len(receivers))]
    for t in threads:
        t.start()
    try:
        _send(url, address, bodies)
    finally:
        sent.set()
        for t in threads:
            t.join(timeout=60)
    return got


def _receive_all(receiver: Any, count: int) -> List[str]:
    got = []
    for _ in range(count):
        message = receiver.receive(timeout=30)
        receiver.accept()
        got.append(str(message.body))
    return got


def _consumers_seen(router: Router, address: str, count: int) -> bool:
    """``router`` knows of ``count`` routers (or local receivers) with a consumer of ``address``."""
    with ManagementClient(router.url) as mgmt:
        for row in mgmt.query("org.apache.qpid.dispatch.router.address"):
            if str(row.get("key") or "").endswith(address):
                return int(row.get("remoteCount") or 0) + int(row.get("subscriberCount") or 0) >= count
    return False


def test_a_linked_mesh_carries_messages_both_ways_and_says_so(linked: Linked) -> None:
    linked.link()
    # Before the kubelet has mounted the files, the routers refuse the link's sslProfile: the
    # link says so; the mesh itself is not held up by it.
    first = linked.reconciler.reconcile(linked.ns, "near", why="drift").statuses
    connected = next(c for c in first[("meshlinks", "to-far")]["conditions"] if c["type"] == "Connected")
    assert connected["reason"] == "Connecting" and "qdmesh/linkTls/to-far" in connected["message"], connected
    stalled = next(c for c in first[("routermeshes", "near")]["conditions"] if c["type"] == "Stalled")
    assert stalled["reason"] != "ApplyFailed", stalled
    eventually(linked.connected, 90, lambda: f"the link Connected: {linked.status('meshlinks', 'to-far')}")
    status = linked.status("meshlinks", "to-far")
    assert status["remoteMesh"] == {"name": "far", "namespace": "remote"}
    assert status["remoteRouters"] == ["far-0"]
    assert [(c["router"], c["operStatus"]) for c in status["connections"]] == \
        [("near-0", "up"), ("near-1", "up")]
    assert len(linked.server.requests) == 1  # reconciled many times, redeemed once
    # far-0 accepted both local routers, each authenticated by its certificate of the grant's CA.
    with ManagementClient(linked.far.url) as mgmt:
        links = [c for c in mgmt.query("connection") if c.get("role") == "inter-router"]
    assert len(links) == 2 and all(c["isAuthenticated"] and c["ssl"] for c in links), links
    assert all(f"{linked.ns}/to-far@near" in str(c["user"]) for c in links)
    # The local mesh's own status counts its own routers only.
    # The local mesh's own status and roll gate count its own routers only, though far-0 is
    # in their router.node tables (a neighbour of both).
    assert sorted(nodes(linked.near[0])) == ["far-0", "near-1"]
    spec = parse_mesh("near", linked.ns, {"size": 2, "image": "qdmesh/router:0.1.0"})
    outcomes = sync_mesh(mesh_state(spec, []), {f"near-{i}": r.url for i, r in enumerate(linked.near)},
                         dry_run=True)
    assert all("far-0" in o.direct_peers for o in outcomes.values())
    assert mesh_converged(spec, outcomes)
    assert [router_entry(rid, o)["peers"] for rid, o in sorted(outcomes.items())] == [1, 1]
    assert canary.from_routers(outcomes).keys() <= {("near-0", "near-1"), ("near-1", "near-0")}

    # Anycast both ways: near-0 -> far-0, far-0 -> near-1.
    far_in = BlockingConnection(linked.far.url, timeout=30)
    near_in = BlockingConnection(linked.near[1].url, timeout=30)
    try:
        to_far = far_in.create_receiver("orders/far", credit=50)
        to_near = near_in.create_receiver("orders/near", credit=50)
        eventually(lambda: _consumers_seen(linked.near[0], "orders/far", 1), 30, "far-0's consumer at near-0")
        eventually(lambda: _consumers_seen(linked.far, "orders/near", 1), 30, "near-1's consumer at far-0")
        assert _exchange(linked.near[0].url, "orders/far", [to_far], [f"n{i}" for i in range(20)]) == \
            [[f"n{i}" for i in range(20)]]
        assert _exchange(linked.far.url, "orders/near", [to_near], [f"f{i}" for i in range(20)]) == \
            [[f"f{i}" for i in range(20)]]
        # Multicast: one message from near-0 reaches a receiver in each mesh.
        mc_far = far_in.create_receiver("mc/news", credit=10)
        mc_near = near_in.create_receiver("mc/news", credit=10)
        eventually(lambda: _consumers_seen(linked.near[0], "mc/news", 2), 30, "both multicast consumers seen")
        _send(linked.near[0].url, "mc/news", ["hello"])  # the router settles multicast itself
        assert [str(r.receive(timeout=30).body) for r in (mc_far, mc_near)] == ["hello", "hello"]
        # Cost: with a consumer in each mesh, near-0's messages take the local one.
        both_far = far_in.create_receiver("shared/q", credit=50)
        both_near = near_in.create_receiver("shared/q", credit=50)
        eventually(lambda: _consumers_seen(linked.near[0], "shared/q", 2), 30, "both consumers seen")
        sent = [f"s{i}" for i in range(20)]
        assert _exchange(linked.near[0].url, "shared/q", [both_near, both_far], sent) == [sent, []]
    finally:
        far_in.close()
        near_in.close()

    # Deleting the link: connectors and profile leave the routers, far-0 leaves router.node.
    client.CustomObjectsApi(linked.api).delete_namespaced_custom_object(G, V, linked.ns, "meshlinks",
                                                                        "to-far")

    def unlinked() -> bool:
        linked.reconcile()
        return all(nodes(r) == [o.router_id for o in linked.near if o is not r] for r in linked.near)

    eventually(unlinked, 60, lambda: f"far-0 gone from router.node: {[nodes(r) for r in linked.near]}")
    for router in linked.near:
        with ManagementClient(router.url) as mgmt:
            names = [str(r["name"]) for t in ("connector", "sslProfile")
                     for r in mgmt.query(f"org.apache.qpid.dispatch.{t}")]
        assert not [n for n in names if "link" in n.lower()], names
    assert _secret(linked.api, linked.ns, "near-links") == {}


def test_a_router_holding_a_link_connection_drains_and_no_message_is_lost(
        crds: ControlPlane, tmp_path: Path, routers: List[Router], monkeypatch: pytest.MonkeyPatch,
        net: Net) -> None:
    """near-0 and near-1 each hold a link connection; a producer on near-2 streams unsettled
    messages to a consumer on far-0 while the link router its messages pass stops (SIGTERM,
    draining, as its pod is deleted): every message is accepted, the consumer gets each once,
    and the traffic carries on through the other link connection."""
    api, ns = api_namespace(crds, "failover")
    linked = Linked(api, ns, tmp_path, routers, monkeypatch, size=3)
    try:
        linked.link()
        eventually(linked.connected, 90, lambda: f"Connected: {linked.status('meshlinks', 'to-far')}")
        address = "failover/orders"
        rcv = net.connect(linked.far.url).receiver(address, credit=250)
        net.wait(lambda: _consumers_seen(linked.near[2], address, 1), 30, "far-0's consumer seen at near-2")
        snd = net.connect(linked.near[2].url).sender(address)
        stream(net, snd, lambda: len(rcv.received) >= 100, 60)
        path = trace_of(rcv.received[-1])
        via = next((r for r in linked.near[:2] if f"0/{r.router_id}" in path), None)
        assert via is not None, path
        other = next(r for r in linked.near[:2] if r is not via)

        via.exit_expected = True
        via.send_signal(signal.SIGTERM)
        stream(net, snd, lambda: not via.is_running(), 30)
        before = len(rcv.received)
        stream(net, snd, lambda: len(rcv.received) >= before + 100, 60)
        settle_all(net, snd, 15)
        assert via.wait_exit(1) == 0, via.describe()
        result = tally(snd, [rcv])
        assert result.outcomes == {"accepted": result.sent}, result.row()
        assert result.received == result.sent and result.duplicates == 0, result.row()
        assert f"0/{other.router_id}" in trace_of(rcv.received[-1]), trace_of(rcv.received[-1])

        # The link's status names the router that no longer answers.
        linked.reconcile()
        conditions = linked.status("meshlinks", "to-far")["conditions"]
        connected = next(c for c in conditions if c["type"] == "Connected")
        assert connected["status"] == "Unknown" and via.router_id in connected["message"], connected
    finally:
        linked.stop()
