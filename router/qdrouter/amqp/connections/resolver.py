"""Host names resolved off the event loop. getaddrinfo can take seconds (a cluster DNS working
through its search domains, a resolver that is down), and the loop must keep serving every
other connection meanwhile, hellos included."""

from __future__ import annotations

import ipaddress
import socket
import threading
from typing import Any, Tuple

AddressInfo = Tuple[Any, ...]  # one getaddrinfo entry: (family, type, proto, canonname, sockaddr)


class Resolution:
    """One lookup. ``done`` turns True once ``result`` or ``error`` is set, never before."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.result: AddressInfo | None = None
        self.error: OSError | None = None
        self.done = False

    def run(self) -> None:
        try:
            self.result = socket.getaddrinfo(self.host, self.port, 0, socket.SOCK_STREAM)[0]
        except OSError as error:
            self.error = error
        except (UnicodeError, ValueError) as error:  # a name the idna codec cannot encode, a NUL
            self.error = OSError(str(error))
        self.done = True


def resolve(host: str, port: int) -> Resolution:
    """Start resolving host:port: at once for an IP address, else in a daemon thread (one that
    hangs cannot hold up the router's exit)."""
    resolution = Resolution(host, port)
    try:
        ipaddress.ip_address(host)
        literal = True
    except ValueError:
        literal = False
    if literal:
        resolution.run()
    else:
        threading.Thread(target=resolution.run, name=f"resolve {host}", daemon=True).start()
    return resolution
