"""Address prefixes and patterns as qdrouterd 1.19's parse tree matches them (the same
entities are checked against the C router itself in tests/interop/test_address_patterns.py)."""

from __future__ import annotations

import re

import pytest

from qdrouter.core.address_patterns import PatternTree, normalized, tokens
from qdrouter.core.address_table import AddressTable


def test_tokens_follow_the_c_routers_iterator() -> None:
    assert tokens("a.b/c") == ["a", "b", "c"]
    assert tokens("/a.b.") == ["a", "b"]
    assert tokens("a..b") == ["a", "", "b"]
    assert tokens("") == [] and tokens("./") == []


def test_prefixes_become_glob_patterns_and_wildcard_runs_are_normalised() -> None:
    assert normalized("orders.", is_prefix=True) == ["orders", "#"]
    assert normalized("a.#.*.#", is_prefix=False) == ["a", "*", "#"]
    assert normalized("#.#.b", is_prefix=False) == ["#", "b"]
    with pytest.raises(ValueError, match="'prefix': '' has no tokens"):
        normalized("", is_prefix=True)
    with pytest.raises(ValueError, match=re.escape("'pattern': './' has no tokens")):
        normalized("./", is_prefix=False)


def test_the_literal_token_binds_before_star_before_hash() -> None:
    tree: PatternTree[str] = PatternTree()
    for pattern in ("a.b.#", "a.*.c", "a.#", "#.c", "*.*"):
        tree.add(normalized(pattern, is_prefix=False), pattern)
    assert tree.match("a.b.c") == "a.b.#"
    assert tree.match("a.x.c") == "a.*.c"
    assert tree.match("a.x.y") == "a.#"
    assert tree.match("q.r.c") == "#.c"
    assert tree.match("q.r") == "*.*"
    assert tree.match("q") is None
    assert tree.match("a") == "a.#"  # '#' matches zero tokens


def test_removing_an_entity_leaves_the_others() -> None:
    tree: PatternTree[str] = PatternTree()
    tree.add(["a", "#"], "prefix a")
    tree.add(["a", "b", "#"], "prefix a.b")
    tree.remove(["a", "b", "#"])
    assert tree.match("a.b.c") == "prefix a" and len(tree) == 1
    tree.remove(["a", "#"])
    assert tree.match("a") is None and len(tree) == 0


def test_a_prefix_and_a_pattern_with_the_same_tokens_conflict() -> None:
    table = AddressTable([("orders", "closest")])
    with pytest.raises(ValueError, match="'pattern': 'orders/#' conflicts"):
        table.add_config("multicast", pattern="orders/#")
    assert table.distribution_for("orders.eu") == "closest"


def test_waypoint_phases_come_from_the_entity_that_binds_the_address() -> None:
    table = AddressTable()
    table.add_config("balanced", pattern="queue.*", phases=(0, 1))
    table.add_config("closest", prefix="queue.direct")
    assert table.egress_key("queue.a") != "queue.a"      # phase 1: back from the broker
    assert table.egress_key("queue.direct") == "queue.direct"
    table.remove_config(pattern="queue.*")
    assert table.egress_key("queue.a") == "queue.a"
