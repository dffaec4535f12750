"""A small HTTP/1.1 server inside the router's own epoll loop (no threads): listeners with
`http: true` answer /healthz, /readyz and /metrics.

Each request is read into a bounded buffer, answered at once (the pages are computed from
the router's live structures in the loop's thread) and the connection is closed after the
response is written. Requests that are too large, malformed or too slow get an HTTP error or
are dropped; none of them can hold up the loop, so AMQP traffic is not disturbed."""

from __future__ import annotations

import functools
import logging
import selectors
import socket
from typing import Any, Callable, Dict, Tuple

from ..amqp.wakeups.poller import Poller
from ..listen_socket import ListenSocketError, listening_socket
from .requests import MAX_REQUEST_BYTES, HttpRequest, RequestError, parse_request
from .responses import Response, encode_response, error_response

log = logging.getLogger("qdrouter.HTTP")

REQUEST_TIMEOUT_S = 10.0
MAX_CONNECTIONS = 64
Handler = Callable[[HttpRequest], Response]


class HttpListenerError(Exception):
    pass


class _HttpConnection:
    __slots__ = ("buffer", "listener", "out", "sock", "timer")

    def __init__(self, sock: socket.socket, listener: _HttpListener) -> None:
        self.sock = sock
        self.listener = listener
        self.buffer = bytearray()
        self.out: memoryview | None = None
        self.timer: Any = None


class _HttpListener:
    __slots__ = ("handler", "name", "sock")

    def __init__(self, sock: socket.socket, name: str, handler: Handler) -> None:
        self.sock = sock
        self.name = name
        self.handler = handler


class HttpServer:
    """HTTP listeners and connections registered with the AMQP server's selector; the AMQP
    loop hands their socket events to ``on_io``."""

    def __init__(self, amqp_server: Any) -> None:
        self.amqp = amqp_server
        self.selector: Poller = amqp_server.selector
        self.listeners: Dict[int, _HttpListener] = {}
        self.connections: Dict[int, _HttpConnection] = {}

    def listen(self, host: str, port: int, name: str, handler: Handler) -> Tuple[str, int, int]:
        try:
            sock = listening_socket(host, port, name, 64)
        except ListenSocketError as error:
            raise HttpListenerError(str(error)) from None
        fd = sock.fileno()
        self.listeners[fd] = _HttpListener(sock, name, handler)
        self.selector.register(sock, selectors.EVENT_READ)
        self.amqp.io_handlers[fd] = self.on_io
        bound = sock.getsockname()
        log.info("Listening for HTTP on %s:%d (%s)", bound[0], bound[1], name)
        return bound[0], bound[1], fd

    def close_listener(self, fd: int) -> bool:
        """Stop one HTTP listener; False if ``fd`` is not one of them."""
        listener = self.listeners.pop(fd, None)
        if listener is None:
            return False
        self._unregister(listener.sock)
        self.amqp.io_handlers.pop(fd, None)
        listener.sock.close()
        log.info("Stopped listening for HTTP (%s)", listener.name)
        return True

    # ---- socket events ------------------------------------------------------------------
    def on_io(self, fd: int, mask: int) -> None:
        """The fault boundary of the HTTP side: a failure closes the one HTTP connection it
        happened on (or, on a listener, ends that accept), is logged and counted, and the
        loop goes on."""
        try:
            self._on_io(fd, mask)
        except Exception:
            self.amqp.faults.unattributed("serving HTTP")
            connection = self.connections.get(fd)
            if connection is not None:
                self._close(connection)

    def _on_io(self, fd: int, mask: int) -> None:
        listener = self.listeners.get(fd)
        if listener is not None:
            self._accept(listener)
            return
        connection = self.connections.get(fd)
        if connection is None:
            return
        if mask & selectors.EVENT_READ and connection.out is None:
            self._read(connection)
        elif mask & selectors.EVENT_WRITE and connection.out is not None:
            self._write(connection)

    def _accept(self, listener: _HttpListener) -> None:
        for _ in range(16):
            try:
                sock, _peer = listener.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as error:
                log.warning("HTTP accept failed on %s: %s", listener.name, error)
                return
            if len(self.connections) >= MAX_CONNECTIONS:
                sock.close()  # bounded: a flood of idle HTTP clients must not grow the router
                continue
            sock.setblocking(False)
            connection = _HttpConnection(sock, listener)
            fd = sock.fileno()
            self.connections[fd] = connection
            self.amqp.io_handlers[fd] = self.on_io
            self.selector.register(sock, selectors.EVENT_READ)
            connection.timer = self.amqp.timers.call_later(REQUEST_TIMEOUT_S,
                                                           functools.partial(self._timed_out, connection))

    def _read(self, connection: _HttpConnection) -> None:
        try:
            data = connection.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._close(connection)
            return
        if not data:
            self._close(connection)
            return
        connection.buffer += data
        try:
            request = parse_request(bytes(connection.buffer))
        except RequestError as error:
            self._respond(connection, error_response(error.status, error.message))
            return
        if request is None:
            if len(connection.buffer) > MAX_REQUEST_BYTES:
                self._respond(connection, error_response(431, "request header too large"))
            return
        try:
            response = connection.listener.handler(request)
        except Exception as error:  # a bug in a page must not take the router down
            self.amqp.faults.unattributed(f"answering HTTP {request.method} {request.path}")
            response = error_response(500, f"internal error: {error}")
        if request.method == "HEAD":
            response = Response(response.status, b"", response.content_type, response.headers,
                                content_length=len(response.body))
        self._respond(connection, response)

    def _respond(self, connection: _HttpConnection, response: Response) -> None:
        connection.out = memoryview(encode_response(response))
        self._write(connection)

    def _write(self, connection: _HttpConnection) -> None:
        assert connection.out is not None
        try:
            sent = connection.sock.send(connection.out)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            self._close(connection)
            return
        connection.out = connection.out[sent:]
        if not connection.out:
            self._close(connection)
            return
        self.selector.modify(connection.sock, selectors.EVENT_WRITE)

    def _timed_out(self, connection: _HttpConnection) -> None:
        if self.connections.get(connection.sock.fileno()) is connection:
            log.info("HTTP client on %s too slow: closed", connection.listener.name)
            self._close(connection)

    def _close(self, connection: _HttpConnection) -> None:
        fd = connection.sock.fileno()
        if self.connections.pop(fd, None) is None:
            return
        self.amqp.io_handlers.pop(fd, None)
        if connection.timer is not None:
            connection.timer.cancel()
        self._unregister(connection.sock)
        try:
            connection.sock.close()
        except OSError:
            pass

    def _unregister(self, sock: socket.socket) -> None:
        try:
            self.selector.unregister(sock)
        except (KeyError, ValueError):
            pass

    def close(self) -> None:
        for connection in list(self.connections.values()):
            self._close(connection)
        for fd in list(self.listeners):
            self.close_listener(fd)
