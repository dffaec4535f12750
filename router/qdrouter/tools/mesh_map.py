"""The whole-mesh map of `qdstat --map` and `kubectl qdstat MESH --map` (like `qpid-route
route map`): what the routers of a mesh say about each other, drawn as text.

Routers, the inter-router links between them with their cost, the brokers and other
route-container connections, and the link routes and auto-links with each router's state.
Collecting (management queries) and drawing (pure) are separate so the drawing is testable
from recorded entities.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Set, Tuple

from .errors import ManagementError
from .management_client import ManagementClient

ClientFactory = Callable[[str], ManagementClient]
"""A router's address (host:port, or a router id reached through another router) -> a
management client for it."""

Entity = Dict[str, Any]
_TYPES = {
    "router": "router",
    "nodes": "router.node",
    "connections": "connection",
    "connectors": "connector",
    "link_routes": "router.config.linkRoute",
    "auto_links": "router.config.autoLink",
}


@dataclass
class RouterSnapshot:
    name: str
    router: Entity = field(default_factory=dict)
    nodes: List[Entity] = field(default_factory=list)
    connections: List[Entity] = field(default_factory=list)
    connectors: List[Entity] = field(default_factory=list)
    link_routes: List[Entity] = field(default_factory=list)
    auto_links: List[Entity] = field(default_factory=list)

    @property
    def router_id(self) -> str:
        return str(self.router.get("id") or self.name)


@dataclass
class MeshSnapshot:
    mesh: str
    routers: List[RouterSnapshot]
    unreachable: Dict[str, str] = field(default_factory=dict)
    """Router (pod) -> why it was not asked or did not answer."""


def collect(mesh: str, routers: Dict[str, str], client_for: ClientFactory) -> MeshSnapshot:
    snapshots: List[RouterSnapshot] = []
    unreachable: Dict[str, str] = {}
    for name, address in routers.items():
        snap = RouterSnapshot(name)
        try:
            with client_for(address) as client:
                for attr, entity_type in _TYPES.items():
                    rows = client.query(entity_type)
                    setattr(snap, attr, rows[0] if attr == "router" and rows else rows)
        except ManagementError as e:
            unreachable[name] = str(e)
            continue
        snapshots.append(snap)
    return MeshSnapshot(mesh, snapshots, unreachable)


# -- the picture ---------------------------------------------------------------------------------
Link = Tuple[str, str]


def _connector_costs(snap: RouterSnapshot) -> Dict[str, int]:
    """Peer router id -> the cost of the connector this router opened to it."""
    by_address = {f"{c.get('host')}:{c.get('port')}": c for c in snap.connectors
                  if c.get("role") == "inter-router"}
    costs: Dict[str, int] = {}
    for conn in snap.connections:
        connector = by_address.get(str(conn.get("host")))
        if conn.get("role") == "inter-router" and connector is not None and conn.get("container"):
            costs[str(conn["container"])] = int(connector.get("cost") or 1)
    return costs


def inter_router_links(snapshot: MeshSnapshot) -> Dict[Link, int | None]:
    """Every inter-router link seen from either end, with its cost when a router knows it.

    A neighbour reached directly (no next hop) has its link's cost as its path cost; otherwise
    the connector's cost is the best we know (the listener's end may ask for more).
    """
    links: Dict[Link, int | None] = {}

    def note(a: str, b: str, cost: int | None, authoritative: bool = False) -> None:
        key = (a, b) if a < b else (b, a)
        if key not in links or links[key] is None or (authoritative and cost is not None):
            links[key] = cost if cost is not None else links.get(key)

    for snap in snapshot.routers:
        me = snap.router_id
        for conn in snap.connections:
            if conn.get("role") == "inter-router" and conn.get("container"):
                note(me, str(conn["container"]), None)
        for peer, cost in _connector_costs(snap).items():
            note(me, peer, cost)
        for node in snap.nodes:
            peer = str(node.get("id") or node.get("routerId") or "")
            if peer and not node.get("nextHop") and node.get("cost") is not None:
                note(me, peer, int(node["cost"]), authoritative=True)
    return dict(sorted(links.items()))


def _route_containers(snap: RouterSnapshot) -> List[str]:
    lines = []
    connected: Set[str] = set()
    for conn in snap.connections:
        if conn.get("role") == "route-container":
            connected.add(str(conn.get("host")))
            lines.append(f"{snap.name} --> {conn.get('container') or '?'}  {conn.get('host')}  connected")
    for connector in snap.connectors:
        address = f"{connector.get('host')}:{connector.get('port')}"
        if connector.get("role") == "route-container" and address not in connected:
            state = connector.get("connectionStatus") or "not connected"
            msg = connector.get("connectionMsg")
            lines.append(f"{snap.name} --> {connector.get('name')}  {address}  {state}"
                         + (f": {msg}" if msg and state != "Operational" else ""))
    return lines


def _edge_routers(snap: RouterSnapshot) -> List[str]:
    """Edge routers attached to this (interior) router: its incoming edge connections."""
    return [f"{conn.get('container') or '?'} --> {snap.name}  {conn.get('host')}"
            for conn in snap.connections if conn.get("role") == "edge" and conn.get("dir") == "in"]


def _state_of(entity: Entity) -> str:
    state = str(entity.get("operStatus") or "?")
    err = entity.get("lastError")
    return f"{state} ({err})" if err else state


def _per_router(snapshot: MeshSnapshot, attr: str, key_fn: Any) -> List[Tuple[Tuple, Dict[str, str]]]:
    """Group entities alike on every router; the value is each router's state."""
    grouped: Dict[Tuple, Dict[str, str]] = {}
    for snap in snapshot.routers:
        for entity in getattr(snap, attr):
            grouped.setdefault(key_fn(entity), {})[snap.name] = _state_of(entity)
    return sorted(grouped.items(), key=lambda kv: [str(k) for k in kv[0]])


