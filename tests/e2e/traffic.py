"""AMQP from the test process into the mesh (through port-forwards): messages across routers,
and the routers' entities read back through management."""

from __future__ import annotations

import uuid
from typing import Any, Dict, List

from qdrouter.tools.management_client import ManagementClient
from tests.router.amqpclient import Net, msg, send_and_settle

LINK_ROUTE_TYPE = "org.apache.qpid.dispatch.router.config.linkRoute"
AUTO_LINK_TYPE = "org.apache.qpid.dispatch.router.config.autoLink"
ADDRESS_TYPE = "org.apache.qpid.dispatch.router.config.address"
VHOST_TYPE = "org.apache.qpid.dispatch.vhost"
ROUTER_NODE_TYPE = "org.apache.qpid.dispatch.router.node"


def cross_mesh(urls: Dict[str, str], source: str, sink: str, count: int, timeout: float = 30) -> None:
    """``count`` unsettled messages into ``source``, received from ``sink``: every one accepted,
    every one received once, in order."""
    address = f"e2e/{uuid.uuid4().hex[:8]}"
    net = Net()
    try:
        receiver = net.connect(f"amqp://{urls[sink]}").receiver(address, credit=count)
        sender = net.connect(f"amqp://{urls[source]}").sender(address)
        bodies = [f"{source}->{sink} #{i}" for i in range(count)]
        # The sender gets credit only once the source router has learned the receiver's address
        # from the sink router, so the wait covers address propagation across the mesh.
        outcomes = send_and_settle(net, sender, [msg(b) for b in bodies], timeout=timeout)
        assert [o.name for o in outcomes] == ["accepted"] * count, sender.outcome_counts()
        net.wait(lambda: len(receiver.received) >= count, 10, f"{count} messages at {sink}")
        assert receiver.bodies() == bodies
        assert not any(r.arrived_settled for r in receiver.received), "unsettled messages arrived settled"
    finally:
        net.close()


def entity_rows(url: str, type_: str) -> List[Dict[str, Any]]:
    """Every entity of ``type_`` on the router at ``url`` (host:port), as management returns them."""
    with ManagementClient(url, timeout=10) as mgmt:
        return [dict(row) for row in mgmt.query(type_)]


def entities(url: str, type_: str) -> Dict[str, Dict[str, Any]]:
    """Entities of ``type_`` by name (a duplicate name fails: the operator must never make one)."""
    rows = entity_rows(url, type_)
    names = [str(r.get("name")) for r in rows]
    assert len(names) == len(set(names)), f"duplicate {type_} names on {url}: {sorted(names)}"
    return {str(r["name"]): r for r in rows}


def link_routes(url: str) -> Dict[str, Dict[str, Any]]:
    return entities(url, LINK_ROUTE_TYPE)


def router_ids_known(url: str) -> List[str]:
    """Router ids in this router's routing table (router.node), not counting its own row."""
    with ManagementClient(url, timeout=10) as mgmt:
        return sorted(str(row.get("id")) for row in mgmt.query(ROUTER_NODE_TYPE, ["id", "nextHop"])
                      if row.get("nextHop") != "(self)")


def inter_router_peers(url: str) -> List[str]:
    """Container ids (router ids) of this router's open inter-router connections."""
    with ManagementClient(url, timeout=10) as mgmt:
        rows = mgmt.query("org.apache.qpid.dispatch.connection", ["role", "container", "opened"])
    return sorted(str(r.get("container")) for r in rows
                  if r.get("role") == "inter-router" and r.get("opened") and r.get("container"))
