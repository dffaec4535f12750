"""A raw AMQP management client: requests built by hand with proton, replies matched by
correlation id on a reply-to receiver."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Dict, List

from proton import Message

from tests.router.amqpclient import Client, Net, Outcome, ReceiverLink, SenderLink, msg, send_and_settle
from tests.router.routerkind import router_kind

_ids = itertools.count(1)

LISTENER = "org.apache.qpid.dispatch.listener"
ADDRESS = "org.apache.qpid.dispatch.router.config.address"
LOG = "org.apache.qpid.dispatch.log"
ROUTER = "org.apache.qpid.dispatch.router"
CONNECTION = "org.apache.qpid.dispatch.connection"
LINK = "org.apache.qpid.dispatch.router.link"
ROUTER_ADDRESS = "org.apache.qpid.dispatch.router.address"
NODE = "org.apache.qpid.dispatch.router.node"
MANAGEMENT = "org.apache.qpid.dispatch.management"


CONFIG_TYPES = ("address", "linkRoute", "autoLink", "exchange", "binding")


def full_type_name(name: str) -> str:
    """An entity type's full name (``router.link`` -> ``org.apache.qpid.dispatch.router.link``;
    ``address`` -> ``org.apache.qpid.dispatch.router.config.address``)."""
    if not name or name.startswith("org.apache.qpid.dispatch."):
        return name
    if name in CONFIG_TYPES:
        name = "router.config." + name
    return "org.apache.qpid.dispatch." + name


@dataclass
class Reply:
    status: int
    description: str
    body: Any
    message: Message

    def __repr__(self) -> str:
        return f"Reply({self.status}, {self.description!r}, body={self.body!r})"


class MgmtClient:
    """Requests to ``address`` (default ``$management``) on one connection.

    ``reply_to=None`` uses a dynamic receiver's address (the standard pattern); a string
    makes a receiver on that named address and uses it as reply-to. ``address=None`` makes
    the sender anonymous: each request then carries ``to``.
    """

    def __init__(self, net: Net, client: Client, address: str | None = "$management",
                 reply_to: str | None = None, to: str | None = None) -> None:
        self.net = net
        self.client = client
        if reply_to is None:
            self.receiver: ReceiverLink = client.receiver(None, dynamic=True)
            assert self.receiver.remote_opened and not self.receiver.remote_closed, \
                "dynamic reply-to receiver refused"
            assert self.receiver.address, "dynamic receiver got no address"
            self.reply_to: str = self.receiver.address
        else:
            self.receiver = client.receiver(reply_to)
            self.reply_to = reply_to
        self.sender: SenderLink = client.sender(address)
        assert self.sender.remote_opened and not self.sender.remote_closed, \
            f"sender to {address!r} refused: {self.sender.remote_condition}"
        self.to = to

    # -- building and sending ------------------------------------------------------------
    def message(self, operation: Any = None, *, type: str | None = None, name: str | None = None,
                identity: str | None = None, body: Any = None, props: Dict[Any, Any] | None = None,
                reply_to: str | None = "", correlation_id: Any = None) -> Message:
        properties: Dict[Any, Any] = {}
        if operation is not None:
            properties["operation"] = operation
        for key, value in (("type", type), ("name", name), ("identity", identity)):
            if value is not None:
                properties[key] = value
        properties.update(props or {})
        if router_kind() == "c":
            # qdrouterd's agent answers a QUERY of its core entities (router.link,
            # router.address, connection, ...) named short with no rows: name them in full.
            for key in ("type", "entityType"):
                if isinstance(properties.get(key), str):
                    properties[key] = full_type_name(properties[key])
        m = Message(body=body, properties=properties or None)
        m.correlation_id = correlation_id if correlation_id is not None else f"corr-{next(_ids)}"
        m.reply_to = self.reply_to if reply_to == "" else reply_to
        if self.to is not None:
            m.address = self.to
        return m

    def send(self, m: Message, timeout: float = 5.0) -> Outcome:
        """Send unsettled; the router's outcome for the request delivery."""
        return send_and_settle(self.net, self.sender, [m], timeout)[0]

    def wait_reply(self, correlation_id: Any, timeout: float = 5.0) -> Reply:
        def find() -> Message | None:
            for r in self.receiver.received:
                if r.message.correlation_id == correlation_id:
                    return r.message
            return None

        self.net.wait(lambda: find() is not None, timeout, f"management reply to {correlation_id!r}")
        m = find()
        assert m is not None
        props = m.properties or {}
        assert "statusCode" in props, f"reply without statusCode: {props}"
        assert "statusDescription" in props, f"reply without statusDescription: {props}"
        return Reply(int(props["statusCode"]), str(props["statusDescription"]), m.body, m)

    def request(self, operation: Any = None, timeout: float = 5.0, **kw: Any) -> Reply:
        m = self.message(operation, **kw)
        outcome = self.send(m, timeout)
        assert outcome.name == "accepted", f"request delivery was {outcome.name}"
        return self.wait_reply(m.correlation_id, timeout)

    # -- conveniences ----------------------------------------------------------------------
    def ok(self, operation: str, expect: int = 200, **kw: Any) -> Any:
        reply = self.request(operation, **kw)
        assert reply.status == expect, f"{operation} {kw}: {reply}"
        return reply.body

    def query(self, entity_type: str, names: List[str] | None = None,
              **props: Any) -> List[Dict[str, Any]]:
        """QUERY as a list of row maps."""
        body = {"attributeNames": names or []}
        result = self.ok("QUERY", props={"entityType": entity_type, **props}, body=body)
        assert isinstance(result, dict), result
        cols = result["attributeNames"]
        return [dict(zip(cols, row)) for row in result["results"]]

    def create(self, entity_type: str, name: str, attrs: Dict[str, Any]) -> Dict[str, Any]:
        result = self.ok("CREATE", expect=201, type=entity_type, name=name, body=attrs)
        assert isinstance(result, dict)
        return result

    def delete(self, entity_type: str, name: str) -> None:
        self.ok("DELETE", expect=204, type=entity_type, name=name)


def assert_routing(net: Net, url: str, address: str = "closest.alive", timeout: float = 5.0) -> None:
    """The router still routes a message from a new sender to a new receiver."""
    c = net.connect(url, timeout)
    rcv = c.receiver(address)
    snd = c.sender(address)
    out = send_and_settle(net, snd, [msg("still routing")], timeout)
    assert out[0].name == "accepted", out
    net.wait(lambda: len(rcv.received) == 1, timeout, "the routed message")
    assert rcv.bodies() == ["still routing"]
    c.close(wait=False)
