"""Credit handed back to producers: the router grants a producer credit only as its messages
leave (pre-settled ones) or get their outcome (unsettled ones), and while its address has
somewhere to go. The forwarder owes it;
the adaptor flushes it (take_credit) in batches."""

from __future__ import annotations

from typing import Any, List, Set

from .address_table import Address
from .links import CoreLink, InFlight


class ProducerCredit:
    def __init__(self) -> None:
        # Incoming links owed credit since the adaptor last flushed, each once (its
        # credit_queued flag): queue_credit, or inline on the hot paths.
        self.credit_dirty: List[CoreLink] = []
        # Links the adaptor held back, owing less than a batch while their producer still
        # has plenty: looked at again when owed more, or at the next tick (recheck_held).
        self.credit_held: Set[CoreLink] = set()

    def _routable(self, address: Address) -> bool:
        raise NotImplementedError

    def _release_credit(self, link: CoreLink) -> None:
        # Credit returns only while the producer's address has somewhere to go.
        if link.handle is None:
            return
        if link.anonymous or self._routable(link.address):
            link.owed_credit += 1
            link.credit += 1
            self.queue_credit(link)

    def settled_upstream(self, message: InFlight) -> None:
        """``message``'s producer delivery is settled (its outcome given, or the producer
        settled first): the credit an unsettled message held while on its way (Forwarder.
        _deliver) comes back, once."""
        if message.credit_held:
            message.credit_held = False
            self._release_credit(message.in_link)

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


_EMPTY: List[Any] = []
