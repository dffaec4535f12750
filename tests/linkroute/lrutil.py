"""Helpers for the link-routing tests: config sections, the tools (qdstat/qdmanage as
subprocesses), bounded polling, and ``Peer``, a route container driven by the test itself
(a real AMQP listener on the test's event loop) for what a router container cannot be told
to do, such as detaching an established link with a chosen error."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Tuple

from proton import Condition, Endpoint, Handler, Message

from qdrouter.tools.management_client import ManagementClient
from tests.router.amqpclient import Net
from tests.router.routerproc import Router, free_port, router_env

NO_ROUTE = "qd:no-route-to-dest"
LINK_ROUTE = "org.apache.qpid.dispatch.router.config.linkRoute"


# -- config ------------------------------------------------------------------------------
def connector(name: str, port: int, role: str = "route-container") -> str:
    return (f"connector {{\n    name: {name}\n    host: 127.0.0.1\n    port: {port}\n"
            f"    role: {role}\n    saslMechanisms: ANONYMOUS\n}}\n")


def link_route(direction: str, prefix: str | None = None, pattern: str | None = None,
               connection: str | None = None, container_id: str | None = None,
               add: str | None = None, delete: str | None = None, old_names: bool = False) -> str:
    attrs = {"prefix": prefix, "pattern": pattern, "dir" if old_names else "direction": direction,
             "connection": connection, "containerId": container_id,
             "addExternalPrefix": add, "delExternalPrefix": delete}
    body = "".join(f"    {k}: {v}\n" for k, v in attrs.items() if v is not None)
    return "linkRoute {\n" + body + "}\n"


def both_ways(prefix: str | None = None, **kw: Any) -> str:
    """The pair of link routes (in and out) for one prefix or pattern."""
    return link_route("in", prefix, **kw) + link_route("out", prefix, **kw)


# -- tools -------------------------------------------------------------------------------
# Each tool run takes seconds on a loaded machine. Given the test's ``net``, its loop runs
# meanwhile (Net.call), so the clients the test holds open are not closed as idle.
def run_tool(tool: str, router: Router, *args: str, timeout: float = 30.0,
             net: Net | None = None) -> subprocess.CompletedProcess:
    def run() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", f"qdrouter.tools.{tool}", "-b",
                               f"127.0.0.1:{router.port}", *args], capture_output=True, text=True,
                              timeout=timeout, env=router_env(), stdin=subprocess.DEVNULL)
    return net.call(run) if net is not None else run()


def tool_out(tool: str, router: Router, *args: str, net: Net | None = None) -> str:
    r = run_tool(tool, router, *args, net=net)
    assert r.returncode == 0, f"{tool} {' '.join(args)} exited {r.returncode}: {r.stderr or r.stdout}"
    return str(r.stdout)


def qdmanage(router: Router, *args: str, net: Net | None = None) -> Any:
    out = tool_out("qdmanage", router, *args, net=net)
    return json.loads(out) if out.strip() else None


def linkroute_rows(router: Router, net: Net | None = None) -> List[Dict[str, Any]]:
    rows = json.loads(tool_out("qdstat", router, "--linkroutes", "--json", net=net))
    assert isinstance(rows, list), rows
    return rows


def statuses(router: Router, net: Net | None = None) -> Dict[Tuple[str, str], str]:
    """(prefix or pattern, direction) -> status, from ``qdstat --linkroutes``."""
    return {(str(r.get("prefix") or r.get("pattern")), str(r.get("dir"))): str(r.get("status"))
            for r in linkroute_rows(router, net)}


def wait_for(check: Callable[[], Tuple[bool, Any]], timeout: float, what: str,
             interval: float = 0.3, net: Net | None = None) -> Any:
    """Poll ``check`` (returning (done, detail)); between polls run ``net``'s loop if given (a
    ``Peer`` on it must keep answering while the test waits)."""
    deadline = time.monotonic() + timeout
    while True:
        done, detail = check()
        if done:
            return detail
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; last seen: {detail}")
        if net is not None:
            net.pump(interval)
        else:
            time.sleep(interval)


def wait_oper_status(router: Router, name: str, wanted: str, net: Net, timeout: float = 20.0) -> None:
    """Until the link route ``name`` has operStatus ``wanted``, asked over management from
    this process (a poll costs no tool start-up, which takes seconds on a loaded machine)."""
    def check() -> Tuple[bool, Any]:
        with ManagementClient(router.url, timeout=5.0) as client:
            rows = {str(r.get("name")): r.get("operStatus") for r in client.query(LINK_ROUTE)}
        return rows.get(name) == wanted, rows
    wait_for(check, timeout, f"link route {name!r} {wanted}", net=net)


def wait_active(router: Router, count: int, timeout: float = 20.0, net: Net | None = None) -> None:
    """Until ``count`` link routes show status active in qdstat."""
    def check() -> Tuple[bool, Any]:
        s = statuses(router, net)
        return sum(v == "active" for v in s.values()) >= count, s
    wait_for(check, timeout, f"{count} active link routes", net=net)


# -- a test-driven route container ---------------------------------------------------------
class PeerLink:
    def __init__(self, link: Any) -> None:
        self.link = link
        self.name = link.name
        self.is_sender = link.is_sender
        self.address = (link.remote_target if link.is_receiver else link.remote_source).address
        self.closed = False
        self.condition: Condition | None = None
        self.messages: List[Message] = []
        self.unsettled: List[Any] = []   # deliveries held for the test to settle (Peer(hold=True))

    def detach(self, name: str, description: str) -> None:
        self.link.condition = Condition(name, description)
        self.link.close()

    def end_session(self, name: str, description: str) -> None:
        """End the link's whole session with an error (as RabbitMQ does for a missing queue)."""
        self.link.session.condition = Condition(name, description)
        self.link.session.close()


