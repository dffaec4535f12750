"""The listening TCP socket every listener starts from (AMQP and HTTP alike)."""

from __future__ import annotations

import socket


class ListenSocketError(Exception):
    """The host does not resolve or the address cannot be bound; the message names the
    listener."""


def listening_socket(host: str, port: int, name: str, backlog: int) -> socket.socket:
    """A non-blocking socket listening on host:port (port 0 picks a free one)."""
    try:
        infos = socket.getaddrinfo(host or None, port, 0, socket.SOCK_STREAM, 0, socket.AI_PASSIVE)
    except (OSError, UnicodeError, ValueError) as error:
        # UnicodeError: a name the idna codec cannot encode; ValueError: a NUL in it.
        raise ListenSocketError(f"listener {name}: attribute 'host': cannot resolve "
                                f"{host[:80]!r}: {error}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as error:
        sock.close()
        raise ListenSocketError(
            f"listener {name}: cannot listen on {host}:{port}: {error.strerror}") from None
    sock.listen(backlog)
    sock.setblocking(False)
    return sock
