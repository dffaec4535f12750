#!/usr/bin/env python3
"""The soak's AMQP clients (bench/soak.py), on proton's Container: one workload per process.

    python soak_clients.py churn    --url U --rate 50 --duration 60   # open, attach, send 3, close
    python soak_clients.py links    --url U --rate 50 --duration 60   # link churn, one connection
    python soak_clients.py replyto  --url U --rate 20 --duration 60   # dynamic reply-to churn
    python soak_clients.py traffic  --url U --consumer-url V --address A [--presettled] ...

Each keeps its own consumer where it needs one (so a sender always has credit), runs for
--duration seconds (or until SIGTERM/SIGINT), then stops starting work, waits up to --drain
seconds for what is in flight, and prints one JSON line: what it did, and the fate of every
unsettled message it sent (``sent_unsettled`` = outcomes + ``lost``: sent on a connection that
died before an outcome came back, + ``pending``: still without one when it stopped).
Senders only ever count their own messages; a message counts once, whatever its outcome.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from typing import Any, Dict, List

from proton import Delivery, Message
from proton.handlers import MessagingHandler
from proton.reactor import AtMostOnce, Container

TICK_S = 0.05


class Tally:
    """Outcomes of a client's unsettled messages, and what it did."""

    def __init__(self) -> None:
        self.counts: Dict[str, int] = {
            "connections": 0, "links": 0, "sent_unsettled": 0, "sent_presettled": 0,
            "accepted": 0, "rejected": 0, "released": 0, "modified": 0, "lost": 0,
            "received": 0, "replies": 0, "connection_errors": 0,
        }

    def add(self, name: str, n: int = 1) -> None:
        self.counts[name] += n

    def outcome(self, delivery: Delivery) -> None:
        state = delivery.remote_state
        name = {Delivery.ACCEPTED: "accepted", Delivery.REJECTED: "rejected",
                Delivery.RELEASED: "released", Delivery.MODIFIED: "modified"}.get(state)
        if name is not None:
            self.counts[name] += 1

    def result(self, pending: int, started: float) -> Dict[str, Any]:
        c = dict(self.counts)
        c["pending"] = pending
        outcomes = c["accepted"] + c["rejected"] + c["released"] + c["modified"]
        c["outcomes"] = outcomes
        c["unaccounted"] = c["sent_unsettled"] - outcomes - c["lost"] - pending
        c["seconds"] = round(time.monotonic() - started, 2)
        return c


class Paced(MessagingHandler):  # type: ignore[misc]
    """Starts ``rate`` units of work a second until ``duration`` is up or a stop is asked,
    then drains: the process ends when nothing is in flight or the drain time is over."""

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(auto_accept=True, auto_settle=True)
        self.args = args
        self.tally = Tally()
        self.started = time.monotonic()
        self.deadline = self.started + args.duration
        self.stopping = False
        self.drain_deadline = 0.0
        self.begun = 0
        self.container: Any = None

    def on_start(self, event: Any) -> None:
        self.container = event.container
        self.setup(event.container)
        event.container.schedule(TICK_S, self)

    def on_timer_task(self, event: Any) -> None:
        now = time.monotonic()
        if not self.stopping and (now >= self.deadline or STOP_ASKED):
            self.stopping = True
            self.drain_deadline = now + self.args.drain
        if not self.stopping:
            due = int((now - self.started) * self.args.rate) - self.begun
            for _ in range(min(due, self.args.burst)):
                if self.in_flight() >= self.args.concurrency:
                    break
                self.begun += 1
                self.begin_one(event.container)
        elif self.in_flight() == 0 or now >= self.drain_deadline:
            self.finish(event.container)
            return
        event.container.schedule(TICK_S, self)

    def finish(self, container: Any) -> None:
        print(json.dumps({"client": self.args.command, **self.tally.result(self.pending(), self.started)}),
              flush=True)
        container.stop()

    # Subclasses: ---------------------------------------------------------------------
    def setup(self, container: Any) -> None:
        pass

    def begin_one(self, container: Any) -> None:
        raise NotImplementedError

    def in_flight(self) -> int:
        return 0

    def pending(self) -> int:
        return 0


class Consumer(MessagingHandler):  # type: ignore[misc]
    """A long-lived receiver (accepting), reconnecting whenever its connection drops."""

    def __init__(self, url: str, address: str, tally: Tally) -> None:
        super().__init__(prefetch=100, auto_accept=True)
        self.url = url
        self.address = address
        self.tally = tally

    def start(self, container: Any) -> None:
        connection = container.connect(self.url, handler=self, reconnect=False)
        container.create_receiver(connection, self.address)

    def on_message(self, event: Any) -> None:
        self.tally.add("received")

    def on_transport_closed(self, event: Any) -> None:
        self.tally.add("connection_errors")
        event.container.schedule(0.5, _Restart(self))

    def on_transport_error(self, event: Any) -> None:
        pass


