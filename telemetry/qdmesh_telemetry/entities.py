"""The management entity types the collector snapshots, by the short names rows carry."""

from __future__ import annotations

from typing import Tuple

TYPE_PREFIX = "org.apache.qpid.dispatch."

# Short names, as written in each row's ``entity`` column. `router` comes first: its ``id``
# names the router in every row, and its ``uptimeSeconds`` tells the analysis about restarts.
ENTITY_TYPES: Tuple[str, ...] = (
    "router",
    "connection",
    "router.link",
    "router.address",
    "router.node",
    "router.config.autoLink",
    "router.config.linkRoute",
    "vhostStats",
)


def full_type(short: str) -> str:
    """``router.link`` -> ``org.apache.qpid.dispatch.router.link``."""
    return short if short.startswith(TYPE_PREFIX) else TYPE_PREFIX + short
