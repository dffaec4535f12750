"""Link routes (Qpid Dispatch 0.7 book, 2.4): which attaches are routed to which container, by address prefix
or pattern. Pure matching; the adaptor ties the links together."""

from __future__ import annotations

import re
from typing import Callable, Dict, List, Pattern, Set, Tuple

from .address_table import prefix_matches
from .address_view import hash_view


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
                 "pattern", "prefix", "regex", "view_prefix")

    def __init__(self, identity: str, direction: str, prefix: str | None = None, pattern: str | None = None,
                 connection: str | None = None, container_id: str | None = None,
                 add_prefix: str | None = None, del_prefix: str | None = None) -> None:
        self.identity = identity
        self.direction = direction
        self.prefix = prefix
        self.pattern = pattern
        # Matched in qdrouterd's hash form (address_view.py), as qdrouterd matches link routes:
        # a leading '/' does not count, so "/queue" and "queue" are one prefix, here and as
        # other routers learn it (advert_key).
        self.regex = pattern_regex(hash_view(pattern)) if pattern else None
        self.view_prefix = hash_view(prefix) if prefix is not None else None
        self.connection = connection
        self.container_id = container_id
        self.add_prefix = add_prefix
        self.del_prefix = del_prefix

    @property
    def has_destination(self) -> bool:
        """Routes naming a connection or container end here; others only steer attaches
        toward routers that advertise a destination."""
        return self.connection is not None or self.container_id is not None

    @property
    def advert_key(self) -> str:
        """The key other routers learn this destination by (upstream's hash prefixes:
        C/D prefix in/out, E/F pattern in/out)."""
        # In qdrouterd's hash form ("/queue" as "queue"), as qdrouterd advertises its own.
        if self.pattern is not None:
            return ("E" if self.direction == "in" else "F") + hash_view(self.pattern)
        return ("C" if self.direction == "in" else "D") + hash_view(self.prefix or "")

    def matches(self, address: str) -> bool:
        view = hash_view(address)
        if self.regex is not None:
            return self.regex.match(view) is not None
        return self.view_prefix is not None and prefix_matches(self.view_prefix, view)

    def external(self, address: str) -> str:
        """The address as the container knows it (delExternalPrefix / addExternalPrefix)."""
        if self.del_prefix and address.startswith(self.del_prefix):
            address = address[len(self.del_prefix):]
        if self.add_prefix:
            address = self.add_prefix + address
        return address


def route_from_key(key: str) -> LinkRoute | None:
    """The route another router advertised under ``key`` (None for other keys)."""
    kind, value = key[:1], key[1:]
    if kind in ("C", "D"):
        return LinkRoute(key, "in" if kind == "C" else "out", prefix=value)
    if kind in ("E", "F"):
        return LinkRoute(key, "in" if kind == "E" else "out", pattern=value)
    return None


class LinkRouteTable:
    def __init__(self) -> None:
        self.routes: List[LinkRoute] = []
        # Destinations other routers of the mesh advertise: (route, routers that have it).
        self.remote: List[Tuple[LinkRoute, Set[str]]] = []

    def add(self, route: LinkRoute) -> None:
        self.routes.append(route)

    def remove(self, identity: str) -> None:
        self.routes = [route for route in self.routes if route.identity != identity]

    def set_remote(self, keys: Dict[str, Set[str]]) -> None:
        remote = []
        for key, routers in sorted(keys.items()):
            route = route_from_key(key)
            if route is not None and routers:
                remote.append((route, set(routers)))
        self.remote = remote

    def find_remote(self, address: str | None, incoming: bool) -> Set[str]:
        """Routers that advertise the longest-matching destination for an attach."""
        if not address or not self.remote:
            return set()
        direction = "in" if incoming else "out"
        best: Set[str] = set()
        best_len = -1
        for route, routers in self.remote:
            if route.direction == direction and route.matches(address):
                length = len(route.prefix or route.pattern or "")
                if length > best_len:
                    best, best_len = routers, length
        return set(best)

    def active_keys(self, is_connected: Callable[[LinkRoute], bool]) -> Set[str]:
        """Keys of the routes whose destination is connected here (what to advertise)."""
        return {route.advert_key for route in self.routes if route.has_destination and is_connected(route)}

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
