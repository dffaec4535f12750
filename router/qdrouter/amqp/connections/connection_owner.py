"""Who an outgoing connection answers to: its connector (amqp/connections/connector.py), or
while it replaces another, the TLS rotation (amqp/connections/tls_rotation.py). Given when the
connection is made (AmqpServer.connect); a connector adopting a replacement takes it over
(AmqpConnection.hand_to)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .connection import AmqpConnection


class ConnectionOwner(Protocol):
    def connection_opened(self, connection: AmqpConnection) -> None:
        """The peer opened ``connection`` (and the router answered)."""

    def connection_closed(self, connection: AmqpConnection) -> None:
        """``connection`` was released: its socket is closed and its links are gone."""
