"""The keys the routing protocol's traffic is counted under (qdstat -a's protocol rows)."""

from __future__ import annotations

import pytest

from qdrouter.control_counters import ControlCounters


@pytest.mark.parametrize("address, key", [
    ("_local/qdhello", "Lqdhello"),
    ("_topo/0/A/qdrouter", "Lqdrouter"),  # this router's own: local, as qdrouterd resolves it
    ("_topo/0/all/qdrouter", "Tqdrouter"),
    ("_topo/0/all/qdrouter.ma", "Tqdrouter.ma"),
    ("_topo/0/B/qdrouter", "RB"),  # another router's: that router's address
    ("_topo/0/B", "M0_topo/0/B"),  # not a topological address of three parts
])
def test_key(address: str, key: str) -> None:
    assert ControlCounters("A").key(address) == key


def test_received_and_sent_count_apart() -> None:
    counts = ControlCounters("A")
    counts.received("_local/qdhello")
    counts.received("_local/qdhello")
    counts.sent("_local/qdhello")
    counts.sent("_topo/0/B/qdrouter")
    assert (counts.to_proc["Lqdhello"], counts.from_proc["Lqdhello"], counts.from_proc["RB"]) == (2, 1, 1)
    assert counts.to_proc["RB"] == 0
