"""The neighbour probe's bookkeeping (qdrouter/canary/book.py), with times given: one probe
outstanding per neighbour, failures on time-out, round trips and their average, departed
neighbours forgotten; and canaryIntervalSeconds checked at load."""

from __future__ import annotations

import pytest

from qdrouter.canary import BUCKETS, ProbeBook
from qdrouter.config import ConfigError, parse_config_text


def test_each_neighbour_gets_one_probe_and_its_answer_is_timed() -> None:
    book = ProbeBook(1.0)
    sends = book.round(["B", "A"], now=10.0)
    assert [peer for peer, _ in sends] == ["A", "B"]
    by_peer = dict(sends)
    assert book.answered(by_peer["A"], now=10.004) == "A"
    stats = book.peers["A"]
    assert stats.last == pytest.approx(0.004) and stats.average == pytest.approx(0.004)
    assert stats.failures == 0 and stats.count == 1
    # An answer counts once: the same correlation again is not a second round trip.
    assert book.answered(by_peer["A"], now=10.5) is None
    assert book.peers["A"].count == 1
    assert book.peers["B"].last is None


def test_average_moves_towards_new_round_trips() -> None:
    book = ProbeBook(1.0)
    now = 0.0
    for trip in (0.010, 0.010, 0.050):
        (_, correlation), = book.round(["B"], now)
        book.answered(correlation, now + trip)
        now += 1.0
    stats = book.peers["B"]
    assert stats.last == pytest.approx(0.050)
    assert 0.010 < stats.average < 0.050
    assert stats.total == pytest.approx(0.070) and stats.count == 3


def test_a_silent_neighbour_costs_one_probe_per_interval_and_counts_failures() -> None:
    book = ProbeBook(1.0)
    sent = []
    for second in range(10):
        sent += book.round(["B"], float(second))
        assert book.outstanding() == 1, "never more than one probe outstanding per neighbour"
    assert len(sent) == 10
    assert book.peers["B"].failures == 9   # the tenth is still waiting
    # A late answer to a probe already counted as failed is ignored ...
    assert book.answered(sent[0][1], 9.5) is None
    # ... and the next answer in time ends the run of failures.
    assert book.answered(sent[-1][1], 9.2) == "B"
    assert book.peers["B"].failures == 0 and book.peers["B"].failures_total == 9


def test_no_new_probe_while_one_is_outstanding_and_not_timed_out() -> None:
    book = ProbeBook(5.0)
    assert len(book.round(["B"], 0.0)) == 1
    assert book.round(["B"], 2.0) == []     # the interval is shorter than the timeout
    assert book.peers["B"].failures == 0
    assert len(book.round(["B"], 5.0)) == 1
    assert book.peers["B"].failures == 1


def test_timeout_is_the_interval_or_five_seconds() -> None:
    assert ProbeBook(2.0).timeout_s == 2.0
    assert ProbeBook(30.0).timeout_s == 5.0
    book = ProbeBook(30.0)
    book.round(["B"], 0.0)
    book.expire(4.9)
    assert book.peers["B"].failures == 0
    book.expire(5.0)
    assert book.peers["B"].failures == 1 and book.outstanding() == 0


def test_a_probe_that_cannot_leave_is_a_failure_at_once() -> None:
    book = ProbeBook(1.0)
    (peer, _), = book.round(["B"], 0.0)
    book.not_sent(peer)
    assert book.peers["B"].failures == 1 and book.outstanding() == 0


def test_departed_neighbours_are_forgotten() -> None:
    book = ProbeBook(1.0)
    sends = dict(book.round(["B", "C"], 0.0))
    book.answered(sends["B"], 0.001)
    book.round(["C"], 1.0)
    assert sorted(book.peers) == ["C"]
    assert book.outstanding() == 1
    # Its outstanding probe went with it: a late answer is not counted anywhere.
    assert book.answered(sends["B"], 1.1) is None
    # Back again: measured afresh.
    book.round(["B", "C"], 2.0)
    assert book.peers["B"].count == 0 and book.peers["B"].last is None


def test_histogram_buckets_are_cumulative_up_to_inf() -> None:
    book = ProbeBook(10.0)
    for second, trip in enumerate((0.00005, 0.003, 0.003, 0.2, 7.0)):
        (_, correlation), = book.round(["B"], second * 10.0)
        book.answered(correlation, second * 10.0 + trip)
    buckets = dict(book.peers["B"].cumulative_buckets())
    assert list(buckets) == [*BUCKETS, float("inf")]
    assert buckets[0.0001] == 1
    assert buckets[0.0025] == 1 and buckets[0.005] == 3
    assert buckets[0.25] == 4 and buckets[5.0] == 4 and buckets[float("inf")] == 5


def test_canary_interval_is_checked_at_load() -> None:
    text = "router {\n    id: R1\n    mode: interior\n    canaryIntervalSeconds: %s\n}\n"
    entities = parse_config_text(text % "2", "/etc/x.conf")
    assert entities[0].attributes["canaryIntervalSeconds"] == 2
    assert parse_config_text(text % "0", "/etc/x.conf")[0].attributes["canaryIntervalSeconds"] == 0
    with pytest.raises(ConfigError) as info:
        parse_config_text(text % "-1", "/etc/x.conf")
    assert "canaryIntervalSeconds" in str(info.value) and "-1" in str(info.value)
