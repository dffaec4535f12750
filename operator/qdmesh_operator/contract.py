"""Names every qdmesh component agrees on (docs/kubernetes-contract.md), in one place."""

from __future__ import annotations

import os
from typing import Any, Dict, Mapping

GROUP = "qdmesh.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

MESH_PLURAL = "routermeshes"
LINK_ROUTE_PLURAL = "linkroutes"
AUTO_LINK_PLURAL = "autolinks"
VHOST_PLURAL = "vhostpolicies"
MESH_LINK_PLURAL = "meshlinks"

AMQP_PORT = 5672
INTER_ROUTER_PORT = 55672
HTTP_PORT = 8672
# The operator's own way in to each router's management: a listener (role route-container)
# whose connections a vhost of their own polices (it allows everything: render/conf.py), so
# the mesh's vhost policies never lock the operator out; protected like the inter-router one.
MANAGEMENT_PORT = 55673
MANAGEMENT_VHOST = "qdmesh-operator-management"
# The vhost that polices edge routers' connections to interior routers (the edge listener's
# policyVhost): edge connections are policed as user connections, as qdrouterd polices them,
# and this vhost lets them do what an edge does (render/conf.py), whatever the mesh's
# VhostPolicies allow its clients.
EDGE_VHOST = "qdmesh-edge-routers"
CONSOLE_PORT = 8080  # the web console (spec.console), on its own pod

MANAGER = "qdmesh-operator"
#: The reason (status conditions and Events) for routers whose management the operator cannot
#: reach: the apply stage posts it, the status stage reports it.
ROUTER_UNREACHABLE = "RouterUnreachable"
CONFIG_DIR = "/etc/qdrouterd"
#: The sslProfiles of the routers' own certificates: interior routers', and edge routers'.
INTER_ROUTER_PROFILE = "inter-router-tls"
EDGE_PROFILE = "edge-tls"


