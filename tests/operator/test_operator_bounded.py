"""What the operator keeps per mesh, per router and per config text is bounded by what exists:
a mesh that goes takes its state with it, and the caches have a ceiling."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from typing import Any, List

import pytest

from qdmesh_operator.apply.management import ClientPool
from qdmesh_operator.drift import DriftSchedule
from qdmesh_operator.keyed import KeyedLocks
from qdmesh_operator.kube import KubeApi
from qdmesh_operator.reconcile import MeshReconciler
from qdmesh_operator.render.checked import AcceptedTexts
from qdmesh_operator.status.unchanged import changes, unchanged_statuses
from qdrouter.tools.management_client import ManagementClient
from tests.kube.controlplane import ControlPlane
from tests.operator.kube_operator import Cluster, api_namespace, eventually


def test_a_mesh_lock_lives_only_while_used_and_excludes() -> None:
    locks: KeyedLocks = KeyedLocks()
    inside: List[int] = []
    overlap = []

    def work() -> None:
        with locks.hold(("ns", "m")):
            inside.append(1)
            overlap.append(len(inside))
            time.sleep(0.01)
            inside.pop()

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert max(overlap) == 1  # one holder at a time
    assert len(locks) == 0  # nothing kept once nobody holds or waits


def test_accepted_texts_keep_at_most_their_capacity() -> None:
    texts = AcceptedTexts(capacity=3)
    for i in range(10):
        texts.add(f"router {{ id: r{i} }}", "r.conf")
    assert len(texts) == 3
    assert texts.known("router { id: r9 }", "r.conf")
    assert not texts.known("router { id: r0 }", "r.conf")  # the oldest went first
    assert not texts.known("router { id: r9 }", "other.conf")  # named per file


def test_a_status_the_api_server_holds_is_not_written_again() -> None:
    stored = {"observedGeneration": 2, "conditions": [{"type": "Ready", "status": "True"}], "extra": 1}
    assert not changes(stored, {"observedGeneration": 2, "conditions": [{"type": "Ready", "status": "True"}]})
    assert changes(stored, {"observedGeneration": 3})
    assert changes(stored, {"extra": None})  # merge patch: None removes a key
    assert not changes(stored, {"missing": None})
    assert changes(stored, {"nested": {"a": 1}})
    key = ("linkroutes", "a")
    assert unchanged_statuses({key: {"observedGeneration": 2}}, [(key, {"status": stored})]) == {key}
    assert unchanged_statuses({key: {"observedGeneration": 2}}, []) == set()


def test_the_drift_task_of_a_mesh_found_gone_ends() -> None:
    checks: List[str] = []

    async def check(namespace: str, name: str) -> bool:
        checks.append(name)
        return name != "gone"

    async def scenario() -> List[Any]:
        schedule = DriftSchedule(0.01, check)
        schedule.watch("ns", "gone")
        schedule.watch("ns", "here")
        await asyncio.sleep(0.2)
        watched = schedule.watched()
        await schedule.stop()
        return watched

    assert asyncio.run(scenario()) == [("ns", "here")]
    assert checks.count("gone") == 1


def test_a_pool_closes_the_clients_of_routers_no_longer_reached() -> None:
    made: List[ManagementClient] = []

    def factory(url: str) -> ManagementClient:
        made.append(ManagementClient(url, timeout=1.0))
        return made[-1]

    pool = ClientPool(factory)
    for port in (1, 2, 3):
        pool.get(f"amqp://127.0.0.1:{port}")
    assert pool.retain(["amqp://127.0.0.1:2"]) == 2
    assert len(pool) == 1
    assert pool.get("amqp://127.0.0.1:2") is made[1]  # the one kept is reused
    pool.close()
    assert len(pool) == 0


@pytest.mark.timeout(400)
def test_a_deleted_mesh_leaves_nothing_in_the_reconciler(crds: ControlPlane) -> None:
    api, namespace = api_namespace(crds, "bounded")
    kube = Cluster(crds, namespace)
    reconciler = MeshReconciler(KubeApi(api), urls=lambda mesh, ready: {})
    names = [f"m{uuid.uuid4().hex[:4]}{i}" for i in range(3)]
    for name in names:
        kube.create("routermeshes", "RouterMesh", name, {"size": 1, "image": "qdmesh/router:0.1.0"})
        assert reconciler.reconcile(namespace, name).mesh_found
    assert reconciler.kept()["reports"] == 3
    for name in names:
        kube.delete("routermeshes", name)
        assert not reconciler.reconcile(namespace, name).mesh_found
    assert reconciler.kept() == {"reports": 0, "pools": 0, "credentials": 0, "locks": 0}


@pytest.mark.timeout(400)
def test_statuses_already_held_are_reported_unchanged(crds: ControlPlane) -> None:
    api, namespace = api_namespace(crds, "unchanged")
    kube = Cluster(crds, namespace)
    kube_api = KubeApi(api)
    reconciler = MeshReconciler(kube_api, urls=lambda mesh, ready: {})
    kube.create("routermeshes", "RouterMesh", "m", {"size": 1, "image": "qdmesh/router:0.1.0"})
    kube.create("linkroutes", "LinkRoute", "lr", {"meshRef": "m", "prefix": "a.", "containerId": "c"})

    def write(report: Any) -> None:
        for (plural, name), status in report.statuses.items():
            if (plural, name) not in report.unchanged:
                kube_api.patch_status(plural, namespace, name, status)

    first = reconciler.reconcile(namespace, "m")
    assert not first.unchanged and first.statuses  # nothing written yet
    write(first)

    def settled() -> bool:
        # The StatefulSet and its pods appear meanwhile (the controllers run): the statuses
        # change a few times, then a drift check finds nothing to write.
        report = reconciler.reconcile(namespace, "m", "drift")
        write(report)
        return report.unchanged == set(report.statuses)

    eventually(settled, 120, "a drift check with every status already held")


def _rss_kib() -> int:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_an_open_management_connection_costs_kilobytes_not_megabytes(router_factory: Any) -> None:
    """The operator holds one per ready router: 30 of them, each having answered, add well
    under 256 KiB each to the resident set (proton's default SSL contexts alone would be
    1.6 MiB each)."""
    router = router_factory()
    warm = ManagementClient(router.url, timeout=10.0)
    warm.query("org.apache.qpid.dispatch.router")
    clients = []
    try:
        before = _rss_kib()
        for _ in range(30):
            clients.append(ManagementClient(router.url, timeout=10.0))
            clients[-1].query("org.apache.qpid.dispatch.router.config.linkRoute")
        grown = _rss_kib() - before
    finally:
        for client in [warm, *clients]:
            client.close()
    assert grown < 30 * 256, f"{grown} KiB for 30 connections"


def test_a_long_lived_management_connection_keeps_nothing_per_request(router_factory: Any) -> None:
    """The operator keeps one connection per router for as long as the router lives: 300
    requests on it leave no request's delivery behind."""
    import tracemalloc

    router = router_factory()
    client = ManagementClient(router.url, timeout=10.0)
    try:
        for _ in range(20):
            client.query("org.apache.qpid.dispatch.router")
        tracemalloc.start(5)
        try:
            before = tracemalloc.take_snapshot()
            for _ in range(300):
                client.query("org.apache.qpid.dispatch.router")
            after = tracemalloc.take_snapshot()
        finally:
            tracemalloc.stop()
    finally:
        client.close()
    proton_only = [tracemalloc.Filter(True, "*proton*", all_frames=True)]
    grown = sum(s.size_diff for s in after.filter_traces(proton_only).compare_to(
        before.filter_traces(proton_only), "filename"))
    assert grown < 16 * 1024, f"{grown} bytes of proton objects kept after 300 requests"
