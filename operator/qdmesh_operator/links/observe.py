"""What the mesh's reconciliation reads of its MeshLinks: the links naming the mesh, what each
redeemed (its credentials Secret), and the Secret mounted on the routers; and what it decides
from them (the links whose connectors the routers get)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Tuple

from ..linking.wire import WireError
from ..model.entities import Entity
from ..model.errors import SpecError
from ..model.mesh import MeshSpec
from ..observe.links import ObservedLinks
from .credentials import Credentials, parse_credentials
from .entities import VOLUME, link_entities
from .spec import LinkSpec, parse_link


@dataclass
class MeshLinks:
    """The links that give the routers entities, (spec, what it redeemed) each, with their bodies."""

    ready: List[Tuple[LinkSpec, Credentials]] = field(default_factory=list)
    bodies: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    #: Links whose credentials Secret cannot be used, with why (their status says so).
    broken: Dict[str, str] = field(default_factory=dict)
    #: The mounted Secret holds something: it is applied (emptied) even with no link left.
    mounted_data: bool = False


def mesh_links(observed: ObservedLinks | None) -> MeshLinks:
    out = MeshLinks()
    if observed is None:
        return out
    out.mounted_data = bool(observed.mounted)
    for body in observed.bodies:
        meta = body["metadata"]
        name = str(meta["name"])
        out.bodies[name] = body
        data = observed.credentials.get(name)
        if data is None:
            continue  # not redeemed yet: its own handler redeems it
        try:
            spec = parse_link(name, str(meta["namespace"]), body.get("spec") or {})
            out.ready.append((spec, parse_credentials(data)))
        except (SpecError, WireError) as e:
            out.broken[name] = str(e)
    return out


@dataclass
class LinkPlan:
    """What the mesh's MeshLinks add to its desired state."""

    links: MeshLinks
    #: Each router's link entities, by router id.
    entities: Dict[str, List[Entity]]
    #: Whether the routers mount the links' Secret.
    volume: bool


def plan_links(observed: ObservedLinks | None, mesh: MeshSpec, stateful_set: Mapping[str, Any] | None
               ) -> LinkPlan:
    links = mesh_links(observed)
    return LinkPlan(links, link_entities(mesh, links.ready), links_volume(links, stateful_set))


def links_volume(links: MeshLinks, stateful_set: Mapping[str, Any] | None) -> bool:
    """Whether the routers mount the links' Secret: a new mesh does from the start and a mesh
    that does keeps it (so a link comes and goes with no restart); a mesh made before MeshLinks
    existed gets it with its first link (one rolling restart), not when the operator is upgraded."""
    if links.ready or stateful_set is None:
        return True
    volumes = ((((stateful_set.get("spec") or {}).get("template") or {}).get("spec") or {})
               .get("volumes") or [])
    return any(v.get("name") == VOLUME for v in volumes)