class _Restart:
    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer

    def on_timer_task(self, event: Any) -> None:
        self.consumer.start(event.container)


# ---- connection churn ---------------------------------------------------------------------
class ChurnConnection(MessagingHandler):  # type: ignore[misc]
    """One short connection: attach a sender, send 3 unsettled, close once all 3 have outcomes."""

    def __init__(self, owner: Churn) -> None:
        super().__init__(auto_settle=True)
        self.owner = owner
        self.sent = 0
        self.settled = 0
        self.done = False

    def on_sendable(self, event: Any) -> None:
        while self.sent < 3 and event.sender.credit > 0:
            event.sender.send(Message(body=f"churn {self.sent}"))
            self.sent += 1
            self.owner.tally.add("sent_unsettled")

    def _outcome(self, event: Any) -> None:
        self.owner.tally.outcome(event.delivery)
        self.settled += 1
        if self.settled == 3:
            event.connection.close()

    on_accepted = on_rejected = on_released = _outcome

    def on_transport_closed(self, event: Any) -> None:
        if self.done:
            return
        self.done = True
        if self.settled < 3:
            self.owner.tally.add("connection_errors")
            self.owner.tally.add("lost", self.sent - self.settled)
        self.owner.live.remove(self)

    def on_transport_error(self, event: Any) -> None:
        pass


class Churn(Paced):
    def setup(self, container: Any) -> None:
        self.live: List[ChurnConnection] = []
        Consumer(self.args.consumer_url or self.args.url, self.args.address, self.tally).start(container)

    def begin_one(self, container: Any) -> None:
        handler = ChurnConnection(self)
        self.live.append(handler)
        connection = container.connect(self.args.url, handler=handler, reconnect=False)
        container.create_sender(connection, self.args.address)
        self.tally.add("connections")
        self.tally.add("links")

    def in_flight(self) -> int:
        return len(self.live)

    def pending(self) -> int:
        return sum(h.sent - h.settled for h in self.live)


# ---- link churn on one long-lived connection ------------------------------------------------
class LinkChurn(Paced):
    """Each unit: a sender link attached, one unsettled message, the link detached on its outcome."""

    def setup(self, container: Any) -> None:
        self.live: Dict[Any, int] = {}
        Consumer(self.args.consumer_url or self.args.url, self.args.address, self.tally).start(container)
        self.connection = container.connect(self.args.url, handler=self, reconnect=False)
        self.tally.add("connections")
        self.broken = False

    def begin_one(self, container: Any) -> None:
        if self.broken:
            return
        sender = container.create_sender(self.connection, self.args.address, name=f"soak-link-{self.begun}")
        self.live[sender.name] = 0
        self.tally.add("links")

    def on_sendable(self, event: Any) -> None:
        name = event.sender.name
        if self.live.get(name) == 0:
            event.sender.send(Message(body="link churn"))
            self.live[name] = 1
            self.tally.add("sent_unsettled")

    def _outcome(self, event: Any) -> None:
        self.tally.outcome(event.delivery)
        self.live.pop(event.link.name, None)
        event.link.close()

    on_accepted = on_rejected = on_released = _outcome

    def on_transport_closed(self, event: Any) -> None:
        self.broken = True
        self.tally.add("connection_errors")
        self.tally.add("lost", sum(self.live.values()))
        self.live.clear()

    def on_transport_error(self, event: Any) -> None:
        pass

    def finish(self, container: Any) -> None:
        super().finish(container)
        if not self.broken:
            self.connection.close()

    def in_flight(self) -> int:
        return len(self.live)

    def pending(self) -> int:
        return sum(self.live.values())


# ---- dynamic reply-to churn ---------------------------------------------------------------
class Responder(MessagingHandler):  # type: ignore[misc]
    """Answers each request on the service address to its reply-to (anonymous sender)."""

    def __init__(self, url: str, address: str) -> None:
        super().__init__(auto_accept=True)
        self.url = url
        self.address = address

    def start(self, container: Any) -> None:
        self.connection = container.connect(self.url, handler=self, reconnect=False)
        container.create_receiver(self.connection, self.address)
        self.sender = container.create_sender(self.connection, None, options=AtMostOnce())

    def on_message(self, event: Any) -> None:
        if event.message.reply_to and self.sender.credit > 0:
            self.sender.send(Message(address=event.message.reply_to, body="reply",
                                     correlation_id=event.message.correlation_id))


