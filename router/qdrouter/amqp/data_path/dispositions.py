"""Outcomes travelling back: a consumer's disposition on one of the router's outgoing
deliveries, copied to the producer's delivery. Hot path (one call per unsettled message).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Set, Tuple

from ...core.links import CoreLink, InFlight
from ...core.outcomes import ACCEPTED, MODIFIED, RECEIVED, REJECTED, RELEASED
from ..bindings.proton_ffi import lib
from ..bindings.proton_shim import QD_SETTLED, STATE_MASK, consumer_update


def disposition_handler(outgoing: Dict[Any, InFlight], dirty: Set[Any],
                        pending_outcomes: List[Tuple[InFlight, int]]) -> Callable[[InFlight, Any], None]:
    """The handler for a consumer's update of ``delivery``, an outgoing delivery the router
    tracks in ``outgoing`` (it carries ``message``). The outcome is copied to the producer's
    delivery; settling that is deferred to the flush (send_queue.sends_flusher) so both
    connections' work is batched."""
    settle = lib.pn_delivery_settle
    update = lib.pn_delivery_update
    outcomes_append = pending_outcomes.append
    dirty_add = dirty.add
    accepted = ACCEPTED
    accepted_settled = ACCEPTED | QD_SETTLED

    def consumer_disposition(message: InFlight, delivery: Any) -> None:
        result = consumer_update(delivery, accepted)
        in_delivery = message.delivery
        if result == accepted_settled:
            state = accepted  # the common case: the shim settled it already
        else:
            state = result & STATE_MASK
            if state and state != accepted and in_delivery is not None:
                copy_disposition(delivery, in_delivery, state)
            if not result & QD_SETTLED:
                if state and in_delivery is not None:
                    update(in_delivery, state)
                    dirty_add(message.in_link.connection)
                return
            settle(delivery)
        key = message.out_key
        del outgoing[key]
        link: CoreLink = message.out_link  # type: ignore[assignment]
        del link.unsettled[key]
        message.out_key = None
        link.outstanding -= 1  # Sends.consumer_settled, inline: once per unsettled message
        if state == accepted:
            link.counters.accepted += 1
        else:
            count_outcome(link, state)
        if in_delivery is not None:
            outcomes_append((message, state))

    return consumer_disposition


_STANDARD_STATES = frozenset((ACCEPTED, REJECTED, RELEASED, MODIFIED))


def copy_disposition(source: Any, target: Any, state: int) -> None:
    remote = lib.pn_delivery_remote(source)
    local = lib.pn_delivery_local(target)
    if state == REJECTED:
        condition = lib.pn_disposition_condition(remote)
        if lib.pn_condition_is_set(condition):
            copy = lib.pn_disposition_condition(local)
            lib.pn_condition_set_name(copy, lib.pn_condition_get_name(condition))
            lib.pn_condition_set_description(copy, lib.pn_condition_get_description(condition))
            lib.pn_data_copy(lib.pn_condition_info(copy), lib.pn_condition_info(condition))
    elif state == MODIFIED:
        lib.pn_disposition_set_failed(local, lib.pn_disposition_is_failed(remote))
        lib.pn_disposition_set_undeliverable(local, lib.pn_disposition_is_undeliverable(remote))
        lib.pn_data_copy(lib.pn_disposition_annotations(local), lib.pn_disposition_annotations(remote))
    elif state == RECEIVED:
        # Non-terminal: how much of the message the consumer has, as qdrouterd passes it on.
        lib.pn_disposition_set_section_number(local, lib.pn_disposition_get_section_number(remote))
        lib.pn_disposition_set_section_offset(local, lib.pn_disposition_get_section_offset(remote))
    elif state not in _STANDARD_STATES:
        # A state of the application's own (an extension outcome): its fields are its data.
        lib.pn_data_copy(lib.pn_disposition_data(local), lib.pn_disposition_data(remote))


def count_outcome(link: CoreLink, state: int) -> None:
    counters = link.counters
    if state == ACCEPTED:
        counters.accepted += 1
    elif state == RELEASED:
        counters.released += 1
    elif state == MODIFIED:
        counters.modified += 1
    elif state == REJECTED:
        counters.rejected += 1
