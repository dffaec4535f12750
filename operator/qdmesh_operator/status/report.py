"""What one reconciliation hands back to the kopf handlers: the statuses to write (by plural and
name) and the Events to post.  The handlers write them; nothing here talks to Kubernetes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Set, Tuple

from .. import contract


@dataclass
class Event:
    """An Event to post about ``target`` (a body with apiVersion, kind and metadata)."""

    target: Any  # a kopf Body: apiVersion, kind and metadata (name, namespace, uid)
    type: str
    reason: str
    message: str


@dataclass
class Report:
    """The result of one reconciliation: statuses by (plural, name), Events, and numbers."""

    statuses: Dict[Tuple[str, str], Dict[str, Any]] = field(default_factory=dict)
    events: List[Event] = field(default_factory=list)
    operations: int = 0
    failures: int = 0
    repaired: int = 0
    mesh_found: bool = True
    seconds: float = 0.0
    #: Reconcile again after this many seconds (a node that turned not ready is settling).
    recheck_in: float | None = None
    #: The statuses the API server holds already, as read at the start (nothing to write).
    unchanged: Set[Tuple[str, str]] = field(default_factory=set)
    #: The routers this reconciliation left in sync, with a fingerprint of what they hold
    #: (status/drift.py): the next one tells drift from asked-for changes by it.
    in_sync: Dict[str, int] = field(default_factory=dict)
    #: The canary's last result of each pair of routers, and its round (canary/): the next
    #: reconciliation probes the next round's pairs and keeps the others' results.
    canary: Dict[Tuple[str, str], Any] = field(default_factory=dict)
    canary_round: int = -1
    #: The certificate revision every interior router runs (None if some do not), and each
    #: edge group's: the next certificate stage takes a CA rotation's next step on it.
    tls_running: str | None = None
    tls_running_edges: List[str | None] = field(default_factory=list)


def ref(body: Mapping[str, Any]) -> Dict[str, Any]:
    """The part of a body an Event needs to name its object."""
    meta = body.get("metadata") or {}
    return {"apiVersion": body.get("apiVersion", contract.API_VERSION), "kind": body.get("kind"),
            "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace"),
                         "uid": meta.get("uid")}}


def generation_of(body: Mapping[str, Any]) -> int:
    return int((body.get("metadata") or {}).get("generation") or 0)
