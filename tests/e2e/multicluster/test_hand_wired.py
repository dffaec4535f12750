"""Two RouterMeshes in two clusters joined by hand: what a user can do without mesh linking.

RouterMesh "east" (2 routers) in one cluster, "west" (2 routers) in the other. A RouterMesh
cannot declare an inter-router listener or connector (spec.listeners take roles normal and
route-container and may not use the inter-router port 55672; spec.connectors take normal and
route-container), so the link is wired by hand: east's inter-router links run without TLS
(spec.interRouter.tls.mode Disabled: the routers' own inter-router listener on 55672 accepts
anyone), a NodePort Service made here exposes east-0's port 55672, and west-0 gets a connector
of role inter-router to that NodePort through AMQP management (the operator leaves alone the
entities it did not make; the connector lasts as long as west-0's process).

Router ids are ``<mesh>-<ordinal>``: the meshes need different names, or their routers would
take each other's ids.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from typing import Any, Callable, Dict, List

from kubernetes import client

from qdrouter.tools.management_client import ManagementClient

from ..kube import describe_namespace, eventually
from ..mesh_fixtures import mesh_whole
from ..product import create_resource, is_true, port_forwards, read_resource, status_summary
from ..traffic import cross_mesh, router_ids_known
from .conftest import Cluster, node_address
from .crossing import describe_times, multicast, round_trips

SIZE = 2
CONNECTOR_TYPE = "org.apache.qpid.dispatch.connector"
Timing = Callable[[str, float], None]


def mesh_spec() -> Dict[str, Any]:
    return {"size": SIZE, "interRouter": {"tls": {"mode": "Disabled"}},
            "addresses": [{"prefix": "mc", "distribution": "multicast"}]}


def routers(mesh: str) -> List[str]:
    return [f"{mesh}-{i}" for i in range(SIZE)]


def wait_whole(cluster: Cluster, namespace: str, mesh: str) -> None:
    eventually(lambda: mesh_whole(cluster.api, namespace, SIZE, name=mesh), 300,
               f"{cluster.name}: RouterMesh {mesh} Ready and MeshConverged", interval=1.0,
               describe=lambda: status_summary(read_resource(cluster.api, namespace, "routermeshes", mesh)) +
               "\n" + describe_namespace(cluster.core, namespace))


def expose_inter_router_port(cluster: Cluster, namespace: str, pod: str) -> int:
    """A NodePort Service to port 55672 of ``pod``; the node port Kubernetes chose."""
    service = client.V1Service(
        metadata=client.V1ObjectMeta(name=f"{pod}-inter-router-np"),
        spec=client.V1ServiceSpec(
            type="NodePort", selector={"statefulset.kubernetes.io/pod-name": pod},
            ports=[client.V1ServicePort(name="inter-router", port=55672, target_port=55672)]))
    made = cluster.core.create_namespaced_service(namespace, service)
    return int(made.spec.ports[0].node_port)


def add_inter_router_connector(url: str, host: str, port: int) -> None:
    with ManagementClient(url, timeout=30) as mgmt:
        mgmt.create(CONNECTOR_TYPE, {"role": "inter-router", "host": host, "port": str(port)}, name="to-east")


def test_two_meshes_joined_by_a_hand_wired_connector(
        east: Cluster, west: Cluster, east_namespace: str, west_namespace: str, timing: Timing) -> None:
    started = time.monotonic()
    create_resource(east.api, east_namespace, "routermeshes", "RouterMesh", "east", mesh_spec())
    create_resource(west.api, west_namespace, "routermeshes", "RouterMesh", "west", mesh_spec())
    wait_whole(east, east_namespace, "east")
    wait_whole(west, west_namespace, "west")
    timing("RouterMesh of 2 in each cluster -> both Ready and converged", time.monotonic() - started)

    node_port = expose_inter_router_port(east, east_namespace, "east-0")
    east_host = node_address(east)
    everyone = routers("east") + routers("west")
    with ExitStack() as stack:
        urls = {**stack.enter_context(port_forwards(east.kubeconfig, east_namespace, routers("east"))),
                **stack.enter_context(port_forwards(west.kubeconfig, west_namespace, routers("west")))}
        started = time.monotonic()
        add_inter_router_connector(urls["west-0"], east_host, node_port)

        def sees_everyone() -> bool:
            return all(router_ids_known(urls[r]) == sorted(set(everyone) - {r}) for r in everyone)

        eventually(sees_everyone, 120, "every router of both meshes in every router's router.node",
                   describe=lambda: "\n".join(f"{r}: {router_ids_known(urls[r])}" for r in everyone))
        timing("connector west-0 -> east NodePort added -> all 4 routers see each other",
               time.monotonic() - started)

        # Anycast both ways, each across both meshes' own links too (west-1 -> west-0 -> east-0 -> east-1).
        cross_mesh(urls, "west-1", "east-1", 20, timeout=60)
        cross_mesh(urls, "east-1", "west-1", 20, timeout=60)

        got = multicast(urls, "east-1", ["east-0", "west-0", "west-1"], 10)
        expected = [f"east-1 multicast #{i}" for i in range(10)]
        assert got == {sink: expected for sink in ("east-0", "west-0", "west-1")}

        # Both measured to a receiver at east-0: from west-0 the message crosses the link, from
        # east-1 one link inside the cluster; the port-forwards are in both paths alike.
        across = round_trips(urls, "west-0", "east-0", 20)
        within = round_trips(urls, "east-1", "east-0", 20)
        timing(f"20 round trips west-0 -> east-0 across the clusters ({describe_times(across)})", sum(across))
        timing(f"20 round trips east-1 -> east-0 within east ({describe_times(within)})", sum(within))

    # Each mesh stays Ready with its own routers, the other mesh's routers in router.node aside.
    for cluster, namespace, mesh in ((east, east_namespace, "east"), (west, west_namespace, "west")):
        obj = read_resource(cluster.api, namespace, "routermeshes", mesh)
        status = obj.get("status") or {}
        assert is_true(obj, "Ready") and status.get("readyRouters") == SIZE, status_summary(obj)
        assert sorted(r.get("name") for r in status.get("routerStatus") or []) == routers(mesh), status
        # Converged counts the mesh's own routers: the other mesh's, reached over the link, aside.
        wait_whole(cluster, namespace, mesh)
