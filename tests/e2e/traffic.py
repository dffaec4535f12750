"""AMQP from the test process into the mesh (through port-forwards): messages across routers,
and the routers' entities read back through management."""

from __future__ import annotations

import time
import uuid
from typing import Any, Callable, Dict, List, Sequence, Tuple

from proton._handlers import IOHandler

from qdrouter.tools.management_client import ManagementClient
from tests.router.amqpclient import Net, msg, send_and_settle


def _skip_expired_without_transport(expired: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    """python-qpid-proton 0.40's IOHandler, when a socket closes (here: the port-forward to a
    router on a node that was stopped) while the connection's idle-timeout timer is due in the
    same batch of events, handles the timer after it unbound the transport and raises
    AttributeError ('NoneType' object has no attribute 'capacity') out of Container.process(),
    ending every other connection of the test.  The timer of a closed transport has nothing
    left to do."""

    def on_selectable_expired(self: Any, event: Any) -> None:
        if event.selectable._transport is not None:
            expired(self, event)

    return on_selectable_expired


IOHandler.on_selectable_expired = _skip_expired_without_transport(  # type: ignore[method-assign,assignment]
    IOHandler.on_selectable_expired)

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


class Traffic:
    """A sender on one router and a receiver on each of ``sinks`` (the address is balanced over
    them), unsettled messages in batches while something happens to the mesh."""

    def __init__(self, urls: Dict[str, str], source: str, sinks: str | Sequence[str], stem: str = "traffic",
                 credit: int = 50) -> None:
        self.address = f"e2e/{stem}-{uuid.uuid4().hex[:8]}"
        self.net = Net()
        names = [sinks] if isinstance(sinks, str) else list(sinks)
        # Through port-forwards (kubectl, the API server, the kubelet): on a loaded machine the
        # first connection through a new forward has taken over 10 s.
        self.receivers = {n: self.net.connect(f"amqp://{urls[n]}", timeout=60).receiver(
            self.address, credit=credit) for n in names}
        self.receiver = self.receivers[names[0]]
        self.sender = self.net.connect(f"amqp://{urls[source]}", timeout=60).sender(self.address)
        self.sent: Dict[str, str] = {}  # delivery tag -> body
        self.batches = 0

    def batch(self, label: str, count: int = 5) -> None:
        for i in range(count):
            body = f"{label}-{self.batches}-{i}"
            self.sent[self.sender.send(msg(body))] = body
        self.batches += 1
        self.net.pump(0.2)

    def until(self, done: Callable[[], bool], timeout: float, what: str, label: str) -> None:
        started = time.monotonic()
        while not done():
            assert time.monotonic() - started < timeout, f"{what} not within {timeout:.0f} s"
            self.batch(label)

    def received(self, sink: str | None = None) -> List[str]:
        """Bodies received at ``sink`` (default: at every receiver)."""
        links = [self.receivers[sink]] if sink else list(self.receivers.values())
        return [str(m.message.body) for link in links for m in link.received]

    def outcomes(self, label: str) -> List[str]:
        """The outcomes of the messages of batches labelled ``label``."""
        return [o.name for tag, o in self.sender.outcomes.items() if self.sent[tag].startswith(f"{label}-")]

    def settle_all(self, timeout: float = 90) -> Tuple[Dict[str, int], List[str]]:
        """Wait for every outcome; (outcome counts, bodies accepted but received by no one)."""
        self.net.wait(lambda: len(self.sender.outcomes) == len(self.sent), timeout,
                      f"an outcome for each of {len(self.sent)} messages (have {len(self.sender.outcomes)})")
        got = set(self.received())
        accepted = [self.sent[tag] for tag, o in self.sender.outcomes.items() if o.name == "accepted"]
        return self.sender.outcome_counts(), [b for b in accepted if b not in got]

    def close(self) -> None:
        self.net.close()


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