def _target(entity: Entity) -> str:
    if entity.get("connection"):
        return f"via connector {entity['connection']}"
    if entity.get("containerId"):
        return f"to container {entity['containerId']}"
    return ""


def _states(states: Dict[str, str], names: List[str]) -> str:
    return ", ".join(f"{n}: {states.get(n, 'absent')}" for n in names)


def _matrix(names: List[str], ids: Dict[str, str], links: Dict[Link, int | None]) -> List[str]:
    width = max(len(n) for n in names) + 2
    lines = ["  " + " " * width + "".join(n.ljust(width) for n in names).rstrip()]
    for a in names:
        cells = []
        for b in names:
            if a == b:
                cells.append("-")
                continue
            key = (ids[a], ids[b]) if ids[a] < ids[b] else (ids[b], ids[a])
            cells.append("." if key not in links else ("?" if links[key] is None else str(links[key])))
        lines.append("  " + a.ljust(width) + "".join(c.ljust(width) for c in cells).rstrip())
    return lines


def as_json(snapshot: MeshSnapshot) -> Dict[str, Any]:
    """The map as data (``--map --json``)."""
    return {
        "mesh": snapshot.mesh,
        "routers": [{"name": s.name, "id": s.router_id, "mode": s.router.get("mode")}
                    for s in snapshot.routers],
        "unreachable": snapshot.unreachable,
        "links": [{"routers": [a, b], "cost": c} for (a, b), c in inter_router_links(snapshot).items()],
        "routeContainers": {s.name: _route_containers(s) for s in snapshot.routers},
        "edgeRouters": {s.name: [str(c.get("container")) for c in s.connections
                                 if c.get("role") == "edge" and c.get("dir") == "in"]
                        for s in snapshot.routers},
        "linkRoutes": [{"prefix": k[0], "direction": k[1], "target": k[2], "state": st}
                       for k, st in _per_router(snapshot, "link_routes",
                                                lambda e: (e.get("prefix") or e.get("pattern"),
                                                           e.get("direction"), _target(e)))],
        "autoLinks": [{"address": k[0], "direction": k[1], "phase": k[2], "target": k[3], "state": st}
                      for k, st in _per_router(snapshot, "auto_links",
                                               lambda e: (e.get("address"), e.get("direction"),
                                                          e.get("phase"), _target(e)))],
    }


def render(snapshot: MeshSnapshot, title: str | None = None) -> str:
    """The map as text, headed ``title`` (default: the RouterMesh's name, as kubectl qdstat
    draws a mesh resource; qdstat --map names the router it asked instead)."""
    names = [s.name for s in snapshot.routers]
    ids = {s.name: s.router_id for s in snapshot.routers}
    total = len(names) + len(snapshot.unreachable)
    title = title or f"RouterMesh {snapshot.mesh}"
    out = [f"{title}: {len(names)} of {total} routers answered", ""]
    out.append("Routers")
    for s in snapshot.routers:
        r = s.router
        alias = "" if s.router_id == s.name else f" (id {s.router_id})"
        out.append(f"  {s.name}{alias}  mode {r.get('mode', '?')}"
                   f"  connections {r.get('connectionCount', '?')}  addresses {r.get('addrCount', '?')}"
                   f"  version {r.get('version', '?')}")
    for name, why in snapshot.unreachable.items():
        out.append(f"  {name}  UNREACHABLE: {why}")

    links = inter_router_links(snapshot)
    out += ["", "Inter-router links (cost; '?' unknown, '.' no link)"]
    if names:
        out += _matrix(names, ids, links)
    for (a, b), cost in links.items():
        out.append(f"  {a} <-> {b}  cost {'?' if cost is None else cost}")
    if not links:
        out.append("  none")

    out += ["", "Edge routers"]
    attached = [line for s in snapshot.routers for line in _edge_routers(s)]
    out += [f"  {line}" for line in attached] or ["  none"]

    out += ["", "Brokers and other route containers"]
    containers = [line for s in snapshot.routers for line in _route_containers(s)]
    out += [f"  {line}" for line in containers] or ["  none"]

    out += ["", "Link routes"]
    routes = _per_router(snapshot, "link_routes", lambda e: (e.get("prefix") or e.get("pattern"),
                                                              e.get("direction"), _target(e)))
    out += [f"  {p}  {d}  {t}  [{_states(st, names)}]" for (p, d, t), st in routes] or ["  none"]

    out += ["", "Auto-links"]
    autos = _per_router(snapshot, "auto_links", lambda e: (e.get("address"), e.get("direction"),
                                                            e.get("phase"), _target(e)))
    out += [f"  {a}  {d}  phase {ph}  {t}  [{_states(st, names)}]"
            for (a, d, ph, t), st in autos] or ["  none"]
    return "\n".join(out) + "\n"
