"""The link listener of a mesh with ``spec.linkAccess``: where routers of meshes in other
clusters connect (role inter-router, mutual TLS with sslProfile ``link-tls``).  The listener's ``cost`` is
the accepting side's say in what a link costs: every router takes the larger of the two
ends' costs for an inter-router connection, so no linking side can make the link cheaper.

Links of grants of role ``edge`` attach to the edge link listener: role edge, its own
sslProfile ``link-edge-tls`` (the same certificate, a bundle of edge grants' CAs only).  An
edge's connection is policed by the mesh's vhost policy as a client's is; an inter-router
peer is not (docs/multicluster.md, "What a link may do").

The sslProfile names files of a mounted Secret, so it is in the config file (a Secret volume
cannot be added to a running pod: enabling linkAccess restarts the routers once); the
listener is a live entity, created and changed through management.  The profile's material
(the listener's certificate, the live grants' client CAs) changes at run time: the routers
load it again (apply/tls_reload.py)."""

from __future__ import annotations

from typing import List

from ..grants.names import EDGE_CA_KEY, LINK_EDGE_PROFILE, LINK_PROFILE, LINK_TLS_DIR
from ..model.entities import Entity, managed_name
from ..model.mesh import MeshSpec

LINK_LISTENER = managed_name("linkListener", "link")
EDGE_LINK_LISTENER = managed_name("linkListener", "edge")


def link_entities(mesh: MeshSpec) -> List[Entity]:
    access = mesh.link_access
    if not access.enabled:
        return []
    profile = Entity("sslProfile", LINK_PROFILE, {
        "caCertFile": f"{LINK_TLS_DIR}/ca.crt", "certFile": f"{LINK_TLS_DIR}/tls.crt",
        "privateKeyFile": f"{LINK_TLS_DIR}/tls.key"}, restart_only=True)
    listener = Entity("listener", LINK_LISTENER, {
        "host": "", "port": str(access.port), "role": "inter-router", "cost": access.cost,
        "sslProfile": LINK_PROFILE,
        "saslMechanisms": "EXTERNAL", "authenticatePeer": True, "requireSsl": True})
    edge_profile = Entity("sslProfile", LINK_EDGE_PROFILE, {
        "caCertFile": f"{LINK_TLS_DIR}/{EDGE_CA_KEY}", "certFile": f"{LINK_TLS_DIR}/tls.crt",
        "privateKeyFile": f"{LINK_TLS_DIR}/tls.key"}, restart_only=True)
    # No policyVhost: an edge link's connection gets the vhost its open names (or the
    # default vhost), as a local client's does, so the mesh's VhostPolicies hold it.
    edge_listener = Entity("listener", EDGE_LINK_LISTENER, {
        "host": "", "port": str(access.edge_port), "role": "edge", "sslProfile": LINK_EDGE_PROFILE,
        "saslMechanisms": "EXTERNAL", "authenticatePeer": True, "requireSsl": True})
    return [profile, listener, edge_profile, edge_listener]
