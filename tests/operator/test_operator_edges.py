"""Edge groups (spec.edgeGroups), without an API server: the model's checks (errors name the
field), each router's desired entities, the rendered configs (golden files, loaded by the
router's own parser), the Kubernetes objects of each group, edge status and the uplink an
edge router reports."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest
import yaml

from qdmesh_operator import contract
from qdmesh_operator.apply.edges import EdgeRouter, edge_routers
from qdmesh_operator.apply.management import OpResult, RouterOutcome, uplink_of
from qdmesh_operator.apply.mesh import Applied
from qdmesh_operator.apply.plan import CREATE, Op
from qdmesh_operator.desired.state import mesh_state
from qdmesh_operator.kube.api import EdgePod
from qdmesh_operator.model.errors import SpecError
from qdmesh_operator.model.mesh import parse_mesh
from qdmesh_operator.observe.cluster import Observed
from qdmesh_operator.render.conf import render_all
from qdmesh_operator.render.edges import edge_objects, edge_secret
from qdmesh_operator.status.edges import edge_status
from qdrouter.config import parse_config_text
from tests.operator.specs import MESH_SPEC, routing
from tests.operator.test_operator_render import OWNER, check_golden

EDGE_GROUPS: List[Dict[str, Any]] = [
    {"name": "apps", "size": 3, "pod": {"resources": {"limits": {"memory": "128Mi"}}}},
    {"name": "nodes", "perNode": True, "pod": {"tolerations": [{"operator": "Exists"}]}},
]
EDGE_SPEC: Dict[str, Any] = {**MESH_SPEC, "edgeGroups": EDGE_GROUPS}


def edge_mesh(spec: Dict[str, Any] | None = None, **tls: Any) -> Any:
    spec = dict(EDGE_SPEC if spec is None else spec)
    if tls:
        spec["interRouter"] = {"tls": tls}
    return parse_mesh("demo", "messaging", spec)


# -- model --------------------------------------------------------------------------------------------

def test_edge_groups_parse_into_deployments_and_daemonsets() -> None:
    mesh = edge_mesh()
    apps, nodes = mesh.edge_groups
    assert (apps.name, apps.size, apps.per_node) == ("apps", 3, False)
    assert (nodes.name, nodes.size, nodes.per_node) == ("nodes", None, True)
    assert apps.pod.resources == {"limits": {"memory": "128Mi"}}
    assert nodes.pod.tolerations == [{"operator": "Exists"}]
    assert parse_mesh("demo", "messaging", MESH_SPEC).edge_groups == []


@pytest.mark.parametrize("groups, field, words", [
    ([{"name": "a"}], "spec.edgeGroups[0]", "exactly one of size"),
    ([{"name": "a", "size": 2, "perNode": True}], "spec.edgeGroups[0]", "exactly one of size"),
    ([{"name": "a", "size": 1}, {"name": "a", "size": 2}], "spec.edgeGroups[1].name", "two edge groups"),
    ([{"name": "a" * 17, "size": 1}], "spec.edgeGroups[0].name", ""),
    ([{"name": "Apps", "size": 1}], "spec.edgeGroups[0].name", ""),
    ([{"name": "a", "size": -1}], "spec.edgeGroups[0].size", ""),
    ([{"name": "a", "size": 1, "pod": {"labels": {"qdmesh.io/mesh": "x"}}}],
     "spec.edgeGroups[0].pod.labels.qdmesh.io/mesh", "set by the operator"),
    ("apps", "spec.edgeGroups", "list"),
])
def test_bad_edge_groups_are_refused_naming_the_field(groups: Any, field: str, words: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_mesh("demo", "messaging", {**MESH_SPEC, "edgeGroups": groups})
    assert caught.value.field == field
    assert words in caught.value.problem


def test_edge_group_service_cannot_be_a_listener_service() -> None:
    spec = {**MESH_SPEC, "listeners": [{"name": "edge-apps", "port": 5680, "expose": "LoadBalancer"}],
            "edgeGroups": [{"name": "apps", "size": 1}]}
    with pytest.raises(SpecError) as caught:
        parse_mesh("demo", "messaging", spec)
    assert caught.value.field == "spec.edgeGroups[0].name"
    assert "Service demo-edge-apps" in caught.value.problem


# -- desired state ------------------------------------------------------------------------------------

def test_interior_routers_get_an_edge_listener_only_with_edge_groups() -> None:
    with_edges = mesh_state(edge_mesh(), routing())
    listener = next(e for e in with_edges.entities["demo-0"] if e.name == "qdmesh/edgeListener/edge")
    assert listener.attributes == {"host": "", "port": "45672", "role": "edge",
                                   "policyVhost": "qdmesh-edge-routers",
                                   "sslProfile": "inter-router-tls", "saslMechanisms": "EXTERNAL",
                                   "authenticatePeer": True, "requireSsl": True}
    assert not listener.restart_only  # created live: adding edge groups restarts no interior router
    # The vhost that polices edge connections (as qdrouterd polices them), live too.
    vhost = next(e for e in with_edges.entities["demo-0"] if e.name == "qdmesh/edgeVhost/edge")
    assert vhost.attributes["hostname"] == "qdmesh-edge-routers" and not vhost.restart_only
    without = mesh_state(parse_mesh("demo", "messaging", MESH_SPEC), routing())
    assert not any("edge" in e.name.split("/")[1] for e in without.entities["demo-0"] if "/" in e.name)


def test_edge_routers_connect_to_every_interior_router_each_group_starting_elsewhere() -> None:
    state = mesh_state(edge_mesh(), routing())
    hosts = {group: [e.attributes["host"].split(".")[0] for e in state.edges[group] if e.type == "connector"]
             for group in state.edges}
    assert hosts == {"apps": ["demo-0", "demo-1", "demo-2"], "nodes": ["demo-1", "demo-2", "demo-0"]}
    connector = next(e for e in state.edges["apps"] if e.type == "connector")
    assert connector.name == "qdmesh/edge/demo-0"
    assert connector.attributes == {"host": "demo-0.demo-routers.messaging.svc", "port": "45672",
                                    "role": "edge", "sslProfile": "edge-tls", "saslMechanisms": "EXTERNAL"}


def test_edge_routers_get_addresses_and_vhosts_but_no_routes_or_broker_connectors() -> None:
    state = mesh_state(edge_mesh(), routing())
    types = {e.type for e in state.edges["apps"]}
    assert "address" in types and "vhost" in types
    assert not types & {"linkRoute", "autoLink", "listener", "sslProfile"}
    assert all(e.attributes["role"] == "edge" for e in state.edges["apps"] if e.type == "connector")


def test_edge_connectors_without_tls() -> None:
    state = mesh_state(edge_mesh(mode="Disabled"), [])
    connector = next(e for e in state.edges["apps"] if e.type == "connector")
    assert "sslProfile" not in connector.attributes
    listener = next(e for e in state.entities["demo-1"] if e.name == "qdmesh/edgeListener/edge")
    assert listener.attributes["saslMechanisms"] == "ANONYMOUS" and "sslProfile" not in listener.attributes


# -- render -------------------------------------------------------------------------------------------

def test_edge_confs_match_golden_files_and_load_as_edge_routers() -> None:
    confs = render_all(mesh_state(edge_mesh(), routing()))
    assert sorted(confs) == ["demo-0.conf", "demo-1.conf", "demo-2.conf", "edge-apps.conf", "edge-nodes.conf"]
    check_golden("edge-apps.conf", confs["edge-apps.conf"])
    check_golden("edge-demo-0.conf", confs["demo-0.conf"])
    loaded = parse_config_text(confs["edge-apps.conf"], "edge-apps.conf")
    router = next(e for e in loaded if e.section == "router")
    assert router.attributes["mode"] == "edge"
    assert router.attributes["id"].startswith("Router.")  # from the pod's host name, not the config
    sections = {(e.section, str(e.attributes.get("name"))) for e in loaded}
    assert ("listener", "amqp") in sections and ("listener", "management") in sections
    assert ("listener", "inter-router") not in sections
    assert ("sslProfile", "edge-tls") in sections


def test_meshes_without_edge_groups_render_as_before() -> None:
    confs = render_all(mesh_state(parse_mesh("demo", "messaging", MESH_SPEC), routing()))
    for key, text in confs.items():
        check_golden(f"fullmesh-{key}", text)


# -- Kubernetes objects -------------------------------------------------------------------------------

def test_edge_objects_match_golden_file() -> None:
    carried = {"qdmesh.io/inter-router-cert": "abc"}  # what an earlier operator wrote: kept
    objects = edge_objects(edge_mesh(), OWNER, {"apps": carried, "nodes": carried})
    check_golden("edge-manifests.yaml", yaml.safe_dump_all(objects, sort_keys=True))
    kinds = [(o["kind"], o["metadata"]["name"]) for o in objects]
    assert kinds == [("Service", "demo-edge-apps"), ("PodDisruptionBudget", "demo-edge-apps"),
                     ("Deployment", "demo-edge-apps"), ("Service", "demo-edge-nodes"),
                     ("PodDisruptionBudget", "demo-edge-nodes"), ("DaemonSet", "demo-edge-nodes")]


def test_per_node_service_keeps_clients_on_their_node_and_pods_stay_out_of_interior_selectors() -> None:
    service, _, deployment, node_service, _, daemon_set = edge_objects(edge_mesh(), OWNER)
    assert "internalTrafficPolicy" not in service["spec"]
    assert node_service["spec"]["internalTrafficPolicy"] == "Local"
    for workload in (deployment, daemon_set):
        labels = workload["spec"]["template"]["metadata"]["labels"]
        assert "qdmesh.io/mesh" not in labels  # the interior Services and PDB select by it
        assert labels["qdmesh.io/edge-of"] == "demo"
        container = workload["spec"]["template"]["spec"]["containers"][0]
        assert container["command"][-1].endswith(contract.edge_config_key(labels["qdmesh.io/edge-group"]))
    assert deployment["spec"]["replicas"] == 3
    assert deployment["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": 0, "maxSurge": 1}
    assert daemon_set["spec"]["template"]["spec"]["tolerations"] == [{"operator": "Exists"}]


@pytest.mark.parametrize("tls, secret", [
    ({"mode": "Managed"}, "demo-edge-tls"),
    ({"mode": "Secret", "secretName": "mine"}, "mine"),
    ({"mode": "CertManager", "issuerRef": {"name": "ca"}}, "demo-inter-router-tls"),
    ({"mode": "Disabled"}, None),
])
def test_edge_routers_mount_the_certificate_of_the_mode(tls: Dict[str, Any], secret: str | None) -> None:
    mesh = edge_mesh(**tls)
    assert edge_secret(mesh) == secret
    volumes = edge_objects(mesh, OWNER)[2]["spec"]["template"]["spec"]["volumes"]
    mounted = [v["secret"]["secretName"] for v in volumes if "secret" in v]
    assert mounted == ([secret] if secret else [])


# -- management and status ----------------------------------------------------------------------------

def test_uplink_is_the_interior_router_of_the_open_edge_connection() -> None:
    rows = [{"role": "normal", "dir": "in", "host": "10.0.0.9:40000"},
            {"role": "edge", "dir": "out", "host": "demo-2.demo-routers.messaging.svc:45672",
             "container": "demo-2", "opened": True}]
    assert uplink_of(rows) == "demo-2"
    assert uplink_of([{"role": "edge", "dir": "out", "host": "10.1.2.3:45672", "container": "R9"}]) == "R9"
    assert uplink_of(rows[:1]) == ""


def test_edge_routers_are_ready_pods_at_their_address_or_the_override_entries() -> None:
    state = mesh_state(edge_mesh(), [])
    pods = {"a": EdgePod("a", "apps", "10.0.0.1", "n1", True), "b": EdgePod("b", "apps", "", "n1", True),
            "c": EdgePod("c", "nodes", "fd00::1", "n2", True),
            "d": EdgePod("d", "apps", "10.0.0.4", "n2", False),
            "e": EdgePod("e", "gone", "10.0.0.5", "n2", True)}
    assert edge_routers(state, pods, True, None) == [
        EdgeRouter("a", "apps", "amqps://10.0.0.1:55673"), EdgeRouter("c", "nodes", "amqps://[fd00::1]:55673")]
    override = {"messaging/edge:apps:E1": "amqp://127.0.0.1:1", "messaging/demo-0": "amqp://127.0.0.1:2",
                "other/edge:apps:E2": "amqp://127.0.0.1:3"}
    assert edge_routers(state, pods, True, override) == [EdgeRouter("E1", "apps", "amqp://127.0.0.1:1")]


def test_edge_status_counts_routers_connected_with_their_configuration() -> None:
    state = mesh_state(edge_mesh(), [])
    observed = Observed("messaging", "demo", {}, edge_workloads={
        "nodes": {"kind": "DaemonSet", "status": {"desiredNumberScheduled": 2}}},
        edge_pods={"a": EdgePod("a", "apps", "10.0.0.1", "n1", True)})
    connected = RouterOutcome("a", "u", router={"id": "Router.a.1"}, uplink="demo-0")
    unconnected = RouterOutcome("b", "u", router={"id": "Router.b.1"})
    refused = RouterOutcome("c", "u", uplink="demo-1",
                            results=[OpResult(Op(CREATE, "connector", "x", {}), "refused (501)")])
    applied = Applied(edge_routers=[EdgeRouter("a", "apps", "u"), EdgeRouter("b", "apps", "u"),
                                    EdgeRouter("c", "nodes", "u")],
                      edge_outcomes={"a": connected, "b": unconnected, "c": refused})
    found = edge_status(state, observed, applied)
    assert (found.wanted, found.ready) == (5, 1)
    apps, nodes = found.groups
    assert (apps["kind"], apps["edges"], apps["readyEdges"]) == ("Deployment", 3, 1)
    assert apps["routers"][0] == {"name": "a", "ready": True, "node": "n1", "routerId": "Router.a.1",
                                  "interior": "demo-0"}
    assert apps["routers"][1]["message"] == "not connected to an interior router yet"
    assert (nodes["kind"], nodes["edges"]) == ("DaemonSet", 2)
    assert found.failures == ["c: refused (501)"]


@pytest.mark.parametrize("tls, loaded", [
    ({"mode": "Managed"}, {"edge-tls": "demo-edge-tls"}),
    ({"mode": "Secret", "secretName": "mine"}, {"edge-tls": "mine"}),
    ({"mode": "CertManager", "issuerRef": {"name": "ca"}}, {"edge-tls": "demo-inter-router-tls"}),
    ({"mode": "Disabled"}, {}),
])
def test_edge_routers_load_only_their_own_certificate(tls: Dict[str, Any], loaded: Dict[str, str]) -> None:
    """Not the interior routers' listener certificates: edge routers mount only theirs."""
    from qdmesh_operator.tls.live import edge_secrets, interior_secrets

    spec = {**EDGE_SPEC, "listeners": [{"name": "amqps", "port": 5671, "tlsSecretName": "listener-tls"}]}
    assert edge_secrets(edge_mesh(spec, **tls)) == loaded
    assert "listener-tls" in interior_secrets(edge_mesh(spec, **tls)).values()
    assert edge_secrets(edge_mesh(MESH_SPEC, **tls)) == {}


