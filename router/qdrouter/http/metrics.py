"""The router's Prometheus metrics, read from the rows the management agent answers with
(management/operational.py through ``agent.rows``): nothing is counted twice, and /metrics
agrees with qdstat at the same instant."""

from __future__ import annotations

import gc
import os
import platform
import resource
from typing import Any, Dict, List, Tuple

from ..amqp.bindings import proton_shim
from ..schema import entity_type
from ..tools.qdstat_views import address_parts
from .exposition import Family, render

# Address key classes that are per-address series: mobile addresses (the application's);
# topological and local ones (routers, temporary reply-to addresses) would only add cardinality.
_MOBILE = "mobile"
_ADDRESS_DIRECTIONS = (
    ("ingress", "deliveriesIngress"),
    ("egress", "deliveriesEgress"),
    ("transit", "deliveriesTransit"),
    ("to_container", "deliveriesToContainer"),
    ("from_container", "deliveriesFromContainer"),
)
_OUTCOMES = (
    ("accepted", "acceptedDeliveries"),
    ("rejected", "rejectedDeliveries"),
    ("released", "releasedDeliveries"),
    ("modified", "modifiedDeliveries"),
)
DEFAULT_MAX_ADDRESSES = 100
# Which interpreter runs the router ("PyPy 3.9.16", "CPython 3.11.7"): the two images differ
# in it, and throughput with it (bench/README.md).
_PYTHON = f"{platform.python_implementation()} {platform.python_version()}"
# Whether the data path runs on the compiled proton shim or its slower Python fallback.
_PROTON_SHIM = "compiled" if proton_shim.COMPILED else "fallback"


def _rows(router: Any, short_name: str) -> List[Dict[str, Any]]:
    return list(router.agent.rows(entity_type(short_name)))


def metrics_text(router: Any, max_addresses: int = DEFAULT_MAX_ADDRESSES) -> str:
    """The whole /metrics page; ``max_addresses`` bounds the per-address series (the busiest
    addresses are kept; negative means no bound)."""
    rid = router.id
    base = {"router": rid}
    families: List[Family] = []
    info = _rows(router, "router")[0]

    def family(name: str, kind: str, help_text: str) -> Family:
        made = Family(name, kind, help_text)
        families.append(made)
        return made

    family("qdmesh_router_info", "gauge",
           "Constant 1, labelled with the router's mode, version, Python interpreter and "
           "proton shim (compiled or fallback).").add(
        {**base, "mode": str(info.get("mode")), "version": str(info.get("version")), "python": _PYTHON,
         "proton_shim": _PROTON_SHIM}, 1)
    # Objects Python's cyclic collector tracks (containers: dicts, lists, instances): what
    # bench/soak.py watches for Python-side leaks next to the process's resident size.
    family("qdmesh_python_gc_objects", "gauge",
           "Objects tracked by Python's garbage collector (a leak shows as steady growth).").add(
        base, len(gc.get_objects()))
    _connections(router, base, family)
    links = _links(router, base, family)
    family("qdmesh_addresses", "gauge", "Addresses known to the router (all classes).").add(
        base, int(info.get("addrCount") or 0))
    outcomes = family("qdmesh_deliveries_settled_total", "counter",
                      "Deliveries the router sent to consumers and saw settled, by outcome.")
    for outcome, attribute in _OUTCOMES:
        outcomes.add({**base, "outcome": outcome}, int(info.get(attribute) or 0))
    family("qdmesh_presettled_deliveries_total", "counter",
           "Pre-settled deliveries the router sent to consumers.").add(
        base, int(info.get("presettledDeliveries") or 0))
    family("qdmesh_dropped_presettled_deliveries_total", "counter",
           "Pre-settled deliveries dropped (no consumer, or no credit).").add(
        base, int(info.get("droppedPresettledDeliveries") or 0))
    directions = family("qdmesh_deliveries_total", "counter",
                        "Deliveries entering the router from its clients (ingress) and leaving to them "
                        "(egress).")
    directions.add({**base, "direction": "ingress"}, int(info.get("deliveriesIngress") or 0))
    directions.add({**base, "direction": "egress"}, int(info.get("deliveriesEgress") or 0))
    # A family of its own, not more directions of the one above: these deliveries are also
    # in its ingress/egress, and a sum over its directions must not count them twice.
    containers = family("qdmesh_route_container_deliveries_total", "counter",
                        "qdstat -g's Deliveries from / to Route Container: deliveries received from "
                        "(ingress) and sent to (egress) route-container connections (brokers).")
    containers.add({**base, "direction": "ingress"}, int(info.get("deliveriesIngressRouteContainer") or 0))
    containers.add({**base, "direction": "egress"}, int(info.get("deliveriesEgressRouteContainer") or 0))
    family("qdmesh_internal_errors_total", "counter",
           "Failures inside the router that it contained and survived (router internalErrorCount): "
           "each closed one connection with amqp:internal-error, or ended one timer run, HTTP request "
           "or loop step that named no connection.").add(base, int(info.get("internalErrorCount") or 0))
    family("qdmesh_unsettled_deliveries", "gauge", "Deliveries on the router's links not yet settled.").add(
        base, sum(int(link.get("unsettledCount") or 0) for link in links))
    family("qdmesh_undelivered_deliveries", "gauge",
           "Deliveries waiting in the router for a consumer or for credit.").add(
        base, sum(int(link.get("undeliveredCount") or 0) for link in links))
    _addresses(router, base, family, max_addresses)
    _configured_states(router, base, family)
    _routing(router, base, family, info)
    _neighbour_round_trips(router, base, family)
    _process(router, base, family, info)
    return render(families)


