"""A small single-threaded AMQP client toolkit for router tests.

All connections of a test share one proton ``Container`` (``Net``) which the test drives
explicitly with ``net.wait(condition, timeout)``: every wait is bounded, so a router that
misbehaves fails the test with a description of what never happened instead of hanging.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Tuple, TypeVar

from proton import Condition, Delivery, Endpoint, Handler, Link, Message
from proton.reactor import AtMostOnce, Container, DynamicNodeProperties

ACCEPTED = Delivery.ACCEPTED
REJECTED = Delivery.REJECTED
RELEASED = Delivery.RELEASED
MODIFIED = Delivery.MODIFIED

OUTCOME_NAMES = {ACCEPTED: "accepted", REJECTED: "rejected", RELEASED: "released",
                 MODIFIED: "modified", 0: "none"}

_names = itertools.count(1)
T = TypeVar("T")


class WaitTimeout(AssertionError):
    pass


@dataclass
class Outcome:
    """Final state of a sent (unsettled) delivery, as reported by the router."""
    state: int
    failed: bool = False
    undeliverable: bool = False
    condition: Condition | None = None
    annotations: Dict[Any, Any] | None = None
    #: The fields of a state of the application's own (not one of AMQP's outcomes).
    data: Any = None

    @property
    def name(self) -> str:
        return OUTCOME_NAMES.get(self.state, str(self.state))


@dataclass
class Received:
    message: Message
    raw: bytes
    arrived_settled: bool
    delivery: Delivery | None = field(default=None, repr=False)


class Net:
    """The event loop shared by all client connections in one test."""

    def __init__(self) -> None:
        self.container = Container()
        self.container.timeout = 0.02
        self.container.start()
        # A pending timer keeps the reactor alive while no connection is open (otherwise
        # process() would finish the container and later connections would never run).
        self._keepalive = self.container.schedule(24 * 3600, Handler())
        self.clients: List[Client] = []

    def process(self) -> None:
        self.container.process()

    def wait(self, cond: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> None:
        deadline = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > deadline:
                raise WaitTimeout(f"timed out after {timeout}s waiting for {what}")
            self.container.process()

    def pump(self, seconds: float) -> None:
        """Run the loop for a fixed time (to observe that something does NOT happen)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.container.process()

    def call(self, blocking: Callable[[], T]) -> T:
        """Run ``blocking`` (a call that touches no proton object of this loop, such as a tool
        run as a subprocess) in a thread while this loop runs: the test's open connections go
        on sending their heartbeats. A loop left unrun longer than a router's idle timeout
        (a listener's idleTimeoutSeconds, 16 by default) has its connections closed by the
        router, which a few slow tool runs on a loaded machine add up to."""
        outcome: List[Any] = []

        def run() -> None:
            try:
                outcome.append((True, blocking()))
            except BaseException as error:  # re-raised in the test's thread
                outcome.append((False, error))

        thread = threading.Thread(target=run, name="net-call", daemon=True)
        thread.start()
        while thread.is_alive():
            self.container.process()
        thread.join()
        ok, value = outcome[0]
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]

    def connect(self, url: str, timeout: float = 10.0) -> Client:
        client = Client(self, url)
        self.clients.append(client)
        self.wait(lambda: client.opened or client.transport_closed, timeout, f"connection to {url} to open")
        assert client.opened, f"connection to {url} failed: {client.error}"
        return client

    def close(self) -> None:
        for c in self.clients:
            c.close(wait=False)
        try:
            self.wait(lambda: all(c.transport_closed for c in self.clients), 2.0, "connections to close")
        except WaitTimeout:
            pass
        for c in self.clients:
            if c.conn.transport is not None and not c.transport_closed:
                c.conn.transport.close_tail()
                c.conn.transport.close_head()
        self._keepalive.cancel()
        self.container.stop()
        self.container.process()


