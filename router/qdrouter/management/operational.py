"""Live state as management entities: connections, links, addresses, the router itself.

Each function returns attribute maps with the schema's attribute names, computed on
request from the router's own structures (nothing is copied on the data path)."""

from __future__ import annotations

import os
import socket
import time
from typing import Any, Dict, List, Tuple

from .. import __version__
from ..amqp.bindings.proton_ffi import c_string, ffi, lib
from ..amqp.data_path.waiting_producers import WaitingProducers
from ..core.address_table import Address, address_key
from ..core.links import CoreLink
from ..schema import entity_type
from . import route_container
from .connection_ops import peer_properties

PREFIX = "org.apache.qpid.dispatch."
Row = Dict[str, Any]


# Every row: QUERY without offset or count. A window makes only the rows asked for (a page of
# a router with 100,000 addresses or links answers in milliseconds, where making every row
# took a second).
ALL = slice(None)


def connection_rows(router: Any, window: slice = ALL) -> List[Row]:
    return [connection_row(connection) for connection in list(router.server.by_fd.values())[window]]


def connection_row(connection: Any) -> Row:
    """One connection's entity row."""
    now = time.time()
    settings = connection.settings
    sasl = lib.pn_sasl(connection.transport)
    mechanism = c_string(lib.pn_sasl_get_mech(sasl)) if sasl else None
    user = connection.user or c_string(lib.pn_transport_get_user(connection.transport))
    tls = _tls_state(connection)
    return {
        "identity": str(connection.identity),
        "name": f"connection/{connection.peer}",
        "type": PREFIX + "connection",
        "adminStatus": "enabled",
        "operStatus": "up",
        "protocol": "amqp",
        "container": connection.remote_container,
        "opened": bool(lib.pn_connection_state(connection.pn_connection) & lib.PN_LOCAL_ACTIVE),
        "host": connection.peer,
        "dir": "out" if connection.client else "in",  # out: opened by one of our connectors
        "role": settings.role,
        "isAuthenticated": bool(lib.pn_transport_is_authenticated(connection.transport)),
        "isEncrypted": bool(lib.pn_transport_is_encrypted(connection.transport)),
        "sasl": mechanism,
        "user": user,
        **tls,
        "sslProfileOrdinal": connection.tls_ordinal if tls["ssl"] else None,
        "tenant": None,
        "uptimeSeconds": int(now - connection.opened_at),
        "properties": peer_properties(connection.pn_connection),
        "lastDlvSeconds": None,
        "outputBlocked": connection.out_blocked,
        "outputQueuedBytes": connection.out_queued,
        "outputBlockedCount": connection.out_blocked_count,
        "inputHeld": connection.input_held > 0,
        "inputHeldCount": connection.input_held_count,
    }


def _tls_state(connection: Any) -> Row:
    if connection.settings.ssl_domain is None or not lib.pn_transport_is_encrypted(connection.transport):
        return {"ssl": False, "sslProto": None, "sslCipher": None, "sslSsf": None}
    ssl = lib.pn_ssl(connection.transport)
    buffer = ffi.new("char[]", 64)
    proto = ffi.string(buffer).decode() if lib.pn_ssl_get_protocol_name(ssl, buffer, 64) else None
    cipher = ffi.string(buffer).decode() if lib.pn_ssl_get_cipher_name(ssl, buffer, 64) else None
    # proton's cffi binding lacks pn_ssl_get_ssf: the strength factor is not reported.
    return {"ssl": True, "sslProto": proto, "sslCipher": cipher, "sslSsf": None}


def link_rows(router: Any, window: slice = ALL) -> List[Row]:
    adaptor = router.server.adaptor
    links: List[Any] = list(adaptor.links.values())
    link_router = router.server.endpoints.link_router
    if link_router is not None:
        links.extend(link_router.routed.values())
    return [_link_row(link, router.id, adaptor.waiting) if isinstance(link, CoreLink)
            else _routed_link_row(link) for link in links[window]]


