"""The core's send, credit and settle API: what sending a message on a link costs, and when
its producer's credit comes back. Every path that sends takes these steps, the forwarder's
walk and the adaptor's fast paths (the inline anycast of amqp/data_path/fast_path.py, the mesh
hand-off, local multicast) alike, so one change to credit or counting is made here.

Credit is handed back to producers only as their messages leave (pre-settled ones) or get
their outcome (unsettled ones), and while their address has somewhere to go. The forwarder
owes it; the adaptor flushes it (take_credit) in batches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Set

from .address_table import Address
from .links import DATA, ENDPOINT, CoreLink, InFlight

if TYPE_CHECKING:
    from .forwarder import DeliveryIO


def count_send(link: CoreLink, presettled: bool, address: Address | None) -> None:
    """A message goes out on ``link``: one of its credit used, counted as delivered, and as
    pre-settled or as outstanding until its consumer settles it (consumer_settled); counted
    for ``address`` as transit (toward another router) or egress (to a consumer here).
    The caller hands the message to the adaptor: Sends.send, or a fast path's own queue."""
    link.credit -= 1
    counters = link.counters
    counters.delivered += 1
    if presettled:
        counters.presettled += 1
    else:
        link.outstanding += 1
    if address is not None:
        if link.kind == DATA:
            address.counters.deliveries_transit += 1
        else:
            address.counters.deliveries_egress += 1


class Sends:
    """The send/credit/settle API of the Forwarder (core/forwarder.py), which gives it ``io``
    and ``_routable``."""

    io: DeliveryIO

    def __init__(self) -> None:
        # Incoming links owed credit since the adaptor last flushed, each once (its
        # credit_queued flag): queue_credit.
        self.credit_dirty: List[CoreLink] = []
        # Links the adaptor held back, owing less than a batch while their producer still
        # has plenty: looked at again when owed more, or at the next tick (recheck_held).
        self.credit_held: Set[CoreLink] = set()

    def _routable(self, address: Address) -> bool:
        raise NotImplementedError

    # ---- sending -----------------------------------------------------------------------
    def send(self, link: CoreLink, message: InFlight, presettled: bool,
             address: Address | None = None) -> None:
        """Send ``message`` on ``link`` (which has credit) through the adaptor, counted
        (count_send). Its producer's credit is the caller's to settle (Forwarder._deliver)."""
        count_send(link, presettled, address)
        self.io.transmit(link, message, presettled)

    def passed_on(self, out: CoreLink, producer: CoreLink, message: InFlight | None,
                  address: Address) -> bool:
        """The whole send of a message read from ``producer`` and queued for ``out`` by one of
        the adaptor's fast paths, which took no credit from ``producer`` for it (the
        forwarder takes one as it routes). ``message``: the unsettled message, None when
        pre-settled. The steps of count_send, then the credit rule of Forwarder._deliver: an
        unsettled message from a client holds a credit until its outcome (settled_upstream);
        anything else has left the router, and its credit comes back now (True).

        Stated here in full, not as calls of count_send and return_credit: this runs once per
        message on the fast paths, where each Python call costs about 2% of the router's
        instructions (tests/unit/test_sends.py checks the two forms agree)."""
        out.credit -= 1
        counters = out.counters
        counters.delivered += 1
        if message is None:
            counters.presettled += 1
        else:
            out.outstanding += 1
        if out.kind == DATA:
            address.counters.deliveries_transit += 1
        else:
            address.counters.deliveries_egress += 1
        if message is not None and producer.kind == ENDPOINT and not producer.via_edge:
            producer.credit -= 1
            message.credit_held = True
            return False
        producer.owed_credit += 1
        if not producer.credit_queued:
            producer.credit_queued = True
            self.credit_dirty.append(producer)
        return True

    def copies_passed_on(self, consumers: List[CoreLink], producer: CoreLink, address: Address) -> None:
        """A pre-settled copy of a message read from ``producer`` queued for each of
        ``consumers`` (local multicast's fast path): count_send for each, and the producer's
        credit back now, every copy having left. Stated in full for the reason passed_on
        gives."""
        for out in consumers:
            out.credit -= 1
            counters = out.counters
            counters.delivered += 1
            counters.presettled += 1
        address.counters.deliveries_egress += len(consumers)
        producer.owed_credit += 1
        if not producer.credit_queued:
            producer.credit_queued = True
            self.credit_dirty.append(producer)

    # ---- credit ------------------------------------------------------------------------
    def return_credit(self, link: CoreLink) -> None:
        """One credit owed to ``link``'s producer, whose message is done with here while its
        link is attached and its address routable (the caller knows): written out at the
        adaptor's next flush, or at once when half a window is owed (the adaptor's
        return_credit_now). ``link.credit`` is unchanged: the message never took one, or
        the caller gives it back."""
        link.owed_credit += 1
        if not link.credit_queued:
            link.credit_queued = True
            self.credit_dirty.append(link)

    def release_credit(self, link: CoreLink) -> None:
        """A message from ``link`` is done with here (sent on, or given an outcome) after the
        forwarder took a credit for it: the credit comes back, but only while the producer
        is attached and its address has somewhere to go (a sender to an address nobody
        consumes is held)."""
        if link.handle is None:
            return
        if link.anonymous or (link.address is not None and self._routable(link.address)):
            link.credit += 1
            self.return_credit(link)

    def _open_window(self, link: CoreLink) -> None:
        grant = link.capacity - link.credit
        if grant > 0 and link.handle is not None:
            link.owed_credit += grant
            link.credit += grant
            self.queue_credit(link)

    def queue_credit(self, link: CoreLink) -> None:
        """Have the adaptor look at ``link``'s owed credit at its next flush."""
        if not link.credit_queued:
            link.credit_queued = True
            self.credit_dirty.append(link)

    def recheck_held(self) -> None:
        """Held-back links get another look (a producer whose messages wait here uses up
        its credit without being owed more)."""
        if self.credit_held:
            for link in self.credit_held:
                self.queue_credit(link)
            self.credit_held.clear()

    def take_credit(self) -> List[CoreLink]:
        """Incoming links with credit to flush; the adaptor calls pn_link_flow for each."""
        dirty = self.credit_dirty
        if not dirty:
            return _EMPTY
        links = list(dirty)
        dirty.clear()  # cleared, not replaced: the hot paths hold its append method
        for link in links:
            link.credit_queued = False
        return links

    # ---- settling ----------------------------------------------------------------------
    def settled_upstream(self, message: InFlight) -> None:
        """``message``'s producer delivery is settled (its outcome given, or the producer
        settled first): the credit an unsettled message held while on its way (Forwarder.
        _deliver) comes back, once."""
        if message.credit_held:
            message.credit_held = False
            self.release_credit(message.in_link)

    def consumer_settled(self, link: CoreLink) -> None:
        """A delivery sent unsettled on ``link`` is settled (its consumer gave an outcome, or
        the producer settled first): one fewer outstanding."""
        link.outstanding -= 1


_EMPTY: List[CoreLink] = []
