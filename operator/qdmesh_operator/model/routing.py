"""LinkRoute, AutoLink and VhostPolicy: typed specs and the router entities each becomes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Union

from .entities import Entity, managed_name
from .errors import ReferenceError_, SpecError
from .fields import Fields, exactly_one
from .mesh import MeshSpec


@dataclass
class LinkRouteSpec:
    name: str
    mesh_ref: str
    prefix: str | None = None
    pattern: str | None = None
    direction: str = "both"
    connection: str | None = None
    container_id: str | None = None
    add_external_prefix: str | None = None
    del_external_prefix: str | None = None

    def entities(self, mesh: MeshSpec) -> List[Entity]:
        attrs: Dict[str, Any] = {}
        if self.prefix is not None:
            attrs["prefix"] = self.prefix
        if self.pattern is not None:
            attrs["pattern"] = self.pattern
        _target(attrs, mesh, self.connection, self.container_id)
        if self.add_external_prefix is not None:
            attrs["addExternalPrefix"] = self.add_external_prefix
        if self.del_external_prefix is not None:
            attrs["delExternalPrefix"] = self.del_external_prefix
        directions = ("in", "out") if self.direction == "both" else (self.direction,)
        return [Entity("linkRoute", managed_name("linkRoute", f"{self.name}-{d}"), {**attrs, "direction": d})
                for d in directions]


@dataclass
class AutoLinkSpec:
    name: str
    mesh_ref: str
    address: str
    direction: str
    phase: int | None = None
    connection: str | None = None
    container_id: str | None = None
    external_address: str | None = None
    fallback: bool = False

    def entities(self, mesh: MeshSpec) -> List[Entity]:
        attrs: Dict[str, Any] = {"address": self.address, "direction": self.direction}
        if self.phase is not None:
            attrs["phase"] = self.phase
        _target(attrs, mesh, self.connection, self.container_id)
        if self.external_address is not None:
            attrs["externalAddress"] = self.external_address
        if self.fallback:
            attrs["fallback"] = True
        return [Entity("autoLink", managed_name("autoLink", self.name), attrs)]


GROUP_LISTS = ("users", "remoteHosts", "sources", "targets")
GROUP_INTS = {"maxConnectionsPerUser": 65535, "maxConnectionsPerHost": 65535, "maxMessageSize": None,
              "maxFrameSize": None, "maxSessionWindow": None, "maxSessions": 65536, "maxSenders": None,
              "maxReceivers": None}
GROUP_BOOLS = ("allowDynamicSource", "allowAnonymousSender", "allowUserIdProxy", "allowWaypointLinks",
               "allowDynamicLinkRoutes", "allowAdminStatusUpdate", "allowFallbackLinks")
GROUP_TEXTS = ("sourcePattern", "targetPattern")


@dataclass
class VhostPolicySpec:
    name: str
    mesh_ref: str
    hostname: str
    aliases: List[str] = field(default_factory=list)
    limits: Dict[str, int] = field(default_factory=dict)
    allow_unknown_user: bool = False
    groups: Dict[str, Dict[str, Any]] = field(default_factory=dict)

    def entities(self, mesh: MeshSpec) -> List[Entity]:
        attrs: Dict[str, Any] = {"hostname": self.hostname, **self.limits,
                                 "allowUnknownUser": self.allow_unknown_user}
        if self.aliases:
            attrs["aliases"] = ",".join(self.aliases)
        if self.groups:
            attrs["groups"] = self.groups
        return [Entity("vhost", managed_name("vhost", self.name), attrs)]


RoutingSpec = Union[LinkRouteSpec, AutoLinkSpec, VhostPolicySpec]


def _target(attrs: Dict[str, Any], mesh: MeshSpec, connection: str | None,
            container_id: str | None) -> None:
    if connection is not None:
        if mesh.connector(connection) is None:
            known = ", ".join(c.name for c in mesh.connectors) or "none"
            raise ReferenceError_("spec.connection", f"RouterMesh {mesh.name!r} has no connector "
                                                     f"{connection!r} (its connectors: {known})")
        attrs["connection"] = managed_name("connector", connection)
    if container_id is not None:
        attrs["containerId"] = container_id


def _mesh_ref(f: Fields) -> str:
    return f.need_text("meshRef", max_length=63)


def parse_link_route(name: str, spec: Mapping[str, Any]) -> LinkRouteSpec:
    f = Fields(spec, "spec")
    exactly_one(f, "prefix", "pattern")
    exactly_one(f, "connection", "containerId")
    return LinkRouteSpec(
        name=name, mesh_ref=_mesh_ref(f), prefix=f.text("prefix", max_length=512),
        pattern=f.text("pattern", max_length=512),
        direction=f.choice("direction", ("in", "out", "both"), default="both") or "both",
        connection=f.text("connection", max_length=63), container_id=f.text("containerId"),
        add_external_prefix=f.text("addExternalPrefix"), del_external_prefix=f.text("delExternalPrefix"))


def parse_auto_link(name: str, spec: Mapping[str, Any]) -> AutoLinkSpec:
    f = Fields(spec, "spec")
    exactly_one(f, "connection", "containerId")
    direction = f.choice("direction", ("in", "out"), required=True)
    assert direction is not None
    return AutoLinkSpec(
        name=name, mesh_ref=_mesh_ref(f), address=f.need_text("address", max_length=512), direction=direction,
        phase=f.integer("phase", minimum=0, maximum=9), connection=f.text("connection", max_length=63),
        container_id=f.text("containerId"), external_address=f.text("externalAddress", max_length=512),
        fallback=bool(f.boolean("fallback", False)))


def parse_vhost(name: str, spec: Mapping[str, Any]) -> VhostPolicySpec:
    f = Fields(spec, "spec")
    v = VhostPolicySpec(name=name, mesh_ref=_mesh_ref(f), hostname=f.need_text("hostname"),
                  aliases=f.texts("aliases", max_items=64, max_length=253),
                  allow_unknown_user=bool(f.boolean("allowUnknownUser", False)))
    for key, maximum in (("maxConnections", 65535), ("maxMessageSize", None),
                         ("maxConnectionsPerUser", 65535), ("maxConnectionsPerHost", 65535)):
        value = f.integer(key, minimum=0, maximum=maximum)
        if value is not None:
            v.limits[key] = value
    groups = f.mapping("groups")
    for group_name in sorted(groups):
        v.groups[group_name] = _group(Fields(groups[group_name], f"spec.groups.{group_name}"))
    return v


def _group(g: Fields) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for key in GROUP_LISTS:
        if g.has(key):
            out[key] = ",".join(g.texts(key))
    for key, maximum in GROUP_INTS.items():
        value = g.integer(key, minimum=0, maximum=maximum)
        if value is not None:
            out[key] = value
    for key in GROUP_BOOLS:
        flag = g.boolean(key)
        if flag is not None:
            out[key] = flag
    for key in GROUP_TEXTS:
        text = g.text(key, max_length=1024)
        if text is not None:
            out[key] = text
    for a, b in (("sources", "sourcePattern"), ("targets", "targetPattern")):
        if a in out and b in out:
            raise SpecError(g.path, f"give {a} or {b}, not both")
    unknown = sorted(set(g.data) - set(GROUP_LISTS) - set(GROUP_INTS) - set(GROUP_BOOLS) - set(GROUP_TEXTS))
    if unknown:
        raise SpecError(g.at(unknown[0]), "is not a vhost group setting")
    return out


PARSERS: Dict[str, Callable[[str, Mapping[str, Any]], RoutingSpec]] = {
    "LinkRoute": parse_link_route, "AutoLink": parse_auto_link, "VhostPolicy": parse_vhost}
