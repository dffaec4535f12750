"""Link routes (book 2.4): which attaches are routed to which container, by address prefix
or pattern. Pure matching; the adaptor ties the links together."""

from __future__ import annotations

import re
from typing import List, Pattern

from .address_table import prefix_matches


def pattern_regex(pattern: str) -> Pattern[str]:
    """Later Qpid Dispatch patterns: tokens separated by '.' or '/', '*' matches exactly one
    token and '#' zero or more."""
    parts = re.split(r"([./])", pattern)
    regex = ""
    for part in parts:
        if part in (".", "/"):
            regex += "[./]"
        elif part == "*":
            regex += r"[^./]+"
        elif part == "#":
            regex += r".*"
        else:
            regex += re.escape(part)
    # '#' may also swallow the separator before it ("a.#" matches "a").
    regex = regex.replace(r"[./].*", r"(?:[./].*)?")
    return re.compile(f"^{regex}$")


class LinkRoute:
    __slots__ = ("add_prefix", "connection", "container_id", "del_prefix", "direction", "identity",
                 "pattern", "prefix", "regex")

    def __init__(self, identity: str, direction: str, prefix: str | None = None, pattern: str | None = None,
                 connection: str | None = None, container_id: str | None = None,
                 add_prefix: str | None = None, del_prefix: str | None = None) -> None:
        self.identity = identity
        self.direction = direction
        self.prefix = prefix
        self.pattern = pattern
        self.regex = pattern_regex(pattern) if pattern else None
        self.connection = connection
        self.container_id = container_id
        self.add_prefix = add_prefix
        self.del_prefix = del_prefix

    def matches(self, address: str) -> bool:
        if self.regex is not None:
            return self.regex.match(address) is not None
        return self.prefix is not None and prefix_matches(self.prefix, address)

    def external(self, address: str) -> str:
        """The address as the container knows it (delExternalPrefix / addExternalPrefix)."""
        if self.del_prefix and address.startswith(self.del_prefix):
            address = address[len(self.del_prefix):]
        if self.add_prefix:
            address = self.add_prefix + address
        return address


class LinkRouteTable:
    def __init__(self) -> None:
        self.routes: List[LinkRoute] = []

    def add(self, route: LinkRoute) -> None:
        self.routes.append(route)

    def remove(self, identity: str) -> None:
        self.routes = [route for route in self.routes if route.identity != identity]

    def find(self, address: str | None, incoming: bool) -> LinkRoute | None:
        """The route for an attach: a client's sending link (``incoming`` to the router)
        uses `in` routes on its target, a receiving link `out` routes on its source."""
        if not address or not self.routes:
            return None
        direction = "in" if incoming else "out"
        best: LinkRoute | None = None
        best_len = -1
        for route in self.routes:
            if route.direction == direction and route.matches(address):
                length = len(route.prefix or route.pattern or "")
                if length > best_len:
                    best, best_len = route, length
        return best
