"""Helpers for the tests that need several nodes (kind: ``tests/e2e/cluster/kind.sh up``): which
nodes take pods, where pods run, the spread constraint the routers use, stopping and starting a
kind node (its Docker container), draining one, and the RouterMesh's Events."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, Dict, List

import pytest

from .kube import describe_nodes, eventually
from .product import kubectl_binary

# kind names each node's Docker container after the node.
DOCKER = "docker"


def schedulable_nodes(core: Any) -> List[str]:
    """Nodes that are Ready and take ordinary pods (no NoSchedule/NoExecute taint, not cordoned)."""
    names = []
    for node in core.list_node().items:
        ready = any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])
        blocked = any(t.effect in ("NoSchedule", "NoExecute") for t in node.spec.taints or [])
        if ready and not blocked and not node.spec.unschedulable:
            names.append(node.metadata.name)
    return sorted(names)


def workers(core: Any) -> List[str]:
    """Nodes that take pods when healthy: no taint but the node lifecycle controller's own
    (``node.kubernetes.io/...``: not ready, unreachable, cordoned), which a node that was
    stopped or drained carries for a while after it is back."""
    return sorted(node.metadata.name for node in core.list_node().items
                  if all(t.key.startswith("node.kubernetes.io/") for t in node.spec.taints or []))


def need_nodes(core: Any, count: int = 2, timeout: float = 120) -> List[str]:
    """The nodes that take pods; skips the test where fewer than ``count`` would (the local
    cluster), and waits for those that are coming back (an earlier test stopped one)."""
    if len(workers(core)) < count:
        pytest.skip(f"needs {count} nodes that take pods (tests/e2e/cluster/kind.sh up), "
                    f"found {schedulable_nodes(core)}")
    eventually(lambda: len(schedulable_nodes(core)) >= len(workers(core)), timeout,
               "every worker node Ready and taking pods", describe=lambda: describe_nodes(core))
    return schedulable_nodes(core)


def spread(label: str, value: str) -> Dict[str, Any]:
    """Spread over host names, tainted nodes (the control plane) not counted as empty domains:
    by default (nodeTaintsPolicy Ignore) they are, and the routers would stay Pending."""
    return {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
            "nodeTaintsPolicy": "Honor", "labelSelector": {"matchLabels": {label: value}}}


def pods_by_node(core: Any, namespace: str, selector: str) -> Dict[str, List[str]]:
    """Node name -> the names of the pods matching ``selector`` on it (sorted)."""
    found: Dict[str, List[str]] = {}
    for pod in core.list_namespaced_pod(namespace, label_selector=selector).items:
        found.setdefault(pod.spec.node_name or "", []).append(pod.metadata.name)
    return {node: sorted(pods) for node, pods in found.items()}


def node_of(core: Any, namespace: str, selector: str) -> str:
    """The node of the one running pod matching ``selector`` (the operator's)."""
    pods = [p for p in core.list_namespaced_pod(namespace, label_selector=selector).items
            if not p.metadata.deletion_timestamp]
    assert len(pods) == 1, [p.metadata.name for p in pods]
    return str(pods[0].spec.node_name)


def node_ready(core: Any, name: str) -> bool:
    node = core.read_node(name)
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])


def docker_node(action: str, node: str) -> None:
    """``docker stop`` or ``docker start`` a kind node: to its pods, a machine switched off."""
    done = subprocess.run([DOCKER, action, node], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"docker {action} {node}: {done.stderr}"


def kubectl(kubeconfig: Path, *args: str) -> subprocess.Popen:
    """A kubectl command running in the background (its output together, as text)."""
    return subprocess.Popen([kubectl_binary(), "--kubeconfig", str(kubeconfig), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def mesh_events(core: Any, namespace: str, name: str, reason: str) -> List[str]:
    """Messages of the Events with ``reason`` about RouterMesh ``name``."""
    return [e.message for e in core.list_namespaced_event(namespace).items
            if (e.involved_object.kind, e.involved_object.name, e.reason) == ("RouterMesh", name, reason)]
