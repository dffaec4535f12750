"""The first stage of a reconciliation: the RouterMesh's spec and the routing resources that
name it, parsed into typed specs.  A bad RouterMesh stops the reconciliation (SpecError names
the field); a bad routing resource only sets itself aside (it is reported on its own status)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from .. import contract
from ..operations import manual_roll_requested
from .errors import SpecError
from .mesh import MeshSpec, parse_mesh
from .routing import PARSERS, RoutingSpec


@dataclass
class ParsedMesh:
    mesh: MeshSpec
    #: The controller reference every object made for the mesh carries.
    owner: Dict[str, Any] = field(default_factory=dict)
    routing: List[RoutingSpec] = field(default_factory=list)
    #: Routing resources that did not parse, by (kind, name).
    invalid: Dict[Tuple[str, str], SpecError] = field(default_factory=dict)
    #: The mesh carries qdmesh.io/manual-rolling-update "true": restart every router once.
    manual_roll: bool = False


def parse_routing(bodies: Sequence[Tuple[str, Mapping[str, Any]]]
                  ) -> Tuple[List[RoutingSpec], Dict[Tuple[str, str], SpecError]]:
    specs: List[RoutingSpec] = []
    invalid: Dict[Tuple[str, str], SpecError] = {}
    for kind, item in bodies:
        name = item["metadata"]["name"]
        try:
            specs.append(PARSERS[kind](name, item.get("spec") or {}))
        except SpecError as e:
            invalid[(kind, name)] = e
    return specs, invalid


def parse_inputs(body: Mapping[str, Any],
                 routing_bodies: Sequence[Tuple[str, Mapping[str, Any]]]) -> ParsedMesh:
    """The RouterMesh ``body`` and its routing resources; raises SpecError when the RouterMesh
    itself is invalid."""
    meta = body["metadata"]
    mesh = parse_mesh(meta["name"], meta["namespace"], body.get("spec") or {},
                      pinned_image=pinned_image(body))
    routing, invalid = parse_routing(routing_bodies)
    return ParsedMesh(mesh, contract.owner_reference(body), routing, invalid,
                      manual_roll=manual_roll_requested(body))


def pinned_image(body: Mapping[str, Any]) -> str | None:
    """The image the mesh was rendered with before (status.routerImage; status.image for a
    mesh an operator before image pinning rendered), or None for a new mesh."""
    status = body.get("status") or {}
    found = status.get("routerImage") or status.get("image")
    return str(found) if isinstance(found, str) and found else None
