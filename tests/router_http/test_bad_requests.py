"""Bad HTTP requests get clear errors and never disturb the router's AMQP traffic (the HTTP
listener shares the router's one event loop)."""

from __future__ import annotations

import socket
import time

from tests.router.amqpclient import Net, msg
from tests.router.routerproc import RouterFactory

from .scrape import get, raw_exchange, scrape, value


def status_of(reply: bytes) -> int:
    return int(reply.split(b" ", 2)[1])


def test_bad_requests_get_clear_errors(router_factory: RouterFactory) -> None:
    port = router_factory(extra_listeners={"http": {"http": "true"}}).ports["http"]
    status, text, _ = get(port, "/no/such/page")
    assert status == 404 and "/metrics" in text
    assert status_of(raw_exchange(port, b"\x16\x03\x01\x02\x00garbage, perhaps TLS\r\n\r\n")) == 400
    assert status_of(raw_exchange(port, b"GET /metrics\r\n\r\n")) == 400  # HTTP/0.9 style
    reply = raw_exchange(port, b"POST /metrics HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}")
    assert status_of(reply) == 405 and b"Allow: GET, HEAD" in reply
    huge = b"GET /metrics HTTP/1.1\r\nX-Filler: " + b"a" * 20000 + b"\r\n\r\n"
    assert status_of(raw_exchange(port, huge)) == 431
    head = raw_exchange(port, b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status_of(head) == 200 and head.endswith(b"\r\n\r\n")
    assert b"Content-Length: 0" not in head
    # An AMQP client that dialled the HTTP port by mistake gets an HTTP error, not a hang.
    assert status_of(raw_exchange(port, b"AMQP\x00\x01\x00\x00")) == 400
    assert get(port, "/healthz")[0] == 200


def test_slow_and_idle_http_clients_do_not_disturb_amqp(router_factory: RouterFactory, net: Net) -> None:
    router = router_factory(extra_listeners={"http": {"http": "true"}})
    port = router.ports["http"]
    opened = time.monotonic()
    # A slow client (half a request, then nothing) and a client that never sends a byte.
    slow = socket.create_connection(("127.0.0.1", port))
    slow.sendall(b"GET /metr")
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(20)]
    try:
        client = net.connect(router.url)
        receiver = client.receiver("steady", credit=50)
        sender = client.sender("steady")
        started = time.monotonic()
        for i in range(500):
            net.wait(lambda: sender.credit > 0, 5, "credit")
            sender.send(msg(i))
        net.wait(lambda: len(receiver.received) == 500, 20, "500 messages")
        took = time.monotonic() - started
        assert took < 8, f"500 messages took {took:.1f}s with idle HTTP clients"
        assert value(scrape(port), "qdmesh_address_deliveries_total", address="steady", phase="0",
                     direction="egress") == 500
        # The router closes the slow client after its 10 s request timeout.
        slow.settimeout(max(0.5, opened + 15 - time.monotonic()))
        assert slow.recv(100) == b""
    finally:
        slow.close()
        for sock in idle:
            sock.close()
