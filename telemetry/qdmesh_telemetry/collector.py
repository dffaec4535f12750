"""The collector: every router of a mesh queried through AMQP management at a fixed interval.

Each router has a poller thread of its own, so a router that times out or refuses delays
nobody else; its failure is logged and the next tick tries again with a fresh connection.
Rows are buffered and written in batches (one file per partition per flush) so that Spark is
not fed a file per router per second.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Set

from qdrouter.tools.errors import NotFound
from qdrouter.tools.management_client import ManagementClient

from .entities import ENTITY_TYPES, full_type
from .snapshot_store import SnapshotRow, SnapshotWriter

log = logging.getLogger("qdmesh_telemetry.collect")

ClientFactory = Callable[[str, Optional[str]], ManagementClient]
"""(url, router id to reach through ``url`` or None for the router at ``url``) -> client."""


@dataclass(frozen=True)
class Target:
    """How to reach one router: directly at ``url``, or through it (``via_id`` set)."""

    url: str
    via_id: str | None = None

    @property
    def label(self) -> str:
        return f"{self.via_id} via {self.url}" if self.via_id else self.url


@dataclass
class CollectorOptions:
    mesh: str
    output: Path
    interval: float = 10.0
    flush_interval: float = 60.0
    timeout: float = 5.0
    discover: bool = False
    entity_types: tuple = ENTITY_TYPES


class RouterPoller:
    """Snapshots one router each tick; remembers which entity types its agent lacks."""

    def __init__(self, target: Target, options: CollectorOptions, make_client: ClientFactory,
                 sink: Callable[[List[SnapshotRow]], None]) -> None:
        self.target = target
        self.options = options
        self.make_client = make_client
        self.sink = sink
        self.client: ManagementClient | None = None
        self.router_id: str | None = target.via_id
        self.missing_types: Set[str] = set()
        self.failing = False
        self.failures = 0
        self.snapshots = 0
        self.node_ids: List[str] = []  # routers this one's router.node listed last time

    def poll(self) -> bool:
        """Take one snapshot; False (after logging) when the router could not be read."""
        try:
            rows = self._snapshot()
        except Exception as e:  # ManagementError, or anything proton throws: never the thread's end
            self.failures += 1
            self._drop_client()
            if not self.failing:
                log.warning("router %s: snapshot failed, retrying every tick: %s", self.target.label, e)
            else:
                log.debug("router %s: snapshot failed again: %s", self.target.label, e)
            self.failing = True
            return False
        if self.failing:
            log.info("router %s: snapshots resumed", self.target.label)
        self.failing = False
        self.snapshots += 1
        self.sink(rows)
        return True

    def _snapshot(self) -> List[SnapshotRow]:
        if self.client is None:
            self.client = self.make_client(self.target.url, self.target.via_id)
        ts = time.time()
        found: Dict[str, List[Dict[str, object]]] = {}
        for entity in self.options.entity_types:
            found[entity] = self._query(self.client, entity)
        routers = found.get("router") or []
        if routers and routers[0].get("id"):
            self.router_id = str(routers[0]["id"])
        router = self.router_id or self.target.url
        self.node_ids = [str(n.get("id") or n.get("identity")) for n in found.get("router.node") or []]
        return [SnapshotRow(self.options.mesh, router, entity, ts, attributes)
                for entity, rows in found.items() for attributes in rows]

    def _query(self, client: ManagementClient, entity: str) -> List[Dict[str, object]]:
        try:
            return client.query(full_type(entity))
        except NotFound as e:
            # An agent without this type (vhostStats before policy exists, say): no rows.
            if entity not in self.missing_types:
                self.missing_types.add(entity)
                log.info("router %s has no %s entities (%s); recorded as empty", self.target.label, entity, e)
            return []

    def _drop_client(self) -> None:
        client, self.client = self.client, None
        if client is not None:
            client.close()

    def close(self) -> None:
        self._drop_client()


def default_client(timeout: float) -> ClientFactory:
    def make(url: str, via_id: str | None) -> ManagementClient:
        return ManagementClient(url, timeout=timeout, router=via_id)
    return make


class Collector:
    """Polls every router of one mesh until ``stop()``; see ``collect_mesh`` for the usual entry."""

    def __init__(self, addresses: List[str], options: CollectorOptions,
                 make_client: ClientFactory | None = None) -> None:
        if not addresses:
            raise ValueError("addresses: at least one router address is needed")
        if options.interval <= 0:
            raise ValueError(f"interval: must be positive, got {options.interval}")
        self.addresses = list(addresses)
        self.options = options
        self.make_client = make_client or default_client(options.timeout)
        self.writer = SnapshotWriter(options.output, prefix=options.mesh)
        self.pollers: Dict[Target, RouterPoller] = {}
        self.threads: List[threading.Thread] = []
        self._buffer: List[SnapshotRow] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.files: List[Path] = []
        for url in self.addresses:
            self._add(Target(url))

    # -- rows ---------------------------------------------------------------------------------
    def _sink(self, rows: List[SnapshotRow]) -> None:
        with self._lock:
            self._buffer.extend(rows)

    def flush(self) -> List[Path]:
        with self._lock:
            rows, self._buffer = self._buffer, []
        written = self.writer.write(rows)
        self.files.extend(written)
        return written

    # -- routers ------------------------------------------------------------------------------
    def _add(self, target: Target) -> RouterPoller:
        poller = RouterPoller(target, self.options, self.make_client, self._sink)
        self.pollers[target] = poller
        if self.threads:  # already running: a router found by discovery starts at once
            self._start_thread(poller)
        return poller

    def discover(self) -> None:
        """Add a poller, reached through its seed, for every router a seed's router.node lists
        (from the seed's last snapshot: the seed's own connection belongs to its thread)."""
        known = {p.router_id for p in self.pollers.values() if p.router_id}
        for url in self.addresses:
            seed = self.pollers.get(Target(url))
            if seed is None or seed.failing:
                continue
            for rid in list(seed.node_ids):
                if rid and rid != "None" and rid not in known:
                    log.info("router %s found through %s", rid, url)
                    known.add(rid)
                    self._add(Target(url, rid))

    def poll_round(self) -> int:
        """Snapshot every router once, one after the other, in the caller's thread (for scripts
        and tests that interleave collection with other work; not with ``run``). Returns how
        many routers answered."""
        answered = sum(1 for poller in list(self.pollers.values()) if poller.poll())
        if self.options.discover:
            before = len(self.pollers)
            self.discover()
            answered += sum(1 for poller in list(self.pollers.values())[before:] if poller.poll())
        return answered

    def close(self) -> None:
        """Flush and close the connections of a collector used through ``poll_round``."""
        self.flush()
        for poller in self.pollers.values():
            poller.close()

    # -- running ------------------------------------------------------------------------------
    def _start_thread(self, poller: RouterPoller) -> None:
        thread = threading.Thread(target=self._run_poller, args=(poller,), daemon=True,
                                  name=f"poll {poller.target.label}")
        self.threads.append(thread)
        thread.start()

    def _run_poller(self, poller: RouterPoller) -> None:
        interval = self.options.interval
        next_tick = time.monotonic()
        try:
            while not self._stop.is_set():
                poller.poll()
                next_tick += interval
                # A tick missed (slow router) is skipped, not made up in a burst.
                while next_tick < time.monotonic():
                    next_tick += interval
                self._stop.wait(max(0.0, next_tick - time.monotonic()))
        finally:
            poller.close()

    def run(self, rounds: int | None = None, duration: float | None = None) -> None:
        """Poll until ``stop()``, ``rounds`` intervals or ``duration`` seconds, then flush."""
        started = time.monotonic()
        for poller in list(self.pollers.values()):
            self._start_thread(poller)
        next_flush = started + self.options.flush_interval
        end = started + duration if duration is not None else None
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                if self.options.discover:
                    self.discover()
                if now >= next_flush:
                    self.flush()
                    next_flush = now + self.options.flush_interval
                if end is not None and now >= end:
                    break
                if rounds is not None and all(p.snapshots + p.failures >= rounds
                                              for p in list(self.pollers.values())):
                    break
                wait = min(self.options.interval, next_flush - now)
                if end is not None:
                    wait = min(wait, end - now)
                if rounds is not None:
                    wait = min(wait, 0.05)
                self._stop.wait(max(0.05, wait))
        finally:
            self.stop()

    def request_stop(self) -> None:
        """Ask ``run`` to finish (safe from a signal handler)."""
        self._stop.set()

    def stop(self) -> None:
        self._stop.set()
        for thread in list(self.threads):
            thread.join(self.options.timeout * 2 + 5)
        self.flush()


def collect_mesh(mesh: str, addresses: List[str], output: Path, *, interval: float = 10.0,
                 rounds: int | None = None, duration: float | None = None,
                 discover: bool = False, timeout: float = 5.0, flush_interval: float = 60.0) -> Collector:
    """Collect snapshots of a mesh's routers (``addresses``: ``host:port`` of each, or with
    ``discover`` of one or more seeds whose router.node lists the rest) into ``output``.
    Runs until ``rounds``/``duration`` (or forever); returns the finished collector."""
    options = CollectorOptions(mesh=mesh, output=Path(output), interval=interval, timeout=timeout,
                               flush_interval=flush_interval, discover=discover)
    collector = Collector(addresses, options)
    collector.run(rounds=rounds, duration=duration)
    return collector


def routermesh_addresses(name: str, namespace: str, size: int, port: int = 5672) -> List[str]:
    """The management address of each router of RouterMesh ``name`` (the Kubernetes contract:
    pod ``name-i`` behind headless Service ``name-routers``, port 5672)."""
    if size < 1:
        raise ValueError(f"size: a RouterMesh has at least one router, got {size}")
    return [f"{name}-{i}.{name}-routers.{namespace}.svc:{port}" for i in range(size)]