def test_edge_pods_kept_from_running_are_named_in_status_conditions_and_one_event() -> None:
    from qdmesh_operator.pod_problems import PodProblem
    from qdmesh_operator.status.mesh import mesh_status
    from qdmesh_operator.status.pods import pod_events

    pull = PodProblem("ImagePullBackOff", 'container router: Back-off pulling image "qdmesh/router:9.9"')
    state = mesh_state(edge_mesh({**MESH_SPEC, "size": 1, "edgeGroups": [{"name": "apps", "size": 2}]}), [])
    observed = Observed("messaging", "demo", {}, edge_pods={
        "a": EdgePod("a", "apps", "10.0.0.1", "n1", True),
        "b": EdgePod("b", "apps", "", "n2", False, problem=pull)})
    applied = Applied(edge_routers=[EdgeRouter("a", "apps", "u")],
                      edge_outcomes={"a": RouterOutcome("a", "u", router={"id": "a"}, uplink="demo-0")},
                      outcomes={"demo-0": RouterOutcome("demo-0", "u0")},
                      stateful_set_status={"replicas": 1, "readyReplicas": 1})
    edges = edge_status(state, observed, applied)
    assert edges.problems == {"b": pull} and (edges.wanted, edges.ready) == (2, 1)
    assert edges.groups[0]["routers"][1] == {"name": "b", "ready": False, "node": "n2",
                                             "message": f"pod not ready: {pull.describe()}"}
    body: Dict[str, Any] = {"apiVersion": "qdmesh.io/v1alpha1", "kind": "RouterMesh",
                            "metadata": {"name": "demo", "namespace": "messaging", "generation": 1}}
    status = mesh_status(body, state, applied=applied, edges=edges)
    stalled = next(c for c in status["conditions"] if c["type"] == "Stalled")
    assert (stalled["status"], stalled["reason"]) == ("True", "ImagePullBackOff")
    assert stalled["message"] == f"b: {pull.describe()}"
    # Announced once: the next reconciliation reads the problem back from the status.
    assert [e.reason for e in pod_events(body, edges.problems)] == ["ImagePullBackOff"]
    assert pod_events({**body, "status": status}, edges.problems) == []
