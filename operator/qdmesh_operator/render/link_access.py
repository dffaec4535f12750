"""What ``spec.linkAccess`` adds to a mesh's Kubernetes objects: the link listener's Secret
mounted in router pods, and the exposure the user chose -- a NodePort or LoadBalancer Service,
or a ClusterIP Service with an Ingress (TLS passthrough: the routers terminate mutual TLS
themselves) or an OpenShift Route (termination passthrough).  Pure."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from .. import contract
from ..grants.names import LINK_TLS_DIR, link_tls_secret
from ..model.mesh import MeshSpec

PORT_NAME = "link"
EDGE_PORT_NAME = "link-edge"
#: ingress-nginx passes the TLS stream through to the routers only with this annotation (and
#: the controller started with --enable-ssl-passthrough); it picks the backend by the SNI
#: the linking router sends (the host it connects to).
PASSTHROUGH_ANNOTATIONS = {"nginx.ingress.kubernetes.io/ssl-passthrough": "true"}
#: What the other cluster connects to through an Ingress or a Route: the HTTPS port.
PASSTHROUGH_PORT = 443


def service_name(mesh: str) -> str:
    return contract.link_service(mesh)


def link_volume(mesh: MeshSpec) -> Tuple[Dict[str, Any], Dict[str, Any]] | None:
    """(volumeMount, volume) of the link listener's Secret, or None without linkAccess.
    Optional: the operator writes the Secret in the same reconciliation, and a router starts
    (without its link listener) even if it is not there yet."""
    if not mesh.link_access.enabled:
        return None
    return ({"name": "link-tls", "mountPath": LINK_TLS_DIR, "readOnly": True},
            {"name": "link-tls", "secret": {"secretName": link_tls_secret(mesh.name), "optional": True}})


def _metadata(mesh: MeshSpec, name: str, owner: Dict[str, Any] | None,
              annotations: Dict[str, str] | None = None) -> Dict[str, Any]:
    meta: Dict[str, Any] = {"name": name, "namespace": mesh.namespace, "labels": contract.labels(mesh.name)}
    if annotations:
        meta["annotations"] = dict(annotations)
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return meta


def link_objects(mesh: MeshSpec, owner: Dict[str, Any] | None) -> List[Dict[str, Any]]:
    """The Service ``<mesh>-link`` and, for types Ingress and Route, the object in front of it."""
    access = mesh.link_access
    if not access.enabled:
        return []
    name = service_name(mesh.name)
    port: Dict[str, Any] = {"name": PORT_NAME, "port": access.port, "targetPort": access.port,
                            "protocol": "TCP"}
    if access.node_port is not None:
        port["nodePort"] = access.node_port
    edge_port: Dict[str, Any] = {"name": EDGE_PORT_NAME, "port": access.edge_port,
                                 "targetPort": access.edge_port, "protocol": "TCP"}
    if access.edge_node_port is not None:
        edge_port["nodePort"] = access.edge_node_port
    service_type = access.type if access.type in ("NodePort", "LoadBalancer") else "ClusterIP"
    objects: List[Dict[str, Any]] = [{
        "apiVersion": "v1", "kind": "Service", "metadata": _metadata(mesh, name, owner),
        "spec": {"type": service_type, "selector": contract.selector(mesh.name), "ports": [port, edge_port]}}]
    if access.type == "Ingress":
        backend = {"service": {"name": name, "port": {"number": access.port}}}
        objects.append({
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": _metadata(mesh, name, owner, PASSTHROUGH_ANNOTATIONS),
            "spec": {"tls": [{"hosts": [access.host]}],
                     "rules": [{"host": access.host, "http": {"paths": [
                         {"path": "/", "pathType": "Prefix", "backend": backend}]}}]}})
    elif access.type == "Route":
        objects.append({
            "apiVersion": "route.openshift.io/v1", "kind": "Route", "metadata": _metadata(mesh, name, owner),
            "spec": {"host": access.host, "to": {"kind": "Service", "name": name, "weight": 100},
                     "port": {"targetPort": PORT_NAME},
                     "tls": {"termination": "passthrough", "insecureEdgeTerminationPolicy": "None"}}})
    return objects


def advertised_edge_port(mesh: MeshSpec) -> int | None:
    """The port the other cluster's edge routers connect to; None for types Ingress and Route
    (they pass one port through, the inter-router listener's)."""
    access = mesh.link_access
    if access.type in ("Ingress", "Route"):
        return None
    if access.type == "NodePort" and access.edge_node_port is not None:
        return access.edge_node_port
    return access.edge_port


def advertised_port(mesh: MeshSpec) -> int:
    """The port the other cluster connects to (before a LoadBalancer's address is known)."""
    access = mesh.link_access
    if access.type in ("Ingress", "Route"):
        return PASSTHROUGH_PORT
    if access.type == "NodePort" and access.node_port is not None:
        return access.node_port
    return access.port
