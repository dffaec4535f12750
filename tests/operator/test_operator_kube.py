"""The operator against a REAL Kubernetes API server (etcd + kube-apiserver + controllers from
tests/kube; no kubelet, so router pods never run): CRDs with their CEL rules, a RouterMesh's
objects and status, routing resources' status, live changes to local router processes through
the API (QDMESH_ROUTER_URLS points the operator at them), drift repair, finalizers, metrics and
liveness.  The operator runs in-process under kopf.testing.KopfRunner.  The fixtures are in
kube_operator.py."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
import uuid
from typing import Any, Dict

import pytest

from tests.mesh.conftest import MeshFactory
from tests.operator.kube_operator import (
    LINE3,
    Cluster,
    G,
    V,
    eventually,
)
from tests.operator.localmesh import names_on
from tests.router.routerproc import free_port

pytestmark = pytest.mark.timeout(240)


def test_routermesh_gets_owned_objects_and_honest_status(kube: Cluster) -> None:
    mesh = kube.create("routermeshes", "RouterMesh", "alpha", {"size": 3, "image": "qdmesh/router:0.1.0"})
    uid = mesh["metadata"]["uid"]
    sts = eventually(lambda: kube.apps.read_namespaced_stateful_set("alpha", kube.ns), what="StatefulSet")
    cm = kube.core.read_namespaced_config_map("alpha-config", kube.ns)
    assert sorted(cm.data) == ["alpha-0.conf", "alpha-1.conf", "alpha-2.conf"]
    assert 'id: "alpha-1"' in cm.data["alpha-1.conf"]
    owned = [
        sts,
        cm,
        kube.core.read_namespaced_service("alpha-routers", kube.ns),
        kube.core.read_namespaced_service("alpha", kube.ns),
        kube.policy.read_namespaced_pod_disruption_budget("alpha", kube.ns),
        # Inter-router TLS is Managed by default: the operator made the CA and the routers' certificate.
        kube.core.read_namespaced_secret("alpha-inter-router-ca", kube.ns),
        kube.core.read_namespaced_secret("alpha-inter-router-tls", kube.ns),
    ]
    for obj in owned:
        (ref,) = obj.metadata.owner_references
        assert (ref.kind, ref.name, ref.uid, ref.controller) == ("RouterMesh", "alpha", uid, True)
        assert obj.metadata.labels["qdmesh.io/mesh"] == "alpha"
    assert sts.spec.replicas == 3 and sts.spec.service_name == "alpha-routers"

    ready = eventually(lambda: kube.condition("routermeshes", "alpha", "Ready"), what="Ready condition")
    assert ready["status"] == "False" and ready["observedGeneration"] == 1
    # No node takes pods here: the scheduler says so on each pod (one after another, on a
    # loaded machine), and the status repeats it for all of them.
    def unschedulable() -> Dict[str, Any] | None:
        found = kube.condition("routermeshes", "alpha", "Reconciling")
        all_three = str(found.get("message", "")).startswith("alpha-0, alpha-1, alpha-2: Unschedulable: ")
        return found if found.get("reason") == "Unschedulable" and all_three else None

    reconciling = eventually(unschedulable, 60, "Unschedulable status naming the three pods")
    assert reconciling["status"] == "True"
    pod = kube.core.read_namespaced_pod("alpha-0", kube.ns)
    scheduler_says = next(c.message for c in pod.status.conditions if c.type == "PodScheduled")
    assert scheduler_says and scheduler_says in reconciling["message"]
    assert kube.condition("routermeshes", "alpha", "Stalled")["status"] == "False"
    time.sleep(4)  # drift checks every 1.5 s: each router's problem is announced once, not at each
    warnings = [e for e in kube.events("alpha") if e.reason == "Unschedulable"]
    # One Warning, or one per batch of pods the scheduler turned down between two reconciliations.
    named = [rid for e in warnings for part in e.message.split("; ")
             for rid in part.split(": ", 1)[0].split(", ")]
    assert sorted(named) == ["alpha-0", "alpha-1", "alpha-2"], [e.message for e in warnings]
    assert all(e.type == "Warning" and e.count in (None, 1) for e in warnings)
    said = reconciling["message"].split(": Unschedulable: ")[-1]  # the scheduler's words
    assert all(e.message.endswith(said) for e in warnings), [e.message for e in warnings]
    status = kube.get("routermeshes", "alpha")["status"]
    assert status["observedGeneration"] == 1 and status["selector"] == "qdmesh.io/mesh=alpha"
    assert [r["name"] for r in status["routerStatus"]] == ["alpha-0", "alpha-1", "alpha-2"]
    # The operator never writes spec: generation is still 1 and spec is what the server defaulted.
    after = kube.get("routermeshes", "alpha")
    assert after["metadata"]["generation"] == 1
    assert after["spec"]["size"] == 3 and after["spec"]["topology"] == {"type": "FullMesh", "degree": 3}


def test_scale_subresource_resizes_the_mesh(kube: Cluster) -> None:
    kube.create("routermeshes", "RouterMesh", "scaled", {"size": 2, "image": "qdmesh/router:0.1.0"})
    eventually(lambda: kube.apps.read_namespaced_stateful_set("scaled", kube.ns), what="StatefulSet")
    kube.custom.patch_namespaced_custom_object_scale(
        G,
        V,
        kube.ns,
        "routermeshes",
        "scaled",
        {"spec": {"replicas": 4}},
        _content_type="application/merge-patch+json",
    )
    eventually(
        lambda: kube.apps.read_namespaced_stateful_set("scaled", kube.ns).spec.replicas == 4,
        what="StatefulSet scaled to 4",
    )
    cm = kube.core.read_namespaced_config_map("scaled-config", kube.ns)
    assert sorted(cm.data) == [f"scaled-{i}.conf" for i in range(4)]
    assert "scaled-2.scaled-routers" in cm.data["scaled-3.conf"]  # the new router joins the others
    eventually(
        lambda: kube.get("routermeshes", "scaled")["status"]["observedGeneration"] == 2,
        what="observedGeneration 2",
    )


def test_routing_resource_with_unknown_mesh_is_stalled(kube: Cluster) -> None:
    kube.create("linkroutes", "LinkRoute", "lost", {"meshRef": "nosuch", "prefix": "a.", "containerId": "c"})
    stalled = eventually(
        lambda: (
            kube.condition("linkroutes", "lost", "Stalled").get("status") == "True"
            and kube.condition("linkroutes", "lost", "Stalled")
        ),
        what="Stalled",
    )
    assert stalled["reason"] == "MeshNotFound"
    assert stalled["message"] == f"RouterMesh 'nosuch' not found in namespace '{kube.ns}'"
    assert kube.condition("linkroutes", "lost", "Ready")["status"] == "False"
    assert kube.get("linkroutes", "lost")["status"]["observedGeneration"] == 1


def test_unknown_connector_is_stalled_and_nothing_of_it_is_applied(kube: Cluster) -> None:
    kube.create(
        "routermeshes",
        "RouterMesh",
        "beta",
        {
            "size": 1,
            "image": "qdmesh/router:0.1.0",
            "connectors": [{"name": "broker", "host": "rabbit", "port": 5672}],
        },
    )
    kube.create(
        "linkroutes", "LinkRoute", "good", {"meshRef": "beta", "prefix": "good.", "connection": "broker"}
    )
    kube.create(
        "linkroutes", "LinkRoute", "typo", {"meshRef": "beta", "prefix": "typo.", "connection": "brokr"}
    )
    stalled = eventually(
        lambda: (
            kube.condition("linkroutes", "typo", "Stalled").get("status") == "True"
            and kube.condition("linkroutes", "typo", "Stalled")
        ),
        what="Stalled",
    )
    assert stalled["reason"] == "UnknownReference"
    assert "RouterMesh 'beta' has no connector 'brokr' (its connectors: broker)" in stalled["message"]
    conf = eventually(
        lambda: (
            "good."
            in (kube.core.read_namespaced_config_map("beta-config", kube.ns).data or {}).get(
                "beta-0.conf", ""
            )
            and kube.core.read_namespaced_config_map("beta-config", kube.ns)
        ),
        what="good LinkRoute in the ConfigMap",
    ).data["beta-0.conf"]
    assert "typo." not in conf
    # Events are posted after the statuses are written.
    eventually(lambda: any(e.reason == "UnknownReference" for e in kube.events("typo")), what="Event")


@pytest.mark.parametrize(
    ("plural", "kind", "spec", "message"),
    [
        (
            "linkroutes",
            "LinkRoute",
            {"meshRef": "m", "prefix": "a", "pattern": "b", "containerId": "c"},
            "give exactly one of spec.prefix or spec.pattern",
        ),
        (
            "linkroutes",
            "LinkRoute",
            {"meshRef": "m", "prefix": "a"},
            "give exactly one of spec.connection (a connector of the RouterMesh) or spec.containerId",
        ),
        (
            "autolinks",
            "AutoLink",
            {"meshRef": "m", "address": "q", "direction": "sideways", "containerId": "c"},
            'Unsupported value: "sideways"',
        ),
        (
            "routermeshes",
            "RouterMesh",
            {"size": 3, "topology": {"type": "Redundant", "degree": 3}},
            "spec.topology.degree must be smaller than spec.size",
        ),
        (
            "routermeshes",
            "RouterMesh",
            {"listeners": [{"name": "x", "port": 55673}]},
            "ports 55672 (inter-router), 55673 (the operator's management) and 8672 (health and metrics) "
            "are reserved",
        ),
        ("routermeshes", "RouterMesh", {"image": "qdmesh/router:latest"}, "spec.image must name a version"),
        ("routermeshes", "RouterMesh", {"image": "registry.example:5000/qdmesh/router"},
         "spec.image needs a tag or a digest"),
        ("routermeshes", "RouterMesh", {"pod": {"resources": {"requests": {"cpu": "lots"}}}},
         'spec.pod.resources.requests[cpu]: Invalid value: "lots": must be a quantity'),
        ("routermeshes", "RouterMesh",
         {"edgeGroups": [{"name": "e", "size": 1, "pod": {"resources": {"limits": {"memory": "big"}}}}]},
         'spec.edgeGroups[0].pod.resources.limits[memory]: Invalid value: "big": must be a quantity'),
        (
            "routermeshes",
            "RouterMesh",
            {"router": {"helloIntervalSeconds": 5, "helloMaxAgeSeconds": 3}},
            "spec.router.helloMaxAgeSeconds must be larger than helloIntervalSeconds",
        ),
        (
            "vhostpolicies",
            "VhostPolicy",
            {"meshRef": "m", "hostname": "h", "groups": {"g": {"sources": ["a"], "sourcePattern": "b"}}},
            "give sources or sourcePattern, not both",
        ),
    ],
)
def test_cel_rules_refuse_bad_specs_with_their_messages(
    kube: Cluster, plural: str, kind: str, spec: Dict[str, Any], message: str
) -> None:
    from kubernetes.client.rest import ApiException

    with pytest.raises(ApiException) as caught:
        kube.create(plural, kind, f"bad-{uuid.uuid4().hex[:6]}", spec)
    assert caught.value.status == 422
    assert message in json.loads(caught.value.body)["message"]


def test_mesh_ref_cannot_change(kube: Cluster) -> None:
    from kubernetes.client.rest import ApiException

    kube.create(
        "autolinks",
        "AutoLink",
        "fixed",
        {"meshRef": "m", "address": "q", "direction": "in", "containerId": "c"},
    )
    with pytest.raises(ApiException) as caught:
        kube.patch_spec("autolinks", "fixed", {"meshRef": "other"})
    assert "spec.meshRef cannot change" in json.loads(caught.value.body)["message"]

def test_live_changes_drift_and_finalizers_on_real_routers(
    kube: Cluster, operator: Dict[str, Any], mesh_factory: MeshFactory
) -> None:
    local = mesh_factory(LINE3)
    urls = {f"{kube.ns}/gamma-{i}": local.routers[name].url for i, name in enumerate("ABC")}
    operator["urls_file"].write_text(json.dumps(urls))
    kube.create(
        "routermeshes",
        "RouterMesh",
        "gamma",
        {
            "size": 3,
            "image": "qdmesh/router:0.1.0",
            "connectors": [{"name": "broker", "host": "127.0.0.1", "port": free_port()}],
        },
    )
    kube.create(
        "linkroutes", "LinkRoute", "orders", {"meshRef": "gamma", "prefix": "orders.", "connection": "broker"}
    )
    kube.create(
        "autolinks",
        "AutoLink",
        "q1",
        {"meshRef": "gamma", "address": "queue/q1", "direction": "out", "connection": "broker"},
    )
    routers = list(urls.values())
    eventually(
        lambda: all(
            names_on(u, "linkRoute") == ["qdmesh/linkRoute/orders-in", "qdmesh/linkRoute/orders-out"]
            for u in routers
        ),
        what="link routes on every router",
    )
    eventually(
        lambda: all(names_on(u, "autoLink") == ["qdmesh/autoLink/q1"] for u in routers),
        what="auto-link on every router",
    )
    ready = eventually(
        lambda: (
            kube.condition("autolinks", "q1", "Ready").get("status") == "True"
            and kube.condition("autolinks", "q1", "Ready")
        ),
        what="AutoLink Ready",
    )
    assert ready["message"].startswith("live on all 3 routers")
    # Only what the operator must take off the routers carries its finalizer: a RouterMesh
    # (and its namespace) can go with no operator running.
    finalizer = "qdmesh.io/remove-from-routers"
    assert finalizer in kube.get("linkroutes", "orders")["metadata"]["finalizers"]
    assert finalizer in kube.get("autolinks", "q1")["metadata"]["finalizers"]
    assert finalizer not in (kube.get("routermeshes", "gamma")["metadata"].get("finalizers") or [])
    status = kube.get("autolinks", "q1")["status"]
    assert [(r["name"], r["applied"], r["operStatus"]) for r in status["routers"]] == [
        (f"gamma-{i}", True, "inactive") for i in range(3)
    ]  # no broker listens on that port
    # Applied everywhere, reachable nowhere: the conditions say what traffic would find.
    unreachable = kube.condition("autolinks", "q1", "Reachable")
    assert (unreachable["status"], unreachable["reason"]) == ("False", "AutoLinkInactive")
    assert unreachable["message"].startswith(
        "active on 0/3 routers; gamma-0: inactive (not connected to connector 'broker')"), unreachable
    route = eventually(lambda: kube.condition("linkroutes", "orders", "Reachable"), what="Reachable")
    assert (route["status"], route["reason"]) == ("False", "NoRouteContainer"), route
    mesh_status = eventually(lambda: kube.get("routermeshes", "gamma")["status"].get("reachableAutoLinks") and
                             kube.get("routermeshes", "gamma")["status"], what="the mesh's count of routes")
    assert (mesh_status["reachableLinkRoutes"], mesh_status["reachableAutoLinks"]) == ("0/1", "0/1")

    # Drift: delete the auto-link by hand on one router; the timer puts it back.
    victim = routers[1]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "qdrouter.tools.qdmanage",
            "-b",
            victim,
            "delete",
            "--type=autoLink",
            "--name=qdmesh/autoLink/q1",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    eventually(lambda: names_on(victim, "autoLink") == ["qdmesh/autoLink/q1"], 15, "auto-link repaired")
    eventually(
        lambda: any(e.reason == "DriftRepaired" for e in kube.events("gamma")), 10, "DriftRepaired Event"
    )
    # These routers answer management from outside the cluster: their pods' scheduling is not
    # why anything fails, and no Warning says it is (nor one at every drift check).
    assert not [e for e in kube.events("gamma") if e.reason == "Unschedulable"]

    # Change and delete through the API: live on every router, no restart involved.
    kube.patch_spec("linkroutes", "orders", {"prefix": "invoices."})
    eventually(
        lambda: all({r for r in _prefixes(u)} == {"invoices."} for u in routers), what="prefix changed"
    )
    kube.delete("linkroutes", "orders")
    eventually(lambda: all(names_on(u, "linkRoute") == [] for u in routers), what="link routes removed")
    eventually(lambda: kube.gone("linkroutes", "orders"), what="LinkRoute deleted (finalizer released)")
    assert all(names_on(u, "autoLink") == ["qdmesh/autoLink/q1"] for u in routers)
    assert all(
        "qdmesh/linkRoute" not in c
        for c in kube.core.read_namespaced_config_map("gamma-config", kube.ns).data.values()
    )
    local.wait_converged()


def _prefixes(url: str) -> set:
    from tests.operator.localmesh import rows_on

    return {str(r["prefix"]) for r in rows_on(url, "linkRoute").values()}


def test_metrics_and_liveness_endpoints(operator: Dict[str, Any], kube: Cluster) -> None:
    # (Retried: run alone, this test may come before kopf's health endpoint is up.)
    eventually(lambda: _get(f"http://127.0.0.1:{operator['health']}/healthz") is not None, what="healthz")
    metrics_url = f"http://127.0.0.1:{operator['metrics']}/metrics"
    before = _reconciles_ok(eventually(lambda: _get(metrics_url), what="metrics"))
    # A reconcile of this test's own, so the test does not depend on what ran before it.
    kube.create("routermeshes", "RouterMesh", "metered", {"size": 1, "image": "qdmesh/router:0.1.0"})
    eventually(
        lambda: kube.get("routermeshes", "metered").get("status", {}).get("observedGeneration") == 1,
        what="first reconciliation",
    )

    def counted() -> str | None:
        text = _get(metrics_url)
        return text if _reconciles_ok(text) > before else None

    text = eventually(counted, what="the reconcile counted")
    assert "qdmesh_operator_reconcile_seconds_count" in text
    # What the mesh's status says, as gauges for alert rules: no router runs here.
    mesh = f'namespace="{kube.ns}",mesh="metered"'
    text = eventually(lambda: f"qdmesh_mesh_routers{{{mesh}}} 1" in _get(metrics_url) and _get(metrics_url),
                      what="the mesh's gauges")
    assert f"qdmesh_mesh_ready{{{mesh}}} 0" in text
    assert f"qdmesh_mesh_lost_routers{{{mesh}}} 0" in text
    expiry = next(line for line in text.splitlines() if line.startswith(
        f'qdmesh_certificate_expiry_timestamp_seconds{{{mesh},secret="metered-inter-router-ca"}} '))
    assert float(expiry.split()[-1]) > time.time() + 300 * 86400  # the managed CA: ten years
    kube.delete("routermeshes", "metered")
    eventually(lambda: 'mesh="metered"' not in _get(metrics_url), what="the mesh's gauges gone with it")


def _reconciles_ok(text: str) -> int:
    """qdmesh_operator_reconciles_total{why="change",result="ok"}, 0 while absent."""
    prefix = 'qdmesh_operator_reconciles_total{why="change",result="ok"} '
    for line in text.splitlines():
        if line.startswith(prefix):
            return int(float(line[len(prefix):]))
    return 0


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as reply:
        return reply.read().decode()


def test_deleting_a_mesh_deletes_what_it_owns(kube: Cluster) -> None:
    kube.create("routermeshes", "RouterMesh", "doomed", {"size": 1, "image": "qdmesh/router:0.1.0"})
    eventually(lambda: kube.apps.read_namespaced_stateful_set("doomed", kube.ns), what="StatefulSet")
    kube.delete("routermeshes", "doomed")
    from kubernetes.client.rest import ApiException

    def gone() -> bool:
        try:
            kube.core.read_namespaced_config_map("doomed-config", kube.ns)
        except ApiException as e:
            return e.status == 404
        return False

    # The garbage collector works through a queue: 60 s was not always enough on a loaded machine.
    eventually(gone, 150, "ConfigMap garbage-collected through its owner reference")


def test_image_change_rolls_one_router_and_holds_until_it_is_back(kube: Cluster) -> None:
    """No kubelet here, so the restarted router never comes back: the operator must release
    only the highest router and hold the rest, saying so in status and in an Event."""
    kube.create("routermeshes", "RouterMesh", "rolly", {"size": 3, "image": "qdmesh/router:0.1.0"})
    eventually(lambda: kube.apps.read_namespaced_stateful_set("rolly", kube.ns), what="StatefulSet")
    eventually(
        lambda: kube.get("routermeshes", "rolly").get("status", {}).get("observedGeneration") == 1,
        what="first reconciliation",
    )
    kube.patch_spec("routermeshes", "rolly", {"image": "qdmesh/router:0.2.0"})

    def partition() -> int:
        sts = kube.apps.read_namespaced_stateful_set("rolly", kube.ns)
        return int(sts.spec.update_strategy.rolling_update.partition)

    eventually(
        lambda: (
            kube.apps.read_namespaced_stateful_set("rolly", kube.ns).spec.template.spec.containers[0].image
            == "qdmesh/router:0.2.0"
        ),
        what="new image in the template",
    )
    assert partition() == 2
    rolling = eventually(
        lambda: (
            kube.condition("routermeshes", "rolly", "Reconciling").get("reason") == "RollingRestart"
            and kube.condition("routermeshes", "rolly", "Reconciling")
        ),
        what="RollingRestart status",
    )
    assert "router 2" in rolling["message"]
    time.sleep(4)  # several drift checks: still held, router 2 never came back
    assert partition() == 2
    assert any(
        e.reason == "RollingRestart" and "restarting router 2 first" in e.message
        for e in kube.events("rolly")
    )


def test_console_is_created_when_enabled_and_removed_when_turned_off(kube: Cluster) -> None:
    from kubernetes.client.rest import ApiException

    mesh = kube.create("routermeshes", "RouterMesh", "viewed",
                       {"size": 1, "image": "qdmesh/router:0.1.0", "console": {"enabled": True}})
    deployment = eventually(lambda: kube.apps.read_namespaced_deployment("viewed-console", kube.ns),
                            what="console Deployment")
    # Applied one after the other: the Service may follow the Deployment by a moment.
    service = eventually(lambda: kube.core.read_namespaced_service("viewed-console", kube.ns),
                         what="console Service")
    for obj in (deployment, service):
        (ref,) = obj.metadata.owner_references
        assert (ref.kind, ref.name, ref.uid) == ("RouterMesh", "viewed", mesh["metadata"]["uid"])
    (container,) = deployment.spec.template.spec.containers
    assert container.command[:4] == ["qdmesh", "console", "--router", f"viewed.{kube.ns}.svc:5672"]
    assert container.image == "qdmesh/router:0.1.0"
    assert service.spec.selector == {"qdmesh.io/console": "viewed"}
    assert service.spec.ports[0].port == 8080
    # The console pod is not a router: the routers' selector does not pick it.
    assert "qdmesh.io/mesh" not in deployment.spec.template.metadata.labels

    kube.patch_spec("routermeshes", "viewed", {"console": {"enabled": False}})

    def removed() -> bool:
        for read in (kube.apps.read_namespaced_deployment, kube.core.read_namespaced_service):
            try:
                read("viewed-console", kube.ns)
                return False
            except ApiException as e:
                if e.status != 404:
                    raise
        return True

    eventually(removed, 30, "console Deployment and Service deleted")
    eventually(lambda: any(e.reason == "ConsoleRemoved" for e in kube.events("viewed")), 10,
               "ConsoleRemoved Event")
    kube.core.read_namespaced_service("viewed", kube.ns)  # the routers' own Service stays


def test_drift_checks_apply_only_what_changed(operator: Dict[str, Any], kube: Cluster) -> None:
    """Drift checks (every 1.5 s here) of meshes nobody changed send no server-side apply of
    their objects; an owned object edited or deleted by hand is put back at the next check."""
    from kubernetes.client.rest import ApiException

    plane = operator["plane"]
    kube.create("routermeshes", "RouterMesh", "steady", {"size": 1, "image": "qdmesh/router:0.1.0"})
    rendered = eventually(lambda: kube.core.read_namespaced_config_map("steady-config", kube.ns),
                          what="ConfigMap").data

    def applies() -> int:
        return sum(plane.requests_made("APPLY", plural)
                   for plural in ("configmaps", "services", "statefulsets", "poddisruptionbudgets"))

    def quiet() -> bool:  # three drift checks of every mesh without one apply
        before = applies()
        time.sleep(4.5)
        return applies() == before

    eventually(quiet, 60, "drift checks that apply nothing")
    kube.core.patch_namespaced_config_map("steady-config", kube.ns, {"data": {"steady-0.conf": "edited"}})
    eventually(lambda: kube.core.read_namespaced_config_map("steady-config", kube.ns).data == rendered, 30,
               "the edited ConfigMap put back")
    kube.core.delete_namespaced_service("steady", kube.ns)

    def service_back() -> bool:
        try:
            return kube.core.read_namespaced_service("steady", kube.ns) is not None
        except ApiException as e:
            if e.status != 404:
                raise
            return False

    eventually(service_back, 30, "the deleted Service put back")