def _connections(router: Any, base: Dict[str, str], family: Any) -> None:
    by_role: Dict[str, int] = {"normal": 0, "inter-router": 0, "route-container": 0}
    for row in _rows(router, "connection"):
        role = str(row.get("role") or "normal")
        by_role[role] = by_role.get(role, 0) + 1
    connections = family("qdmesh_connections", "gauge",
                         "Open AMQP connections, by listener or connector role.")
    for role, count in sorted(by_role.items()):
        connections.add({**base, "role": role}, count)


def _links(router: Any, base: Dict[str, str], family: Any) -> List[Dict[str, Any]]:
    rows = _rows(router, "router.link")
    counts = {"in": 0, "out": 0}
    for row in rows:
        counts[str(row.get("linkDir"))] = counts.get(str(row.get("linkDir")), 0) + 1
    links = family("qdmesh_links", "gauge",
                   "Attached links, by direction (in: from a sender to the router; out: to a receiver).")
    for direction, count in sorted(counts.items()):
        links.add({**base, "direction": direction}, count)
    return rows


def _addresses(router: Any, base: Dict[str, str], family: Any, max_addresses: int) -> None:
    chosen: List[Tuple[int, str, str, Dict[str, Any]]] = []
    for row in _rows(router, "router.address"):
        cls, address, phase = address_parts(str(row.get("key") or row.get("name") or ""), True)
        if cls != _MOBILE or row.get("inProcess"):
            continue  # the management agent's own address is not application traffic
        traffic = sum(int(row.get(attribute) or 0) for _, attribute in _ADDRESS_DIRECTIONS)
        chosen.append((traffic, address, phase, row))
    chosen.sort(key=lambda item: (-item[0], item[1], item[2]))
    omitted = 0
    if 0 <= max_addresses < len(chosen):
        omitted = len(chosen) - max_addresses
        chosen = chosen[:max_addresses]
    chosen.sort(key=lambda item: (item[1], item[2]))
    deliveries = family("qdmesh_address_deliveries_total", "counter",
                        "Deliveries of one mobile address through the router, by direction.")
    consumers = family("qdmesh_address_consumers", "gauge",
                       "Consumers of one mobile address: local links, and other routers with consumers.")
    for _, address, phase, row in chosen:
        labels = {**base, "address": address, "phase": phase}
        for direction, attribute in _ADDRESS_DIRECTIONS:
            deliveries.add({**labels, "direction": direction}, int(row.get(attribute) or 0))
        consumers.add({**labels, "where": "local"}, int(row.get("subscriberCount") or 0))
        consumers.add({**labels, "where": "remote"}, int(row.get("remoteCount") or 0))
    family("qdmesh_address_series_omitted", "gauge",
           "Mobile addresses left out of the per-address series by the listener's metricsMaxAddresses.").add(
        base, omitted)


