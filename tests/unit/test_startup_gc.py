"""The start-up freeze of CPython's collector (qdrouter/tuning/startup_gc.py)."""

from __future__ import annotations

import gc
import sys

import pytest

from qdrouter.tuning.startup_gc import freeze_startup_objects


@pytest.mark.skipif(sys.implementation.name != "cpython", reason="gc.freeze is CPython's")
def test_freeze_leaves_startup_objects_out_of_later_collections() -> None:
    kept = [[] for _ in range(100)]  # tracked objects alive at the freeze
    try:
        assert freeze_startup_objects()
        assert gc.get_freeze_count() >= len(kept)
        before = gc.get_freeze_count()
        gc.collect()  # frozen objects stay frozen through a full collection
        assert gc.get_freeze_count() == before
    finally:
        gc.unfreeze()  # this test process keeps its collector as it was


def test_no_freeze_while_the_collector_is_off() -> None:
    gc.disable()
    try:
        assert not freeze_startup_objects()
    finally:
        gc.enable()
