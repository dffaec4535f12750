"""A bare AMQP 1.0 peer over a socket, for peers that break the rules a proton client keeps
(for example beginning sessions beyond the channel-max the router announced). Frames are
encoded and decoded with proton's Data codec; no SASL layer (the router's listeners accept a
plain AMQP header as an anonymous login)."""

from __future__ import annotations

import socket
import struct
import time
from typing import Any, List, Tuple

from proton import Data, Described

AMQP_HEADER = b"AMQP\x00\x01\x00\x00"
OPEN, BEGIN, CLOSE = 0x10, 0x11, 0x18


def frame(channel: int, descriptor: int, fields: List[Any]) -> bytes:
    """One AMQP frame holding the performative ``descriptor`` with ``fields`` (proton types)."""
    data = Data()
    data.put_described()
    data.enter()
    data.put_ulong(descriptor)
    data.put_list()
    data.enter()
    for field in fields:
        data.put_object(field)
    data.exit()
    data.exit()
    body = data.encode()
    return struct.pack(">IBBH", 8 + len(body), 2, 0, channel) + body


def await_first_frame(sock: socket.socket, seconds: float) -> bytes:
    """The bytes the peer sends up to and including its first frame (its open): a caller
    that waits for them knows the peer has negotiated before it sends anything more."""
    sock.settimeout(seconds)
    received = b""
    while True:
        if len(received) >= 16:
            size = struct.unpack(">I", received[8:12])[0]
            if len(received) >= 8 + size:
                return received
        chunk = sock.recv(65536)
        assert chunk, f"the router closed the socket before its open: {received!r}"
        received += chunk


def read_frames(sock: socket.socket, seconds: float, received: bytes = b"") -> List[Tuple[int, Described]]:
    """(channel, performative) of every frame the peer sends within ``seconds`` or until it
    closes the socket, after the ``received`` bytes already read; empty (heartbeat) frames
    are left out."""
    sock.settimeout(0.2)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            continue
        except ConnectionResetError:
            break
        if not chunk:
            break
        received += chunk
    assert received[:8] == AMQP_HEADER, f"no AMQP header from the router: {received[:8]!r}"
    rest = received[8:]
    frames = []
    while len(rest) >= 8:
        size, doff, _type, channel = struct.unpack(">IBBH", rest[:8])
        body, rest = rest[doff * 4:size], rest[size:]
        if body:
            data = Data()
            data.decode(body)
            data.next()
            frames.append((channel, data.get_object()))
    return frames
