"""bench/report.py: the summary's ratios are medians of per-repeat pairs, and the Markdown
table stays well-formed (one cell per column) with and without the columns of the relay and of
the C forwarder."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from report import markdown_table, scenario_summary  # noqa: E402
from scenarios import SCENARIOS, Measurement  # noqa: E402

SCENARIO = SCENARIOS["1to1-presettled"]


def measurement(
    kind: str, rate: float, cpu_pct: float | None = None, cpu_us: float | None = None
) -> Measurement:
    return Measurement(
        kind=kind, messages=1000, delivered=1000, expected_deliveries=1000, seconds=1000 / rate,
        msgs_per_sec=rate, deliveries_per_sec=rate, p50_us=100.0, p99_us=200.0, max_us=300.0,
        sender_msgs_per_sec=rate, sender_cpu_pct=50.0, receiver_cpu_pct=60.0,
        outcomes={"accepted": 0, "rejected": 0, "released": 0, "modified": 0, "other": 0},
        sender={}, receivers=[], router_cpu_pct=cpu_pct,
        router_cpu_us_per_msg=cpu_us,
    )


def cells(line: str) -> List[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def test_relay_ratios_are_medians_of_pairs_and_the_table_has_a_cell_per_column() -> None:
    direct = [measurement("direct", r) for r in (1000.0, 2000.0, 1000.0)]
    relayed = [measurement("relay", r, 10.0, 0.1) for r in (600.0, 1400.0, 800.0)]
    routed = [measurement("router", r, 70.0, 1.2) for r in (300.0, 700.0, 500.0)]
    summary = scenario_summary(SCENARIO, direct, routed, relayed)
    # Pairs: relay/direct 0.6, 0.7, 0.8; router/relay 0.5, 0.5, 0.625; router/direct 0.3, 0.35, 0.5.
    assert summary["relay_ratio"] == 0.7
    assert summary["router_to_relay"] == 0.5
    assert summary["ratio"] == 0.35
    lines = markdown_table([summary], direct_only=False, relay=True).splitlines()
    head, rule, row = (cells(line) for line in lines)
    assert len(head) == len(rule) == len(row)
    by_column = dict(zip(head, row))
    assert by_column["relay/direct"] == "70.0%"
    assert by_column["router/relay"] == "50.0%"
    assert by_column["router/direct"] == "35.0%"
    assert by_column["relay CPU (µs/msg)"] == "10% (0.10)"


def test_without_the_relay_there_are_no_relay_columns_and_direct_only_tables_stay_well_formed() -> None:
    direct = [measurement("direct", 1000.0)]
    summary = scenario_summary(SCENARIO, direct, [measurement("router", 400.0, 90.0)])
    assert summary["relay_ratio"] is None and summary["router_to_relay"] is None
    table = markdown_table([summary], direct_only=False)
    assert "relay" not in table
    assert cells(table.splitlines()[2])[3] == "40.0%"
    for relay in (False, True):
        only = markdown_table([scenario_summary(SCENARIO, direct, [], [measurement("relay", 500.0, 5.0)])],
                              direct_only=True, relay=relay)
        head, rule, row = (cells(line) for line in only.splitlines())
        assert len(head) == len(rule) == len(row)
        assert ("relay/direct" in head) == relay


def test_relay_and_forwarder_together_each_get_their_own_columns() -> None:
    direct = [measurement("direct", r) for r in (1000.0, 1000.0, 1000.0)]
    relayed = [measurement("relay", r, 12.0, 0.1) for r in (700.0, 600.0, 650.0)]
    forwarded = [measurement("forward", r, 66.0, 0.95) for r in (400.0, 500.0, 450.0)]
    routed = [measurement("router", r, 74.0, 1.05) for r in (420.0, 450.0, 500.0)]
    summary = scenario_summary(SCENARIO, direct, routed, relayed, forwarded)
    # Pairs: router/forward 1.05, 0.9, 1.111 (median 1.05); forward/direct 0.4, 0.5, 0.45.
    assert summary["router_to_forward"] == 1.05
    assert summary["forward_ratio"] == 0.45
    lines = markdown_table([summary], direct_only=False, relay=True, forward=True).splitlines()
    head, rule, row = (cells(line) for line in lines)
    assert len(head) == len(rule) == len(row) and len(set(head)) == len(head)
    by_column = dict(zip(head, row))
    assert by_column["router/forward"] == "105.0%"
    assert by_column["forward/direct"] == "45.0%"
    assert by_column["forward CPU (µs/msg)"] == "66% (0.95)"
    assert by_column["router/relay"] == "75.0%" and by_column["relay/direct"] == "65.0%"
    assert "forward" not in markdown_table([summary], direct_only=False, relay=True)
