"""Hostile peers on the wire: raw garbage, truncated and oversized frames, slow-loris
connections, a connection flood beyond maxConnections, malformed management requests. The
router keeps serving admitted clients, memory stays bounded, and refusals are counted."""

from __future__ import annotations

import os
import random
import select
import socket
import struct
import time
from typing import List

from proton import Message

from qdrouter.tools.management_client import ManagementClient
from tests.policy.harness import PolicyRouter, login, wait_until_only_management_connected
from tests.router.amqpclient import Client, Net, msg, send_and_settle
from tests.router.routerproc import Router

AMQP_HEADER = b"AMQP\x00\x01\x00\x00"
SASL_HEADER = b"AMQP\x03\x01\x00\x00"


def still_serving(net: Net, client: Client, address: str, count: int = 5) -> None:
    """An admitted client's round trip still works."""
    receiver = client.receiver(address)
    sender = client.sender(address)
    outcomes = send_and_settle(net, sender, [msg(f"{address}-{i}") for i in range(count)], timeout=20)
    assert [o.name for o in outcomes] == ["accepted"] * count
    net.wait(lambda: len(receiver.received) >= count, 20, f"{count} messages on {address}")
    receiver.close()
    sender.close()


def raw_connection(router: Router) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", router.port), timeout=5)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    return sock


def closed_by_router(sock: socket.socket, timeout: float = 10.0) -> bool:
    """True once the router has closed the socket (EOF or reset), reading whatever it sent."""
    sock.settimeout(timeout)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if not sock.recv(65536):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False
    return False


def count_closed(net: Net, sockets: List[socket.socket], expected: int, timeout: float) -> int:
    """How many of ``sockets`` the router closes within ``timeout`` (or once ``expected`` are),
    pumping the test's own clients meanwhile so their heartbeats keep going."""
    waiting = {sock.fileno(): sock for sock in sockets}
    closed = 0
    deadline = time.monotonic() + timeout
    while waiting and closed < expected and time.monotonic() < deadline:
        readable, _, _ = select.select(list(waiting.values()), [], [], 0.05)
        for sock in readable:
            try:
                data = sock.recv(65536)
            except OSError:
                data = b""
            if not data:
                del waiting[sock.fileno()]
                closed += 1
        net.process()
    return closed


def test_garbage_truncated_and_oversized_frames(policy_router: PolicyRouter, net: Net) -> None:
    # Bytes that proton cannot tell from a slow peer are cut off by the handshake timeout.
    router = policy_router("", listener={"initialHandshakeTimeoutSeconds": "3"})
    admitted = login(net, router.url)
    rng = random.Random(6)
    rss_before = router.vm_rss_kb()
    open_sockets: List[socket.socket] = []
    for round_ in range(40):
        sock = raw_connection(router)
        kind = round_ % 5
        if kind == 0:
            sock.sendall(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4096))))
        elif kind == 1:
            sock.sendall(AMQP_HEADER + bytes(rng.randrange(256) for _ in range(512)))
        elif kind == 2:  # a frame header announcing 2 GiB
            sock.sendall(AMQP_HEADER + struct.pack(">IBBH", 0x7FFFFFF0, 2, 0, 0) + b"\x00" * 64)
        elif kind == 3:  # a truncated open frame, then the peer goes away
            sock.sendall(AMQP_HEADER + struct.pack(">IBBH", 200, 2, 0, 0) + b"\x00\x53\x10\xc0")
            sock.close()
            continue
        else:  # SASL header then a random sasl frame
            sock.sendall(SASL_HEADER + struct.pack(">IBBH", 40, 2, 1, 0) + os.urandom(32))
        open_sockets.append(sock)
    still_serving(net, admitted, "among-garbage")
    for index, sock in enumerate(open_sockets):
        assert closed_by_router(sock), f"garbage connection {index} was kept open"
        sock.close()
    still_serving(net, admitted, "after-garbage")
    assert router.vm_rss_kb() - rss_before < 20_000, "memory grew by more than 20 MB"
    assert router.is_running()


def test_slow_loris_connections_are_dropped(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router("", listener={"initialHandshakeTimeoutSeconds": "2"})
    admitted = login(net, router.url)
    slow: List[socket.socket] = []
    for _ in range(40):
        sock = raw_connection(router)
        sock.sendall(AMQP_HEADER[:3])  # a header that never finishes
        slow.append(sock)
    started = time.monotonic()
    still_serving(net, admitted, "during-slow-loris")
    assert all(closed_by_router(sock, 8.0) for sock in slow)
    assert time.monotonic() - started < 10
    for sock in slow:
        sock.close()
    still_serving(net, admitted, "after-slow-loris")
    assert "not opened within 2s" in router.stderr_text()


def test_connection_flood_beyond_max_connections(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router("policy {\n    maxConnections: 11\n}\n")
    wait_until_only_management_connected(router.url)
    # The management connection is opened before the flood and counts as one of the 11, as
    # every accepted connection does (no listener is exempt, as in qdrouterd).
    with ManagementClient(router.url) as admin:
        admin.connect()
        admitted = [login(net, router.url) for _ in range(3)]
        rss_before = router.vm_rss_kb()
        flood: List[socket.socket] = []
        for _ in range(200):
            sock = raw_connection(router)
            sock.sendall(AMQP_HEADER)
            flood.append(sock)
        time.sleep(1.0)
        still_serving(net, admitted[0], "during-flood")
        # Beyond the 11, every connection is refused: it sees an AMQP close, then the socket
        # goes. 7 flood sockets fit under the limit (with the 3 clients and the management
        # connection); the other 193 are refused.
        closed = count_closed(net, flood, expected=193, timeout=10.0)
        for sock in flood:
            sock.close()
        policy = admin.query("policy")[0]
    assert closed == policy["connectionsDenied"] == 193
    assert router.vm_rss_kb() - rss_before < 30_000
    still_serving(net, admitted[1], "after-flood")


def test_malformed_management_requests_are_rejected(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router("")
    client = login(net, router.url)
    sender = client.sender("$management")
    bad_reply_to = Message(body={}, properties={"operation": "QUERY"}, reply_to="amqp:/x").encode()
    bad_reply_to = bad_reply_to.replace(b"amqp:/x", b"amqp:/\xff")
    outcomes = send_and_settle(net, sender, [Message(body=b"\x00" * 10)])
    garbage = [sender.send_raw(data) for data in (bad_reply_to, b"\x00Sw\xa1\x05ab", os.urandom(64))]
    net.wait(lambda: all(tag in sender.outcomes for tag in garbage), 10, "outcomes for malformed requests")
    assert [sender.outcomes[tag].name for tag in garbage] == ["rejected"] * 3
    assert outcomes[0].name == "rejected"
    still_serving(net, client, "after-bad-management")
    assert "Traceback" not in router.stderr_text()
