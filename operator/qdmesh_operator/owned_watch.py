"""Watching the objects the operator owns (everything labelled
``app.kubernetes.io/managed-by=qdmesh-operator``), so that a drift check applies only what
changed since the operator's own apply (kube/applied.py) rather than every object at every
interval.  The events are selected by the API server (a label selector), and nothing is kept
per event: each one only drops the entry of an object no longer as applied."""

from __future__ import annotations

from typing import Any, Dict

import kopf

from . import contract
from .kube.applied import AppliedObjects

#: The record the handlers' KubeApi applies through (handlers.py).
APPLIED = AppliedObjects()
MANAGED = f"app.kubernetes.io/managed-by={contract.MANAGER}"
#: (group, version, plural) -> kind, of everything the operator applies and may watch.
WATCHED: Dict[tuple, str] = {
    ("", "v1", "configmaps"): "ConfigMap",
    ("", "v1", "services"): "Service",
    ("", "v1", "secrets"): "Secret",
    ("apps", "v1", "statefulsets"): "StatefulSet",
    ("apps", "v1", "deployments"): "Deployment",
    ("apps", "v1", "daemonsets"): "DaemonSet",
    ("policy", "v1", "poddisruptionbudgets"): "PodDisruptionBudget",
}


def configure(settings: kopf.OperatorSettings) -> None:
    """Server-side label selectors for the watches (a cluster's Secrets and ConfigMaps are
    many; the operator's are a few per mesh), and the record trusted for these kinds."""
    for group, version, plural in WATCHED:
        settings.watching.label_selectors[group or version, plural] = MANAGED
    APPLIED.watching(WATCHED.values())


def _register(group: str, version: str, plural: str, kind: str) -> None:
    @kopf.on.event(group, version, plural, labels={"app.kubernetes.io/managed-by": contract.MANAGER},
                   id=f"owned-{plural}")
    async def owned_changed(type: Any, namespace: Any, name: Any, meta: Any, **_: Any) -> None:
        APPLIED.seen(kind, str(namespace), str(name), str((meta or {}).get("resourceVersion") or ""),
                     deleted=type == "DELETED")


for (_group, _version, _plural), _kind in WATCHED.items():
    _register(_group, _version, _plural, _kind)