def _routed_link_row(routed: Any) -> Row:
    """A link-routed link: the router passes it through, so most counters are the
    endpoints' business; deliveries and unsettled ones are what passes here."""
    pn_link = routed.pn_link
    name = c_string(lib.pn_link_name(pn_link)) or ""
    terminus = lib.pn_link_target(pn_link) if routed.route_in else lib.pn_link_source(pn_link)
    address = c_string(lib.pn_terminus_get_address(terminus)) or ""
    return {
        "identity": f"r{routed.identity}",
        "name": name,
        "type": PREFIX + "router.link",
        "adminStatus": "enabled",
        "operStatus": "up",
        "linkName": name,
        "linkType": "endpoint",
        "linkDir": "in" if routed.incoming else "out",
        # qdstat shows the class link-in / link-out for these keys.
        "owningAddr": ("C" if routed.route_in else "D") + address,
        "capacity": None,
        "peer": f"r{routed.peer.identity}" if routed.peer is not None else None,
        "undeliveredCount": 0,
        "unsettledCount": len(routed.deliveries),
        "deliveryCount": routed.delivered,
        "creditAvailable": lib.pn_link_credit(pn_link),
        "connectionId": getattr(routed.connection, "identity", None),
    }


def _link_row(link: CoreLink, router_id: str, waiting: WaitingProducers) -> Row:
    counters = link.counters
    address = link.address_key
    # The key its address has in router.address (a dynamic reply-to is local there too).
    owner = address_key(address, "" if link.address is not None and link.address.handler is not None
                        else router_id) if address else None
    undelivered = len(link.backlog)
    if not link.incoming and link.address is not None:
        # Its address's queue, and messages left unread in producers' links meanwhile.
        undelivered += len(link.address.undelivered) + waiting.queued(link.address)
    return {
        "identity": str(link.identity),
        "name": link.name,
        "type": PREFIX + "router.link",
        "adminStatus": "enabled",
        "operStatus": "up",
        "linkName": link.name,
        "linkType": link.kind,  # endpoint, router-control or inter-router (qdrouterd's names)
        "linkDir": "in" if link.incoming else "out",
        "owningAddr": owner,
        "capacity": link.capacity,
        "peer": None,
        "undeliveredCount": undelivered,
        "unsettledCount": len(link.unsettled) + waiting.unread_unsettled(link),
        "deliveryCount": counters.delivered,
        "presettledCount": counters.presettled,
        "droppedPresettledCount": counters.dropped_presettled,
        "acceptedCount": counters.accepted,
        "rejectedCount": counters.rejected,
        "releasedCount": counters.released,
        "modifiedCount": counters.modified,
        "deliveriesDelayed1Sec": 0,
        "deliveriesDelayed10Sec": 0,
        "deliveriesStuck": 0,
        "creditAvailable": max(0, link.credit - link.owed_credit) if link.incoming else max(0, link.credit),
        "zeroCreditSeconds": 0,
        "settleRate": 0,
        "priority": 0,
        "connectionId": getattr(link.connection, "identity", None),
    }


def address_rows(router: Any, window: slice = ALL) -> List[Row]:
    kept, folded, tail = _address_entries(router)
    chosen: List[Any] = [*kept, *tail][window]
    addresses = [entry for entry in chosen if isinstance(entry, Address)]
    addresses += [other for local in addresses for other in folded.get(local, ())]
    counts = route_container.by_address(router, addresses)
    rows = []
    for entry in chosen:
        if not isinstance(entry, Address):
            rows.append(entry)  # a protocol or link-route row, made already
            continue
        row = _address_row(entry, router.id, counts[entry])
        for other in folded.get(entry, ()):
            extra = _address_row(other, router.id, counts[other])
            for counter in _FOLDED_COUNTERS:
                row[counter] += extra[counter]
        rows.append(row)
    return rows


def address_count(router: Any) -> int:
    """len(address_rows(router)) without making the rows (qdstat -g's Addresses)."""
    kept, _, tail = _address_entries(router)
    return len(kept) + len(tail)


