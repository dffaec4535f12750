"""One round of the canary: for each pair (source, destination) of pairs.py, a management
request (GET-MGMT-NODES, a few bytes each way) sent into the source router, addressed to the
destination router's agent (``_topo/0/<id>/$management``), and its reply back: a round trip
through the mesh's own routing, over the operator's management connection to the source.

Bounded: a round makes at most one probe per router, each waits at most the management
client's timeout, and a round stops probing after ``MAX_FAILURES`` failures (a partition does
not cost a timeout per pair, and never starts a probe storm); pairs not probed keep their last
result."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Dict, Mapping, Tuple

from qdrouter.tools import wire
from qdrouter.tools.errors import ManagementError, ManagementTimeout

from ..apply.management import ClientPool, RouterOutcome
from ..tls.credentials import TlsFiles
from .pairs import pairs_for_round

#: Failures after which a round stops: each costs up to the client's timeout.
MAX_FAILURES = 3


@dataclass(frozen=True)
class PairResult:
    """The last probe of a pair: its round trip in seconds, or why it failed."""

    seconds: float | None
    error: str = ""
    #: time.time() of the probe.
    at: float = 0.0


Pair = Tuple[str, str]
Results = Dict[Pair, PairResult]


def next_round(pool: ClientPool, *, outcomes: Mapping[str, RouterOutcome], urls: Mapping[str, str],
               tls: TlsFiles | None, previous: Mapping[Pair, PairResult], last_round: int,
               probe: bool) -> Tuple[Results, int]:
    """The results and round after this reconciliation: a new round among the routers whose
    management answered (``probe``: on the drift schedule), else the last ones as they are."""
    if not probe:
        return dict(previous), last_round
    answered = {rid: urls[rid] for rid, outcome in outcomes.items()
                if outcome.reachable and outcome.router.get("id") and rid in urls}
    ids = {rid: str(outcomes[rid].router["id"]) for rid in answered}
    round_no = last_round + 1
    results = probe_mesh(pool, urls=answered, router_ids=ids, tls=tls, round_no=round_no, previous=previous)
    return results, round_no


def probe_mesh(pool: ClientPool, *, urls: Mapping[str, str], router_ids: Mapping[str, str],
               tls: TlsFiles | None, round_no: int, previous: Mapping[Pair, PairResult]) -> Results:
    """``urls``/``router_ids``: the routers whose management answered this time, by name.
    Returns every pair's last result: this round's over ``previous`` (pairs of routers that
    left are dropped)."""
    results: Results = {pair: found for pair, found in previous.items()
                        if pair[0] in urls and pair[1] in urls}
    failures = 0
    for source, destination in pairs_for_round(list(urls), round_no):
        if failures >= MAX_FAILURES:
            break
        url = urls[source]
        found = _probe(pool, url, tls if url.startswith("amqps:") else None, router_ids[destination])
        failures += found.seconds is None
        results[(source, destination)] = found
    return results


def _probe(pool: ClientPool, url: str, tls: TlsFiles | None, router_id: str) -> PairResult:
    message = wire.node_request("GET-MGMT-NODES")
    message.address = wire.agent_address(router_id)
    start = time.monotonic()
    try:
        pool.get(url, tls).call(message)
    except ManagementTimeout as e:
        # Its reply may yet come, into a connection that no longer waits for it: start afresh.
        pool.discard(url)
        return PairResult(None, str(e), time.time())
    except ManagementError as e:
        return PairResult(None, str(e), time.time())
    return PairResult(time.monotonic() - start, "", time.time())
