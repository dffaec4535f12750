"""The operator pod is deleted right after a change is applied (five LinkRoutes and a new mesh
address, so the operator is in the middle of reconciling them): the Deployment's new operator
picks everything up and converges, and nothing is duplicated: one entity per LinkRoute direction
and per address on each router, once in each router's config, the same Kubernetes objects (same
UIDs) as before, and no router pod restarted."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Dict, Set, Tuple

from .kube import describe_namespace, eventually, pod_ready
from .mesh_fixtures import MESH, MeshState, Timing, mesh_whole, print_operator_log
from .product import (
    apps_api,
    core_api,
    create_resource,
    delete_resource,
    deployment_ready,
    is_true,
    patch_resource,
    port_forwards,
    read_resource,
    resource_gone,
    router_pods,
    status_summary,
)
from .traffic import ADDRESS_TYPE, LINK_ROUTE_TYPE, entity_rows

ROUTES = [f"restart{i}" for i in range(5)]
ADDRESS_PREFIX = "restart/"


def owned_objects(k8s: Any, namespace: str) -> Set[Tuple[str, str, str]]:
    """(kind, name, uid) of every object in ``namespace`` owned by the RouterMesh."""
    core, apps = core_api(k8s), apps_api(k8s)
    listings = {"ConfigMap": core.list_namespaced_config_map(namespace).items,
                "Service": core.list_namespaced_service(namespace).items,
                "Secret": core.list_namespaced_secret(namespace).items,
                "StatefulSet": apps.list_namespaced_stateful_set(namespace).items}
    found = set()
    for kind, items in listings.items():
        for obj in items:
            if any(o.kind == "RouterMesh" and o.name == MESH for o in obj.metadata.owner_references or []):
                found.add((kind, obj.metadata.name, obj.metadata.uid))
    return found


def operator_pods(k8s: Any, namespace: str) -> Dict[str, str]:
    return {p.metadata.name: p.metadata.uid for p in core_api(k8s).list_namespaced_pod(namespace).items
            if p.metadata.deletion_timestamp is None}


def test_operator_restarted_mid_reconcile_converges_without_duplicates(
        mesh: MeshState, operator_namespace: str, k8s: Any, core: Any, e2e_kubeconfig: Path,
        timing: Timing) -> None:
    mesh.require_ready()
    ns = mesh.namespace
    pods = router_pods(k8s, ns, MESH)
    objects = owned_objects(k8s, ns)
    expected = {("ConfigMap", f"{MESH}-config"), ("Service", MESH), ("Service", f"{MESH}-routers"),
                ("StatefulSet", MESH)}
    assert {(k, n) for k, n, _ in objects} >= expected, objects
    old_operator = operator_pods(k8s, operator_namespace)
    assert len(old_operator) == 1, old_operator
    addresses = list(read_resource(k8s, ns, "routermeshes", MESH)["spec"].get("addresses") or [])

    started = time.monotonic()
    for name in ROUTES:
        create_resource(k8s, ns, "linkroutes", "LinkRoute", name,
                        {"meshRef": MESH, "prefix": f"{name}.", "containerId": "broker", "direction": "both"})
    added = {"prefix": ADDRESS_PREFIX, "distribution": "multicast"}
    patch_resource(k8s, ns, "routermeshes", MESH, {"spec": {"addresses": [*addresses, added]}})
    for pod in old_operator:
        core.delete_namespaced_pod(pod, operator_namespace, grace_period_seconds=0)
    deleted_at = time.monotonic()

    def new_operator_ready() -> bool:
        current = operator_pods(k8s, operator_namespace)
        return bool(current) and not set(current) & set(old_operator) and \
            all(pod_ready(core, operator_namespace, pod) for pod in current) and \
            deployment_ready(k8s, operator_namespace, "qdmesh")

    took = eventually(new_operator_ready, 120, "a new operator pod Ready",
                      describe=lambda: describe_namespace(core, operator_namespace))
    timing("operator pod deleted -> new operator Ready", took)

    def all_ready() -> bool:
        return all(is_true(read_resource(k8s, ns, "linkroutes", n), "Ready") for n in ROUTES) and \
            mesh_whole(k8s, ns, mesh.size)

    eventually(all_ready, 180, "the five LinkRoutes and the RouterMesh Ready after the operator restart",
               interval=1.0, describe=lambda: "\n".join(
                   f"{n}: {status_summary(read_resource(k8s, ns, 'linkroutes', n))}" for n in ROUTES))
    timing("change applied, operator deleted -> change live and Ready everywhere",
           time.monotonic() - deleted_at)
    print(f"changes applied {deleted_at - started:.2f} s before the operator pod was deleted")
    print_operator_log(core, operator_namespace, lines=30)

    with port_forwards(e2e_kubeconfig, ns, mesh.routers) as urls:
        for router, url in urls.items():
            routes = entity_rows(url, LINK_ROUTE_TYPE)
            for name in ROUTES:
                mine = sorted((str(r.get("name")), str(r.get("direction"))) for r in routes
                              if r.get("prefix") == f"{name}.")
                wanted = [(f"qdmesh/linkRoute/{name}-in", "in"), (f"qdmesh/linkRoute/{name}-out", "out")]
                assert mine == wanted, f"{router}: link routes for {name}.: {mine}"
            addrs = [r for r in entity_rows(url, ADDRESS_TYPE) if r.get("prefix") == ADDRESS_PREFIX]
            assert len(addrs) == 1 and addrs[0].get("distribution") == "multicast", f"{router}: {addrs}"

    config = core.read_namespaced_config_map(f"{MESH}-config", ns).data
    for router in mesh.routers:
        conf = config[f"{router}.conf"]
        for name in ROUTES:
            for direction in ("in", "out"):
                assert conf.count(f"qdmesh/linkRoute/{name}-{direction}") == 1, f"{router}.conf:\n{conf}"
        assert conf.count(f'prefix: "{ADDRESS_PREFIX}"') == 1, f"{router}.conf:\n{conf}"
    assert owned_objects(k8s, ns) == objects, "the RouterMesh's objects changed across the operator restart"
    assert router_pods(k8s, ns, MESH) == pods, "a router pod restarted or was replaced"

    # Put the mesh back as it was for the next tests.
    for name in ROUTES:
        delete_resource(k8s, ns, "linkroutes", name)
    patch_resource(k8s, ns, "routermeshes", MESH, {"spec": {"addresses": addresses}})
    eventually(lambda: all(resource_gone(k8s, ns, "linkroutes", n) for n in ROUTES), 90, "LinkRoutes deleted")
    eventually(lambda: mesh_whole(k8s, ns, mesh.size), 90, "RouterMesh Ready again")