class Peer(Handler):
    """An AMQP container listening on loopback inside the test's ``Net`` loop: it accepts every
    attach (or refuses it with ``refuse``), grants ``credit`` to links it receives on, records
    messages (accepting them, or with ``hold`` leaving them for the test to settle), and lets the
    test detach a link with an error."""

    def __init__(self, net: Net, container_id: str = "peer", credit: int = 10, hold: bool = False,
                 port: int | None = None) -> None:
        super().__init__()
        self.net = net
        self.port = port or free_port()
        self.container_id = container_id
        self.credit = credit
        self.hold = hold
        self.refuse: Condition | None = None
        self.links: Dict[str, PeerLink] = {}
        self.connections: List[Any] = []
        self.acceptor = net.container.acceptor("127.0.0.1", self.port, handler=self)

    def on_connection_init(self, event: Any) -> None:
        event.connection.container = self.container_id

    def on_connection_remote_open(self, event: Any) -> None:
        self.connections.append(event.connection)
        if event.connection.state & Endpoint.LOCAL_UNINIT:
            event.connection.open()

    def on_session_remote_open(self, event: Any) -> None:
        if event.session.state & Endpoint.LOCAL_UNINIT:
            event.session.open()

    def on_link_remote_open(self, event: Any) -> None:
        link = event.link
        link.source.copy(link.remote_source)
        link.target.copy(link.remote_target)
        self.links[link.name] = PeerLink(link)
        link.open()
        if self.refuse is not None:
            link.condition = self.refuse
            link.close()
        elif link.is_receiver:
            link.flow(self.credit)

    def on_link_remote_close(self, event: Any) -> None:
        p = self.links.get(event.link.name)
        if p is not None:
            p.closed, p.condition = True, event.link.remote_condition
        if event.link.state & Endpoint.LOCAL_ACTIVE:
            event.link.close()

    def on_delivery(self, event: Any) -> None:
        dlv, p = event.delivery, self.links.get(event.link.name)
        if p is None or not dlv.readable or dlv.partial:
            return
        m = Message()
        m.decode(event.link.recv(dlv.pending))
        event.link.advance()
        p.messages.append(m)
        if dlv.settled:
            dlv.settle()
        elif self.hold:
            p.unsettled.append(dlv)
        else:
            dlv.update(dlv.ACCEPTED)
            dlv.settle()

    def wait_link(self, address: str, timeout: float = 10.0) -> PeerLink:
        def find() -> PeerLink | None:
            return next((p for p in self.links.values() if p.address == address), None)
        self.net.wait(lambda: find() is not None, timeout, f"the routed attach for {address!r} at the peer")
        found = find()
        assert found is not None
        return found

    def drop_connections(self) -> None:
        """Close the socket(s) without an AMQP close (a container that crashed)."""
        for c in self.connections:
            if c.transport is not None:
                c.transport.close_tail()
                c.transport.close_head()

    def close(self) -> None:
        self.acceptor.close()
