"""Deliveries to and from route-container connections (brokers), for the router entity's
and router.address's deliveriesIngressRouteContainer / deliveriesEgressRouteContainer.

Counted at query time from the links' own counters (nothing is added on the data path):
the live links of route-container connections, plus what such links had passed when they
went (detach, connection close), so the numbers never go down."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Tuple

from ..amqp.links.link_routing import ROUTE_CONTAINER
from ..core.address_table import Address

# (ingress, egress): received from route containers, sent to them.
Pair = Tuple[int, int]


def route_container_totals(router: Any) -> Pair:
    """The router's totals: on the links of those connections, the router's own (auto-links,
    links a container attached) and link-routed ones."""
    endpoints = router.server.endpoints
    ingress = endpoints.closed_route_container_ingress
    egress = endpoints.closed_route_container_egress
    for link in list(router.server.adaptor.links.values()):
        if link.connection.settings.role == ROUTE_CONTAINER:
            if link.incoming:
                ingress += link.counters.delivered
            else:
                egress += link.counters.delivered
    link_router = endpoints.link_router
    if link_router is not None:
        ingress += link_router.closed_route_container_ingress
        egress += link_router.closed_route_container_egress
        for routed in list(link_router.routed.values()):
            if routed.connection.settings.role == ROUTE_CONTAINER:
                if routed.incoming:
                    ingress += routed.delivered
                else:
                    egress += routed.delivered
    return ingress, egress


def by_address(router: Any, addresses: Iterable[Address] | None = None) -> Dict[Address, Pair]:
    """Per address of the table: the live route-container links bound to it (an auto-link's
    address, the address a broker's own link attached to), plus the ones gone, which the
    address keeps in its counters. An anonymous link from a broker has no address of its
    own, so its deliveries count in the router's totals only. ``addresses``: only those
    (a page of router.address), not the whole table."""
    counts: Dict[Address, List[int]] = {}
    for link in list(router.server.adaptor.links.values()):
        address = link.address
        if address is None or link.connection.settings.role != ROUTE_CONTAINER:
            continue
        pair = counts.setdefault(address, [0, 0])
        pair[0 if link.incoming else 1] += link.counters.delivered
    result: Dict[Address, Pair] = {}
    for address in router.table if addresses is None else addresses:
        live = counts.get(address, [0, 0])
        result[address] = (address.counters.route_container_ingress + live[0],
                           address.counters.route_container_egress + live[1])
    return result


def by_link_route_key(router: Any) -> Dict[str, Pair]:
    """Per link-route key (qdstat -a's link-in / link-out rows): the link-routed links on
    route-container connections that followed that route, live and gone."""
    link_router = router.server.endpoints.link_router
    if link_router is None:
        return {}
    counts: Dict[str, List[int]] = {key: list(pair) for key, pair
                                    in link_router.closed_route_container_by_key.items()}
    for routed in list(link_router.routed.values()):
        if routed.key is None or routed.connection.settings.role != ROUTE_CONTAINER:
            continue
        pair = counts.setdefault(routed.key, [0, 0])
        pair[0 if routed.incoming else 1] += routed.delivered
    return {key: (pair[0], pair[1]) for key, pair in counts.items()}
