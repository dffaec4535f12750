"""A producer sending unsettled messages without pause while a router is stopped, and what it
hears back: shared by tests/mesh/test_drain.py and bench/drain_outcomes.py."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List

from tests.router.amqpclient import Net, ReceiverLink, SenderLink, msg

# Unsettled deliveries the producer keeps in flight at most (its own window, below the
# router's credit of 250): enough to keep several in every hop at once.
WINDOW = 50


@dataclass
class Tally:
    """What the producer's deliveries became: an outcome each, or unknown (the connection
    dropped before any came)."""

    sent: int = 0
    outcomes: Dict[str, int] = field(default_factory=dict)
    unknown: int = 0
    received: int = 0  # at the consumers
    duplicates: int = 0  # bodies the consumers got more than once

    @property
    def lost(self) -> int:
        """Deliveries whose fate the producer cannot know."""
        return self.unknown

    def row(self) -> Dict[str, int]:
        return {"sent": self.sent, **{name: self.outcomes.get(name, 0)
                                      for name in ("accepted", "released", "modified", "rejected")},
                "unknown": self.unknown, "received": self.received, "duplicates": self.duplicates}


def stream(net: Net, snd: SenderLink, until: Callable[[], bool], timeout: float,
           window: int = WINDOW) -> None:
    """Send numbered messages whenever the producer has credit and fewer than ``window``
    unsettled, until ``until()`` (or ``timeout`` seconds: a failure)."""
    deadline = time.monotonic() + timeout
    while not until():
        if time.monotonic() > deadline:
            raise AssertionError(f"stream: condition not met within {timeout}s")
        alive = snd.client.alive and not snd.remote_closed
        while alive and snd.credit > 0 and len(snd.tags) - len(snd.outcomes) < window:
            snd.send(msg(snd.sent))
        net.process()


def settle_all(net: Net, snd: SenderLink, timeout: float) -> None:
    """Wait for an outcome for every delivery, or for the producer's connection to go."""
    try:
        net.wait(lambda: snd.all_settled() or not snd.client.alive, timeout, "every outcome")
    except AssertionError:
        pass
    net.pump(0.3)  # outcomes written just before a close arrive with it


def tally(snd: SenderLink, receivers: List[ReceiverLink]) -> Tally:
    result = Tally(sent=len(snd.tags))
    for tag in snd.tags:
        outcome = snd.outcomes.get(tag)
        if outcome is None:
            result.unknown += 1
        else:
            result.outcomes[outcome.name] = result.outcomes.get(outcome.name, 0) + 1
    bodies = [body for receiver in receivers for body in receiver.bodies()]
    result.received = len(bodies)
    result.duplicates = len(bodies) - len(set(bodies))
    return result
