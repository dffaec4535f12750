"""The certificate stage of a reconciliation, in one visit: the Secrets of mode Managed (made,
renewed, the CA rotated a step), a digest of the Secrets the routers mount but the operator
does not write, and the certificate the operator presents to the routers' management.

Raises CertificateError (stored material unusable: the user must act) or KubeRefused (kind
Secret)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Tuple

from kubernetes.client.rest import ApiException

from ..kube.api import KubeRefused
from ..model.mesh import MeshSpec
from ..rolling import rolled_out_annotation, workload_rolled_out_annotation
from . import mounted
from .credentials import CredentialsError, ManagementCredentials, TlsFiles
from .names import CERT_ANNOTATION
from .secrets import ensure_managed_tls


@dataclass
class Certificates:
    #: Mode Managed: the fingerprint of the routers' certificate (in the pod template).
    revision: str | None = None
    #: Mode Managed with edge groups: the same for the edge routers' certificate.
    edge_revision: str | None = None
    #: Digest of the mounted Secrets the operator does not write (in the pod template).
    mounted_digest: str | None = None
    #: The same for edge routers (only the mesh's certificate of modes Secret, CertManager).
    edge_mounted_digest: str | None = None
    #: What the operator presents to the routers' management listener (None: plain AMQP).
    management: TlsFiles | None = None
    #: Why ``management`` could not be read (the routers are then left alone this time).
    management_error: str | None = None
    #: Events to post as (type, reason, message).
    events: List[Tuple[str, str, str]] = field(default_factory=list)
    #: When each certificate the routers present or trust expires (Unix time), by Secret name.
    expiries: Dict[str, float] = field(default_factory=dict)


def resolve_certificates(core: Any, mesh: MeshSpec, *, owner: Dict[str, Any],
                         live_stateful_set: Mapping[str, Any] | None,
                         live_edge_workloads: Mapping[str, Mapping[str, Any]],
                         credentials: ManagementCredentials, needs_management: bool) -> Certificates:
    """``needs_management``: the operator will talk to routers this time (some are ready, and
    they are reached in the cluster rather than through QDMESH_ROUTER_URLS)."""
    found = Certificates()
    try:
        if mesh.inter_router_tls.mode == "Managed":
            running = rolled_out_annotation(live_stateful_set, mesh.size, CERT_ANNOTATION)
            running_edges = [workload_rolled_out_annotation(live_edge_workloads[g.name], CERT_ANNOTATION)
                             if g.name in live_edge_workloads else None for g in mesh.edge_groups]
            managed = ensure_managed_tls(core, mesh, owner=owner, running=running,
                                         running_edges=running_edges)
            found.revision = managed.revision
            found.edge_revision = managed.edge_revision
            found.events.extend(managed.events)
            found.expiries.update(managed.expiries)
        found.mounted_digest = mounted.digest(core, mesh, expiries=found.expiries)
        found.edge_mounted_digest = mounted.digest(core, mesh, mounted.edge_mounted(mesh))
    except ApiException as e:
        raise KubeRefused("Secret", e) from None
    if needs_management:
        try:
            found.management = credentials.for_mesh(core, mesh)
        except CredentialsError as e:
            found.management_error = str(e)
    return found
