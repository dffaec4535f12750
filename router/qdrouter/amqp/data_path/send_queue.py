"""The send queue's flush: the proton sends the router decided during a run of delivery
events, and the outcomes owed to producers, done in one batch (hot path)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Tuple

from ...core.outcomes import ACCEPTED, RELEASED
from ..bindings.proton_shim import finish, send, send_settled
from .dispositions import count_outcome
from .outbound import FRAME_OVERHEAD

if TYPE_CHECKING:
    from .deliveries import DeliveryAdaptor


def sends_flusher(adaptor: DeliveryAdaptor) -> Callable[[], None]:
    """Proton sends, batched at the end of each run of delivery events.

    Deferring them keeps proton from queueing a PN_TRANSPORT event per message (it
    drops an event equal to the last one queued), and every send goes through this one
    list, so messages keep their order per link whichever path chose the link. The
    event loop flushes before any event other than a delivery, so the core's view and
    proton's never disagree when credit, detach or close events are handled."""
    pending = adaptor.pending_sends
    # Unsettled deliveries are tagged with a counter's 8 bytes.
    tag_count = 0
    dirty_add = adaptor.dirty.add
    outgoing = adaptor.outgoing
    finish_incoming = adaptor.finish_incoming
    outcomes = adaptor.pending_outcomes
    accepted = ACCEPTED
    settled_upstream = adaptor.forwarder.settled_upstream
    credit_dirty_append = adaptor.forwarder.credit_dirty.append
    account = adaptor.outbound.account
    overhead = FRAME_OVERHEAD

    def flush_sends() -> None:
        nonlocal tag_count
        if len(pending) > 1 and pending[0][0] is not pending[-1][0]:
            # Sends to several links (multicast copies, balanced turns) are made link by
            # link, each link's in its own order: proton queues a PN_TRANSPORT event per
            # send whose connection differs from the previous send's (it drops only an
            # event equal to the last one queued), and each costs the event loop four
            # proton calls. Interleaved, 1->4 multicast raised four per message.
            pending.sort(key=_link_identity)
        count = tag_count
        last_link: Any = None
        # Bytes handed to proton for last_link's connection since its run began: counted
        # against the connection's output limit once per run (amqp/data_path/outbound.py).
        run_bytes = 0
        for link, payload, message in pending:
            handle = link.handle
            if handle is None:
                # The consumer left before the send: nothing reached it.
                if message is not None:
                    finish_incoming(message, RELEASED)
                continue
            if link is not last_link:
                if run_bytes:
                    account(last_link.connection, run_bytes)
                    run_bytes = 0
                dirty_add(link.connection)
                last_link = link
            size = len(payload)
            run_bytes += size + overhead
            if message is None:
                send_settled(handle, payload, size)
            else:
                count += 1
                key = send(handle, count, payload, size)
                message.out_link = link
                message.out_key = key
                link.unsettled[key] = message
                outgoing[key] = message
        if run_bytes:
            account(last_link.connection, run_bytes)
        tag_count = count
        pending.clear()
        # Every payload taken from the fast path's arena (PyPy) has been sent: proton copied it.
        adaptor.arena_used = 0
        last_link = None
        for message, outcome in outcomes:
            delivery = message.delivery
            if delivery is None:
                continue  # the producer settled first, or left
            message.delivery = None
            in_link = message.in_link
            del in_link.unsettled[message.delivery_key]
            finish(delivery, outcome)
            if outcome == accepted:
                in_link.counters.accepted += 1
            else:
                count_outcome(in_link, outcome)
            if in_link is not last_link:
                dirty_add(in_link.connection)
                last_link = in_link
            if message.credit_held:
                # The credit it held comes back (Sends.settled_upstream, inline for the
                # common case, an address that still has consumers here: this runs once per
                # unsettled message, and a call costs about 1% of the router's instructions).
                address = in_link.address
                if address is not None and address.consumers and in_link.handle is not None:
                    message.credit_held = False
                    in_link.owed_credit += 1
                    in_link.credit += 1
                    if not in_link.credit_queued:
                        in_link.credit_queued = True
                        credit_dirty_append(in_link)
                else:
                    settled_upstream(message)
        outcomes.clear()

    return flush_sends


def _link_identity(send: Tuple[Any, ...]) -> int:
    return id(send[0])
