"""Live TLS on an edge router's uplink (qdmesh): a staged CA rotation on an interior router and
an edge router joined by a mutual-TLS edge connection (SASL EXTERNAL, hostname verified), while
clients on both keep unsettled messages in flight across the uplink. Each step is an
sslProfile UPDATE through management; no router restarts, no message is lost, released or
modified (docs/security.md, "Rotating a CA").

The edge replaces its uplink make-before-break when its profile's oldestValidOrdinal rises:
the new connection opens, the edge's links move to it, the old one finishes what it carries
(its receiving links drained, its sending links routing nothing new) and only then closes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from qdrouter.tools.management_client import ManagementClient
from tests.edge.edgeproc import Routers
from tests.edge.helpers import edge_connections, wait_until
from tests.edge.tls_uplink import PROFILE, WINDOW, Traffic, edge_ordinals, install, leaf, tls_pair, update
from tests.router.amqpclient import ACCEPTED, Net
from tests.router.routerproc import Router
from tests.security.certs import CertAuthority

pytestmark = pytest.mark.qdmesh_only("sslProfile UPDATE is a qdmesh extension: qdrouterd 1.19 refuses it")


def replace_with_messages_held(traffic: Traffic, interior: Router, edge: Router, ordinal: int) -> None:
    """Both routers load their files again with ``ordinal`` as the oldest valid one, while
    the consumers hold their deliveries unsettled: the edge's new uplink takes over while the
    old one still carries unsettled deliveries both ways; they settle over it afterwards."""
    for receiver in traffic.receivers:
        receiver.settle_policy = None
    traffic.run_until(lambda: all(len(r.unsettled) >= WINDOW // 2 for r in traffic.receivers), 60,
                      "deliveries held unsettled on both sides of the uplink")
    old = edge_ordinals(edge)
    for router in (interior, edge):
        update(router, {"ordinal": ordinal, "oldestValidOrdinal": ordinal})
    # The replacement is open and the old connection, still carrying what is unsettled, stays.
    traffic.run_until(lambda: edge_ordinals(edge) == sorted([*old, ("out", ordinal)]), 60,
                      f"the uplink's replacement made with ordinal {ordinal} beside the old one")
    traffic.net.pump(0.5)
    assert edge_ordinals(edge) == sorted([*old, ("out", ordinal)])
    for receiver in traffic.receivers:
        receiver.settle_policy = ACCEPTED
        receiver.settle_unsettled(ACCEPTED)
    traffic.run_until(lambda: edge_ordinals(edge) == [("out", ordinal)]
                      and edge_ordinals(interior) == [("in", ordinal)],
                      60, f"the old uplink closed once its deliveries settled (ordinal {ordinal})")


def test_uplink_ca_rotation_loses_nothing(routers: Routers, net: Net, tmp_path: Path) -> None:
    old_ca = CertAuthority(tmp_path / "old-ca", "Old mesh CA")
    new_ca = CertAuthority(tmp_path / "new-ca", "New mesh CA")
    dirs = {name: tmp_path / f"tls-{name}" for name in ("I", "E")}
    for name, directory in dirs.items():
        install(directory, {**leaf(old_ca, name), "ca.pem": old_ca.cert.read_bytes()})
    interior, edge = tls_pair(routers, dirs)
    wait_until(lambda: edge_ordinals(interior) == [("in", 0)], 30, "the edge's TLS uplink")
    pids = {"I": interior.pid, "E": edge.pid}
    traffic = Traffic(net, interior, edge)
    traffic.run_until(lambda: min(traffic.each_received()) >= 50, 60, "traffic up and down the uplink")

    # 1. Both routers trust both CAs (no connection is replaced: oldestValidOrdinal stays 0).
    bundle = old_ca.cert.read_bytes() + new_ca.cert.read_bytes()
    for router, name in ((interior, "I"), (edge, "E")):
        install(dirs[name], {"ca.pem": bundle})
        assert update(router, {"ordinal": 1})["ordinal"] == 1
    # 2. Leaf certificates from the new CA: the edge remakes its uplink with them.
    for name in ("I", "E"):
        install(dirs[name], leaf(new_ca, name))
    replace_with_messages_held(traffic, interior, edge, 2)
    # 3. The old CA is no longer trusted.
    for name in ("I", "E"):
        install(dirs[name], {"ca.pem": new_ca.cert.read_bytes()})
    replace_with_messages_held(traffic, interior, edge, 3)
    after = traffic.each_received()
    traffic.run_until(lambda: traffic.grew(after, 50),
                      60, "traffic both ways after the rotation")

    # Every message sent is accepted, once; nothing released, modified or lost.
    for sender in traffic.senders:
        net.wait(sender.all_settled, 30, "every message settled")
        assert sender.outcome_counts() == {"accepted": sender.sent}, sender.outcome_counts()
    for receiver, sender in zip(traffic.receivers, traffic.senders):
        numbers = [rec.message.body["n"] for rec in receiver.received]
        assert sorted(numbers) == list(range(sender.sent)), "a message lost or received twice"
    # The same processes throughout; the edge never lost its uplink; one edge connection left.
    assert {"I": interior.pid, "E": edge.pid} == pids
    log = edge.stderr_text()
    assert re.findall(r"Edge connection \(id=\d+\) to interior lost", log) == []
    replaced = re.findall(r"Edge connection \(id=(\d+)\) to interior replaced by id=(\d+)", log)
    assert len(replaced) == 2 and replaced[0][1] == replaced[1][0], replaced
    assert len(edge_connections(interior)) == 1
    with ManagementClient(edge.url, timeout=10) as client:
        state = client.read(PROFILE, name="uplink")
    assert (state["ordinal"], state["oldestValidOrdinal"]) == (3, 3)
