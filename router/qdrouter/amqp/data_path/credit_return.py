"""Credit back to producers: in batches, and early when half a window is owed.

A mixin of DeliveryAdaptor (amqp/data_path/deliveries.py), which gives it ``forwarder`` and ``dirty``.
"""

from __future__ import annotations

from typing import Any, Set

from ...core.forwarder import Forwarder
from ...core.links import ENDPOINT, CoreLink
from ..bindings.proton_ffi import lib


class CreditReturn:
    forwarder: Forwarder
    dirty: Set[Any]
    # A graceful drain (amqp/loop/drain.py): clients' producers get no more credit, so what is in
    # flight can settle while nothing new arrives; inter-router links keep theirs.
    clients_credit_stopped = False

    def stop_client_credit(self) -> None:
        self.clients_credit_stopped = True

    def _withheld(self, link: CoreLink) -> bool:
        if (self.clients_credit_stopped and link.kind == ENDPOINT) or link.connection.retiring:
            link.owed_credit = 0
            return True
        return False

    def return_credit_now(self, link: CoreLink) -> None:
        """Give a producer the credit it is owed, and write it out, in the middle of a batch.

        One loop turn reads all a producer sent (its whole window, when it keeps up) before
        handling any of it. Credit returned only at the end of the turn leaves the producer
        idle while the router works through the window, and the router idle while the
        producer refills it. Returning half the window as soon as it is owed lets the two
        work at the same time (qdrouterd's I/O threads and core thread overlap the same way).
        """
        handle = link.handle
        if handle is None or self._withheld(link):
            return
        lib.pn_link_flow(handle, link.owed_credit)
        link.owed_credit = 0
        connection = link.connection
        connection.write()
        self.dirty.add(connection)

    def flush_credit(self) -> None:
        """Return owed credit in batches of at least an eighth of the window, or at once when
        the producer is nearly out: fewer, larger flow frames mean fewer, larger writes
        from the producer, which is what keeps per-message syscall cost down."""
        forwarder = self.forwarder
        held_back = []
        for link in forwarder.take_credit():
            owed = link.owed_credit
            if link.handle is None or owed <= 0 or self._withheld(link):
                link.owed_credit = 0
                continue
            batch = link.capacity >> 3 or 1
            if owed < batch and link.credit - owed > batch:
                held_back.append(link)
                continue
            lib.pn_link_flow(link.handle, owed)
            link.owed_credit = 0
            self.dirty.add(link.connection)
        if held_back:
            # Not looked at again every loop turn: a link is queued again when owed more.
            forwarder.credit_held.update(held_back)