def owner_reference(owner: Mapping[str, Any]) -> Dict[str, Any]:
    """A controller reference to the RouterMesh ``owner`` (its body or metadata-bearing dict):
    on everything the operator creates for a mesh, so deleting the mesh deletes them."""
    meta = owner["metadata"]
    return {"apiVersion": API_VERSION, "kind": "RouterMesh", "name": meta["name"],
            "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}


def package_version() -> str:
    try:
        from importlib.metadata import version

        return version("qdmesh")
    except Exception:  # running from a source tree that was never installed
        return "0.0.0"


def default_router_image() -> str:
    """The router image of the operator's own version, unless QDMESH_ROUTER_IMAGE says otherwise."""
    return os.environ.get("QDMESH_ROUTER_IMAGE") or f"qdmesh/router:{package_version()}"


def labels(mesh: str) -> Dict[str, str]:
    """Labels on everything the operator creates for RouterMesh ``mesh``."""
    return {
        "app.kubernetes.io/name": "qdmesh-router",
        "app.kubernetes.io/instance": mesh,
        "app.kubernetes.io/component": "router",
        "app.kubernetes.io/managed-by": MANAGER,
        "qdmesh.io/mesh": mesh,
    }


def selector(mesh: str) -> Dict[str, str]:
    return {"qdmesh.io/mesh": mesh}


def console(mesh: str) -> str:
    """Deployment and Service of the mesh's web console (spec.console.enabled)."""
    return f"{mesh}-console"


def console_labels(mesh: str) -> Dict[str, str]:
    """Labels of the console's objects and pod.  Not ``qdmesh.io/mesh``, nor the router's
    ``app.kubernetes.io/name``: the router Services, the PodDisruptionBudget, the operator's pod
    listing and the chart's PodMonitor select router pods by those, and must not pick the
    console."""
    return {
        "app.kubernetes.io/name": "qdmesh-console",
        "app.kubernetes.io/instance": mesh,
        "app.kubernetes.io/component": "console",
        "app.kubernetes.io/managed-by": MANAGER,
        "qdmesh.io/console": mesh,
    }


def console_selector(mesh: str) -> Dict[str, str]:
    return {"qdmesh.io/console": mesh}


def headless_service(mesh: str) -> str:
    return f"{mesh}-routers"


def config_map(mesh: str) -> str:
    return f"{mesh}-config"


def inter_router_tls_secret(mesh: str) -> str:
    """The Secret (tls.crt, tls.key, ca.crt) routers present on inter-router connections, in
    modes Managed (the operator writes it) and CertManager (cert-manager writes it)."""
    return f"{mesh}-inter-router-tls"


def inter_router_ca_secret(mesh: str) -> str:
    """Mode Managed: the mesh CA's certificate and key (never mounted in a pod)."""
    return f"{mesh}-inter-router-ca"


def link_credentials_secret(link: str) -> str:
    """The Secret holding what MeshLink ``link`` redeemed (its certificate, key and endpoints)."""
    return f"{link}-credentials"


def link_service(mesh: str) -> str:
    """The Service exposing the link listener of a mesh with ``spec.linkAccess``."""
    return f"{mesh}-link"


def mesh_links_secret(mesh: str) -> str:
    """The Secret of every link's files, mounted on the routers of ``mesh``."""
    return f"{mesh}-links"


def router_id(mesh: str, ordinal: int) -> str:
    """A router's id is its pod name."""
    return f"{mesh}-{ordinal}"


def is_router_of(mesh: str, router_id: str) -> bool:
    """Whether ``router_id`` names a router of ``mesh`` (this size or another): the routers of a
    mesh linked to another cluster's (MeshLink) see that mesh's routers in ``router.node`` too."""
    prefix = f"{mesh}-"
    return router_id.startswith(prefix) and router_id[len(prefix):].isdigit()


def is_foreign(mesh: str, router_id: str) -> bool:
    """Whether ``router_id`` names a router of another mesh (``<other>-<ordinal>``), as a
    linked mesh's routers are; ids of no mesh's form (routers started by hand) are not."""
    name, _, ordinal = router_id.rpartition("-")
    return bool(name) and ordinal.isdigit() and name != mesh


def router_host(mesh: str, namespace: str, ordinal: int) -> str:
    """The DNS name of router ``ordinal`` through the headless Service."""
    return f"{router_id(mesh, ordinal)}.{headless_service(mesh)}.{namespace}.svc"


# -- edge routers (spec.edgeGroups) ---------------------------------------------------------------
# The C router's conventional port for edge connections (interior routers listen, edges connect).
EDGE_PORT = 45672


def edge_group(mesh: str, group: str) -> str:
    """Deployment or DaemonSet, and client Service, of one edge group."""
    return f"{mesh}-edge-{group}"


def edge_config_key(group: str) -> str:
    """The key of an edge group's config in the mesh's ConfigMap (one config per group: edge
    pods of a Deployment have no names known in advance, so their router id comes from the
    pod's host name, as qdrouterd makes one when the config sets none)."""
    return f"edge-{group}.conf"


def edge_labels(mesh: str, group: str) -> Dict[str, str]:
    """Labels of an edge group's objects and pods.  Not ``qdmesh.io/mesh``: the interior
    routers' Services, PodDisruptionBudget and scale selector pick pods by it."""
    return {
        "app.kubernetes.io/name": "qdmesh-router",
        "app.kubernetes.io/instance": mesh,
        "app.kubernetes.io/component": "edge-router",
        "app.kubernetes.io/managed-by": MANAGER,
        "qdmesh.io/edge-of": mesh,
        "qdmesh.io/edge-group": group,
    }


def edge_selector(mesh: str, group: str | None = None) -> Dict[str, str]:
    """Edge pods of ``mesh`` (of one ``group``)."""
    found = {"qdmesh.io/edge-of": mesh}
    if group is not None:
        found["qdmesh.io/edge-group"] = group
    return found


def edge_tls_secret(mesh: str) -> str:
    """Mode Managed: the certificate edge routers present to interior routers (tls.crt,
    tls.key, ca.crt), issued by the mesh's CA."""
    return f"{mesh}-edge-tls"
