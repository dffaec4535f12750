"""Bringing running routers to the desired entities through AMQP management.

Each router is read (QUERY of every type the operator changes), planned against and changed
with CREATE/UPDATE/DELETE, every reply's status checked; a failed operation is reported with
the router's own description and does not stop the others.  Routers are handled in parallel,
one connection each, with the router package's own ManagementClient.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, Sequence, Tuple

from qdrouter.tools.errors import ManagementConnectionError, ManagementError
from qdrouter.tools.management_client import ManagementClient

from ..desired.state import MeshState
from ..model.entities import LIVE_TYPES, LONG_TYPE, Entity
from ..tls.credentials import TlsFiles
from .plan import CREATE, DELETE, UPDATE, Op, plan

ROUTER_TYPE = "org.apache.qpid.dispatch.router"
NODE_TYPE = "org.apache.qpid.dispatch.router.node"
CONNECTION_TYPE = "org.apache.qpid.dispatch.connection"
ClientFactory = Callable[[str], ManagementClient]


def default_client(url: str) -> ManagementClient:
    return ManagementClient(url, timeout=3.0)


def tls_client(url: str, tls: TlsFiles, verify_name: bool = True) -> ManagementClient:
    """Mutual TLS with the mesh's certificate, authenticated by it (SASL EXTERNAL), the router's
    host name checked against its certificate (``verify_name``) or only its CA."""
    kind = ManagementClient if verify_name else _CaVerifiedClient
    return kind(url, timeout=3.0, sasl_mechanisms="EXTERNAL", ssl_certificate=tls.certificate,
                ssl_key=tls.key, ssl_trustfile=tls.trust)


class _CaVerifiedClient(ManagementClient):
    """A client that accepts a router whose certificate the mesh's CA signed, whatever names it
    holds: edge routers are reached at their pod's IP address (Deployment and DaemonSet pods
    have no DNS name), which no certificate issued before the pod existed can name.  The CA is
    the mesh's own and signs nothing but its routers' certificates."""

    def _ssl_domain(self) -> Any:
        domain = super()._ssl_domain()
        trustfile = self._ssl[2]
        if domain is not None and trustfile:
            from proton import SSLDomain

            domain.set_peer_authentication(SSLDomain.VERIFY_PEER, trustfile)
        return domain


class ClientPool:
    """One open management connection per router, kept between reconciliations (opening one
    costs ~0.3 s of TLS set-up inside proton's Container even for plain AMQP).  A connection
    that fails is closed and replaced on next use.  Callers use a router from one thread at
    a time (the reconciler holds a lock per mesh)."""

    def __init__(self, factory: ClientFactory = default_client) -> None:
        self.factory = factory
        self._clients: Dict[str, Tuple[ManagementClient, str]] = {}
        self._lock = threading.Lock()

    def get(self, url: str, tls: TlsFiles | None = None, verify_name: bool = True) -> ManagementClient:
        """The router's client; one made with other (older) certificate files is replaced."""
        version = (tls.version if tls is not None else "") + ("" if verify_name else "+ca-only")
        stale = None
        with self._lock:
            found = self._clients.get(url)
            if found is not None and found[1] != version:
                stale, found = found[0], None
            if found is None:
                client = self.factory(url) if tls is None else tls_client(url, tls, verify_name)
                found = self._clients[url] = (client, version)
        if stale is not None:
            stale.close()
        return found[0]

    def discard(self, url: str) -> None:
        with self._lock:
            found = self._clients.pop(url, None)
        if found is not None:
            found[0].close()

    def retain(self, urls: Iterable[str]) -> int:
        """Close the clients of every router not in ``urls`` (one that left the mesh, an edge
        router's pod replaced under a new address); returns how many were closed."""
        keep = set(urls)
        with self._lock:
            gone = [url for url in self._clients if url not in keep]
            stale = [self._clients.pop(url)[0] for url in gone]
        for client in stale:
            client.close()
        return len(stale)

    def __len__(self) -> int:
        with self._lock:
            return len(self._clients)

    def close(self) -> None:
        with self._lock:
            clients, self._clients = [c for c, _ in self._clients.values()], {}
        for client in clients:
            client.close()


@dataclass
class OpResult:
    op: Op
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class RouterOutcome:
    """What happened on one router: reachable or not, each operation, and what it reports."""

    router_id: str
    url: str
    error: str | None = None
    results: List[OpResult] = field(default_factory=list)
    #: Live rows after the changes, by config type (``autoLink`` rows carry operStatus).
    live: Dict[str, List[Dict[str, Any]]] = field(default_factory=dict)
    #: The router's own row (nodeCount, connectionCount, addrCount...).
    router: Dict[str, Any] = field(default_factory=dict)
    #: Routers this one reaches over its own inter-router link (router.node rows with no next
    #: hop: qdrouterd's way of saying "a neighbour").
    direct_peers: List[str] = field(default_factory=list)
    #: Every router this one has a route to (its router.node rows but its own), neighbours or
    #: not, of its mesh or of a linked one.
    nodes: List[str] = field(default_factory=list)
    #: Edge routers: the interior router their open edge connection goes to ("" if none).
    uplink: str = ""
    #: What the router measured of each neighbour (``canaryIntervalSeconds``): the last round
    #: trip in seconds (None: none answered yet) and the probes failed in a row, by router id.
    neighbours: Dict[str, Tuple[float | None, int]] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def reachable(self) -> bool:
        return self.error is None

    @property
    def failures(self) -> List[OpResult]:
        return [r for r in self.results if not r.ok]

    @property
    def in_sync(self) -> bool:
        return self.reachable and not self.failures


def read_live(client: ManagementClient) -> Dict[str, List[Dict[str, Any]]]:
    return {t: client.query(LONG_TYPE[t]) for t in LIVE_TYPES}


def execute(client: ManagementClient, op: Op) -> OpResult:
    try:
        if op.action == CREATE:
            client.create(LONG_TYPE[op.type], op.attributes, name=op.name)
        elif op.action == UPDATE:
            client.update(LONG_TYPE[op.type], op.attributes, name=op.name)
        elif op.action == DELETE:
            client.delete(LONG_TYPE[op.type], name=op.name)
        else:
            raise ValueError(f"unknown action {op.action}")
    except ManagementConnectionError:
        raise  # the router is gone or silent: the whole router is retried, not this one op
    except ManagementError as e:
        code = f" ({e.status_code})" if e.status_code else ""
        return OpResult(op, f"{op.action} {op.type} {op.name!r} refused{code}: {e}")
    return OpResult(op)


def sync_router(router_id: str, url: str, *, desired: Sequence[Entity], keep: Sequence[str] = (),
                pool: ClientPool | None = None, dry_run: bool = False, attempts: int = 2,
                tls: TlsFiles | None = None, edge: bool = False) -> RouterOutcome:
    """Read, plan and apply on one router; never raises for router-side problems.  A lost or
    silent connection is retried once on a fresh one: the plan is made again from what the
    router then reports, so an operation is never applied twice."""
    outcome = RouterOutcome(router_id, url)
    start = time.monotonic()
    own_pool = pool is None
    clients = pool or ClientPool()
    try:
        for _attempt in range(attempts):
            outcome.error = None
            try:
                _sync_once(clients.get(url, tls, verify_name=not edge), outcome, desired=desired, keep=keep,
                           dry_run=dry_run, edge=edge)
                break
            except ManagementConnectionError as e:
                clients.discard(url)
                outcome.error = f"router {router_id} at {url}: {e}"
            except ManagementError as e:  # a malformed reply to a QUERY: no point retrying
                clients.discard(url)
                outcome.error = f"router {router_id} at {url}: {e}"
                break
    finally:
        if own_pool:
            clients.close()
        outcome.seconds = time.monotonic() - start
    return outcome


def _sync_once(client: ManagementClient, outcome: RouterOutcome, *, desired: Sequence[Entity],
               keep: Sequence[str], dry_run: bool, edge: bool = False) -> None:
    live = read_live(client)
    ops = plan(desired, live, keep)
    outcome.results = []
    for op in ops:
        result = OpResult(op) if dry_run else execute(client, op)
        outcome.results.append(result)
    touched = sorted({op.type for op in ops}) if not dry_run else []
    outcome.live = {**live, **{t: client.query(LONG_TYPE[t]) for t in touched}}
    rows = client.query(ROUTER_TYPE)
    outcome.router = rows[0] if rows else {}
    if edge:  # an edge router has no router.node rows: its uplink is an edge connection
        outcome.uplink = uplink_of(client.query(CONNECTION_TYPE))
        return
    rows = [n for n in client.query(NODE_TYPE) if n.get("id") and n.get("nextHop") != "(self)"]
    outcome.nodes = sorted(str(n.get("id")) for n in rows if str(n.get("id")) != outcome.router_id)
    nodes = [n for n in rows if not n.get("nextHop")]
    outcome.direct_peers = sorted(str(n.get("id")) for n in nodes)
    outcome.neighbours = {str(n["id"]): (_seconds(n.get("roundTripSeconds")),
                                         int(n.get("probeFailures") or 0))
                          for n in nodes if "roundTripSeconds" in n or "probeFailures" in n}


def _seconds(value: Any) -> float | None:
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def uplink_of(connections: Sequence[Mapping[str, Any]]) -> str:
    """The interior router an edge router's open outgoing edge connection reaches: the first
    label of the host it connected to (``M-1.M-routers.ns.svc:45672`` is ``M-1``), or the
    peer's container id when the host is an address."""
    for row in connections:
        if row.get("role") == "edge" and row.get("dir") == "out" and row.get("opened", True):
            host = str(row.get("host") or "").rsplit(":", 1)[0]
            if host and not host[0].isdigit() and not host.startswith("["):
                return host.split(".", 1)[0]
            return str(row.get("container") or host)
    return ""


def sync_mesh(state: MeshState, urls: Mapping[str, str], *, pool: ClientPool | None = None,
              dry_run: bool = False, tls: TlsFiles | None = None) -> Dict[str, RouterOutcome]:
    """Every router of ``state`` that has a URL in ``urls``, in parallel, with ``tls`` (the
    mesh's certificate) for amqps URLs.  Without a ``pool`` the connections last for this call
    only."""
    routers = [rid for rid in state.mesh.router_ids() if rid in urls]
    if not routers:
        return {}
    clients = pool or ClientPool()
    try:
        with ThreadPoolExecutor(max_workers=min(16, len(routers)),
                                thread_name_prefix="qdmesh-mgmt") as workers:
            futures = {rid: workers.submit(sync_router, rid, urls[rid], desired=state.live_entities(rid),
                                           keep=state.restart_only_names(rid), pool=clients, dry_run=dry_run,
                                           tls=tls if urls[rid].startswith("amqps:") else None)
                       for rid in routers}
            return {rid: f.result() for rid, f in futures.items()}
    finally:
        if pool is None:
            clients.close()
