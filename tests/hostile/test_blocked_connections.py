"""A consumer that stops reading, and the producer held back for it, as an operator sees them:
the connection entity's outputBlocked and inputHeld (with their counts), the router's totals,
and a 'blocked' column in qdstat -c. qdrouterd shows neither its Q2 hold-off nor its Q3 limit
in management, so these tests are qdmesh's alone."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any, Callable, Dict, List

import pytest

from qdrouter.tools.management_client import ManagementClient
from tests.router.routerproc import ROUTER_SRC, Router

from .rawclient import LargeReceive, LargeSend, RawClient

MB = 1024 * 1024
Rows = Dict[str, Dict[str, Any]]

pytestmark = pytest.mark.qdmesh_only("qdrouterd's management shows no blocked connection (qdmesh's "
                                     "outputBlocked, inputHeld and qdstat -c's blocked column)")


def by_container(admin: ManagementClient) -> Rows:
    return {row["container"]: row for row in admin.query("connection")}


def wait_rows(admin: ManagementClient, condition: Callable[[Rows], bool], sender: LargeSend,
              what: str, timeout: float = 30) -> Rows:
    """Connection rows once ``condition`` holds; the producer goes on sending meanwhile (a
    held producer is read again every few seconds, for its heartbeats)."""
    deadline = time.monotonic() + timeout
    while True:
        rows = by_container(admin)
        if condition(rows):
            return rows
        assert time.monotonic() < deadline, f"{what} within {timeout} s: {rows}"
        sender.run(0.2)


def qdstat_connections(router: Router) -> List[List[str]]:
    env = {"PYTHONPATH": str(ROUTER_SRC)}
    out = subprocess.run([sys.executable, "-m", "qdrouter.tools.qdstat", "-b", router.url.split("//")[-1],
                          "-c", "--csv"], capture_output=True, text=True, timeout=60, env=env, check=True)
    return [line.split(",") for line in out.stdout.splitlines()]


@pytest.mark.timeout(180)
def test_a_consumer_that_stops_reading_and_its_held_producer_are_shown(router: Router) -> None:
    receiver = LargeReceive(RawClient(router.url, receive_buffer=64 * 1024), "blocked.stream")
    sender = LargeSend(RawClient(router.url), "blocked.stream", 64 * MB)
    consumer = receiver.client.connection.container
    producer = sender.client.connection.container
    deadline = time.monotonic() + 60
    while sender.offset < 4 * MB:
        assert time.monotonic() < deadline, "the first 4 MB did not go"
        sender.run(0.02)
        receiver.pump(0.0)
    with ManagementClient(router.url) as admin:
        # The consumer stops reading its socket.
        rows = wait_rows(admin, lambda r: r[consumer]["outputBlocked"] and r[producer]["inputHeld"],
                         sender, "the consumer's output blocked and the producer held")
        assert rows[consumer]["outputQueuedBytes"] > MB
        assert rows[consumer]["outputBlockedCount"] >= 1 and rows[producer]["inputHeldCount"] >= 1
        assert not rows[consumer]["inputHeld"] and not rows[producer]["outputBlocked"]
        totals = admin.query("router")[0]
        assert totals["outputBlockedConnectionCount"] >= 1 and totals["inputHeldConnectionCount"] >= 1
        assert totals["outputBlockedCount"] >= 1
        table = qdstat_connections(router)
        blocked = {row[2]: row[table[0].index("blocked")] for row in table[1:]}
        assert blocked[consumer] == "output" and blocked[producer] == "input", table
        # The consumer reads again: the message arrives whole and nothing is shown blocked.
        while not (receiver.lengths and sender.outcome is not None):
            assert time.monotonic() < deadline + 120, "the message did not arrive"
            sender.run(0.02)
            receiver.pump(0.0)
        assert receiver.lengths == [sender.size] and receiver.intact == [True]
        rows = wait_rows(admin, lambda r: not r[consumer]["outputBlocked"] and not r[producer]["inputHeld"],
                         sender, "the blocked state to clear")
        # The counts keep what happened, for the operator who looks afterwards.
        assert rows[consumer]["outputBlockedCount"] >= 1 and rows[producer]["inputHeldCount"] >= 1
        totals = admin.query("router")[0]
        assert totals["outputBlockedConnectionCount"] == 0 and totals["inputHeldConnectionCount"] == 0
        assert totals["outputBlockedCount"] >= 1
