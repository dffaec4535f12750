"""What a consumer may tell a producer besides a terminal outcome, as a client does it with
proton: the non-terminal Received state (how much of the message it has: AMQP 1.0 3.4.1), and a
state of the application's own (an extension outcome, with its own descriptor and fields)."""

from __future__ import annotations

from typing import Any, List, Tuple

from tests.router.amqpclient import Net, ReceiverLink, SenderLink

RECEIVED = 0x23
#: A descriptor no AMQP outcome uses: an application's own terminal state.
CUSTOM_STATE = 0xAA
CUSTOM_FIELDS = ["stored-in", "archive-7", 42]


def report_received(receiver: ReceiverLink, section_number: int, section_offset: int) -> None:
    """Tell the producer of each unsettled delivery how far it has been received."""
    for delivery in receiver.unsettled:
        delivery.local.section_number = section_number
        delivery.local.section_offset = section_offset
        delivery.update(RECEIVED)


def settle_custom(receiver: ReceiverLink, fields: List[Any]) -> None:
    for delivery in receiver.unsettled:
        delivery.local.data = fields
        delivery.update(CUSTOM_STATE)
        delivery.settle()
    receiver.unsettled = []


def exchange(net: Net, receiver: ReceiverLink, sender: SenderLink, tags: List[str]) -> List[Tuple[Any, ...]]:
    """Received(3, 7) then the custom state, for the unsettled messages ``tags``; what the
    sender saw of each: [(progress, final state, final fields)]."""
    report_received(receiver, 3, 7)
    net.wait(lambda: all(sender.progress.get(tag) for tag in tags), 10, "Received at the sender")
    assert not any(tag in sender.outcomes for tag in tags), "a non-terminal state settled the delivery"
    settle_custom(receiver, CUSTOM_FIELDS)
    net.wait(lambda: all(tag in sender.outcomes for tag in tags), 10, "the custom outcome at the sender")
    return [(sender.progress[tag][-1], sender.outcomes[tag].state, sender.outcomes[tag].data) for tag in tags]


EXPECTED = ((RECEIVED, 3, 7), CUSTOM_STATE, CUSTOM_FIELDS)
