"""Polling a mesh through one router's management: the router and its router.node table name
every router; each is then read through its `_topo/0/<id>/$management` address.

The console is its own process, so the poller runs in a thread of its own; only that thread
uses the management clients, and the pages read the last finished snapshot under a lock."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from typing import Any, Dict

from ..tools.errors import ManagementError
from ..tools.management_client import ManagementClient
from ..tools.qdstat_views import VIEWS
from .snapshot import CONSOLE_CONTAINER_PREFIX, QUERIED_VIEWS, Counters, RouterData, build_snapshot

log = logging.getLogger("qdmesh.console")


class MeshCollector:
    def __init__(self, url: str, interval: float = 2.0, timeout: float = 3.0) -> None:
        self.url = url
        self.interval = interval
        self.timeout = timeout
        self._clients: Dict[str, ManagementClient] = {}
        self._counters: Counters | None = None
        self._lock = threading.Lock()
        self._view: Dict[str, Any] = {"entry": None, "routers": [], "error": "starting", "updated": None}
        self._details: Dict[str, Any] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ---- what the pages read -------------------------------------------------------------
    def mesh_view(self) -> Dict[str, Any]:
        with self._lock:
            return {**self._view, "interval": self.interval}

    def router_view(self, router_id: str) -> Dict[str, Any] | None:
        with self._lock:
            detail = self._details.get(router_id)
            if detail is None:
                return None
            return {**detail, "updated": self._view.get("updated"), "interval": self.interval}

    # ---- polling -------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="mesh-poller", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.timeout * 3 + self.interval)
        for client in self._clients.values():
            client.close()
        self._clients.clear()

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.poll_once()
            except Exception:  # the console keeps showing the last state rather than dying
                log.exception("polling the mesh failed")
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - started)))

    def poll_once(self) -> None:
        entry = self._client(None)
        try:
            general = entry.query(VIEWS["general"].entity_type)
            nodes = entry.query(VIEWS["nodes"].entity_type)
        except ManagementError as error:
            self._drop(None)
            with self._lock:
                self._view = {**self._view, "error": f"cannot read the mesh through {self.url}: {error}",
                              "updated": time.time()}
            return
        entry_id = str(general[0].get("id")) if general else "?"
        routers = {entry_id: self._read(entry_id, None)}
        for node in nodes:
            router_id = str(node.get("id") or node.get("routerId"))
            if router_id != entry_id:  # the entry router lists itself, as qdrouterd's does
                routers[router_id] = self._read(router_id, router_id)
        for gone in [key for key in self._clients if key and key not in routers]:
            self._drop(gone)
        view, details, self._counters = build_snapshot(entry_id, routers, self._counters, time.time())
        view["error"] = None
        with self._lock:
            self._view = view
            self._details = details

    def _read(self, router_id: str, via: str | None) -> RouterData:
        """One router's rows; ``via`` None reads the entry router itself."""
        data = RouterData(router_id)
        client = self._client(via)
        try:
            for name in QUERIED_VIEWS:
                data.rows[name] = client.query(VIEWS[name].entity_type)
        except ManagementError as error:
            data.rows = {}
            data.error = str(error)
            self._drop(via)
        return data

    def _client(self, router_id: str | None) -> ManagementClient:
        key = router_id or ""
        client = self._clients.get(key)
        if client is None:
            client = ManagementClient(self.url, timeout=self.timeout, router=router_id,
                                      container_id=f"{CONSOLE_CONTAINER_PREFIX}{uuid.uuid4().hex[:8]}")
            self._clients[key] = client
        return client

    def _drop(self, router_id: str | None) -> None:
        client = self._clients.pop(router_id or "", None)
        if client is not None:
            client.close()
