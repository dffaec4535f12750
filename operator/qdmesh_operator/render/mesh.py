"""The render stage: every router's config and every Kubernetes object of a mesh, from its
desired state and the certificate stage's pod annotations.  Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping

from ..desired.state import MeshState
from ..tls.resolve import Certificates
from .conf import render_all
from .edges import edge_objects
from .manifests import mesh_objects


@dataclass
class RenderedMesh:
    #: ConfigMap data: ``<router id>.conf`` for every router.
    confs: Dict[str, str]
    #: Objects applied before the routers' workload, in order (config before pods using it).
    objects: List[Dict[str, Any]]
    #: The interior routers' StatefulSet; its rolling-update partition is decided at apply.
    stateful_set: Dict[str, Any]
    #: Each edge group's Service and workload, applied after the StatefulSet (edge routers
    #: connect to interior ones).
    edge_objects: List[Dict[str, Any]]


def render_mesh(state: MeshState, owner: Dict[str, Any], certificates: Certificates,
                restarted_at: str | None = None,
                edge_restarted_at: Mapping[str, str] | None = None) -> RenderedMesh:
    """Raises RenderError when a rendered config would not load in the router.
    ``restarted_at``: when the routers were last asked to restart by hand (in their pod
    template: a new value rolls them); ``edge_restarted_at``: the same for each edge group."""
    confs = render_all(state)
    objects = mesh_objects(state.mesh, confs, owner=owner, pod_annotations=certificates.pod_annotations,
                           restarted_at=restarted_at, links_volume=state.links_volume)
    edges = edge_objects(state.mesh, owner, certificates.edge_pod_annotations, restarted_at=edge_restarted_at)
    return RenderedMesh(confs, objects[:-1], objects[-1], edges)