class Client(Handler):
    """One AMQP connection; routes link and delivery events to link wrappers."""

    def __init__(self, net: Net, url: str, **connect_options: Any) -> None:
        """``connect_options``: more of proton's connect arguments (properties, login, ...)."""
        super().__init__()
        self.net = net
        self.links: Dict[str, Any] = {}
        self.opened = False
        self.remote_closed = False
        self.transport_closed = False
        self.error: Condition | None = None
        self.conn = net.container.connect(url, handler=self, reconnect=False, **connect_options)

    # -- events ------------------------------------------------------------------------
    def on_connection_remote_open(self, event: Any) -> None:
        self.opened = True

    def on_connection_remote_close(self, event: Any) -> None:
        self.remote_closed = True
        self.error = event.connection.remote_condition or self.error
        if event.connection.state & Endpoint.LOCAL_ACTIVE:
            event.connection.close()

    def on_transport_error(self, event: Any) -> None:
        self.error = event.transport.condition or self.error

    def on_transport_closed(self, event: Any) -> None:
        self.transport_closed = True

    def _wrapper(self, event: Any) -> Any:
        return self.links.get(event.link.name) if event.link is not None else None

    def on_link_remote_open(self, event: Any) -> None:
        w = self._wrapper(event)
        if w is not None:
            w.remote_opened = True

    def on_link_remote_close(self, event: Any) -> None:
        w = self._wrapper(event)
        if w is not None:
            w.remote_closed = True
            w.remote_condition = event.link.remote_condition
        if event.link.state & Endpoint.LOCAL_ACTIVE:
            event.link.close()

    def on_link_remote_detach(self, event: Any) -> None:
        self.on_link_remote_close(event)

    def on_link_flow(self, event: Any) -> None:
        w = self._wrapper(event)
        if w is not None:
            w.on_flow()

    def on_delivery(self, event: Any) -> None:
        w = self._wrapper(event)
        if w is not None:
            w.on_delivery(event.delivery)

    # -- API ---------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        return self.opened and not self.remote_closed and not self.transport_closed

    def sender(self, address: str | None, presettled: bool = False, wait: bool = True) -> SenderLink:
        name = f"sender-{next(_names)}"
        opts = AtMostOnce() if presettled else None
        link = self.net.container.create_sender(self.conn, address, name=name, options=opts)
        wrapper = SenderLink(self, link)
        self.links[name] = wrapper
        if wait:
            self.net.wait(lambda: wrapper.remote_opened or wrapper.remote_closed, 10,
                          f"attach of sender to {address!r}")
        return wrapper

    def receiver(self, address: str | None, credit: int = 100, refill: bool = True,
                 settle: int | None = ACCEPTED, dynamic: bool = False, wait: bool = True,
                 dynamic_properties: Dict[str, Any] | None = None) -> ReceiverLink:
        """A receiver granting ``credit``; with ``refill`` credit is topped up per message.

        ``settle`` is the outcome applied on arrival (None: keep deliveries unsettled).
        """
        name = f"receiver-{next(_names)}"
        options = DynamicNodeProperties(dynamic_properties) if dynamic_properties else None
        link = self.net.container.create_receiver(self.conn, address, name=name, dynamic=dynamic,
                                                  options=options)
        wrapper = ReceiverLink(self, link, refill=refill, settle=settle)
        self.links[name] = wrapper
        if credit:
            link.flow(credit)
        if wait:
            self.net.wait(lambda: wrapper.remote_opened or wrapper.remote_closed, 10,
                          f"attach of receiver from {address!r}")
        return wrapper

    def close(self, wait: bool = True) -> None:
        if self.conn.state & Endpoint.LOCAL_ACTIVE:
            self.conn.close()
        if wait:
            self.net.wait(lambda: self.transport_closed or self.remote_closed, 5, "connection close")


class SenderLink:
    def __init__(self, client: Client, link: Link) -> None:
        self.client = client
        self.link = link
        self.remote_opened = False
        self.remote_closed = False
        self.remote_condition: Condition | None = None
        self.sent = 0
        self.max_credit_seen = 0
        self.outcomes: Dict[str, Outcome] = {}   # tag -> final outcome (unsettled sends only)
        self.tags: List[str] = []
        # tag -> each non-terminal state seen before settlement: (state, section number, offset)
        self.progress: Dict[str, List[Tuple[int, int, int]]] = {}

    @property
    def credit(self) -> int:
        return int(self.link.credit)

    def on_flow(self) -> None:
        self.max_credit_seen = max(self.max_credit_seen, self.link.credit)

    def send(self, msg: Message) -> str:
        """Send one message (buffered by proton until credit arrives); returns its tag."""
        tag = f"t{self.sent}"
        self.sent += 1
        dlv = self.link.delivery(tag)
        self.link.send(msg.encode())
        self.link.advance()
        if self.link.snd_settle_mode == Link.SND_SETTLED:
            dlv.settle()
        else:
            self.tags.append(tag)
        return tag

    def send_raw(self, data: bytes) -> str:
        tag = f"t{self.sent}"
        self.sent += 1
        self.link.delivery(tag)
        self.link.send(data)
        self.link.advance()
        self.tags.append(tag)
        return tag

    def on_delivery(self, dlv: Delivery) -> None:
        r = dlv.remote
        if dlv.settled:   # remotely settled: record the final outcome, then settle locally
            self.outcomes[dlv.tag] = Outcome(dlv.remote_state, bool(r.failed), bool(r.undeliverable),
                                             r.condition, r.annotations, r.data)
            dlv.settle()
        elif dlv.updated and dlv.remote_state:
            self.progress.setdefault(dlv.tag, []).append(
                (int(dlv.remote_state), int(r.section_number), int(r.section_offset)))

    # -- queries -----------------------------------------------------------------------
    def settled_count(self) -> int:
        return len(self.outcomes)

    def all_settled(self) -> bool:
        return len(self.outcomes) == len(self.tags)

    def outcome_counts(self) -> Dict[str, int]:
        counts: Dict[str, int] = {}
        for o in self.outcomes.values():
            counts[o.name] = counts.get(o.name, 0) + 1
        return counts

    def close(self) -> None:
        self.link.close()


