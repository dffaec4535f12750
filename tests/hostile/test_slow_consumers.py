"""Consumers that cannot or will not keep up: the router's memory stays bounded, its
producers are held back (or pre-settled copies dropped), and nothing unsettled is lost.

Each scenario floods for a few seconds and asserts the router process's peak resident
memory (VmHWM) against memory.CEILING_MB. They run against both routers (routerkind.py).
"""

from __future__ import annotations

import time

import pytest

from tests.router.routerproc import Router

from .memory import CEILING_MB, peak_mb, rss_mb
from .rawclient import UNLIMITED_CREDIT, Flood, RawClient

FLOOD_S = 4.0
MESSAGE = 64 * 1024
# A producer's unsettled deliveries in the router: at most its link capacity (250 here and
# in qdrouterd), plus what a client may have had in its socket when its credit stopped.
MOST_IN_FLIGHT = 600


def stuck_consumer(router: Router, address: str) -> RawClient:
    """A consumer granting all the credit AMQP allows, that never reads its socket again."""
    client = RawClient(router.url, receive_buffer=64 * 1024)
    client.receiver(address, UNLIMITED_CREDIT)
    return client


def assert_bounded(router: Router, what: str) -> None:
    peak = peak_mb(router)
    assert peak < CEILING_MB, f"{what}: the router's resident memory peaked at {peak:.0f} MB"


@pytest.mark.timeout(120)
def test_consumer_that_never_reads_holds_back_an_unsettled_producer(router: Router) -> None:
    stuck = stuck_consumer(router, "hostile.unread")
    producer = Flood(RawClient(router.url), "hostile.unread", MESSAGE)
    producer.run(FLOOD_S)
    assert_bounded(router, "unsettled flood into a consumer that never reads")
    in_flight = producer.in_flight
    assert in_flight <= MOST_IN_FLIGHT, f"the router took {in_flight} unsettled messages it cannot deliver"
    # The consumer goes: every message it was given or that waited for it gets an outcome.
    stuck.close()
    producer.client.wait(lambda: producer.in_flight == 0, 30, "an outcome for every unsettled message")
    assert_bounded(router, "after the stuck consumer left")


@pytest.mark.timeout(120)
def test_consumer_that_never_reads_bounds_a_presettled_flood(router: Router) -> None:
    stuck = stuck_consumer(router, "hostile.presettled")
    producer = Flood(RawClient(router.url), "hostile.presettled", MESSAGE, presettled=True)
    producer.run(FLOOD_S)
    assert_bounded(router, "pre-settled flood into a consumer that never reads")
    # Others are still served meanwhile.
    assert_routes(router, "hostile.others")
    stuck.close()
    producer.client.close()


@pytest.mark.timeout(120)
def test_consumer_that_never_settles_holds_back_its_producer(router: Router) -> None:
    reader = RawClient(router.url)
    link = reader.receiver("hostile.unsettled", UNLIMITED_CREDIT)
    producer = Flood(RawClient(router.url), "hostile.unsettled", MESSAGE)
    deadline = time.monotonic() + FLOOD_S
    while time.monotonic() < deadline:
        producer.run(0.05)
        reader.pump(0.0)  # reads everything, settles nothing
    assert_bounded(router, "a consumer that reads and never settles")
    in_flight = producer.in_flight
    assert in_flight <= MOST_IN_FLIGHT, f"{in_flight} unsettled messages in flight for one producer"
    assert link.queued <= MOST_IN_FLIGHT
    reader.close()
    producer.client.wait(lambda: producer.in_flight == 0, 30, "an outcome for every unsettled message")


@pytest.mark.timeout(120)
def test_consumer_that_closes_its_session_window_bounds_a_presettled_flood(router: Router) -> None:
    """A consumer that reads its socket but takes no message off its link, with a small
    session window: the router's sends then wait in proton's session buffer, not in the
    socket, and still count against the connection's limit."""
    closed = RawClient(router.url, incoming_capacity=64 * 1024)
    closed.receiver("hostile.window", UNLIMITED_CREDIT)
    producer = Flood(RawClient(router.url), "hostile.window", MESSAGE, presettled=True)
    deadline = time.monotonic() + FLOOD_S
    while time.monotonic() < deadline:
        producer.run(0.05)
        closed.pump(0.0)  # reads what comes, never takes a delivery off the link
    assert_bounded(router, "pre-settled flood into a consumer whose session window is closed")
    closed.close()
    producer.client.close()


@pytest.mark.timeout(120)
def test_memory_comes_back_after_a_stuck_consumer_leaves(router: Router) -> None:
    baseline = rss_mb(router)
    for _ in range(2):
        stuck = stuck_consumer(router, "hostile.leaves")
        producer = Flood(RawClient(router.url), "hostile.leaves", MESSAGE, presettled=True)
        producer.run(FLOOD_S / 2)
        stuck.close()
        producer.client.close()
    # The router's resident memory settles near where it started (within the ceiling's
    # slack: allocators keep some freed memory for reuse).
    deadline = time.monotonic() + 15
    while rss_mb(router) - baseline > 40 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert rss_mb(router) - baseline <= 40, (
        f"{rss_mb(router) - baseline:.0f} MB more than before the stuck consumers came and went")


def assert_routes(router: Router, address: str) -> None:
    """A well-behaved consumer and producer pair still exchange messages."""
    consumer = RawClient(router.url)
    link = consumer.receiver(address, 10)
    sender = Flood(RawClient(router.url), address, 100)
    sender.run(0.2)
    consumer.wait(lambda: link.queued >= 1 or link.credit < 10, 10, "a message for a well-behaved consumer")
    consumer.close()
    sender.client.close()
