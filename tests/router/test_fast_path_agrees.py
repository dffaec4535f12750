"""The fast path gives what the general path gives: random streams of messages, consumer
credit, settlements and consumers leaving, played at once against two routers, one on the
fast path (amqp/data_path/fast_path.py) and one on the reference path
(``QDROUTER_DATA_PATH=reference``, amqp/data_path/reference_path.py: every message read whole
and routed by the forwarder), end with the same deliveries in the same order (bodies,
settled or not, annotations), the same outcome at the sender for each message, and the same
credit left with the sender.

Each step waits for the state both routers must reach (how many messages each consumer
holds, how many outcomes the sender has), so the streams are compared at the same points.
Examples are derandomized: every run plays the same streams."""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Tuple

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from proton import symbol

from .amqpclient import ACCEPTED, MODIFIED, REJECTED, RELEASED, Client, Net, ReceiverLink, SenderLink, msg
from .fixtures import stop_checked
from .routerproc import Router

pytestmark = pytest.mark.qdmesh_only("the reference path is qdmesh's own (QDROUTER_DATA_PATH)")

# Bodies either side of the fast path's single read (64 KiB) and well past it (streamed).
SIZES = {"small": 16, "mid": 3000, "edge": 65_400, "large": 150_000}
ANNOTATIONS: List[Dict[Any, Any] | None] = [
    None, {symbol("app.key"): "kept"}, {symbol("x-opt-qd.trace"): ["0/Elsewhere"]}]
OUTCOMES = {"accept": ACCEPTED, "reject": REJECTED, "release": RELEASED, "modify": MODIFIED}
WAIT_S = 15.0

_send = st.tuples(st.just("send"), st.integers(1, 8),
                  st.sampled_from(["small", "small", "small", "mid", "edge", "large"]),
                  st.integers(0, len(ANNOTATIONS) - 1))
_credit = st.tuples(st.just("credit"), st.integers(0, 1), st.integers(1, 10))
_settle = st.tuples(st.just("settle"), st.integers(1, 6), st.sampled_from(sorted(OUTCOMES)))
_reattach = st.tuples(st.just("reattach"))

ANYCAST = st.tuples(st.sampled_from(["closest", "balanced"]), st.booleans(),
                    st.lists(st.one_of(_send, _credit, _send, _credit, _settle, _reattach),
                             min_size=6, max_size=12))
MULTICAST = st.tuples(st.just("multicast"), st.booleans(),
                      st.lists(st.one_of(_send, _credit), min_size=4, max_size=8))


@pytest.fixture(scope="module")
def routers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tuple[Router, Router]]:
    """The same router twice: on the fast path, and on the reference path."""
    fast = Router(tmp_path_factory.mktemp("fast"), "Fast")
    reference = Router(tmp_path_factory.mktemp("reference"), "Reference")
    started = []
    try:
        started.append(fast.start())
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("QDROUTER_DATA_PATH", "reference")
            started.append(reference.start())
        yield fast, reference
    finally:
        stop_checked(started)


@pytest.fixture(scope="module")
def module_net() -> Iterator[Net]:
    net = Net()
    yield net
    net.close()


_streams = iter(range(1_000_000))


class Side:
    """One router's clients for one stream: a sender, and its consumers (two for multicast)."""

    def __init__(self, net: Net, router: Router, address: str, presettled: bool, consumers: int) -> None:
        self.net = net
        self.name = router.router_id
        self.client: Client = net.connect(router.url)
        self.address = address
        self.receivers: List[ReceiverLink] = [self._receiver() for _ in range(consumers)]
        self.sender: SenderLink = self.client.sender(address, presettled=presettled)
        self.closed: List[ReceiverLink] = []

    def _receiver(self) -> ReceiverLink:
        return self.client.receiver(self.address, credit=0, refill=False, settle=None)

    def reattach(self) -> None:
        self.receivers[0].close()
        self.closed.append(self.receivers[0])
        self.receivers[0] = self._receiver()

    def observed(self) -> Tuple[Any, ...]:
        received = [[(r.message.body[:12], r.arrived_settled, _visible(r.message.annotations))
                     for r in receiver.received] for receiver in [*self.closed, *self.receivers]]
        outcomes = [(o.name, o.failed, o.undeliverable) if o is not None else None
                    for o in (self.sender.outcomes.get(tag) for tag in self.sender.tags)]
        return received, outcomes


def _visible(annotations: Dict[Any, Any] | None) -> Dict[str, Any]:
    return {str(key): value for key, value in (annotations or {}).items()}


def _body(index: int, size: str) -> str:
    return f"{index:06d}".ljust(SIZES[size], "x")


# No shrinking: a failing stream is short as generated, and shrinking one that diverges
# would wait out WAIT_S at each try.
@settings(max_examples=40, deadline=None, derandomize=True, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.one_of(ANYCAST, ANYCAST, MULTICAST))
def test_the_fast_path_and_the_reference_path_agree(
        routers: Tuple[Router, Router], module_net: Net, stream: Tuple[Any, ...]) -> None:
    distribution, presettled, steps = stream
    address = f"{distribution}/agree.{next(_streams)}"
    consumers = 2 if distribution == "multicast" else 1
    net = module_net
    sides = [Side(net, router, address, presettled, consumers) for router in routers]
    net.wait(lambda: all(side.sender.credit > 0 for side in sides), WAIT_S, "credit for both senders")
    # What both routers must reach after each step: messages each consumer has received,
    # outcomes the sender has.
    sent = 0
    before = 0  # messages taken by consumers that have left
    granted = [0] * consumers
    outcomes = 0
    for step in steps:
        if step[0] == "send":
            _, count, size, annotations = step
            for side in sides:
                for index in range(sent, sent + count):
                    side.sender.send(msg(_body(index, size), annotations=ANNOTATIONS[annotations]))
            sent += count
        elif step[0] == "credit":
            _, which, count = step
            which %= consumers
            granted[which] += count
            for side in sides:
                side.receivers[which].flow(count)
        elif step[0] == "settle":
            _, count, outcome = step
            settled = {side.receivers[0].settle_unsettled(OUTCOMES[outcome], count=count) for side in sides}
            assert len(settled) == 1, f"the two routers left different numbers unsettled: {settled}"
            outcomes += settled.pop()
        else:
            held = {len(side.receivers[0].unsettled) for side in sides}
            assert len(held) == 1, f"the two consumers held different numbers unsettled: {held}"
            outcomes += held.pop()  # given back to the sender as modified
            before += len(sides[0].receivers[0].received)
            for side in sides:
                side.reattach()
            granted[0] = 0
        if distribution == "multicast":
            expected = [min(granted[i], sent) for i in range(consumers)]
            if not presettled:
                outcomes = min(expected)  # accepted once every copy has left
        else:
            expected = [min(granted[0], sent - before)]
        for side in sides:
            net.wait(lambda side=side, expected=expected, outcomes=outcomes:
                     [len(r.received) for r in side.receivers] == expected
                     and (presettled or len(side.sender.outcomes) == outcomes), WAIT_S,
                     f"{expected} received and {outcomes} outcomes after {step} ({side.name}: "
                     f"{[len(r.received) for r in side.receivers]} and {len(side.sender.outcomes)})")
    fast, reference = sides
    assert fast.observed() == reference.observed()
    try:
        net.wait(lambda: fast.sender.credit == reference.sender.credit, WAIT_S, "the same credit")
    finally:
        assert fast.sender.credit == reference.sender.credit
        for side in sides:
            side.client.close(wait=False)
