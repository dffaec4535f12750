"""What the console shows, computed from each router's management entities (pure: no I/O).

``build_snapshot`` turns {router id: {entity type: rows}} into the mesh view the pages render
(routers, inter-router links with cost, brokers and clients, mesh-wide address and link
tables with rates, auto-link and link-route states) and the per-router qdstat tables."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Tuple

from ..tools.qdstat_views import VIEWS, address_parts
from ..tools.table import cell_text

Rows = List[Dict[str, Any]]
CONSOLE_CONTAINER_PREFIX = "qdmesh-console-"
# The entity types the console reads from every router, by qdstat view name.
QUERIED_VIEWS = ("general", "connections", "links", "addresses", "nodes", "autolinks", "linkroutes")
MAX_CLIENTS_DRAWN = 6


@dataclass
class Counters:
    """Cumulative counters of one poll, kept to turn the next poll's counters into rates."""
    at: float
    addresses: Dict[Tuple[str, str], Tuple[int, int]] = field(default_factory=dict)
    links: Dict[Tuple[str, str], int] = field(default_factory=dict)


@dataclass
class RouterData:
    """One router's rows by qdstat view name, or why they could not be read."""
    router_id: str
    rows: Dict[str, Rows] = field(default_factory=dict)
    error: str | None = None


def _rate(current: int, previous: int | None, seconds: float) -> float:
    if previous is None or seconds <= 0 or current < previous:
        return 0.0
    return round((current - previous) / seconds, 2)


def _console_connections(data: RouterData) -> set:
    return {str(c.get("identity")) for c in data.rows.get("connections", [])
            if str(c.get("container") or "").startswith(CONSOLE_CONTAINER_PREFIX)}


def build_snapshot(entry: str, routers: Dict[str, RouterData], previous: Counters | None,
                   now: float) -> Tuple[Dict[str, Any], Dict[str, Any], Counters]:
    """(mesh view, {router id: detail view}, counters for the next call's rates)."""
    counters = Counters(now)
    seconds = now - previous.at if previous is not None else 0.0
    view: Dict[str, Any] = {
        "entry": entry,
        "updated": now,
        "routers": _routers(routers),
        "edges": _edges(routers),
        "attachments": _attachments(routers),
        "addresses": _addresses(routers, previous, counters, seconds),
        "links": _links(routers, previous, counters, seconds),
        "autolinks": _configured(routers, "autolinks"),
        "linkroutes": _configured(routers, "linkroutes"),
    }
    details = {rid: _detail(data) for rid, data in routers.items()}
    return view, details, counters


def _routers(routers: Dict[str, RouterData]) -> Rows:
    out = []
    for rid in sorted(routers):
        data = routers[rid]
        general = (data.rows.get("general") or [{}])[0]
        out.append({
            "id": rid,
            "reachable": data.error is None,
            "error": data.error,
            "mode": general.get("mode"),
            "version": general.get("version"),
            "connections": general.get("connectionCount"),
            "links": general.get("linkCount"),
            "addresses": general.get("addrCount"),
            "uptime": general.get("uptimeSeconds"),
            "memory": general.get("memoryUsage"),
            **_readiness(data),
        })
    return out


def _readiness(data: RouterData) -> Dict[str, Any]:
    """How many of the router's auto-links and link routes are active (operStatus), and
    which are not, named as an operator would look them up."""
    out: Dict[str, Any] = {}
    inactive: List[str] = []
    for view_name, key, what in (("autolinks", "autoLinks", "auto-link"),
                                 ("linkroutes", "linkRoutes", "link route")):
        rows = data.rows.get(view_name, [])
        active = [row for row in rows if row.get("operStatus") == "active"]
        out[key] = {"active": len(active), "total": len(rows)}
        for row in rows:
            if row.get("operStatus") != "active":
                target = row.get("address") or row.get("prefix") or row.get("pattern") or row.get("name")
                state = row.get("operStatus") or "inactive"
                inactive.append(f"{what} {target} ({row.get('direction')}): {state}")
    out["inactiveRoutes"] = inactive
    return out


def _edges(routers: Dict[str, RouterData]) -> Rows:
    """Inter-router links from the link state each router reports for the others; a link's
    cost is known where one end routes to the other directly (no next hop), its round trip
    where an end measures it (router canaryIntervalSeconds): the slower of the two ends."""
    pairs = set()
    costs: Dict[frozenset, int] = {}
    trips: Dict[frozenset, float] = {}
    failures: Dict[frozenset, int] = {}
    for rid, data in routers.items():
        for node in data.rows.get("nodes", []):
            other = str(node.get("id") or node.get("routerId") or "")
            for peer in node.get("linkState") or []:
                if other in routers and str(peer) in routers and other != str(peer):
                    pairs.add(frozenset((other, str(peer))))
            if other in routers and node.get("nextHop") in (None, "", other):
                pair = frozenset((rid, other))
                pairs.add(pair)
                if isinstance(node.get("cost"), int):
                    costs[pair] = node["cost"]
                trip = node.get("roundTripSeconds")
                if isinstance(trip, (int, float)) and not isinstance(trip, bool):
                    trips[pair] = max(float(trip), trips.get(pair, 0.0))
                failed = node.get("probeFailures")
                if isinstance(failed, int) and not isinstance(failed, bool):
                    failures[pair] = max(failed, failures.get(pair, 0))
    out = []
    for a, b in sorted(tuple(sorted(pair)) for pair in pairs):
        pair = frozenset((a, b))
        out.append({"a": a, "b": b, "cost": costs.get(pair), "roundTrip": trips.get(pair),
                    "probeFailures": failures.get(pair)})
    return out


