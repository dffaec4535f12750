"""Scaling the shared mesh 3 -> 5 -> 3 through the RouterMesh's scale subresource
(``kubectl scale routermesh``): after each step the mesh is Ready and converged, every router
sees all the others, messages cross it, and during the scale-down, with unsettled traffic
balanced over a receiver on a router that stays and one on a router that goes, every message
gets an outcome (accepted, or released/modified) and every accepted one was received."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any, Dict, List

from tests.router.amqpclient import Net, msg

from .kube import eventually
from .mesh_fixtures import MESH, MeshState, Timing, mesh_whole
from .product import kubectl_binary, port_forwards, read_resource, router_pods, run
from .traffic import cross_mesh, link_routes, router_ids_known

BIG = 5


def kubectl_scale(mesh: MeshState, kubeconfig: Path, replicas: int) -> None:
    out = run([kubectl_binary(), "--kubeconfig", str(kubeconfig), "-n", mesh.namespace, "scale",
               f"routermesh/{MESH}", f"--replicas={replicas}"], timeout=60)
    assert "scaled" in out, out


def wait_whole(mesh: MeshState, k8s: Any, size: int, since: float, what: str) -> float:
    history: List[str] = []
    took = eventually(lambda: mesh_whole(k8s, mesh.namespace, size, history, since), 300, what, interval=1.0,
                      describe=lambda: "\n".join(history))
    print(f"{what}:\n" + "\n".join(history))
    return took


def every_router_sees_exactly_the_others(urls: Dict[str, str]) -> bool:
    return all(set(router_ids_known(url)) == set(urls) - {router} for router, url in urls.items())


def test_scale_up_to_five(mesh: MeshState, k8s: Any, e2e_kubeconfig: Path, timing: Timing) -> None:
    mesh.require_ready()
    before = router_pods(k8s, mesh.namespace, MESH)
    started = time.monotonic()
    kubectl_scale(mesh, e2e_kubeconfig, BIG)
    assert read_resource(k8s, mesh.namespace, "routermeshes", MESH)["spec"]["size"] == BIG
    took = wait_whole(mesh, k8s, BIG, started, f"RouterMesh scaled 3 -> {BIG}: Ready and converged")
    timing(f"mesh scaled 3 -> {BIG} -> Ready and converged", took)
    mesh.size = BIG
    mesh.pods = router_pods(k8s, mesh.namespace, MESH)
    assert sorted(mesh.pods) == mesh.routers
    assert {r: mesh.pods[r] for r in before} == before, "scaling up restarted or replaced a running router"
    with port_forwards(e2e_kubeconfig, mesh.namespace, mesh.routers) as urls:
        eventually(lambda: every_router_sees_exactly_the_others(urls), 60, "every router sees the 4 others",
                   describe=lambda: "\n".join(f"{r}: {router_ids_known(u)}" for r, u in urls.items()))
        cross_mesh(urls, "mesh-0", "mesh-4", 20)
        cross_mesh(urls, "mesh-3", "mesh-1", 20)
        for router in ("mesh-3", "mesh-4"):
            assert "qdmesh/linkRoute/orders-in" in link_routes(urls[router]), f"{router} lacks the LinkRoute"


def test_scale_down_to_three_with_traffic(mesh: MeshState, k8s: Any, core: Any, e2e_kubeconfig: Path,
                                          timing: Timing) -> None:
    mesh.require_ready()
    assert mesh.size == BIG, "the mesh was not scaled up (see test_scale_up_to_five)"
    staying, going = "mesh-2", "mesh-4"
    address = f"e2e/scale-{uuid.uuid4().hex[:8]}"
    with port_forwards(e2e_kubeconfig, mesh.namespace, ["mesh-0", staying, going]) as urls:
        net = Net()
        receivers: Dict[str, Any] = {}
        try:
            for router in (staying, going):
                receivers[router] = net.connect(f"amqp://{urls[router]}").receiver(address, credit=50)
            sender = net.connect(f"amqp://{urls['mesh-0']}").sender(address)
            sent: Dict[str, str] = {}   # delivery tag -> body
            started = time.monotonic()
            scaled_at = None
            batch = 0
            # Unsettled messages in batches, balanced over both receivers, from before the scale
            # down until both removed routers' pods are gone.
            while True:
                assert time.monotonic() - started < 240, "mesh-3 and mesh-4 still there after 240 s"
                for i in range(5):
                    body = f"b{batch}-{i}"
                    sent[sender.send(msg(body))] = body
                net.pump(0.2)
                if batch == 10:
                    kubectl_scale(mesh, e2e_kubeconfig, 3)
                    scaled_at = time.monotonic()
                elif scaled_at is not None and batch % 5 == 0 and \
                        not {"mesh-3", "mesh-4"} & set(router_pods(k8s, mesh.namespace, MESH)):
                    break
                batch += 1
            gone_at = time.monotonic()
            for i in range(20):  # and some more once they are gone: all to the router that stays
                body = f"after-{i}"
                sent[sender.send(msg(body))] = body
            net.wait(lambda: len(sender.outcomes) == len(sent), 60,
                     f"an outcome for each of {len(sent)} messages (have {len(sender.outcomes)})")
        finally:
            received = {r: [str(m.message.body) for m in link.received] for r, link in receivers.items()}
            net.close()
    counts = sender.outcome_counts()
    print(f"scale-down traffic: {len(sent)} messages, outcomes {counts}, received at {staying}: "
          f"{len(received[staying])}, at {going}: {len(received[going])}")
    assert set(counts) <= {"accepted", "released", "modified"}, counts
    assert sum(counts.values()) == len(sent)
    got = set(received[staying]) | set(received[going])
    accepted = [sent[tag] for tag, o in sender.outcomes.items() if o.name == "accepted"]
    assert not [b for b in accepted if b not in got], "messages accepted but received by no one"
    assert received[going], f"no message reached the receiver on {going} before it went"
    assert all(o.name == "accepted" for t, o in sender.outcomes.items() if sent[t].startswith("after-")), \
        "messages sent after the scale-down were not all accepted"
    assert set(received[staying]) >= {b for b in sent.values() if b.startswith("after-")}
    assert scaled_at is not None
    timing("mesh scaled 5 -> 3: removed router pods gone (traffic flowing)", gone_at - scaled_at)

    wait_whole(mesh, k8s, 3, scaled_at, "RouterMesh scaled 5 -> 3: Ready and converged")
    timing("mesh scaled 5 -> 3 -> Ready and converged", time.monotonic() - scaled_at)
    mesh.size = 3
    remaining = router_pods(k8s, mesh.namespace, MESH)
    assert sorted(remaining) == mesh.routers
    assert remaining == {r: mesh.pods[r] for r in mesh.routers}, "scaling down restarted or replaced a router"
    mesh.pods = remaining
    with port_forwards(e2e_kubeconfig, mesh.namespace, mesh.routers) as urls:
        eventually(lambda: every_router_sees_exactly_the_others(urls), 180,
                   "every router sees exactly the 2 others (mesh-3 and mesh-4 forgotten)",
                   describe=lambda: "\n".join(f"{r}: {router_ids_known(u)}" for r, u in urls.items()))
        timing("mesh scaled 5 -> 3 -> removed routers gone from every routing table",
               time.monotonic() - scaled_at)
        cross_mesh(urls, "mesh-0", "mesh-2", 20)
        cross_mesh(urls, "mesh-2", "mesh-1", 20)
