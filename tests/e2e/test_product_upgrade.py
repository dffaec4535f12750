"""An operator upgrade that does not roll the mesh: the previous release's chart, operator and
router image (.ci/setup.d/36-previous-release.sh builds them from git) run a RouterMesh with a
LinkRoute; while unsettled messages cross it, the CRDs are applied and the chart upgraded to
this checkout's (as docs/operations.md tells users). The new operator takes the mesh over:
every router pod keeps its UID and restart count, the mesh keeps the router image it ran (the
new chart's default image is another), it is Ready and converged, every router has the
LinkRoute, and every message is accepted and received.

It runs before the product suite's shared operator is installed (conftest.SUITE_ORDER): two
operators must not reconcile one cluster's meshes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List

import pytest

from tests.prerequisites import require

from .kube import describe_namespace, eventually
from .mesh_fixtures import fresh_namespace, mesh_whole, print_operator_log
from .product import (
    CHART,
    REPO,
    apps_api,
    crds_established,
    create_resource,
    delete_resource,
    deployment_ready,
    helm_binary,
    helm_uninstall,
    kubectl_binary,
    package_version,
    port_forwards,
    read_resource,
    resource_gone,
    router_pods,
    run,
    status_summary,
)
from .traffic import Traffic, link_routes, router_ids_known

PREVIOUS = REPO / "build" / "previous-release"
RELEASE = "qdmesh-upgrade"  # the chart's objects are named after it
OPERATOR_LABEL = "app.kubernetes.io/name=qdmesh-operator"
MESH, SIZE = "up", 2
ROUTES = [("orders.", "in", "broker"), ("orders.", "out", "broker")]
Timing = Callable[[str, float], None]


def _previous_release() -> Dict[str, str]:
    """ref, version, router_image and operator_image of the previous release's build."""
    env = PREVIOUS / "release.env"
    require(env.is_file() and (PREVIOUS / "chart" / "Chart.yaml").is_file(),
            "the previous release's images and chart: bash .ci/setup.d/36-previous-release.sh")
    return dict(line.split("=", 1) for line in env.read_text().split() if "=" in line)


def _helm(kubeconfig: Path, verb: str, chart: Path, namespace: str, values: Dict[str, str]) -> None:
    helm = helm_binary()
    assert helm is not None
    cmd = [helm, verb, RELEASE, str(chart), "-n", namespace, "--kubeconfig", str(kubeconfig)]
    for key, value in values.items():
        cmd += ["--set", f"{key}={value}"]
    run(cmd)


def _operators(k8s: Any) -> List[str]:
    found = apps_api(k8s).list_deployment_for_all_namespaces(label_selector=OPERATOR_LABEL).items
    return [f"{d.metadata.namespace}/{d.metadata.name}" for d in found]


def _operator_image(k8s: Any, namespace: str) -> str:
    dep = apps_api(k8s).read_namespaced_deployment(RELEASE, namespace)
    return str(dep.spec.template.spec.containers[0].image)


def _mesh_status(k8s: Any, namespace: str) -> Dict[str, Any]:
    return dict(read_resource(k8s, namespace, "routermeshes", MESH).get("status") or {})


@pytest.fixture
def namespaces(core: Any, e2e_kubeconfig: Path) -> Iterator[Dict[str, str]]:
    """The operator's namespace and the mesh's; the release and both go afterwards."""
    require(helm_binary() is not None, "helm (.ci/setup.d/30-helm-tools.sh)")
    names = {"operator": fresh_namespace(core, "upgrade-system"), "mesh": fresh_namespace(core, "upgrade")}
    yield names
    print_operator_log(core, names["operator"])
    helm = helm_binary()
    assert helm is not None
    helm_uninstall(helm, e2e_kubeconfig, RELEASE, names["operator"])
    for name in names.values():
        core.delete_namespace(name, propagation_policy="Background")


