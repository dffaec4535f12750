"""RouterMesh ``spec.linkAccess``: whether routers of meshes in other clusters may link to this
one, and how the link listener is exposed (docs/multicluster.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Collection

from .errors import SpecError
from .fields import Fields

LINK_ACCESS_TYPES = ("None", "NodePort", "LoadBalancer", "Ingress", "Route")
DEFAULT_LINK_PORT = 55671
#: The edge link listener (grants of role edge): routers of another cluster attach as edges.
DEFAULT_EDGE_LINK_PORT = 45671
#: The link listener's cost: 1, as any listener's, imposes nothing; the linking side's
#: connector cost (MeshLink spec.cost) then decides.
DEFAULT_LINK_COST = 1
MAX_LINK_COST = 1 << 24
#: Types that need ``host``: nothing else tells the other cluster where to connect.
NEEDS_HOST = ("NodePort", "Ingress", "Route")
_HOST = r"[A-Za-z0-9]([-A-Za-z0-9.:]*[A-Za-z0-9])?"


@dataclass(frozen=True)
class LinkAccess:
    type: str = "None"
    port: int = DEFAULT_LINK_PORT
    node_port: int | None = None
    host: str | None = None
    #: The link listener's cost. A link connection costs the larger of it and the connecting
    #: side's connector cost, on both ends (as qdrouterd computes an inter-router connection's).
    cost: int = DEFAULT_LINK_COST
    edge_port: int = DEFAULT_EDGE_LINK_PORT
    edge_node_port: int | None = None

    @property
    def enabled(self) -> bool:
        return self.type != "None"


def parse_link_access(f: Fields, used_ports: Collection[int]) -> LinkAccess:
    """``used_ports``: the container ports of the mesh's other listeners (refused here)."""
    kind = f.choice("type", LINK_ACCESS_TYPES, default="None") or "None"
    access = LinkAccess(type=kind, port=f.need_integer("port", default=DEFAULT_LINK_PORT, minimum=1,
                                                       maximum=65535),
                        node_port=f.integer("nodePort", minimum=30000, maximum=32767),
                        host=f.text("host", pattern=_HOST),
                        cost=f.need_integer("cost", default=DEFAULT_LINK_COST, minimum=1,
                                            maximum=MAX_LINK_COST),
                        edge_port=f.need_integer("edgePort", default=DEFAULT_EDGE_LINK_PORT, minimum=1,
                                                 maximum=65535),
                        edge_node_port=f.integer("edgeNodePort", minimum=30000, maximum=32767))
    if access.enabled and access.port in used_ports:
        raise SpecError(f.at("port"), f"{access.port} is already used by another listener of the routers")
    if access.enabled and access.edge_port in {*used_ports, access.port}:
        raise SpecError(f.at("edgePort"),
                        f"{access.edge_port} is already used by another listener of the routers")
    for key, value in (("nodePort", access.node_port), ("edgeNodePort", access.edge_node_port)):
        if value is not None and kind != "NodePort":
            raise SpecError(f.at(key), "is only allowed with type NodePort")
    if access.node_port is not None and access.node_port == access.edge_node_port:
        raise SpecError(f.at("edgeNodePort"), "must differ from nodePort")
    if kind in NEEDS_HOST and not access.host:
        raise SpecError(f.at("host"), f"is required with type {kind} (the name the other cluster reaches)")
    return access