class ReplyTo(Paced):
    """Each unit: a dynamic receiver attached, a request sent with its address as reply-to,
    the receiver detached when the reply comes."""

    def setup(self, container: Any) -> None:
        self.live: Dict[str, Any] = {}
        Responder(self.args.consumer_url or self.args.url, self.args.address).start(container)
        self.connection = container.connect(self.args.url, handler=self, reconnect=False)
        self.requests = container.create_sender(self.connection, self.args.address)
        self.tally.add("connections")
        self.broken = False
        self.outstanding = 0

    def begin_one(self, container: Any) -> None:
        if self.broken:
            return
        receiver = container.create_receiver(self.connection, None, dynamic=True,
                                             name=f"soak-reply-{self.begun}")
        self.live[receiver.name] = receiver
        self.tally.add("links")

    def on_link_opened(self, event: Any) -> None:
        link = event.link
        if link.is_receiver and link.name in self.live and link.remote_source.address:
            self.requests.send(Message(body="request", reply_to=link.remote_source.address,
                                       correlation_id=link.name))
            self.outstanding += 1
            self.tally.add("sent_unsettled")

    def on_message(self, event: Any) -> None:
        self.tally.add("replies")
        receiver = self.live.pop(str(event.message.correlation_id), None)
        if receiver is not None:
            receiver.close()

    def _outcome(self, event: Any) -> None:
        self.tally.outcome(event.delivery)
        self.outstanding -= 1

    on_accepted = on_rejected = on_released = _outcome

    def on_transport_closed(self, event: Any) -> None:
        self.broken = True
        self.tally.add("connection_errors")
        self.tally.add("lost", self.outstanding)
        self.outstanding = 0
        self.live.clear()

    def on_transport_error(self, event: Any) -> None:
        pass

    def finish(self, container: Any) -> None:
        super().finish(container)
        if not self.broken:
            self.connection.close()

    def in_flight(self) -> int:
        return len(self.live) + self.outstanding

    def pending(self) -> int:
        return self.outstanding


# ---- steady traffic through an address ------------------------------------------------------
class Traffic(Paced):
    """A long-lived sender (unsettled, or pre-settled with --presettled) at --rate messages a
    second; consumers on --consumer-url (comma-separated: one per URL) keep the address fed."""

    def setup(self, container: Any) -> None:
        for url in (self.args.consumer_url or self.args.url).split(","):
            Consumer(url, self.args.address, self.tally).start(container)
        self.connection = container.connect(self.args.url, handler=self, reconnect=False)
        options = AtMostOnce() if self.args.presettled else None
        self.sender = container.create_sender(self.connection, self.args.address, options=options)
        self.tally.add("connections")
        self.tally.add("links")
        self.outstanding = 0
        self.broken = False

    def begin_one(self, container: Any) -> None:
        if self.broken or self.sender.credit <= 0:
            self.begun -= 1  # no credit: the rate is what the consumers allow
            return
        self.sender.send(Message(body="traffic"))
        if self.args.presettled:
            self.tally.add("sent_presettled")
        else:
            self.outstanding += 1
            self.tally.add("sent_unsettled")

    def _outcome(self, event: Any) -> None:
        self.tally.outcome(event.delivery)
        self.outstanding -= 1

    on_accepted = on_rejected = on_released = _outcome

    def on_transport_closed(self, event: Any) -> None:
        self.broken = True
        self.tally.add("connection_errors")
        self.tally.add("lost", self.outstanding)
        self.outstanding = 0

    def on_transport_error(self, event: Any) -> None:
        pass

    def finish(self, container: Any) -> None:
        super().finish(container)
        if not self.broken:
            self.connection.close()

    def in_flight(self) -> int:
        return self.outstanding

    def pending(self) -> int:
        return self.outstanding


WORKLOADS = {"churn": Churn, "links": LinkChurn, "replyto": ReplyTo, "traffic": Traffic}
STOP_ASKED = False


def _ask_stop(signum: int, frame: Any) -> None:
    global STOP_ASKED
    STOP_ASKED = True


def parse_args(argv: List[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("command", choices=sorted(WORKLOADS))
    p.add_argument("--url", required=True, help="where the workload's sender connects")
    p.add_argument("--consumer-url", default=None, help="where its consumers connect (default --url)")
    p.add_argument("--address", default="closest/soak")
    p.add_argument("--rate", type=float, default=20.0, help="units of work started per second")
    p.add_argument("--concurrency", type=int, default=50, help="at most this many in flight")
    p.add_argument("--burst", type=int, default=200, help="at most this many started per tick")
    p.add_argument("--duration", type=float, default=60.0)
    p.add_argument("--drain", type=float, default=10.0, help="seconds to wait for in-flight work")
    p.add_argument("--presettled", action="store_true", help="traffic: send pre-settled")
    return p.parse_args(argv)


def main(argv: List[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _ask_stop)
    signal.signal(signal.SIGINT, _ask_stop)
    Container(WORKLOADS[args.command](args)).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
