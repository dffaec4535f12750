"""AMQP across two meshes from the test process (through port-forwards into both clusters):
multicast to receivers on several routers, and round-trip times of unsettled messages."""

from __future__ import annotations

import statistics
import time
import uuid
from typing import Dict, List, Sequence

from tests.router.amqpclient import Net, msg


def multicast(urls: Dict[str, str], source: str, sinks: Sequence[str], count: int,
              timeout: float = 60) -> Dict[str, List[str]]:
    """``count`` messages to a multicast address (prefix ``mc/``) from ``source``, once every
    receiver on ``sinks`` is reachable (probes are sent until each has one: the address has to
    reach every router first); returns, for each sink, the bodies it received after the probes.
    Every message must be accepted."""
    address = f"mc/{uuid.uuid4().hex[:8]}"
    net = Net()
    try:
        receivers = {s: net.connect(f"amqp://{urls[s]}", timeout=60).receiver(address, credit=count + 1000)
                     for s in sinks}
        sender = net.connect(f"amqp://{urls[source]}", timeout=60).sender(address)
        started = time.monotonic()
        while not all(r.received for r in receivers.values()):
            missing = [s for s, r in receivers.items() if not r.received]
            assert time.monotonic() - started < timeout, f"no probe reached {missing} within {timeout:.0f} s"
            sender.send(msg("probe"))
            net.pump(0.5)
        bodies = [f"{source} multicast #{i}" for i in range(count)]
        tags = [sender.send(msg(b)) for b in bodies]
        net.wait(lambda: all(t in sender.outcomes for t in tags), timeout, f"outcomes of {count} multicasts")
        assert [sender.outcomes[t].name for t in tags] == ["accepted"] * count, sender.outcome_counts()
        net.wait(lambda: all(len([b for b in r.bodies() if b != "probe"]) >= count
                             for r in receivers.values()), timeout, f"{count} multicasts at every receiver")
        net.pump(1.0)  # a duplicate would arrive about now
        return {s: [str(b) for b in r.bodies() if b != "probe"] for s, r in receivers.items()}
    finally:
        net.close()


def round_trips(urls: Dict[str, str], source: str, sink: str, count: int, timeout: float = 60) -> List[float]:
    """Seconds from sending an unsettled message at ``source`` to its sender learning it was
    accepted by a receiver at ``sink``, one message at a time, ``count`` times (after one
    unmeasured message that waits for the address to reach ``source``)."""
    address = f"rtt/{uuid.uuid4().hex[:8]}"
    net = Net()
    try:
        net.connect(f"amqp://{urls[sink]}", timeout=60).receiver(address, credit=count + 1)
        sender = net.connect(f"amqp://{urls[source]}", timeout=60).sender(address)
        net.wait(lambda: sender.credit > 0, timeout, f"credit at {source} for a receiver at {sink}")
        times: List[float] = []
        for i in range(count + 1):
            started = time.monotonic()
            tag = sender.send(msg(f"rtt #{i}"))
            net.wait(lambda t=tag: t in sender.outcomes, timeout, f"the outcome of rtt #{i}")
            assert sender.outcomes[tag].name == "accepted", sender.outcome_counts()
            if i:
                times.append(time.monotonic() - started)
        return times
    finally:
        net.close()


def describe_times(times: Sequence[float]) -> str:
    ms = sorted(t * 1000 for t in times)
    return f"median {statistics.median(ms):.1f} ms, min {ms[0]:.1f} ms, max {ms[-1]:.1f} ms over {len(ms)}"