def _attachments(routers: Dict[str, RouterData]) -> Rows:
    """Brokers (route-container connections), edge routers and client connections, per router."""
    out: Rows = []
    for rid in sorted(routers):
        clients = []
        for conn in routers[rid].rows.get("connections", []):
            container = str(conn.get("container") or conn.get("host") or "")
            role = conn.get("role")
            if role == "route-container":
                out.append({"router": rid, "kind": "container", "name": container, "host": conn.get("host")})
            elif role == "edge" and conn.get("dir") == "in":
                # an edge router attached to this interior router (its container id is its id)
                out.append({"router": rid, "kind": "edge", "name": container, "host": conn.get("host")})
            elif role == "normal" and not container.startswith(CONSOLE_CONTAINER_PREFIX):
                clients.append({"router": rid, "kind": "client", "name": container, "host": conn.get("host")})
        if len(clients) > MAX_CLIENTS_DRAWN:
            out.append({"router": rid, "kind": "clients", "name": f"{len(clients)} clients", "host": None})
        else:
            out.extend(sorted(clients, key=lambda c: c["name"]))
    return out


def _addresses(routers: Dict[str, RouterData], previous: Counters | None, counters: Counters,
               seconds: float) -> Rows:
    merged: Dict[Tuple[str, str], Dict[str, Any]] = {}
    for rid in sorted(routers):
        for row in routers[rid].rows.get("addresses", []):
            key = str(row.get("key") or row.get("name") or "")
            cls, address, phase = address_parts(key, True)
            if cls != "mobile" or row.get("inProcess"):
                continue
            # deliveriesIngress counts only deliveries entering the mesh at this router.
            ingress = int(row.get("deliveriesIngress") or 0)
            egress = int(row.get("deliveriesEgress") or 0)
            counters.addresses[(rid, key)] = (ingress, egress)
            before = previous.addresses.get((rid, key)) if previous is not None else None
            entry = merged.setdefault((address, phase), {
                "address": address, "phase": phase, "distribution": row.get("distribution"),
                "consumers": 0, "routers": [], "ingress": 0, "egress": 0, "ingressRate": 0.0,
                "egressRate": 0.0})
            local = int(row.get("subscriberCount") or 0)
            entry["consumers"] += local
            if local:
                entry["routers"].append(rid)
            entry["ingress"] += ingress
            entry["egress"] += egress
            entry["ingressRate"] += _rate(ingress, before[0] if before else None, seconds)
            entry["egressRate"] += _rate(egress, before[1] if before else None, seconds)
    return [merged[key] for key in sorted(merged)]


def _links(routers: Dict[str, RouterData], previous: Counters | None, counters: Counters,
           seconds: float) -> Rows:
    out: Rows = []
    for rid in sorted(routers):
        data = routers[rid]
        hidden = _console_connections(data)
        connections = data.rows.get("connections", [])
        containers = {str(c.get("identity")): c.get("container") for c in connections}
        inter_router = {str(c.get("identity")) for c in connections if c.get("role") == "inter-router"}
        for link in data.rows.get("links", []):
            connection = str(link.get("connectionId"))
            if link.get("linkType") != "endpoint" or connection in hidden or connection in inter_router:
                continue
            identity = str(link.get("identity"))
            deliveries = int(link.get("deliveryCount") or 0)
            counters.links[(rid, identity)] = deliveries
            before = previous.links.get((rid, identity)) if previous is not None else None
            _, address, _ = address_parts(link.get("owningAddr"))
            out.append({
                "router": rid, "id": identity, "dir": link.get("linkDir"), "address": address or None,
                "container": containers.get(connection), "deliveries": deliveries,
                "rate": _rate(deliveries, before, seconds), "undelivered": link.get("undeliveredCount"),
                "unsettled": link.get("unsettledCount"), "capacity": link.get("capacity"),
            })
    return out


def _configured(routers: Dict[str, RouterData], view_name: str) -> Rows:
    out: Rows = []
    for rid in sorted(routers):
        table = VIEWS[view_name].build(routers[rid].rows.get(view_name, []))
        for record in table.records():
            out.append({"router": rid, **{head: record[head] for head in table.heads}})
    return out


def _detail(data: RouterData) -> Dict[str, Any]:
    """qdstat -g -c -l -a -n --autolinks --linkroutes of one router, table by table."""
    tables = []
    for name in QUERIED_VIEWS:
        table = VIEWS[name].build(data.rows.get(name, []))
        tables.append({"view": name, "title": table.title, "heads": table.heads,
                       "rows": [[cell_text(cell) for cell in row] for row in table.rows]})
    return {"id": data.router_id, "reachable": data.error is None, "error": data.error, "tables": tables}