class ReceiverLink:
    def __init__(self, client: Client, link: Link, refill: bool, settle: int | None) -> None:
        self.client = client
        self.link = link
        self.refill = refill
        self.settle_policy = settle
        self.remote_opened = False
        self.remote_closed = False
        self.remote_condition: Condition | None = None
        self.received: List[Received] = []
        self.unsettled: List[Delivery] = []
        self.aborted = 0

    @property
    def address(self) -> str | None:
        src = self.link.remote_source
        return src.address if src is not None else None

    @property
    def credit(self) -> int:
        return int(self.link.credit)

    def on_flow(self) -> None:
        pass

    def on_delivery(self, dlv: Delivery) -> None:
        if dlv.aborted:
            self.aborted += 1
            dlv.settle()
            return
        if not dlv.readable or dlv.partial:
            return
        raw = self.link.recv(dlv.pending) or b""
        self.link.advance()
        msg = Message()
        msg.decode(raw)
        arrived_settled = bool(dlv.settled)
        rec = Received(msg, raw, arrived_settled)
        self.received.append(rec)
        if arrived_settled:
            dlv.settle()
        elif self.settle_policy is not None:
            dlv.update(self.settle_policy)
            dlv.settle()
        else:
            rec.delivery = dlv
            self.unsettled.append(dlv)
        if self.refill:
            self.link.flow(1)

    def bodies(self) -> List[Any]:
        return [r.message.body for r in self.received]

    def flow(self, n: int) -> None:
        self.link.flow(n)

    def drain(self, n: int) -> None:
        self.link.drain(n)

    def settle_unsettled(self, state: int = ACCEPTED, count: int | None = None,
                         condition: Condition | None = None, failed: bool = False,
                         undeliverable: bool = False) -> int:
        """Apply ``state`` to (up to ``count`` of) the unsettled deliveries, oldest first."""
        todo = self.unsettled[:count] if count is not None else list(self.unsettled)
        for dlv in todo:
            if condition is not None:
                dlv.local.condition = condition
            if state == MODIFIED:
                dlv.local.failed = failed
                dlv.local.undeliverable = undeliverable
            dlv.update(state)
            dlv.settle()
        self.unsettled = self.unsettled[len(todo):]
        return len(todo)

    def close(self) -> None:
        self.link.close()


def msg(body: Any = None, to: str | None = None, **kw: Any) -> Message:
    m = Message(body=body, **kw)
    if to is not None:
        m.address = to
    return m


def send_and_settle(net: Net, snd: SenderLink, messages: List[Message],
                    timeout: float = 10.0) -> List[Outcome]:
    """Send unsettled messages and wait until the router has settled every one of them."""
    tags = [snd.send(m) for m in messages]
    net.wait(lambda: all(t in snd.outcomes for t in tags), timeout,
             f"outcomes for {len(tags)} messages (have {sum(t in snd.outcomes for t in tags)})")
    return [snd.outcomes[t] for t in tags]


def send_by_link_and_by_to(net: Net, client: Client, addresses: List[str],
                           timeout: float = 15.0) -> List[str]:
    """One unsettled message to each of ``addresses`` on a sender attached to it (body "link
    ADDRESS"), then one each on an anonymous sender with ``to`` set (body "to ADDRESS"), each
    sent once its sender has credit; the outcomes' names, in that order."""
    names = []
    for address in [*addresses, None]:
        sender = client.sender(address)
        net.wait(lambda s=sender: s.credit > 0, timeout, f"credit for {address or 'the anonymous sender'}")
        if address is not None:
            messages = [msg(f"link {address}")]
        else:
            messages = [msg(f"to {a}", to=a) for a in addresses]
        names += [outcome.name for outcome in send_and_settle(net, sender, messages, timeout)]
    return names


# The router reads messages up to this size in one step and larger ones in two
# (amqp/data_path/deliveries.py): sizes on both sides of it, and well past it.
FAST_READ_MAX = 65536
SIZES = [100, FAST_READ_MAX - 1, FAST_READ_MAX, FAST_READ_MAX + 1, FAST_READ_MAX + 2, 200_000]


def message_of_size(size: int, address: str) -> Message:
    """A message whose encoding is exactly ``size`` bytes (a data body, sized to fit)."""
    overhead = len(Message(address=address, body=b"").encode())
    for body_size in range(size - overhead, max(size - overhead - 16, -1), -1):
        candidate = Message(address=address, body=bytes(i % 251 for i in range(body_size)))
        if len(candidate.encode()) == size:
            return candidate
    raise AssertionError(f"no message encodes to {size} bytes")
