"""Why a rolling restart is due, in words a user acts on: which field of the RouterMesh (or
what else) changed the routers' pod template, and why that needs a restart.  Diffs the pod
template the routers run with against the new one, and each part of the spec that only a
restart applies (``sections``: a hash of each, kept in the mesh's status) against the last."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Tuple

from .annotations import RESTARTED_AT_ANNOTATION

#: The router's drain timeout in its environment: it follows terminationGracePeriodSeconds,
#: whose own reason says so (render/manifests.py sets it).
DRAIN_TIMEOUT_ENV = "QDMESH_DRAIN_TIMEOUT"

#: Annotations of the pod template the operator writes, with what a change of each means.
#: (The restart hash is explained by the sections instead, when they are known.)
ANNOTATION_REASONS: Dict[str, str] = {
    RESTARTED_AT_ANNOTATION: "manual rolling update requested (qdmesh.io/manual-rolling-update)",
    # Written by earlier operators and carried unchanged since routers load certificates at
    # run time; a change here is a template edited by hand.
    "qdmesh.io/inter-router-cert": "the inter-router certificate revision in the pod template changed",
    "qdmesh.io/mounted-secrets": "a SASL password the routers read when they start changed "
                                 "(spec.connectors saslPasswordSecretRef)",
}
RESTART_HASH = "qdmesh.io/restart-hash"
_OPERATOR_ANNOTATIONS = (*ANNOTATION_REASONS, RESTART_HASH)

#: Each part of the spec only a restart applies: what its change says.
SECTION_REASONS: Dict[str, str] = {
    "router": "spec.router changed: router settings (qdrouterd.conf section router) need a restart",
    "policy": "spec.policy changed: the policy section of qdrouterd.conf needs a restart",
    "interRouter.tls": "spec.interRouter.tls changed: the inter-router and management listeners and "
                       "their sslProfile (qdrouterd.conf sections listener, sslProfile) need a restart",
}


def _pod(template: Mapping[str, Any]) -> Mapping[str, Any]:
    return template.get("spec") or {}


def _container(template: Mapping[str, Any]) -> Mapping[str, Any]:
    containers = _pod(template).get("containers") or [{}]
    return containers[0] or {}


def _annotations(template: Mapping[str, Any]) -> Mapping[str, Any]:
    return (template.get("metadata") or {}).get("annotations") or {}


def _user_annotations(template: Mapping[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in _annotations(template).items() if k not in _OPERATOR_ANNOTATIONS}


def _names(items: Any) -> List[Any]:
    return sorted((item or {}).get("name") for item in items or [])


def _ports(template: Mapping[str, Any]) -> List[Tuple[Any, Any]]:
    ports = _container(template).get("ports") or []
    return sorted(((p or {}).get("name"), (p or {}).get("containerPort")) for p in ports)


#: (what the change says, how to read the value from a pod template), in the order told.
FIELDS: List[Tuple[str, Callable[[Mapping[str, Any]], Any]]] = [
    ("spec.image changed", lambda t: _container(t).get("image")),
    ("spec.pod.resources changed", lambda t: _container(t).get("resources") or {}),
    ("spec.pod.affinity changed", lambda t: _pod(t).get("affinity") or {}),
    ("spec.pod.tolerations changed", lambda t: _pod(t).get("tolerations") or []),
    ("spec.pod.nodeSelector changed", lambda t: _pod(t).get("nodeSelector") or {}),
    ("spec.pod.topologySpreadConstraints changed",
     lambda t: _pod(t).get("topologySpreadConstraints") or []),
    ("spec.pod.priorityClassName changed", lambda t: _pod(t).get("priorityClassName") or ""),
    ("spec.pod.imagePullSecrets changed", lambda t: _names(_pod(t).get("imagePullSecrets"))),
    ("spec.pod.terminationGracePeriodSeconds changed",
     lambda t: _pod(t).get("terminationGracePeriodSeconds")),
    ("spec.pod.labels changed", lambda t: (t.get("metadata") or {}).get("labels") or {}),
    ("spec.pod.annotations changed", _user_annotations),
    ("spec.listeners changed: a listener's port is opened on the pod, which needs a restart", _ports),
    ("TLS Secrets mounted in the pods changed (spec.listeners or spec.connectors tlsSecretName, "
     "spec.interRouter.tls)", lambda t: _names(_pod(t).get("volumes"))),
    ("spec.connectors SASL passwords changed: the pods read them from Secrets into their environment",
     lambda t: [n for n in _names(_container(t).get("env")) if n != DRAIN_TIMEOUT_ENV]),
    ("the router's command line changed (the operator's version)", lambda t: _container(t).get("command")),
]


def roll_reasons(live: Mapping[str, Any] | None, new: Mapping[str, Any], *,
                 previous_sections: Mapping[str, str] | None, sections: Mapping[str, str]) -> List[str]:
    """Why the routers' pod template ``new`` differs from ``live`` (the template they run
    with), each reason once, in a fixed order; never empty when they differ."""
    if live is None:
        return []
    reasons = [what for what, read in FIELDS if read(live) != read(new)]
    old, now = _annotations(live), _annotations(new)
    for key, what in ANNOTATION_REASONS.items():
        if old.get(key) != now.get(key):
            reasons.append(what)
    if old.get(RESTART_HASH) != now.get(RESTART_HASH):
        changed = [SECTION_REASONS.get(name, f"spec.{name} changed and needs a restart")
                   for name in sections if (previous_sections or {}).get(name) != sections[name]]
        reasons.extend(changed if previous_sections and changed else
                       ["settings that need a restart changed (spec.router, spec.policy or "
                        "spec.interRouter.tls)"])
    return reasons or ["the pod template changed"]
