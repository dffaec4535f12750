"""AMQP clients that behave badly on purpose, on proton's engine over a plain socket.

The test suite's usual clients (tests/router/amqpclient.py) share one event loop that reads
every socket. A hostile consumer must be able to stop reading its socket while the producer
next to it goes on, so each RawClient here is its own socket and transport, pumped only
when the test says so.
"""

from __future__ import annotations

import select
import socket
import time
from typing import Callable, List

from proton import Collector, Connection, Delivery, Link, Message, Transport

# The most credit AMQP lets a receiver grant at once (a uint; proton takes an int).
UNLIMITED_CREDIT = 2**31 - 1


class RawClient:
    """One AMQP connection: a socket, a proton transport, pumped by hand."""

    def __init__(self, url: str, receive_buffer: int | None = None,
                 incoming_capacity: int | None = None, hostname: str | None = None) -> None:
        host, port = url.split("//")[-1].rsplit(":", 1)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if receive_buffer:
            # Set before connecting, so the window the kernel offers stays small.
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        self.sock.connect((host, int(port)))
        self.sock.setblocking(False)
        self.transport = Transport()
        self.connection = Connection()
        self.collector = Collector()
        self.connection.collect(self.collector)
        self.transport.bind(self.connection)
        self.connection.container = f"hostile-{id(self)}"
        self.connection.hostname = hostname or host  # (a policy's vhost)
        self.connection.open()
        self.session = self.connection.session()
        if incoming_capacity:
            # The session's incoming window: how many bytes the peer may send before this
            # client takes some off its links.
            self.session.incoming_capacity = incoming_capacity
        self.session.open()
        self.closed = False

    def pump(self, seconds: float = 0.0, read: bool = True) -> None:
        """Write what the transport has; with ``read``, also read what the socket has.
        Waits up to ``seconds`` for the socket to be ready once. Heartbeats go out as the
        router's idle timeout asks (a consumer taking one long message says nothing else)."""
        self.transport.tick(time.monotonic())
        self._write()
        if self.closed:
            return
        readers = [self.sock] if read else []
        writers = [self.sock] if self.transport.pending() > 0 else []
        ready_r, _, _ = select.select(readers, writers, [], seconds)
        if ready_r:
            self._read()
        self._write()
        while self.collector.peek():
            self.collector.pop()

    def _read(self) -> None:
        """What the socket has, as much as the transport takes (a frame or so at a time)."""
        for _ in range(64):
            capacity = self.transport.capacity()
            if capacity <= 0:
                return
            try:
                data = self.sock.recv(capacity)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data = b""
            if not data:
                self.closed = True
                self.transport.close_tail()
                return
            self.transport.push(data)

    def _write(self) -> None:
        while not self.closed:
            pending = self.transport.pending()
            if pending <= 0:
                return
            try:
                sent = self.sock.send(self.transport.peek(pending))
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self.closed = True
                return
            self.transport.pop(sent)

    def wait(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            self.pump(0.05)

    def receiver(self, address: str, credit: int) -> Link:
        link = self.session.receiver(f"rx-{address}-{id(self)}")
        link.source.address = address
        link.target.address = address
        link.open()
        link.flow(credit)
        self.wait(lambda: bool(link.state & Link.REMOTE_ACTIVE), 10, f"attach of a receiver from {address}")
        return link

    def sender(self, address: str, presettled: bool = False) -> Link:
        link = self.session.sender(f"tx-{address}-{id(self)}")
        link.target.address = address
        if presettled:
            link.snd_settle_mode = Link.SND_SETTLED
        link.open()
        self.wait(lambda: bool(link.state & Link.REMOTE_ACTIVE), 10, f"attach of a sender to {address}")
        return link

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
        self.closed = True


class Flood:
    """A producer that sends ``payload`` whenever it has credit (it never waits for
    outcomes), and counts what it sent and what was settled."""

    def __init__(self, client: RawClient, address: str, size: int, presettled: bool = False,
                 limit: int | None = None) -> None:
        self.client = client
        # Sends no more than this many messages (None: no limit).
        self.limit = limit
        self.link = client.sender(address, presettled)
        self.presettled = presettled
        message = Message(body=b"x" * size, address=address)
        self.encoded = message.encode()
        self.sent = 0
        self.unsettled: List[Delivery] = []

    def run(self, seconds: float) -> None:
        """Send for ``seconds``, whenever there is credit."""
        deadline = time.monotonic() + seconds
        link = self.link
        while time.monotonic() < deadline:
            while (link.credit > 0 and self.client.transport.pending() < 4 * 1024 * 1024
                   and (self.limit is None or self.sent < self.limit)):
                delivery = link.delivery(str(self.sent).encode())
                link.send(self.encoded)
                link.advance()
                if self.presettled:
                    delivery.settle()
                else:
                    self.unsettled.append(delivery)
                self.sent += 1
            self.client.pump(0.01)
            if self.unsettled:
                self._collect()

    def _collect(self) -> None:
        still = []
        for delivery in self.unsettled:
            if delivery.remote_state or delivery.settled:
                delivery.settle()
            else:
                still.append(delivery)
        self.unsettled = still

    @property
    def in_flight(self) -> int:
        """Unsettled deliveries sent and not yet given an outcome."""
        self._collect()
        return len(self.unsettled)


class LargeSend:
    """Sends one message whose body is ``size`` bytes, a piece at a time as the socket takes
    them: the client never holds it whole (a 1 GB message costs it a few MB). The body is
    a data section of a repeating pattern, so the consumer can check every byte."""

    PIECE = 256 * 1024

    def __init__(self, client: RawClient, address: str, size: int, presettled: bool = False,
                 link: Link | None = None) -> None:
        self.client = client
        self.link = link if link is not None else client.sender(address, presettled)
        self.presettled = presettled
        head = bytes(Message(address=address).encode()) + b"\x00Su\xb0" + size.to_bytes(4, "big")
        self.total = len(head) + size
        self.head = head
        self.size = size
        self.offset = 0
        self.delivery: Delivery | None = None

    def run(self, seconds: float) -> None:
        """Send (and take the router's answers) for ``seconds``."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.delivery is None:
                if self.link.credit <= 0:
                    self.client.pump(0.01)
                    continue
                self.delivery = self.link.delivery(b"large")
                self.link.send(self.head)
                self.offset = len(self.head)
            # Only what the socket will take soon is handed to proton (its session's
            # outgoing bytes are the part not yet framed).
            while not self.done and (self.client.transport.pending()
                                     + self.link.session.outgoing_bytes) < 2 * self.PIECE:
                piece = min(self.PIECE, self.total - self.offset)
                self.link.send(pattern(self.offset - len(self.head), piece))
                self.offset += piece
                if self.done:
                    self.link.advance()
                    if self.presettled:
                        self.delivery.settle()
            self.client.pump(0.01)

    @property
    def done(self) -> bool:
        return self.delivery is not None and self.offset >= self.total

    @property
    def outcome(self) -> int | None:
        """The consumer's outcome as the router passed it on (None until settled)."""
        delivery = self.delivery
        if delivery is None or not (delivery.remote_state or delivery.settled):
            return None
        return delivery.remote_state


class LargeReceive:
    """Takes messages off a receiver as their bytes arrive, keeping only their body's length
    and whether every body byte matched LargeSend's pattern; settles each with ``outcome``."""

    def __init__(self, client: RawClient, address: str, outcome: int = Delivery.ACCEPTED,
                 credit: int = 1) -> None:
        self.client = client
        self.link = client.receiver(address, credit)
        self.outcome = outcome
        self.lengths: List[int] = []
        self.intact: List[bool] = []
        self.aborted = 0
        self._length = 0
        self._head = b""
        self._ok = True

    def pump(self, seconds: float = 0.0) -> None:
        self.client.pump(seconds)
        self.take()

    def take(self) -> None:
        link = self.link
        while True:
            delivery = link.current
            if delivery is None:
                return
            # (advanced before it is settled: settling the current delivery advances the
            # link itself, and a second advance would skip the next message unread)
            if delivery.aborted:
                self.aborted += 1
                link.advance()
                delivery.settle()
                link.flow(1)
                self._reset()
                continue
            while True:
                data = link.recv(1024 * 1024)
                if not data:
                    break
                self._check(data)
            if delivery.partial:
                return
            body_start = self._head.find(b"\x00Su\xb0")
            self.lengths.append(self._length - body_start - 8 if body_start >= 0 else -1)
            self.intact.append(self._ok and body_start >= 0)
            delivery.update(self.outcome)
            link.advance()
            delivery.settle()
            link.flow(1)
            self._reset()

    def _check(self, data: bytes) -> None:
        start = self._length
        self._length += len(data)
        if self._ok and len(self._head) < 4096:
            self._head += data[:4096]
        body_start = self._head.find(b"\x00Su\xb0")
        if body_start < 0:
            return
        body_offset = body_start + 8  # body bytes begin after the data section's header
        skip = max(0, body_offset - start)
        if skip < len(data) and data[skip:] != pattern(start + skip - body_offset, len(data) - skip):
            self._ok = False

    def _reset(self) -> None:
        self._length = 0
        self._head = b""
        self._ok = True


_PATTERN = bytes(range(251)) * (2 * 1024 * 1024 // 251 + 2)


def pattern(offset: int, size: int) -> bytes:
    """Bytes ``offset`` to ``offset + size`` of the body pattern (251: prime, so pieces of any
    power-of-two size differ from one another)."""
    out = bytearray()
    while size > 0:
        start = offset % 251
        piece = min(size, len(_PATTERN) - start)
        out += _PATTERN[start:start + piece]
        offset += piece
        size -= piece
    return bytes(out)


def transfer(sender: LargeSend, receiver: LargeReceive, timeout: float) -> None:
    """Run both ends until the message has arrived and the producer has its outcome."""
    deadline = time.monotonic() + timeout
    while not (receiver.lengths and sender.outcome is not None):
        assert time.monotonic() < deadline, (
            f"the message did not arrive in {timeout:.0f} s (sent {sender.offset} of {sender.total} bytes)")
        sender.run(0.02)
        receiver.pump(0.0)
