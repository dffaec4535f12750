"""A listener's session and frame limits, as a peer on the wire sees them: maxSessions is the
channel-max of the router's open (a begin above it closes the connection), maxSessionFrames
the incoming-window of the router's begin, maxFrameSize the max-frame-size of its open (at
least 512). Raw frames, so that nothing in a client library hides what the router sent; the
same expectations hold for qdrouterd 1.19 (connection_manager.c, server.c, policy.c)."""

from __future__ import annotations

import socket
import struct
import time
from typing import Any, Callable, Dict, Iterator, List, Tuple

import pytest
from proton import Data, Described, uint

from tests.linkroute.lrutil import Peer
from tests.policy import rawamqp
from tests.router.amqpclient import Net
from tests.router.routerproc import Router, RouterFactory

MAX_WINDOW = 2 ** 31 - 1


def _router(router_factory: RouterFactory, **attrs: Any) -> Tuple[Router, int]:
    router = router_factory(extra_listeners={"limited": {k: str(v) for k, v in attrs.items()}})
    return router, router.ports["limited"]


def _begin(channel: int) -> bytes:
    return rawamqp.frame(channel, rawamqp.BEGIN, [None, uint(0), uint(100), uint(100)])


class RawPeer:
    """One raw AMQP connection: the router's frames are read as they come."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buffer = b""
        self.frames: List[Tuple[int, Described]] = []
        self.closed = False
        self.header = b""
        self.sock.sendall(rawamqp.AMQP_HEADER + rawamqp.frame(0, rawamqp.OPEN, ["raw-peer"]))
        self.wait(lambda: bool(self.frames), "the router's open")
        assert self.header == rawamqp.AMQP_HEADER, self.header
        assert int(self.frames[0][1].descriptor) == rawamqp.OPEN, self.frames
        self.open = self.frames[0][1]

    def begin(self, *channels: int) -> None:
        self.sock.sendall(b"".join(_begin(channel) for channel in channels))

    def performatives(self, code: int) -> List[Tuple[int, Described]]:
        return [(channel, f) for channel, f in self.frames if int(f.descriptor) == code]

    def wait(self, condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        self.sock.settimeout(0.2)
        while not condition():
            assert time.monotonic() < deadline, f"timed out waiting for {what}: {self.frames}"
            assert not self.closed, f"the router closed the socket before {what}: {self.frames}"
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                continue
            except ConnectionResetError:
                chunk = b""
            self.closed = not chunk
            self._parse(chunk)

    def _parse(self, chunk: bytes) -> None:
        self.buffer += chunk
        if not self.header:
            if len(self.buffer) < 8:
                return
            self.header, self.buffer = self.buffer[:8], self.buffer[8:]
        while len(self.buffer) >= 8:
            size, doff, _type, channel = struct.unpack(">IBBH", self.buffer[:8])
            if len(self.buffer) < size:
                return
            body, self.buffer = self.buffer[doff * 4:size], self.buffer[size:]
            if body:
                data = Data()
                data.decode(body)
                data.next()
                self.frames.append((channel, data.get_object()))

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def peers() -> Iterator[List[RawPeer]]:
    made: List[RawPeer] = []
    yield made
    for peer in made:
        peer.close()


def _peer(peers: List[RawPeer], port: int) -> RawPeer:
    peer = RawPeer(port)
    peers.append(peer)
    return peer


def _opened(peers: List[RawPeer], port: int) -> Dict[str, Any]:
    fields = list(_peer(peers, port).open.value) + [None] * 5
    return {"max-frame-size": fields[2], "channel-max": fields[3]}


def _window(peers: List[RawPeer], port: int) -> int:
    peer = _peer(peers, port)
    peer.begin(0)
    peer.wait(lambda: bool(peer.performatives(rawamqp.BEGIN)), "the router's begin")
    return int(peer.performatives(rawamqp.BEGIN)[0][1].value[2])


def test_max_sessions_is_the_channel_max_and_a_begin_above_it_closes(
        router_factory: RouterFactory, peers: List[RawPeer]) -> None:
    _, port = _router(router_factory, maxSessions=10)
    peer = _peer(peers, port)
    assert peer.open.value[3] == 9, peer.open
    peer.begin(*range(10))
    peer.wait(lambda: len(peer.performatives(rawamqp.BEGIN)) == 10, "ten sessions to begin")
    peer.begin(10)
    peer.wait(lambda: bool(peer.performatives(rawamqp.CLOSE)), "the router's close")
    error = peer.performatives(rawamqp.CLOSE)[0][1].value[0]
    assert error.value[0] == "amqp:connection:framing-error", error
    assert "remote channel 10 is above negotiated channel_max 9" in error.value[1], error
    assert len(peer.performatives(rawamqp.BEGIN)) == 10


@pytest.mark.parametrize("configured", [0, 32768, 40000])
def test_max_sessions_0_or_above_32768_is_32768(router_factory: RouterFactory, peers: List[RawPeer],
                                                configured: int) -> None:
    _, port = _router(router_factory, maxSessions=configured)
    assert _opened(peers, port)["channel-max"] == 32767


@pytest.mark.parametrize("frame_size", [16384, 1024])
def test_max_session_frames_is_the_incoming_window(router_factory: RouterFactory, peers: List[RawPeer],
                                                   frame_size: int) -> None:
    _, port = _router(router_factory, maxSessionFrames=4, maxFrameSize=frame_size)
    assert _window(peers, port) == 4


def test_without_max_session_frames_the_window_is_unbounded(router_factory: RouterFactory,
                                                            peers: List[RawPeer]) -> None:
    _, port = _router(router_factory)
    assert _window(peers, port) == MAX_WINDOW


@pytest.mark.parametrize("configured, advertised", [(100, 512), (0, 512), (1024, 1024)])
def test_max_frame_size_below_512_is_512(router_factory: RouterFactory, peers: List[RawPeer],
                                         configured: int, advertised: int) -> None:
    _, port = _router(router_factory, maxFrameSize=configured)
    assert _opened(peers, port)["max-frame-size"] == advertised


def test_a_connectors_limits_are_in_its_open(router_factory: RouterFactory, net: Net) -> None:
    peer = Peer(net, container_id="limits-peer")
    try:
        router_factory(extra_config=f"connector {{\n    host: 127.0.0.1\n    port: {peer.port}\n"
                                    f"    role: route-container\n    maxSessions: 10\n"
                                    f"    maxFrameSize: 100\n}}\n")
        net.wait(lambda: bool(peer.connections), 20, "the router's connector to open")
        transport = peer.connections[0].transport
        assert (transport.remote_channel_max, transport.remote_max_frame_size) == (9, 512)
    finally:
        peer.close()
