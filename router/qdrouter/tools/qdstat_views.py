"""qdstat's views: which entities each option queries and how their attributes become a table.

Each view is a pure function from the agent's entity maps to a Table, so the layouts are
testable without a router.  Attributes missing from an entity show as empty cells: an agent
older or newer than this client must not break the display.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Tuple

from qdrouter.schema import entity_type

from .table import Table

Entity = Dict[str, Any]

# qdrouterd encodes an address's class in the first character of its key (M0addr, Laddr, ...).
_ADDRESS_CLASSES = {
    "M": "mobile",
    "L": "local",
    "R": "router",
    "A": "area",
    "T": "topo",
    "C": "link-in",
    "D": "link-out",
    "E": "link-in",   # link-route patterns (later qdrouterd): E in, F out
    "F": "link-out",
    "H": "edge",
}


def is_encoded_key(key: str) -> bool:
    """Whether ``key`` looks class-prefixed; a mobile key has its phase digit after the M."""
    if len(key) < 2 or key[0] not in _ADDRESS_CLASSES:
        return False
    return key[1].isdigit() if key[0] == "M" else True


def address_parts(key: str | None, encoded: bool | None = None) -> Tuple[str, str, str]:
    """(class, address, phase) of an address key such as ``M0my-queue`` or ``Ltemp.abc``.

    A key without a class prefix (an agent reporting plain addresses) is a mobile address.
    ``encoded`` overrides the per-key guess when the caller knows better.
    """
    if not key:
        return "", "", ""
    if not (is_encoded_key(key) if encoded is None else encoded):
        return "mobile", key, ""
    if key[0] == "M":
        return "mobile", key[2:], key[1]
    return _ADDRESS_CLASSES[key[0]], key[1:], ""


def _first(entity: Entity, *names: str) -> Any:
    """The first of ``names`` the entity has (attribute names changed across releases)."""
    for name in names:
        if entity.get(name) is not None:
            return entity[name]
    return None


def _or_dash(value: Any) -> Any:
    return "-" if value is None or value == "" or value == [] else value


def _count(value: Any) -> Any:
    """qdstat shows in-process subscribers as a number; an agent may report a boolean."""
    return int(value) if isinstance(value, bool) else value


# -- the views --------------------------------------------------------------------------------
_GENERAL_ROWS = [
    # (label, attribute, shown even when the agent does not report it)
    ("Version", "version", True),
    ("Mode", "mode", True),
    ("Area", "area", False),
    ("Router Id", "id", True),
    ("Link Routes", "linkRouteCount", True),
    ("Auto Links", "autoLinkCount", True),
    ("Links", "linkCount", True),
    ("Nodes", "nodeCount", True),
    ("Addresses", "addrCount", True),
    ("Connections", "connectionCount", True),
    ("Presettled Count", "presettledDeliveries", False),
    ("Dropped Presettled Count", "droppedPresettledDeliveries", False),
    ("Accepted Count", "acceptedDeliveries", False),
    ("Rejected Count", "rejectedDeliveries", False),
    ("Released Count", "releasedDeliveries", False),
    ("Modified Count", "modifiedDeliveries", False),
    ("Ingress Count", "deliveriesIngress", False),
    ("Egress Count", "deliveriesEgress", False),
    ("Transit Count", "deliveriesTransit", False),
    ("Deliveries from Route Container", "deliveriesIngressRouteContainer", False),
    ("Deliveries to Route Container", "deliveriesEgressRouteContainer", False),
]


def general(entities: List[Entity]) -> Table:
    router = entities[0] if entities else {}
    rows = [[label, router.get(attr)] for label, attr, always in _GENERAL_ROWS if always or attr in router]
    return Table("Router Statistics", ["attr", "value"], rows)


def _security(conn: Entity) -> str:
    if not conn.get("isEncrypted"):
        return "no-security"
    if conn.get("sasl") == "GSSAPI":
        return "Kerberos"
    return f"{conn.get('sslProto') or ''}({conn.get('sslCipher') or ''})"


def _authentication(conn: Entity) -> str:
    if not conn.get("isAuthenticated"):
        return "no-auth"
    mech = {"GSSAPI": "Kerberos", "EXTERNAL": "x.509"}.get(conn.get("sasl") or "", conn.get("sasl") or "")
    if mech == "ANONYMOUS":
        return "anonymous-user"
    user = conn.get("user")
    return f"{mech}({user})" if user else mech


def connections(entities: List[Entity]) -> Table:
    heads = ["id", "host", "container", "role", "dir", "security", "authentication"]
    rows = [[c.get("identity"), c.get("host"), c.get("container"), c.get("role"), c.get("dir"),
             _security(c), _authentication(c)] for c in entities]
    if any("outputBlocked" in c for c in entities):
        # qdmesh's agent tells of blocked connections (qdrouterd's does not: no column then).
        # Last, so that every column before it is where qdrouterd's qdstat has it.
        heads.append("blocked")
        for row, c in zip(rows, entities):
            row.append(_blocked(c))
    return Table("Connections", heads, rows)


def _blocked(conn: Entity) -> str:
    """'output': its consumers wait for its socket; 'input': its socket is not read, a
    consumer it streams to being blocked; '-': neither."""
    states = [name for name, key in (("output", "outputBlocked"), ("input", "inputHeld")) if conn.get(key)]
    return ",".join(states) or "-"


def edges(entities: List[Entity]) -> Table:
    """qdstat --edge, as qdrouterd's: an interior router's connections from edge routers."""
    heads = ["id", "host", "container", "role", "dir", "security", "authentication", "tenant"]
    rows = [[c.get("identity"), c.get("host"), c.get("container"), c.get("role"), c.get("dir"),
             _security(c), _authentication(c), c.get("tenant")] for c in entities if c.get("role") == "edge"]
    return Table("Connections", heads, rows)


def links(entities: List[Entity]) -> Table:
    heads = ["type", "dir", "conn id", "id", "peer", "class", "addr", "phs", "cap", "undel",
             "unsettled", "deliveries", "admin", "oper"]
    rows = []
    for link in entities:
        cls, addr, phase = address_parts(link.get("owningAddr"))
        rows.append([link.get("linkType"), link.get("linkDir"), link.get("connectionId"),
                     link.get("identity"), link.get("peer"), cls, addr, phase, link.get("capacity"),
                     link.get("undeliveredCount"), link.get("unsettledCount"), link.get("deliveryCount"),
                     link.get("adminStatus"), link.get("operStatus")])
    return Table("Router Links", heads, rows)


def addresses(entities: List[Entity]) -> Table:
    heads = ["class", "addr", "phs", "distrib", "in-proc", "local", "remote", "cntnr", "in", "out",
             "thru", "to-proc", "from-proc"]
    keys = [_first(a, "key", "name", "identity") or "" for a in entities]
    # Every router has a $management address; if its key (or any) lacks a class prefix the
    # agent reports plain addresses, and none of them must be decoded ("Local" is not L+"ocal").
    encoded = all(is_encoded_key(k) for k in keys if k)
    keyed = [(address_parts(k, encoded), a) for k, a in zip(keys, entities)]
    # Sorted by address text as qdstat lists them; the sort is stable, keeping the agent's
    # order between classes of the same address.
    keyed.sort(key=lambda item: (item[0][1], item[0][2]))
    rows = [[cls, addr, phase, a.get("distribution"), _count(a.get("inProcess")), a.get("subscriberCount"),
             a.get("remoteCount"), a.get("containerCount"), a.get("deliveriesIngress"),
             a.get("deliveriesEgress"), a.get("deliveriesTransit"), a.get("deliveriesToContainer"),
             a.get("deliveriesFromContainer")]
            for (cls, addr, phase), a in keyed]
    return Table("Router Addresses", heads, rows)


def nodes(entities: List[Entity]) -> Table:
    # "neighbors" is the router's link state (qdrouterd's qdstat shows it with -v).
    heads = ["router-id", "next-hop", "link", "cost", "neighbors"]
    rows = [[_first(n, "id", "routerId"), _or_dash(n.get("nextHop")), _or_dash(n.get("routerLink")),
             _or_dash(n.get("cost")), _or_dash(n.get("linkState"))] for n in entities]
    # By router id, as qdstat sorts them (the router queried among the others).
    rows.sort(key=lambda row: str(row[0] or ""))
    return Table("Routers in the Network", heads, rows)


SELF = "(self)"


def with_self_node(router: Entity | None, entities: List[Entity]) -> List[Entity]:
    """The routers in the network with the one queried among them, as qdrouterd lists it: next
    hop "(self)", no link, and its neighbours (the routers whose link state names it). Only an
    interior router has a row of its own (a standalone or edge router has no router list), and
    none is added when the agent lists the router itself already (qdrouterd's does)."""
    own = _first(router or {}, "id", "routerId")
    if not own or (router or {}).get("mode") != "interior":
        return entities
    if any(_first(n, "id", "routerId") == own for n in entities):
        return entities
    neighbours = sorted(str(_first(n, "id", "routerId")) for n in entities
                        if own in (n.get("linkState") or []))
    mine = {"id": own, "nextHop": SELF, "routerLink": None, "cost": None, "linkState": neighbours}
    return [*entities, mine]


def connectors(entities: List[Entity]) -> Table:
    heads = ["name", "host", "role", "cost", "status", "message"]
    rows = [[c.get("name"), f"{c.get('host') or ''}:{c.get('port') or ''}", c.get("role"), c.get("cost"),
             c.get("connectionStatus"), c.get("connectionMsg")] for c in entities]
    return Table("Connectors", heads, rows)


def autolinks(entities: List[Entity]) -> Table:
    heads = ["addr", "dir", "phase", "link", "status", "lastErr"]
    rows = [[_first(a, "address", "addr"), _first(a, "direction", "dir"), a.get("phase"),
             a.get("linkRef"), a.get("operStatus"), a.get("lastError")] for a in entities]
    return Table("AutoLinks", heads, rows)


def linkroutes(entities: List[Entity]) -> Table:
    heads = ["prefix", "dir", "distrib", "status"]
    rows = [[_first(r, "prefix", "pattern"), _first(r, "direction", "dir"), r.get("distribution"),
             r.get("operStatus")] for r in entities]
    return Table("Link Routes", heads, rows)


_VHOST_COLUMNS = ["hostname", "maxConnections", "maxMessageSize", "maxConnectionsPerUser",
                  "maxConnectionsPerHost", "allowUnknownUser"]


def vhosts(entities: List[Entity]) -> Table:
    rows = [[v.get(c) for c in _VHOST_COLUMNS] + [len(v.get("groups") or {})] for v in entities]
    return Table("Vhosts", [*_VHOST_COLUMNS, "groups"], rows)


def _group_settings() -> List[str]:
    # The settings a user group may carry are the schema's vhostUserGroupSettings attributes.
    attrs = entity_type("vhostUserGroupSettings").attributes
    return [a for a in attrs if a not in ("name", "identity", "type")]


def vhostgroups(entities: List[Entity]) -> Table:
    settings = _group_settings()
    rows = []
    for vhost in entities:
        groups = vhost.get("groups") or {}
        for group in sorted(groups):
            values = groups[group] if isinstance(groups[group], dict) else {}
            rows.append([vhost.get("hostname"), group, *[values.get(s) for s in settings]])
    return Table("Vhost Groups", ["vhost", "group", *settings], rows)


def memory(entities: List[Entity]) -> Table:
    heads = ["type", "size", "batch", "thread-max", "total", "in-threads", "rebal-in", "rebal-out"]
    rows = [[a.get("typeName"), a.get("typeSize"), a.get("transferBatchSize"), a.get("localFreeListMax"),
             a.get("totalAllocFromHeap"), a.get("heldByThreads"), a.get("batchesRebalancedToThreads"),
             a.get("batchesRebalancedToGlobal")] for a in entities]
    return Table("Types", heads, rows)


@dataclass(frozen=True)
class View:
    option: str
    entity_type: str
    build: Callable[[List[Entity]], Table]
    help: str


VIEWS: Dict[str, View] = {
    v.option: v
    for v in (
        View("general", "router", general, "router general information and statistics"),
        View("connections", "connection", connections,
             "connections to the router, then (text output) its connectors' state"),
        View("edges", "connection", edges, "connections from edge routers (an interior router's edges)"),
        View("connectors", "connector", connectors,
             "connectors: the connection each keeps up, its state and last error"),
        View("links", "router.link", links, "links attached to the router"),
        View("addresses", "router.address", addresses, "addresses known to the router"),
        View("nodes", "router.node", nodes, "routers in the network"),
        View("autolinks", "router.config.autoLink", autolinks, "configured auto-links"),
        View("linkroutes", "router.config.linkRoute", linkroutes, "configured link routes"),
        View("vhosts", "vhost", vhosts, "policy vhosts"),
        View("vhostgroups", "vhost", vhostgroups, "user groups of the policy vhosts"),
        View("memory", "allocator", memory, "memory allocator (pool) statistics"),
    )
}
