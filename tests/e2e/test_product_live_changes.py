"""Live changes of an AutoLink and a VhostPolicy on the shared mesh: each create, change and
delete shows on every router (read back through AMQP management, over port-forwards), the
resources' status says so, and no router pod restarts or is replaced.

The AutoLink names a container that is not in the cluster: its link cannot attach, so each
router reports it ``inactive``/``attaching``/``failed``, which is still the entity live there.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Dict, Mapping

from .kube import eventually
from .mesh_fixtures import MESH, MeshState, Timing
from .product import (
    create_resource,
    delete_resource,
    is_true,
    patch_resource,
    port_forwards,
    read_resource,
    resource_gone,
    router_pods,
    status_summary,
)
from .traffic import AUTO_LINK_TYPE, VHOST_TYPE, entities

NOT_ATTACHED = {"inactive", "attaching", "failed"}


def _wait_everywhere(urls: Dict[str, str], type_: str, name: str,
                     wanted: Callable[[Mapping[str, Any] | None], bool], what: str) -> float:
    """Until ``wanted(entity or None)`` holds on every router; the seconds it took."""
    last: Dict[str, Any] = {}

    def everywhere() -> bool:
        for router, url in urls.items():
            last[router] = entities(url, type_).get(name)
        return all(wanted(entity) for entity in last.values())

    return eventually(everywhere, 90, what, interval=0.5,
                      describe=lambda: "\n".join(f"{r}: {e}" for r, e in sorted(last.items())))


def _status_shows(k8s: Any, namespace: str, plural: str, name: str,
                  check: Callable[[Mapping[str, Any]], bool], what: str) -> Mapping[str, Any]:
    found: Dict[str, Any] = {}

    def shows() -> bool:
        found["obj"] = read_resource(k8s, namespace, plural, name)
        return is_true(found["obj"], "Ready") and check(found["obj"])

    def describe() -> str:
        obj = found.get("obj") or {}
        return f"{status_summary(obj)}\n{obj.get('status')}"

    eventually(shows, 90, what, interval=1.0, describe=describe)
    return found["obj"]


def test_auto_link_live_changes_on_every_router_without_restarts(
        mesh: MeshState, k8s: Any, e2e_kubeconfig: Path, timing: Timing) -> None:
    mesh.require_ready()
    ns, name, entity = mesh.namespace, "q1", "qdmesh/autoLink/q1"
    pods = router_pods(k8s, ns, MESH)
    with port_forwards(e2e_kubeconfig, ns, mesh.routers) as urls:
        started = time.monotonic()
        create_resource(k8s, ns, "autolinks", "AutoLink", name, {
            "meshRef": MESH, "address": "queue/q1", "direction": "in", "containerId": "absent-broker"})
        took = _wait_everywhere(urls, AUTO_LINK_TYPE, entity, lambda e: e is not None and (
            e.get("address"), e.get("direction"), e.get("containerId")) == ("queue/q1", "in", "absent-broker")
            and e.get("operStatus") in NOT_ATTACHED, "AutoLink q1 on every router, not attached")
        timing(f"AutoLink created -> live on all {mesh.size} routers", took)

        def all_routers_report(obj: Mapping[str, Any]) -> bool:
            status = obj.get("status") or {}
            routers = status.get("routers") or []
            return sorted(r.get("name") for r in routers) == mesh.routers and \
                all(r.get("applied") and r.get("operStatus") in NOT_ATTACHED for r in routers) and \
                status.get("activeRouters") == 0

        obj = _status_shows(k8s, ns, "autolinks", name, all_routers_report,
                            "AutoLink q1 status: Ready, each router's link state, none active")
        messages = [str(c.get("message")) for c in obj["status"]["conditions"]]
        assert any("link active on 0" in m for m in messages), obj["status"]
        timing("AutoLink created -> status Ready with each router's link state", time.monotonic() - started)

        started = time.monotonic()
        patch_resource(k8s, ns, "autolinks", name, {"spec": {"address": "queue/q2", "phase": 3}})
        took = _wait_everywhere(urls, AUTO_LINK_TYPE, entity, lambda e: e is not None and (
            e.get("address"), e.get("phase"), e.get("containerId")) == ("queue/q2", 3, "absent-broker"),
            "AutoLink q1 changed (address queue/q2, phase 3) on every router")
        timing(f"AutoLink changed -> changed on all {mesh.size} routers", took)
        _status_shows(k8s, ns, "autolinks", name, lambda o: True, "AutoLink q1 Ready for its new generation")

        started = time.monotonic()
        delete_resource(k8s, ns, "autolinks", name)
        took = _wait_everywhere(urls, AUTO_LINK_TYPE, entity, lambda e: e is None,
                                "AutoLink q1 gone from every router")
        timing(f"AutoLink deleted -> gone from all {mesh.size} routers", took)
        eventually(lambda: resource_gone(k8s, ns, "autolinks", name), 60,
                   "AutoLink q1 deleted (finalizer done)")
    assert router_pods(k8s, ns, MESH) == pods, "a router pod restarted or was replaced"


def test_vhost_policy_live_changes_on_every_router_without_restarts(
        mesh: MeshState, k8s: Any, e2e_kubeconfig: Path, timing: Timing) -> None:
    mesh.require_ready()
    ns, name, entity = mesh.namespace, "tenant-a", "qdmesh/vhost/tenant-a"
    pods = router_pods(k8s, ns, MESH)
    spec = {"meshRef": MESH, "hostname": "tenant-a.example.com", "maxConnections": 50,
            "groups": {"admins": {"users": ["alice", "bob"], "remoteHosts": ["*"], "sources": ["*"],
                                  "targets": ["*"]},
                       "$default": {"remoteHosts": ["*"], "maxSenders": 0}}}
    with port_forwards(e2e_kubeconfig, ns, mesh.routers) as urls:
        started = time.monotonic()
        create_resource(k8s, ns, "vhostpolicies", "VhostPolicy", name, spec)

        def created(e: Mapping[str, Any] | None) -> bool:
            groups = (e or {}).get("groups") or {}
            return e is not None and e.get("hostname") == "tenant-a.example.com" and \
                e.get("maxConnections") == 50 and set(groups) == {"admins", "$default"} and \
                "alice" in str(groups["admins"].get("users"))

        took = _wait_everywhere(urls, VHOST_TYPE, entity, created, "VhostPolicy tenant-a on every router")
        timing(f"VhostPolicy created -> live on all {mesh.size} routers", took)

        def every_router_applied(obj: Mapping[str, Any]) -> bool:
            routers = (obj.get("status") or {}).get("routers") or []
            return sorted(r.get("name") for r in routers) == mesh.routers and \
                all(r.get("applied") for r in routers)

        _status_shows(k8s, ns, "vhostpolicies", name, every_router_applied, "VhostPolicy tenant-a Ready")
        timing("VhostPolicy created -> status Ready", time.monotonic() - started)

        patch_resource(k8s, ns, "vhostpolicies", name,
                       {"spec": {"maxConnections": 7, "groups": {"admins": {"users": ["carol"]}}}})
        def changed(e: Mapping[str, Any] | None) -> bool:
            users = str((((e or {}).get("groups") or {}).get("admins") or {}).get("users"))
            return e is not None and e.get("maxConnections") == 7 and \
                "carol" in users and "alice" not in users

        took = _wait_everywhere(urls, VHOST_TYPE, entity, changed,
                                "VhostPolicy tenant-a changed (maxConnections 7, admins: carol) everywhere")
        timing(f"VhostPolicy changed -> changed on all {mesh.size} routers", took)
        _status_shows(k8s, ns, "vhostpolicies", name, every_router_applied,
                      "VhostPolicy tenant-a Ready for its new generation")

        delete_resource(k8s, ns, "vhostpolicies", name)
        took = _wait_everywhere(urls, VHOST_TYPE, entity, lambda e: e is None,
                                "VhostPolicy tenant-a gone from every router")
        timing(f"VhostPolicy deleted -> gone from all {mesh.size} routers", took)
        eventually(lambda: resource_gone(k8s, ns, "vhostpolicies", name), 60,
                   "VhostPolicy deleted (finalizer done)")
    assert router_pods(k8s, ns, MESH) == pods, "a router pod restarted or was replaced"
