"""The entities each router of a mesh should have: from the RouterMesh and the routing resources
that name it.  Pure: the same inputs always give the same entities, in the same order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Sequence

from .. import contract
from ..model import topology
from ..model.entities import LIVE_TYPES, Entity, managed_name
from ..model.errors import SpecError
from ..model.mesh import ConnectorSpec, ListenerSpec, MeshSpec
from ..model.routing import RoutingSpec
from .link import link_entities

TLS_DIR = "/etc/qdmesh/tls"
INTER_ROUTER_PROFILE = contract.INTER_ROUTER_PROFILE
INTER_ROUTER_PREFIX = managed_name("interRouter", "")
#: The sslProfile of edge routers: their certificate, for the edge connectors and management.
EDGE_PROFILE = contract.EDGE_PROFILE
EDGE_TLS_DIR = "/etc/qdmesh/edge"


@dataclass
class RoutingProblem:
    """A routing resource that cannot be applied to its mesh (e.g. it names a missing connector)."""

    kind: str
    name: str
    error: SpecError


@dataclass
class MeshState:
    """What every router of a mesh should have, per router id."""

    mesh: MeshSpec
    entities: Dict[str, List[Entity]] = field(default_factory=dict)
    #: What every edge router of a group should have, by group name (the same on each).
    edges: Dict[str, List[Entity]] = field(default_factory=dict)
    #: Names of the routing resources that made it into ``entities``, by kind.
    applied: Dict[str, List[str]] = field(default_factory=dict)
    problems: List[RoutingProblem] = field(default_factory=list)

    #: Whether the live routers' inter-router connectors are the operator's to manage (not
    #: when the routers run outside the cluster and are wired by whoever started them).
    manage_inter_router: bool = True
    #: Whether the routers mount the Secret of the mesh's MeshLinks (links/entities.py).
    links_volume: bool = False

    def live_entities(self, router_id: str) -> List[Entity]:
        return [e for e in self.entities[router_id] if not e.restart_only
                and (self.manage_inter_router or not e.name.startswith(INTER_ROUTER_PREFIX))]

    def restart_only_names(self, router_id: str) -> List[str]:
        return [e.name for e in self.entities[router_id] if e.restart_only
                or (not self.manage_inter_router and e.name.startswith(INTER_ROUTER_PREFIX))]

    def edge_live_entities(self, group: str) -> List[Entity]:
        return [e for e in self.edges[group] if not e.restart_only]

    def edge_restart_only_names(self, group: str) -> List[str]:
        return [e.name for e in self.edges[group] if e.restart_only]


def tls_profile(secret: str) -> Entity:
    base = f"{TLS_DIR}/{secret}"
    return Entity("sslProfile", managed_name("tls", secret),
                  {"caCertFile": f"{base}/ca.crt", "certFile": f"{base}/tls.crt",
                   "privateKeyFile": f"{base}/tls.key"}, restart_only=True)


def listener_entity(spec: ListenerSpec) -> Entity:
    attrs: Dict[str, Any] = {"host": "", "port": str(spec.port), "role": spec.role,
                             "saslMechanisms": spec.sasl_mechanisms,
                             "authenticatePeer": spec.authenticate_peer}
    if spec.tls_secret:
        attrs["sslProfile"] = managed_name("tls", spec.tls_secret)
        attrs["requireSsl"] = spec.require_ssl
    return Entity("listener", managed_name("listener", spec.name), attrs,
                  restart_only=spec.tls_secret is not None)


def connector_entity(spec: ConnectorSpec) -> Entity:
    attrs: Dict[str, Any] = {"host": spec.host, "port": str(spec.port), "role": spec.role}
    if spec.tls_secret:
        attrs["sslProfile"] = managed_name("tls", spec.tls_secret)
        attrs["verifyHostname"] = spec.verify_hostname
    if spec.sasl_mechanisms:
        attrs["saslMechanisms"] = spec.sasl_mechanisms
    if spec.sasl_username:
        attrs["saslUsername"] = spec.sasl_username
    if spec.sasl_password:
        attrs["saslPassword"] = f"env:{spec.password_env}"
    # TLS files and password variables arrive with a new pod; until then it cannot be created.
    restart_only = spec.tls_secret is not None or spec.sasl_password is not None
    return Entity("connector", managed_name("connector", spec.name), attrs, restart_only=restart_only)


def inter_router_connectors(mesh: MeshSpec, ordinal: int) -> List[Entity]:
    out = []
    for a, b in topology.edges(mesh.topology, mesh.size, mesh.degree):
        if a != ordinal:
            continue
        attrs: Dict[str, Any] = {"host": contract.router_host(mesh.name, mesh.namespace, b),
                                 "port": str(contract.INTER_ROUTER_PORT), "role": "inter-router"}
        if mesh.inter_router_tls.enabled:
            attrs["sslProfile"] = INTER_ROUTER_PROFILE
            attrs["saslMechanisms"] = "EXTERNAL"
        out.append(Entity("connector", managed_name("interRouter", contract.router_id(mesh.name, b)), attrs))
    return out


def edge_listener(mesh: MeshSpec) -> Entity:
    """Interior routers of a mesh with edge groups: where edge routers connect.  A live entity
    (its sslProfile is the inter-router one, loaded at start), so edge groups added later
    need no restart of the interior routers."""
    attrs: Dict[str, Any] = {"host": "", "port": str(contract.EDGE_PORT), "role": "edge",
                             "policyVhost": contract.EDGE_VHOST}
    if mesh.inter_router_tls.enabled:
        attrs.update(sslProfile=INTER_ROUTER_PROFILE, saslMechanisms="EXTERNAL", authenticatePeer=True,
                     requireSsl=True)
    else:
        attrs["saslMechanisms"] = "ANONYMOUS"
    return Entity("listener", managed_name("edgeListener", "edge"), attrs)


def edge_vhost() -> Entity:
    """The vhost of edge routers' connections to an interior router (the edge listener's
    policyVhost). With vhost policy on, an interior polices them as user connections, as
    qdrouterd does; an edge attaches an anonymous sender and dynamic and special receivers,
    and forwards its clients' messages with their own user-ids, so this vhost allows all of
    it (the edge's own listeners police its clients by the mesh's VhostPolicies). Live, as
    the edge listener is."""
    edges = {"remoteHosts": "*", "sources": "*", "targets": "*", "allowDynamicSource": True,
             "allowAnonymousSender": True, "allowUserIdProxy": True}
    return Entity("vhost", managed_name("edgeVhost", "edge"),
                  {"hostname": contract.EDGE_VHOST, "allowUnknownUser": True, "groups": {"$default": edges}})


def edge_connectors(mesh: MeshSpec, group_index: int) -> List[Entity]:
    """An edge router's connectors, one to every interior router.  The router uses one at a
    time and fails over to the next (as qdrouterd's edge routers do); the list starts at a
    different interior router for each group, so groups spread over the interior."""
    ids = mesh.router_ids()
    start = group_index % len(ids)
    out = []
    for ordinal in [*range(start, len(ids)), *range(start)]:
        attrs: Dict[str, Any] = {"host": contract.router_host(mesh.name, mesh.namespace, ordinal),
                                 "port": str(contract.EDGE_PORT), "role": "edge"}
        if mesh.inter_router_tls.enabled:
            attrs.update(sslProfile=EDGE_PROFILE, saslMechanisms="EXTERNAL")
        out.append(Entity("connector", managed_name("edge", ids[ordinal]), attrs))
    return out


def mesh_entities(mesh: MeshSpec) -> List[Entity]:
    """Entities from the RouterMesh itself (the same on every router)."""
    out: List[Entity] = []
    secrets = mesh.tls_secrets()
    out.extend(tls_profile(s) for s in secrets)
    out.extend(listener_entity(x) for x in mesh.listeners)
    out.extend(connector_entity(x) for x in mesh.connectors)
    for a in mesh.addresses:
        attrs: Dict[str, Any] = {"distribution": a.distribution, "waypoint": a.waypoint}
        if a.prefix is not None:
            attrs["prefix"] = a.prefix
        else:
            attrs["pattern"] = a.pattern
        for key, value in (("ingressPhase", a.ingress_phase), ("egressPhase", a.egress_phase),
                           ("priority", a.priority)):
            if value is not None:
                attrs[key] = value
        out.append(Entity("address", managed_name("address", a.key), attrs))
    out.extend(link_entities(mesh))
    return out


def address_entities(mesh: MeshSpec) -> List[Entity]:
    return [e for e in mesh_entities(mesh) if e.type == "address"]


def mesh_state(mesh: MeshSpec, routing: Sequence[RoutingSpec], manage_inter_router: bool = True,
               links: Mapping[str, Sequence[Entity]] | None = None) -> MeshState:
    """Every router's entities; routing resources that do not fit the mesh become problems
    and contribute nothing (never half of their entities).  ``links``: each router's MeshLink
    entities (links/entities.py)."""
    state = MeshState(mesh, manage_inter_router=manage_inter_router)
    shared = mesh_entities(mesh)
    routed: List[Entity] = []
    for spec in sorted(routing, key=lambda s: (type(s).__name__, s.name)):
        kind = type(spec).__name__.replace("Spec", "")
        try:
            made = spec.entities(mesh)
        except SpecError as e:
            state.problems.append(RoutingProblem(kind, spec.name, e))
            continue
        routed.extend(made)
        state.applied.setdefault(kind, []).append(spec.name)
    order = {t: i for i, t in enumerate(LIVE_TYPES)}
    if mesh.edge_groups:
        shared.extend((edge_listener(mesh), edge_vhost()))
    for ordinal, rid in enumerate(mesh.router_ids()):
        entities = [*shared, *inter_router_connectors(mesh, ordinal), *routed, *(links or {}).get(rid, ())]
        entities.sort(key=lambda e: order[e.type])  # stable: same-type entities keep their order
        state.entities[rid] = entities
    # Edge routers: their uplinks, the mesh's address settings and vhost policies (clients
    # connect to edge routers, so their policy applies there).  Listeners, connectors to
    # brokers, link routes and auto-links stay on the interior routers, as qdrouterd's edge
    # deployments have them; edge clients reach them through the interior.
    vhosts = [e for e in routed if e.type == "vhost"]
    for index, group in enumerate(mesh.edge_groups):
        edge = [*edge_connectors(mesh, index), *address_entities(mesh), *vhosts]
        edge.sort(key=lambda e: order[e.type])
        state.edges[group.name] = edge
    return state
