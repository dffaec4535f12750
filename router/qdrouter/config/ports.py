"""Port values as the schema keeps them (text, possibly a service name) turned into numbers."""

from __future__ import annotations

import socket

# Resolved without /etc/services, which minimal container images lack.
_WELL_KNOWN = {"amqp": 5672, "amqps": 5671}


def port_number(port: str) -> int:
    """The TCP port a listener or connector `port` attribute means; ValueError if none."""
    text = str(port).strip()
    if text.isascii() and text.isdigit():  # str.isdigit() also takes "❷" and "²"
        number = int(text)
        if number > 65535:
            raise ValueError(f"{port!r} is not a port number (0 to 65535)")
        return number
    if text in _WELL_KNOWN:
        return _WELL_KNOWN[text]
    try:
        return socket.getservbyname(text, "tcp")
    except OSError:
        raise ValueError(f"{port!r} is neither a port number nor a known service name") from None
