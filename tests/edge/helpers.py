"""Waiting for edges to attach, and sending through them, for edge tests."""

from __future__ import annotations

import time
from typing import Any, Dict, List

from proton import Message

from qdrouter.tools.errors import ManagementError
from qdrouter.tools.management_client import ManagementClient
from tests.router.amqpclient import ACCEPTED, Net, ReceiverLink, SenderLink
from tests.router.routerproc import Router

CONNECTION = "org.apache.qpid.dispatch.connection"
ADDRESS = "org.apache.qpid.dispatch.router.address"


def query(router: Router, entity_type: str, **kwargs: Any) -> List[Dict[str, Any]]:
    with ManagementClient(router.url, timeout=5.0, **kwargs) as client:
        return client.query(entity_type)


def edge_connections(interior: Router) -> List[Dict[str, Any]]:
    return [row for row in query(interior, CONNECTION) if row.get("role") == "edge"]


def wait_until(predicate: Any, timeout: float = 15.0, what: str = "condition",
               net: Net | None = None) -> None:
    """Poll ``predicate`` (management queries, mostly). Given the test's ``net``, its loop
    runs between polls: the clients the test holds open stay alive (a router closes a
    connection silent for its idle timeout)."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except (ManagementError, OSError) as error:  # a router still starting
            last = error
        if net is not None:
            net.pump(0.1)
        else:
            time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} ({last})")


def wait_edges(interior: Router, count: int) -> None:
    wait_until(lambda: len(edge_connections(interior)) >= count, what=f"{count} edge connection(s)")


def has_address(router: Router, address: str, *, remote: bool = False) -> bool:
    """Whether ``router`` knows a consumer of ``address`` (locally, or with ``remote`` on
    another router)."""
    for row in query(router, ADDRESS):
        if str(row.get("name", "")).endswith(address) or str(row.get("key", "")).endswith(address):
            if (row.get("remoteCount") or 0) > 0 if remote else (row.get("subscriberCount") or 0) > 0:
                return True
    return False


def send_until_accepted(net: Net, sender: SenderLink, body: str, timeout: float = 20.0) -> None:
    """Send unsettled until one copy is accepted (the path may still be forming: released
    is an outcome that says to send again; a copy may also wait, without credit or for the
    mesh, until the path is there). ``timeout`` bounds the whole, waits included."""
    deadline = time.monotonic() + timeout
    while True:
        tag = sender.send(Message(body=body))
        net.wait(lambda tag=tag: tag in sender.outcomes, max(deadline - time.monotonic(), 0.0),
                 f"outcome of {body!r}")
        if sender.outcomes[tag].state == ACCEPTED:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{body!r} never accepted: {sender.outcome_counts()}")
        net.pump(0.2)


def bodies(receiver: ReceiverLink) -> List[Any]:
    return [r.message.body for r in receiver.received]
