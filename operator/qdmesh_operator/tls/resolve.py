"""The certificate stage of a reconciliation, in one visit: the Secrets of mode Managed (made,
renewed, the CA rotated a step), what every TLS Secret the routers mount holds (they load it at
run time), a digest of the SASL passwords they read at start, and the certificate the operator
presents to the routers' management.

Raises CertificateError (stored material unusable: the user must act) or KubeRefused (kind
Secret)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from kubernetes.client.rest import ApiException

from ..grants.link_tls import ensure_link_tls
from ..kube.api import KubeRefused
from ..model.mesh import MeshSpec
from . import live, mounted
from .credentials import CredentialsError, ManagementCredentials, TlsFiles
from .live import LiveProfile
from .names import CERT_ANNOTATION, MOUNTED_SECRETS_ANNOTATION
from .secrets import ensure_managed_tls


@dataclass
class Certificates:
    #: Mode Managed: the revision of the routers' certificate and the CA they must trust (a
    #: rotation step waits until every router reports it).
    revision: str | None = None
    #: Mode Managed with edge groups: the same for the edge routers' certificate.
    edge_revision: str | None = None
    #: Pod-template annotations of the routers' StatefulSet from this stage: the digest of the
    #: SASL passwords, and what an earlier operator wrote, carried unchanged (no roll).
    pod_annotations: Dict[str, str] = field(default_factory=dict)
    #: The same for each edge group's pods, by group.
    edge_pod_annotations: Dict[str, Dict[str, str]] = field(default_factory=dict)
    #: The sslProfiles interior and edge routers load at run time, with what they should hold.
    profiles: List[LiveProfile] = field(default_factory=list)
    edge_profiles: List[LiveProfile] = field(default_factory=list)
    #: What the operator presents to the routers' management listener (None: plain AMQP).
    management: TlsFiles | None = None
    #: Why ``management`` could not be read (the routers are then left alone this time).
    management_error: str | None = None
    #: Events to post as (type, reason, message).
    events: List[Tuple[str, str, str]] = field(default_factory=list)
    #: When each certificate the routers present or trust expires (Unix time), by Secret name.
    expiries: Dict[str, float] = field(default_factory=dict)


def _carried(workload: Mapping[str, Any] | None, keys: Sequence[str]) -> Dict[str, str]:
    """Annotations an earlier operator put in a live pod template, to render unchanged."""
    template = ((workload or {}).get("spec") or {}).get("template") or {}
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    return {k: str(annotations[k]) for k in keys if annotations.get(k) is not None}


def resolve_certificates(core: Any, mesh: MeshSpec, *, owner: Dict[str, Any],
                         live_stateful_set: Mapping[str, Any] | None,
                         live_edge_workloads: Mapping[str, Mapping[str, Any]],
                         credentials: ManagementCredentials, needs_management: bool,
                         running: str | None = None, running_edges: Sequence[str | None] = ()
                         ) -> Certificates:
    """``needs_management``: the operator will talk to routers this time (some are ready, and
    they are reached in the cluster rather than through QDMESH_ROUTER_URLS).  ``running``: the
    revision every interior router reported last time (None if some did not), ``running_edges``
    the same per edge group."""
    found = Certificates()
    carried = (CERT_ANNOTATION, MOUNTED_SECRETS_ANNOTATION)
    found.pod_annotations = _carried(live_stateful_set, carried)
    found.edge_pod_annotations = {g.name: _carried(live_edge_workloads.get(g.name), carried)
                                  for g in mesh.edge_groups}
    try:
        materials = {}
        if mesh.inter_router_tls.mode == "Managed":
            managed = ensure_managed_tls(core, mesh, owner=owner, running=running,
                                         running_edges=running_edges)
            found.revision = managed.revision
            found.edge_revision = managed.edge_revision
            found.events.extend(managed.events)
            found.expiries.update(managed.expiries)
            materials.update(managed.materials)
        others = [s for s in live.secrets_read(mesh) if s not in materials]
        materials.update(mounted.materials(core, mesh.namespace, others, found.expiries))
        digest = mounted.password_digest(core, mesh)
        link = ensure_link_tls(core, mesh, owner)
    except ApiException as e:
        raise KubeRefused("Secret", e) from None
    if digest is not None:
        found.pod_annotations[MOUNTED_SECRETS_ANNOTATION] = digest
    found.profiles = live.live_profiles(live.interior_secrets(mesh), materials)
    found.profiles.extend(link)  # the link listeners' (docs/multicluster.md)
    found.edge_profiles = live.live_profiles(live.edge_secrets(mesh), materials)
    if needs_management:
        try:
            found.management = credentials.for_mesh(core, mesh)
        except CredentialsError as e:
            found.management_error = str(e)
    return found
