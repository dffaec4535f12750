"""A streamed message's state (amqp/data_path/streaming.py streams it): its limits, the InFlight that
stands for it, its outgoing deliveries, and the test of whether its head is in."""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Set

from ...core.links import CoreLink, InFlight
from ...core.outcomes import REJECTED
from ..bindings.proton_ffi import lib, set_condition
from ..bindings.proton_shim import delivery_key
from ..codec.message_sections import MessageFormatError, find_sections, read_to
from .seams import MessagePolicing

# A delivery still arriving with this many bytes buffered is streamed (the fast path reads
# complete messages of up to 64 KiB; the general path reads larger complete ones whole).
STREAM_START = 256 * 1024
# The most of a message's head (header to properties) collected before it is routed; a
# head larger than this is refused as malformed (amqp:decode-error).
HEAD_LIMIT = 1024 * 1024
# Bytes moved from the producer's delivery to the consumers' per read.
CHUNK = 64 * 1024
# A producer held back this long (or half its listener's idle timeout, if shorter) has its
# socket read once more (its heartbeats), as long as proton holds less than KEEPALIVE_LIMIT
# of its message.
KEEPALIVE_S = 4.0
KEEPALIVE_LIMIT = 4 * 1024 * 1024


class InputHold:
    """A producer's connection left unread while its message's next hop is blocked
    (qdrouterd's Q2 hold-off), and read once more now and then so that its heartbeats arrive:
    unread for its whole idle timeout, proton would close it. Routed streams (Stream) and
    link-routed ones (amqp/links/routed_streams.py) hold their producers through it."""

    __slots__ = ("connection", "held", "read_again_at")

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.held = False
        self.read_again_at = 0.0

    def hold(self) -> None:
        if not self.held:
            self.held = True
            self.read_again_at = time.monotonic() + read_again_after(self.connection)
            self.connection.hold_input()

    def release(self, dirty: Set[Any]) -> None:
        """Read the connection again (its socket once it is written next)."""
        if self.held:
            self.held = False
            self.connection.input_held -= 1
            dirty.add(self.connection)

    def keep_alive(self, now: float, delivery: Any, dirty: Set[Any]) -> None:
        """Release a hold that has lasted long enough, while proton holds less than
        KEEPALIVE_LIMIT of ``delivery`` (the next bytes of the message hold it again)."""
        if self.held and now >= self.read_again_at and lib.pn_delivery_pending(delivery) < KEEPALIVE_LIMIT:
            self.release(dirty)


def read_again_after(connection: Any) -> float:
    """How long a held producer's socket stays unread: KEEPALIVE_S, or half the idle
    timeout of its listener (or connector) when that is shorter, so a read comes well
    before proton would close the connection for silence."""
    settings = getattr(connection, "settings", None)
    idle_ms = settings.idle_timeout_ms if settings is not None else 0
    return min(KEEPALIVE_S, idle_ms / 2000) if idle_ms > 0 else KEEPALIVE_S


class StreamedMessage(InFlight):
    """The InFlight of a streamed message: ``raw`` and ``payload`` hold its head only."""

    __slots__ = ("full_size", "stream")
    streamed = True

    def __init__(self, in_link: CoreLink, settled: bool, stream: Stream) -> None:
        super().__init__(b"", b"", in_link, None, settled)
        self.stream = stream
        self.full_size = 0


class Collect:
    """A streamed delivery routed to an in-process node, read whole for it: up to ``limit``
    bytes are kept; past it only the head (so the node can still answer the sender), while the
    rest is counted and dropped, so a request of any size costs the router at most ``limit``."""

    __slots__ = ("data", "head", "limit", "on_whole", "size")

    def __init__(self, head: bytes, limit: int, on_whole: Callable[[bool], None]) -> None:
        self.head = head
        self.data: bytearray | None = bytearray(head)
        self.size = len(head)
        self.limit = limit
        # Told True with the message whole (or cut to its head), False when it never will be.
        self.on_whole = on_whole

    def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.data is None:
            return
        if self.size > self.limit:
            self.data = None
        else:
            self.data += chunk