def test_operator_upgrade_keeps_routers_running(
        namespaces: Dict[str, str], core: Any, k8s: Any, e2e_kubeconfig: Path, timing: Timing) -> None:
    previous = _previous_release()
    assert not _operators(k8s), f"another qdmesh operator runs ({_operators(k8s)}): it would reconcile too"
    op_ns, ns = namespaces["operator"], namespaces["mesh"]

    def describe() -> str:
        return "\n".join([status_summary(read_resource(k8s, ns, "routermeshes", MESH)),
                          describe_namespace(core, ns), describe_namespace(core, op_ns)])

    watch = {"watch.scope": "namespace", "watch.namespaces[0]": ns, "image.pullPolicy": "Never"}
    repository, tag = previous["operator_image"].rsplit(":", 1)
    started = time.monotonic()
    _helm(e2e_kubeconfig, "install", PREVIOUS / "chart", op_ns, {
        **watch, "image.repository": repository, "image.tag": tag, "routerImage": previous["router_image"]})
    eventually(lambda: crds_established(k8s), 60, "the CRDs Established")
    eventually(lambda: deployment_ready(k8s, op_ns, RELEASE), 120, "the previous operator ready",
               describe=describe)
    create_resource(k8s, ns, "routermeshes", "RouterMesh", MESH, {"size": SIZE})
    create_resource(k8s, ns, "linkroutes", "LinkRoute", "orders", {
        "meshRef": MESH, "prefix": "orders.", "containerId": "broker", "direction": "both"})
    eventually(lambda: mesh_whole(k8s, ns, SIZE, name=MESH), 180, "the previous release's mesh Ready",
               interval=1.0, describe=describe)
    timing(f"previous release installed, RouterMesh of {SIZE} Ready", time.monotonic() - started)
    pods = router_pods(k8s, ns, MESH)
    assert len(pods) == SIZE

    with port_forwards(e2e_kubeconfig, ns, [f"{MESH}-{i}" for i in range(SIZE)]) as urls:
        traffic = Traffic(urls, f"{MESH}-0", f"{MESH}-1", stem="upgrade")
        try:
            traffic.batch("before")
            upgraded = time.monotonic()
            # The upgrade as docs/operations.md gives it: the CRDs (Helm leaves them), then the chart.
            run([kubectl_binary(), "--kubeconfig", str(e2e_kubeconfig), "apply", "--server-side",
                 "--force-conflicts", "-f", str(CHART / "crds")])
            _helm(e2e_kubeconfig, "upgrade", CHART, op_ns, watch)
            current = f"qdmesh/operator:{package_version()}"
            traffic.until(lambda: _operator_image(k8s, op_ns) == current
                          and deployment_ready(k8s, op_ns, RELEASE), 120, "the current operator ready",
                          "during")
            # status.routerImage is written by the current operator only: it has taken the mesh over.
            traffic.until(lambda: _mesh_status(k8s, ns).get("routerImage") == previous["router_image"]
                          and mesh_whole(k8s, ns, SIZE, name=MESH),
                          120, "the mesh Ready under the current operator, on the image it ran", "during")
            timing("chart upgraded -> the current operator has the mesh Ready", time.monotonic() - upgraded)
            traffic.batch("after")
            counts, lost = traffic.settle_all()
            assert counts == {"accepted": len(traffic.sent)} and not lost, (counts, lost)
            # Nothing restarted, nothing replaced, nothing waits to roll.
            assert router_pods(k8s, ns, MESH) == pods
            assert "rollingRestart" not in _mesh_status(k8s, ns), _mesh_status(k8s, ns)
            sts = apps_api(k8s).read_namespaced_stateful_set(MESH, ns)
            assert [c.image for c in sts.spec.template.spec.containers] == [previous["router_image"]]
            rolls = [e.message for e in core.list_namespaced_event(ns).items if e.reason == "RollingRestart"]
            assert not rolls, rolls
            # Management as the spec says: each router sees the other and has the LinkRoute.
            for name, url in urls.items():
                assert router_ids_known(url) == sorted(r for r in urls if r != name)
                routes = link_routes(url).values()
                assert sorted((r.get("prefix"), r.get("direction"), r.get("containerId")) for r in routes) \
                    == ROUTES, routes
        finally:
            traffic.close()
    # The current operator removes the LinkRoute's finalizer before the release goes.
    delete_resource(k8s, ns, "linkroutes", "orders")
    eventually(lambda: resource_gone(k8s, ns, "linkroutes", "orders"), 60, "the LinkRoute deleted")