def _address_entries(router: Any) -> Tuple[List[Address], Dict[Address, List[Address]], List[Row]]:
    """What router.address lists, in order, before any row is made: the table's addresses,
    then the protocol's and link routes' rows (few, made here). Nothing is made per address:
    with 100,000 of them, a key or a tuple each cost the query seconds (and a full garbage
    collection).

    The agent answers at `_topo/0/<this router>/$management` too. qdrouterd resolves such
    an address to the local one (L$management) and has no row of its own for it: its
    deliveries count in the local row here as well (``folded``: by the local address). Only
    in-process addresses keep such a key (address_key makes the others' local)."""
    table = router.table
    addresses = list(table)
    own = "_topo/0/" + router.id + "/"
    folded: Dict[Address, List[Address]] = {}
    for address in addresses:
        if address.handler is None or not address.key.startswith(own):
            continue
        rest = address.key[len(own):]
        local = _local_address(table, rest, own)
        if local is not None:
            folded.setdefault(local, []).append(address)
    if folded:
        gone = {id(other) for others in folded.values() for other in others}
        addresses = [address for address in addresses if id(address) not in gone]
    return addresses, folded, protocol_address_rows(router) + link_route_address_rows(router)


def _local_address(table: Any, rest: str, own: str) -> Address | None:
    """The address whose router.address key is L<rest>, if the table has one."""
    local = table.find("_local/" + rest)
    if local is not None:
        return local
    topological = table.find(own + rest)
    return topological if topological is not None and topological.handler is None else None


_FOLDED_COUNTERS = ("deliveriesIngress", "deliveriesEgress", "deliveriesTransit", "deliveriesToContainer",
                    "deliveriesFromContainer")
# An interior router's routing-protocol addresses, as qdrouterd lists them (key, distribution).
_PROTOCOL_ADDRESSES = (("Lqdhello", "flood"), ("Lqdrouter", "flood"), ("Tqdrouter", "flood"),
                       ("Lqdrouter.ma", "multicast"), ("Tqdrouter.ma", "multicast"))


def protocol_address_rows(router: Any) -> List[Row]:
    """An interior router's protocol addresses, whose in-process endpoint is the routing
    protocol (to-proc: control messages it received, from-proc: those it sent), and one
    `router` row (R<id>) per other router it has a route to."""
    mesh = router.mesh
    if mesh is None:
        return []
    counts = mesh.control_counts
    others = sorted(mesh.routes.table)
    rows = []
    for key, distribution in _PROTOCOL_ADDRESSES:
        remote = len(others) if key.startswith("T") else 0
        rows.append(_protocol_row(key, distribution, 1, remote, counts))
    rows.extend(_protocol_row("R" + other, "closest", 0, 1, counts) for other in others)
    return rows


def _protocol_row(key: str, distribution: str, in_process: int, remote: int, counts: Any) -> Row:
    row = _address_row(Address(key, distribution), "", (0, 0))
    to_proc, from_proc = counts.to_proc[key], counts.from_proc[key]
    row.update({"identity": key, "name": key, "key": key, "inProcess": in_process, "remoteCount": remote,
                "deliveriesToContainer": to_proc, "deliveriesFromContainer": from_proc})
    return row


def link_route_address_rows(router: Any) -> List[Row]:
    """Link-route destinations, as qdrouterd lists them (qdstat -a class link-in/link-out):
    one row per key (C/D prefix, E/F pattern), with the destinations connected here
    (containerCount) and the routers of the mesh that advertise one (remoteCount)."""
    table = getattr(router, "link_routes", None)
    if table is None:
        return []
    local: Dict[str, int] = {}
    for route in table.routes:
        connected = route.has_destination and router.route_container(route) is not None
        local[route.advert_key] = local.get(route.advert_key, 0) + (1 if connected else 0)
    remote = {route.advert_key: routers for route, routers in table.remote}
    from_containers = route_container.by_link_route_key(router)
    rows = []
    for key in sorted(set(local) | set(remote)):
        row = _address_row(Address(key, "linkBalanced"), router.id, from_containers.get(key, (0, 0)))
        row.update({"identity": key, "name": key, "key": key, "containerCount": local.get(key, 0),
                    "remoteCount": len(remote.get(key, ())),
                    "remoteHostRouters": sorted(remote.get(key, ()))})
        rows.append(row)
    return rows


