"""A mesh of qdmesh routers and a C router (qdrouterd 1.19): C -- Q -- Q2, the C router
connecting to Q. The C router's mobile-address updates (MAU, composed in C with symbol keys,
application property `opcode` included) reach Q2 through Q, which once died re-encoding them
(MessageException: Application property key is not string type). Every router learns the
others, and unsettled messages cross between the C router and the qdmesh routers both ways."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, List, Set, Tuple

import pytest

from qdrouter.tools.management_client import ManagementClient
from tests.interop.conftest import CRouterFactory
from tests.interop.cpeer import CRouter, section
from tests.mesh.meshproc import NODE_TYPE, MeshRouter, Timers
from tests.router.amqpclient import Client, Net, msg, send_and_settle
from tests.router.fixtures import stop_checked

Mesh = Tuple[CRouter, MeshRouter, MeshRouter]


@pytest.fixture
def mixed_mesh(tmp_path: Path, c_router: CRouterFactory) -> Iterator[Mesh]:
    timers = Timers()
    for name in ("Q", "Q2"):
        (tmp_path / name).mkdir()
    q = MeshRouter(tmp_path / "Q", "Q", timers)
    q2 = MeshRouter(tmp_path / "Q2", "Q2", timers)
    from_c = q.listen_for("C", 1)
    q2.connectors["Q"] = ("127.0.0.1", q.listen_for("Q2", 1), 1)
    started: List[MeshRouter] = []
    try:
        for router in (q, q2):
            router.write_config()
            started.append(router)
            router.start()
        c = c_router("C", sections=section("connector", {"host": "127.0.0.1", "port": from_c,
                                                         "role": "inter-router", "cost": 1}))
        yield c, q, q2
    finally:
        stop_checked(started)


def node_ids(url: str) -> Set[str]:
    with ManagementClient(url[len("amqp://"):], timeout=5) as client:
        return {str(row["id"]) for row in client.query(NODE_TYPE)}


def knows_consumer(url: str, address: str) -> bool:
    """Whether the router at ``url`` has a destination for mobile ``address`` (its own
    consumer, or one another router announced by MAU)."""
    with ManagementClient(url[len("amqp://"):], timeout=5) as client:
        rows = client.query("org.apache.qpid.dispatch.router.address", ["key", "subscriberCount",
                                                                         "remoteCount"])
    return any(row["key"] == f"M0{address}" and (row["subscriberCount"] or row["remoteCount"])
               for row in rows)


def cross(net: Net, producer: Client, producer_url: str, consumer: Client, address: str, body: str) -> None:
    """One unsettled message from ``producer`` to ``consumer`` on ``address``, accepted, once
    the producer's router has learned of the consumer."""
    receiver = consumer.receiver(address)
    net.wait(lambda: knows_consumer(producer_url, address), 30, f"{address}'s consumer known across the mesh")
    sender = producer.sender(address)
    net.wait(lambda: sender.credit > 0, 30, f"credit for {address} (its consumer known across the mesh)")
    # Not released: qdrouterd releases (fanout 0) what it has credited for an address whose
    # router it has no path to yet, so qdmesh sends a neighbour its mobile addresses only once
    # the neighbour's link state lists it (protocol/control_routes.py, routes_back_through).
    [outcome] = send_and_settle(net, sender, [msg(body)], 15)
    assert outcome.name == "accepted", address
    net.wait(lambda: len(receiver.received) == 1, 10, f"the message on {address}")
    assert receiver.bodies() == [body]


def test_c_router_and_qdmesh_routers_learn_each_other_and_route_both_ways(mixed_mesh: Mesh, net: Net) -> None:
    c, q, q2 = mixed_mesh
    # Each router lists itself too, qdmesh's as the C router's.
    net.wait(lambda: node_ids(q.url) == node_ids(c.url) == node_ids(q2.url) == {"C", "Q", "Q2"}, 30,
             "C, Q and Q2 to learn each other (router.node)")
    on_c, on_q = net.connect(c.url), net.connect(q.url)
    on_q2 = net.connect(q2.url)
    # C's consumers announced by C's MAU (symbol keys) to Q, and flooded on through Q to Q2.
    crossings = [(on_c, c.url, on_q, "closest/c-to-q"), (on_q, q.url, on_c, "closest/q-to-c"),
                 (on_q2, q2.url, on_c, "closest/q2-to-c"), (on_c, c.url, on_q2, "closest/c-to-q2")]
    for n, (producer, producer_url, consumer, address) in enumerate(crossings):
        cross(net, producer, producer_url, consumer, address, f"message {n}")
    assert q.is_running() and q2.is_running() and c.is_running(), c.log()
    assert "Traceback" not in q.stderr_text()
