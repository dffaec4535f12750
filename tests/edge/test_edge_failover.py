"""An edge router with several edge connectors uses one at a time and fails over to another
when its interior router goes, as qdrouterd's edge connection manager does."""

from __future__ import annotations

from proton import Message

from tests.edge.helpers import edge_connections, query, send_until_accepted, wait_edges, wait_until


def test_failover_to_the_other_interior(routers, net):
    i1 = routers.interior("I1")
    i2 = routers.interior("I2", connect_to=[i1.ports["mesh"]])
    edge = routers.edge("E1", [i1.ports["edge"], i2.ports["edge"]])
    wait_edges(i1, 1)
    wait_edges(i2, 1)  # both connected: one active, the other a ready fallback
    receiver = net.connect(i2.url).receiver("closest/fo")
    sender = net.connect(edge.url).sender("closest/fo")
    send_until_accepted(net, sender, "before", timeout=20)
    active, other = (i1, i2) if _has_uplink(i1) else (i2, i1)
    assert _has_uplink(active) and not _has_uplink(other)  # one active connection at a time
    routers.stop(active)
    wait_until(lambda: "activating alternate" in edge.stderr_text(), what="failover logged")
    wait_until(lambda: _has_uplink(other), what="the uplink on the other interior")
    if active is i2:  # the receiver went with it: one on the survivor
        receiver = net.connect(other.url).receiver("closest/fo")
    send_until_accepted(net, sender, "after", timeout=20)
    assert "after" in [r.message.body for r in receiver.received]
    tags = [sender.send(Message(body=i)) for i in range(20)]
    net.wait(lambda: all(t in sender.outcomes for t in tags), 15, "outcomes after failover")
    assert {sender.outcomes[t].name for t in tags} == {"accepted"}
    assert len(edge_connections(other)) == 1


def _has_uplink(interior) -> bool:
    """Whether the edge's active connection is to ``interior``: its uplink, the anonymous link
    an edge sends everything on, is attached there. Found by that, not by its name: qdmesh
    names it ``qdlink.edge.uplink``, qdrouterd ``qdlink.<random>``."""
    edges = {str(row["identity"]) for row in edge_connections(interior)}
    return any(str(row.get("connectionId")) in edges and row.get("linkDir") == "in"
               and row.get("linkType") == "endpoint" and not row.get("owningAddr")
               for row in query(interior, "org.apache.qpid.dispatch.router.link"))


def test_edge_waits_for_its_interior_with_back_off(routers, net):
    """No interior yet: the edge serves its own clients, and attaches once one starts."""
    from tests.edge.edgeproc import interior
    from tests.router.routerproc import free_port
    port = free_port()
    edge = routers.edge("E1", [port])
    local = net.connect(edge.url)
    receiver = local.receiver("closest/x")
    sender = local.sender("closest/x")
    send_until_accepted(net, sender, "local")
    path = routers.tmp_path / "I1"
    path.mkdir()
    i1 = interior(path, "I1")
    i1.ports["edge"] = port
    text = i1.config_path.read_text()
    old_port = [line for line in text.splitlines() if "port:" in line][1].split(":")[1].strip()
    i1.config_path.write_text(text.replace(f"port: {old_port}", f"port: {port}", 1))
    routers.started.append(i1)
    i1.start()
    wait_edges(i1, 1)
    remote = net.connect(i1.url).sender("closest/x")
    send_until_accepted(net, remote, "from the interior", timeout=20)
    assert "from the interior" in [r.message.body for r in receiver.received]


def test_every_message_gets_an_outcome_when_the_interior_dies_mid_traffic(routers, net):
    i1 = routers.interior("I1")
    i2 = routers.interior("I2", connect_to=[i1.ports["mesh"]])
    e1 = routers.edge("E1", [i1.ports["edge"], i2.ports["edge"]])
    e2 = routers.edge("E2", [i2.ports["edge"], i1.ports["edge"]])
    wait_edges(i1, 2)
    wait_edges(i2, 2)
    receiver = net.connect(e2.url).receiver("closest/mid", credit=500)
    sender = net.connect(e1.url).sender("closest/mid")
    send_until_accepted(net, sender, "warm", timeout=20)
    tags = [sender.send(Message(body=i)) for i in range(200)]
    net.pump(0.05)
    routers.stop(i1 if _has_uplink(i1) else i2)  # an active interior, messages on their way
    net.wait(lambda: all(t in sender.outcomes for t in tags), 30, "an outcome for every message")
    counts = sender.outcome_counts()
    assert set(counts) <= {"accepted", "released", "modified"}, counts
    got = [r.message.body for r in receiver.received if r.message.body != "warm"]
    accepted = [i for i, t in enumerate(tags) if sender.outcomes[t].name == "accepted"]
    assert set(accepted) <= set(got)  # accepted means a receiver has it
    send_until_accepted(net, sender, "after", timeout=20)  # and traffic flows on through I2
