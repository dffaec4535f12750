"""The core's view of links and the messages that cross them (no proton here).

``handle``, ``delivery``, ``delivery_key`` and ``out_key`` fields, and the keys of
``unsettled``, hold the adaptor's opaque references (proton pointers, or their addresses);
the core only stores them and hands them back.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, Deque, Dict, List, Tuple

if TYPE_CHECKING:
    from .address_table import Address

# The most of one message an in-process node (the management agent) is given: a larger one
# reaches it as its head only, with ``full_size`` telling its size, so that it can refuse it.
IN_PROCESS_LIMIT = 1024 * 1024


class InFlight:
    """One incoming message while the router holds it: queued, or sent and awaiting outcome."""

    __slots__ = (
        "copies_pending",
        "credit_held",
        "delivery",
        "delivery_key",
        "in_link",
        "ingress",
        "key",
        "ma_span",
        "out_key",
        "out_link",
        "payload",
        "raw",
        "settled",
        "trace",
    )
    # A message streamed as it arrives (its bytes are not all here): amqp/data_path/streaming.py.
    streamed = False
    # Its size when ``raw`` holds its head only (past IN_PROCESS_LIMIT); 0: ``raw`` is whole.
    full_size = 0

    def __init__(self, payload: bytes, raw: bytes, in_link: CoreLink, delivery: Any, settled: bool,
                 delivery_key: Any = None) -> None:
        # What consumers that strip the router's annotations receive (None: not made yet,
        # the adaptor strips the raw message on first need)...
        self.payload: bytes | None = payload
        # ...and the message as it arrived, for consumers that keep annotations.
        self.raw = raw
        self.in_link = in_link
        # The incoming proton delivery, or None once settled upstream or its link is gone.
        self.delivery = delivery
        # Its key in in_link.unsettled (the adaptor's delivery_key), while unsettled.
        self.delivery_key = delivery_key
        self.settled = settled
        self.out_link: CoreLink | None = None
        # The outgoing delivery's key in out_link.unsettled (the adaptor's), once sent.
        self.out_key: Any = None
        # Multicast copies still waiting in consumers' backlogs.
        self.copies_pending = 0
        # Sent on unsettled: its producer's credit comes back with its outcome, not before
        # (core/sends.py, settled_upstream).
        self.credit_held = False
        # Set for messages that may cross the mesh: the address routed on, and the router
        # annotations read on arrival (ingress router, routers already passed through).
        self.key: str | None = None
        self.ingress: str | None = None
        self.trace: List[str] | None = None
        # Where the message-annotations section lies in ``raw``, once the adaptor has
        # looked (None until then); without one, (-1, where it would go, or -1 if unknown).
        self.ma_span: Tuple[int, int] | None = None


class LinkCounters:
    __slots__ = (
        "accepted",
        "delivered",
        "dropped_presettled",
        "modified",
        "presettled",
        "rejected",
        "released",
    )

    def __init__(self) -> None:
        self.delivered = 0
        self.presettled = 0
        self.dropped_presettled = 0
        self.accepted = 0
        self.rejected = 0
        self.released = 0
        self.modified = 0


# Credit a producer's link holds at most, unless its listener or connector says otherwise
# (linkCapacity), as in qdrouterd.
DEFAULT_LINK_CAPACITY = 250

ENDPOINT = "endpoint"
CONTROL = "router-control"
DATA = "inter-router"


class CoreLink:
    """A link attached to this router. ``incoming`` links carry messages into the router."""

    __slots__ = (
        "address",
        "address_key",
        "anonymous",
        "backlog",
        "blocked",
        "capacity",
        "connection",
        "counters",
        "credit",
        "credit_queued",
        "handle",
        "identity",
        "incoming",
        "kind",
        "name",
        "outstanding",
        "owed_credit",
        "read_on_arrival",
        "sends_settled",
        "strip_in",
        "strip_out",
        "unsettled",
        "via_edge",
    )

    def __init__(
        self,
        identity: int,
        name: str,
        incoming: bool,
        address_key: str | None,
        connection: Any,
        handle: Any,
        strip_in: bool = True,
        strip_out: bool = True,
    ) -> None:
        self.identity = identity
        self.name = name
        # ENDPOINT (a client), CONTROL or DATA (inter-router, qd.router / qd.router-data).
        self.kind = ENDPOINT
        self.incoming = incoming
        self.address_key = address_key
        self.anonymous = incoming and address_key is None
        self.address: Address | None = None  # bound by the core
        self.connection = connection  # the adaptor's connection object
        self.handle = handle
        self.strip_in = strip_in
        self.strip_out = strip_out
        # Outgoing links: credit the consumer granted that the core has not used yet.
        # Incoming links: credit the producer holds, by the core's count.
        self.credit = 0
        # Incoming links: the most credit the producer is given (its window).
        self.capacity = DEFAULT_LINK_CAPACITY
        # Outgoing links: deliveries sent and not yet settled by the consumer.
        self.outstanding = 0
        # Outgoing links: multicast copies waiting for credit.
        self.backlog: Deque[InFlight] = deque()
        # Outgoing links: its connection has stopped taking output (amqp/data_path/outbound.py); its
        # credit counts as none until it does.
        self.blocked = False
        # Incoming links: credit to give back to the producer at the next flush.
        self.owed_credit = 0
        # Incoming links: in the forwarder's credit_dirty list (a flag, not a set: the hot
        # path queues a link per message, and a set insertion costs it three calls on PyPy).
        self.credit_queued = False
        # Incoming links: True (False) when the producer's snd-settle-mode says all its
        # deliveries arrive settled (unsettled), so the adaptor need not ask per message;
        # None when they may be either.
        self.sends_settled: bool | None = None
        # Unsettled deliveries by the adaptor's key for them (amqp.proton_shim.delivery_key):
        # incoming ones (on incoming links) or outgoing ones (on outgoing links).
        self.unsettled: Dict[Any, InFlight] = {}
        self.counters = LinkCounters()
        # Incoming links whose messages the adaptor reads as they arrive: not outgoing
        # links, nor, for a while, an incoming link whose messages wait unread for a
        # consumer's credit (amqp/data_path/waiting_producers.py). One flag for both, so the delivery
        # handler tests one attribute per message for the two rare cases.
        self.read_on_arrival = incoming
        # On a connection to or from an edge router (role edge): what arrives on it never
        # goes back out on the same connection (qdrouterd's edge echo rule).
        self.via_edge = False