class Out:
    """One outgoing delivery of a stream."""

    __slots__ = ("delivery", "key", "link", "tracked")

    def __init__(self, link: CoreLink, delivery: Any, tracked: bool) -> None:
        self.link = link
        self.delivery = delivery
        self.key = delivery_key(delivery)
        # Unsettled (its consumer's outcome goes to the producer), not a pre-settled copy.
        self.tracked = tracked


class Stream:
    """One incoming delivery being streamed."""

    __slots__ = ("body_sent", "collect", "delivery", "discard", "head", "hold_off", "in_link", "key",
                 "limit", "message", "outcome", "outs", "pumping", "received", "routed")

    def __init__(self, in_link: CoreLink, delivery: Any, key: Any, limit: int) -> None:
        self.in_link = in_link
        self.delivery = delivery
        self.key = key
        # The head collected so far; None once routed.
        self.head: bytearray | None = bytearray()
        self.routed = False
        self.body_sent = False
        self.outs: List[Out] = []
        self.received = 0
        # maxMessageSize of the producer's policy (0: none).
        self.limit = limit
        # The producer's outcome once decided before the end (no route, early settlement,
        # the consumer gone): the rest of the message is read and dropped.
        self.outcome: int | None = None
        self.discard = False
        self.hold_off = InputHold(in_link.connection)
        self.pumping = False
        # Set when routed to an in-process node: the rest is collected, not sent on.
        self.collect: Collect | None = None
        settled = bool(lib.pn_delivery_settled(delivery))
        self.message: StreamedMessage = StreamedMessage(in_link, settled, self)



def head_complete(head: bytes | bytearray) -> bool:
    """Whether ``head`` holds a message's sections up to the end of its properties (or
    shows it has none): all that routing reads. Raises MessageFormatError when what is
    there is malformed, not merely cut short."""
    data = bytes(head)
    try:
        _, _, props_start = find_sections(data)
        if props_start < 0:
            # A properties descriptor after the data tells where the leading sections
            # ended: found there, the data stopped at a section boundary, and properties
            # may follow.
            _, _, props_start = find_sections(data + _PROPERTIES_DESCRIPTOR)
    except MessageFormatError as error:
        if str(error).startswith("truncated"):
            return False
        raise
    if props_start < 0:
        return True  # another section follows the annotations: there are no properties
    if props_start == len(data):
        return False
    try:
        read_to(data, props_start)
    except MessageFormatError as error:
        if str(error).startswith("truncated"):
            return False
        raise
    return True


_PROPERTIES_DESCRIPTOR = b"\x00\x53\x73"


def hold(stream: Stream) -> None:
    """Stop reading the producer's connection for ``stream`` (Q2 hold-off)."""
    if stream.hold_off.held:
        return
    if lib.pn_session_get_incoming_capacity(lib.pn_link_session(stream.in_link.handle)) > 0:
        return  # a bounded session window (maxSessionFrames) holds the producer back
    stream.hold_off.hold()


def unhold(stream: Stream, dirty: Set[Any]) -> None:
    """Read the producer's connection again (its socket once it is written next)."""
    stream.hold_off.release(dirty)


def refused_by_policy(policed: Dict[Any, Any], policer: MessagePolicing, stream: Stream) -> bool:
    """Policy's checks of a streamed message's head (user-id, target; its size is counted
    as it arrives): True when refused, the rest then read and dropped and the producer's
    delivery rejected at the end."""
    link = stream.in_link
    if link.handle not in policed:
        return False
    denial = policer.head_denial(link, stream.message.raw)
    if denial is None:
        return False
    condition = lib.pn_disposition_condition(lib.pn_delivery_local(stream.delivery))
    set_condition(condition, denial.condition, denial.description)
    stream.outcome = REJECTED
    stream.discard = True
    return True


def queued(table: Any, message: StreamedMessage) -> bool:
    """Whether the forwarder holds ``message`` for an address's consumers or routers."""
    address = table.find(message.key) if message.key else None
    return address is not None and any(held is message for held in address.undelivered)
