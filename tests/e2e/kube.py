"""Small Kubernetes helpers for e2e tests: wait for pods, read logs, describe failures."""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, List

from kubernetes import client


def eventually(check: Callable[[], bool], timeout: float, what: str, interval: float = 0.5,
               describe: Callable[[], str] | None = None) -> float:
    """Poll ``check`` until true; returns the seconds it took. Fails with ``describe()``."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if check():
            return time.monotonic() - start
        time.sleep(interval)
    details = describe() if describe else ""
    raise AssertionError(f"{what} not reached within {timeout:.0f} s\n{details}")


def pod_phase(core: Any, namespace: str, name: str) -> str:
    return str(core.read_namespaced_pod(name, namespace).status.phase)


def pod_ready(core: Any, namespace: str, name: str) -> bool:
    conditions = core.read_namespaced_pod(name, namespace).status.conditions or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


# Taints with these effects keep pods without a matching toleration off the node.
BLOCKING_TAINT_EFFECTS = ("NoSchedule", "NoExecute")


def blocking_taints(node: Any) -> List[str]:
    """The node's taints that keep ordinary pods off it, as ``key=value:Effect``."""
    return [f"{t.key}={t.value or ''}:{t.effect}" for t in node.spec.taints or []
            if t.effect in BLOCKING_TAINT_EFFECTS]


def describe_nodes(core: Any) -> str:
    """Each node's taints and any condition that is not healthy (Ready not True, a pressure
    condition True): the reasons a pod stays Pending with "untolerated taint(s)"."""
    lines: List[str] = []
    for node in core.list_node().items:
        unhealthy = [f"{c.type}={c.status} ({c.reason}: {c.message})"
                     for c in node.status.conditions or []
                     if (c.type == "Ready") != (c.status == "True")]
        lines.append(f"node {node.metadata.name}: taints={blocking_taints(node) or 'none'} "
                     f"unhealthy conditions={unhealthy or 'none'}")
    return "\n".join(lines)


def describe_namespace(core: Any, namespace: str) -> str:
    """Pods with their container states, the namespace's events and the nodes' taints and
    conditions: what a failure needs."""
    lines: List[str] = []
    for pod in core.list_namespaced_pod(namespace).items:
        lines.append(f"pod {pod.metadata.name}: {pod.status.phase}")
        for status in pod.status.container_statuses or []:
            lines.append(f"  {status.name}: ready={status.ready} restarts={status.restart_count} "
                         f"state={status.state.to_dict()}")
    for event in core.list_namespaced_event(namespace).items:
        lines.append(f"event {event.involved_object.kind}/{event.involved_object.name}: "
                     f"{event.reason}: {event.message}")
    lines.append(describe_nodes(core))
    return "\n".join(lines)


def busybox_pod(name: str, image: str, command: str, labels: Dict[str, str] | None = None,
                restart: str = "Never", port: int | None = None) -> client.V1Pod:
    """A pod running ``sh -c command`` in the suite's busybox image (never pulled)."""
    container = client.V1Container(
        name="main", image=image, image_pull_policy="Never", command=["/bin/sh", "-c", command],
        ports=[client.V1ContainerPort(container_port=port)] if port else None,
    )
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels=labels or {}),
        spec=client.V1PodSpec(containers=[container], restart_policy=restart,
                              termination_grace_period_seconds=1),
    )
