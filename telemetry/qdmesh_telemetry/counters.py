"""Per-interval increments of cumulative counters, correct across restarts and gaps.

A counter's increment over an interval is ``now - before``; when the router restarted in
between (its start time, ``ts - uptimeSeconds``, moved) or the counter went down (a reset the
uptime could not show), it counted from zero, so the increment is ``now``. An entity first
seen in a router's second or later snapshot was created since the previous one: its whole
count is new. Only the very first snapshot of a router is a baseline with no increment. A gap
(missed snapshots) is one longer interval: totals stay exact, rates are averaged over it.
"""

from __future__ import annotations

from typing import List, Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

RESTART_TOLERANCE_S = 3.0  # uptime is whole seconds, and a snapshot takes a moment


def router_snapshots(rows: DataFrame) -> DataFrame:
    """One row per (mesh, router, ts) snapshot: ``epoch`` (count of restarts seen so far, null
    when the snapshot has no router row) and ``prev_snapshot_ts`` (the router's previous one)."""
    snapshot_times = rows.select("mesh", "router", "ts").distinct()
    started = (rows.where((F.col("entity") == "router") & F.col("uptime").isNotNull())
               .groupBy("mesh", "router", "ts").agg(F.max(F.col("ts") - F.col("uptime")).alias("started")))
    by_router = Window.partitionBy("mesh", "router").orderBy("ts")
    joined = snapshot_times.join(started, ["mesh", "router", "ts"], "left")
    # Restarts are counted over the snapshots that have a router row, then carried to the rest.
    with_started = joined.where(F.col("started").isNotNull())
    restart = (F.col("started") - F.lag("started").over(by_router) > RESTART_TOLERANCE_S).cast("int")
    epochs = (with_started.withColumn("restart", F.coalesce(restart, F.lit(0)))
              .withColumn("epoch", F.sum("restart").over(by_router.rowsBetween(Window.unboundedPreceding, 0)))
              .select("mesh", "router", "ts", "epoch"))
    result = joined.join(epochs, ["mesh", "router", "ts"], "left")
    return (result.withColumn("prev_snapshot_ts", F.lag("ts").over(by_router))
            .withColumn("first_snapshot_ts", F.min("ts").over(Window.partitionBy("mesh", "router")))
            .withColumn("last_snapshot_ts", F.max("ts").over(Window.partitionBy("mesh", "router")))
            .drop("started"))


def with_increments(rows: DataFrame, snapshots: DataFrame, keys: Sequence[str],
                    counters: Sequence[str]) -> DataFrame:
    """``rows`` (one entity type) with ``dt`` and ``d_<counter>`` for each counter: the
    increment since the entity's previous snapshot (null for a router's first snapshot)."""
    frame = rows.join(snapshots.select("mesh", "router", "ts", "epoch", "prev_snapshot_ts"),
                      ["mesh", "router", "ts"], "left")
    by_entity = Window.partitionBy(*keys).orderBy("ts")
    prev_ts = F.lag("ts").over(by_entity)
    prev_epoch = F.lag("epoch").over(by_entity)
    frame = frame.withColumn("_prev_ts", prev_ts).withColumn("_prev_epoch", prev_epoch)
    restarted = F.coalesce(F.col("epoch") != F.col("_prev_epoch"), F.lit(False))
    new_entity = F.col("_prev_ts").isNull() & F.col("prev_snapshot_ts").isNotNull()
    frame = frame.withColumn(
        "dt", F.when(F.col("_prev_ts").isNotNull(), F.col("ts") - F.col("_prev_ts"))
        .when(new_entity, F.col("ts") - F.col("prev_snapshot_ts")))
    columns: List[Column] = []
    for counter in counters:
        before = F.lag(counter).over(by_entity)
        now = F.col(counter)
        increment = (F.when(new_entity, now)
                     .when(F.col("_prev_ts").isNull() | now.isNull(), F.lit(None))
                     .when(before.isNull() | restarted | (now < before), now)
                     .otherwise(now - before))
        columns.append(increment.alias(f"d_{counter}"))
    return frame.select("*", *columns).drop("_prev_ts", "_prev_epoch")


def bucket_of(ts: Column, seconds: float) -> Column:
    """Start (epoch seconds) of the ``seconds``-wide bucket ``ts`` falls in."""
    return F.floor(ts / F.lit(seconds)) * F.lit(seconds)