def _address_row(address: Address, router_id: str, route_containers: route_container.Pair) -> Row:
    # The agent's own addresses keep their class, so each key stays unique.
    key = address_key(address.key, "" if address.handler is not None else router_id)
    counters = address.counters
    return {
        "identity": key,
        "name": key,
        "key": key,
        "type": PREFIX + "router.address",
        "distribution": address.distribution,
        "inProcess": 1 if address.handler is not None else 0,
        "subscriberCount": len(address.consumers),
        "remoteCount": len(address.remote),
        "containerCount": 0,
        "deliveriesIngress": counters.deliveries_ingress,
        "deliveriesEgress": counters.deliveries_egress,
        "deliveriesTransit": counters.deliveries_transit,
        "deliveriesToContainer": counters.deliveries_to_container,
        "deliveriesFromContainer": counters.deliveries_from_container,
        # Received from / sent to route-container connections (brokers) on this address.
        "deliveriesIngressRouteContainer": route_containers[0],
        "deliveriesEgressRouteContainer": route_containers[1],
        "deliveriesRedirectedToFallback": 0,
        "remoteHostRouters": [],
        "transitOutstanding": None,
        "trackedDeliveries": sum(len(link.unsettled) for link in address.consumers),
        "priority": -1,
    }


def router_row(router: Any, configured: Row) -> Row:
    links = list(router.server.adaptor.links.values())
    totals = {"presettled": 0, "dropped_presettled": 0, "accepted": 0, "rejected": 0, "released": 0,
              "modified": 0}
    for link in links:
        if link.incoming:
            # Pre-settled deliveries without a route are dropped (and counted) on arrival.
            totals["dropped_presettled"] += link.counters.dropped_presettled
            continue
        for key in totals:
            totals[key] += getattr(link.counters, key)
    closed = router.server.endpoints.closed_link_counters  # links gone: totals never go down
    for key in totals:
        totals[key] += getattr(closed, key)
    # Addresses come and go (a reply-to, a queue nobody uses any more): the dropped ones'
    # deliveries still count.
    retired = router.table.retired
    ingress, egress, transit = (retired.deliveries_ingress, retired.deliveries_egress,
                                retired.deliveries_transit)
    for address in router.table:
        ingress += address.counters.deliveries_ingress
        egress += address.counters.deliveries_egress
        transit += address.counters.deliveries_transit
    from_container, to_container = route_container.route_container_totals(router)
    outbound = router.server.adaptor.outbound
    row = dict(configured)
    row.update({
        "id": router.id,
        "mode": router.mode,
        "area": "0",
        "version": __version__,
        "hostName": socket.gethostname(),
        "addrCount": address_count(router),  # the rows router.address lists
        "linkCount": len(links),
        "blockedLinkCount": 0,
        # qdrouterd's core agent answers under this name (its qdstat -g reads it), not the schema's.
        "linksBlocked": 0,
        "nodeCount": len(router.mesh.routes.table) if router.mesh is not None else 0,
        "linkRouteCount": len(router.store.of_type(entity_type("router.config.linkRoute"))),
        "autoLinkCount": len(router.store.of_type(entity_type("router.config.autoLink"))),
        "connectionCount": len(router.server.by_fd),
        "presettledDeliveries": totals["presettled"],
        "droppedPresettledDeliveries": totals["dropped_presettled"],
        "acceptedDeliveries": totals["accepted"],
        "rejectedDeliveries": totals["rejected"],
        "releasedDeliveries": totals["released"],
        "modifiedDeliveries": totals["modified"],
        "deliveriesDelayed1Sec": 0,
        "deliveriesDelayed10Sec": 0,
        "deliveriesStuck": 0,
        "deliveriesIngress": ingress,
        "deliveriesEgress": egress,
        "deliveriesTransit": transit,
        "deliveriesIngressRouteContainer": from_container,
        "deliveriesEgressRouteContainer": to_container,
        "deliveriesRedirectedToFallback": 0,
        "uptimeSeconds": int(time.time() - router.started),
        "memoryUsage": _resident_bytes(),
        # qdmesh's own: the output bound's blocked connections and the producers held for them.
        "outputBlockedCount": outbound.blocked_count,
        "outputBlockedConnectionCount": outbound.blocked_now,
        "inputHeldConnectionCount": sum(1 for c in router.server.by_fd.values() if c.input_held),
        # qdmesh's own: failures the fault boundary contained (amqp/loop/fault_boundary.py).
        "internalErrorCount": router.server.faults.count,
        # qdmesh's own: a graceful drain under way (qdrouter/drain.py).
        "draining": router.drain.draining,
    })
    return row


def _resident_bytes() -> int | None:
    try:
        with open(f"/proc/{os.getpid()}/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None
