"""How many of a mesh's addresses have a consumer somewhere in it.

Every interior router learns, through the routing protocol, each mobile address that has a
consumer on any router of the mesh (its ``remoteCount``), so one router's address table counts
the mesh's: read from the first router that answered, at most ``MAX_ROWS`` addresses (a
count, not a list: the status stays small at any size)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, List, Mapping, Tuple

from qdrouter.tools.management_client import ManagementConnectionError, ManagementError

from ..tls.credentials import TlsFiles
from .management import ClientPool, RouterOutcome

ADDRESS_TYPE = "org.apache.qpid.dispatch.router.address"
ATTRIBUTES = ["key", "subscriberCount", "remoteCount", "containerCount"]
MAX_ROWS = 10_000


@dataclass(frozen=True)
class ConsumedAddresses:
    #: Mobile addresses with a local consumer, a consumer on another router, or a container.
    count: int
    #: The router whose table was read.
    router: str
    #: The table had more than MAX_ROWS addresses: ``count`` is of the first MAX_ROWS.
    truncated: bool


def _count(pages: Iterable[Tuple[List[str], List[List[Any]]]]) -> Tuple[int, int]:
    """(mobile addresses with a consumer, rows read)."""
    consumed = seen = 0
    for names, rows in pages:
        at = {name: i for i, name in enumerate(names)}
        for row in rows:
            seen += 1
            if not str(row[at["key"]] or "").startswith("M"):  # mobile addresses only
                continue
            if any(int(row[at[a]] or 0) > 0 for a in ATTRIBUTES[1:] if a in at):
                consumed += 1
    return consumed, seen


def count_consumed(outcomes: Mapping[str, RouterOutcome], *, pool: ClientPool,
                   tls: TlsFiles | None) -> ConsumedAddresses | None:
    """None when no router answered."""
    for rid in sorted(outcomes):
        outcome = outcomes[rid]
        if not outcome.reachable:
            continue
        url = outcome.url
        try:
            client = pool.get(url, tls if url.startswith("amqps:") else None)
            consumed, seen = _count(client.query_pages(ADDRESS_TYPE, ATTRIBUTES, count=MAX_ROWS))
        except ManagementConnectionError:
            pool.discard(url)
            continue
        except ManagementError:
            continue
        return ConsumedAddresses(consumed, rid, seen >= MAX_ROWS)
    return None