def _configured_states(router: Any, base: Dict[str, str], family: Any) -> None:
    for short_name, metric, help_text in (
        ("router.config.autoLink", "qdmesh_autolinks", "Configured auto-links, by operational status."),
        ("router.config.linkRoute", "qdmesh_link_routes", "Configured link routes, by operational status."),
    ):
        states: Dict[str, int] = {}
        for row in _rows(router, short_name):
            status = str(row.get("operStatus") or "inactive")
            states[status] = states.get(status, 0) + 1
        made = family(metric, "gauge", help_text)
        for status, count in sorted(states.items()):
            made.add({**base, "status": status}, count)


def _routing(router: Any, base: Dict[str, str], family: Any, info: Dict[str, Any]) -> None:
    family("qdmesh_known_routers", "gauge",
           "Other routers this router has a route to (router.node entities).").add(
        base, int(info.get("nodeCount") or 0))
    mesh = router.mesh
    neighbors = len(mesh.engine.neighbors()) if mesh is not None else 0
    family("qdmesh_neighbor_routers", "gauge", "Routers connected to this one by an inter-router link.").add(
        base, neighbors)
    counters = mesh.engine.counters if mesh is not None else None
    family("qdmesh_topology_changes_total", "counter",
           "Times this router's routing table changed (routers or paths came or went).").add(
        base, int(getattr(counters, "route_changes", 0)))
    received = family("qdmesh_routing_messages_received_total", "counter",
                      "Routing-protocol messages received, by opcode (HELLO, RA, LSU, LSR, MAU, MAR).")
    for opcode, count in sorted((counters.received if counters is not None else {}).items()):
        received.add({**base, "opcode": str(opcode)}, int(count))


def _neighbour_round_trips(router: Any, base: Dict[str, str], family: Any) -> None:
    """Round trips to each current neighbour (router canaryIntervalSeconds; canary/): one
    series set per neighbour, so as many as the router has inter-router connections."""
    canary = getattr(router, "canary", None)
    peers = canary.peer_stats() if canary is not None else {}
    trips = family("qdmesh_neighbor_round_trip_seconds", "histogram",
                   "Round trips of management requests to neighbouring routers (canaryIntervalSeconds).")
    failures = family("qdmesh_neighbor_probe_failures_total", "counter",
                      "Round-trip probes to a neighbouring router that got no answer in time.")
    for peer, stats in sorted(peers.items()):
        labels = {**base, "peer": peer}
        trips.add_histogram(labels, stats.cumulative_buckets(), round(stats.total, 6), stats.count)
        failures.add(labels, stats.failures_total)


def _process(router: Any, base: Dict[str, str], family: Any, info: Dict[str, Any]) -> None:
    family("qdmesh_process_resident_memory_bytes", "gauge", "Resident memory of the router process.").add(
        base, int(info.get("memoryUsage") or 0))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    family("qdmesh_process_cpu_seconds_total", "counter", "CPU time used by the router process.").add(
        base, round(usage.ru_utime + usage.ru_stime, 6))
    family("qdmesh_process_start_time_seconds", "gauge", "When the router started, in Unix time.").add(
        base, round(float(router.started), 3))
    try:
        open_fds = len(os.listdir(f"/proc/{os.getpid()}/fd"))
    except OSError:
        open_fds = 0
    family("qdmesh_process_open_fds", "gauge", "File descriptors open in the router process.").add(
        base, open_fds)
