"""Auto-link availability, connection churn per vhost and user, and router load against capacity."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from .counters import with_increments


def autolink_availability(rows: DataFrame) -> DataFrame:
    """Per auto-link: share of snapshots active, failures (entries into ``failed``), drops
    (leaving ``active``), the last error and the last state."""
    links = rows.where(F.col("entity") == "router.config.autoLink").select(
        "mesh", "router", "ts", F.coalesce("name", "ident").alias("autolink"), "address",
        F.col("oper_status").alias("status"), "last_error")
    ordered = Window.partitionBy("mesh", "router", "autolink").orderBy("ts")
    previous = F.lag("status").over(ordered)
    marked = (links.withColumn("failed_now", ((F.col("status") == "failed")
                                              & F.coalesce(previous != "failed", F.lit(True))).cast("int"))
              .withColumn("dropped_now",
                          ((previous == "active") & (F.col("status") != "active")).cast("int")))
    return (marked.groupBy("mesh", "router", "autolink")
            .agg(F.last("address", ignorenulls=True).alias("address"),
                 F.avg((F.col("status") == "active").cast("double")).alias("active_share"),
                 F.sum("failed_now").alias("failures"),
                 F.coalesce(F.sum("dropped_now"), F.lit(0)).alias("drops"),
                 F.max_by("last_error", F.when(F.col("last_error").isNotNull(), F.col("ts")))
                 .alias("last_error"),
                 F.max_by("status", "ts").alias("last_status"),
                 F.count(F.lit(1)).alias("snapshots")))


def connection_churn(rows: DataFrame, snapshots: DataFrame) -> DataFrame:
    """Per mesh, vhost and user: client connections seen, opened and closed while watched,
    and churn per hour. A connection is one identity during one router run (epoch)."""
    connections = (rows.where((F.col("entity") == "connection")
                              & (F.coalesce(F.col("role"), F.lit("normal")) != "inter-router"))
                   .join(snapshots, ["mesh", "router", "ts"], "left")
                   .select("mesh", "router", "ts", "ident", "epoch", "first_snapshot_ts", "last_snapshot_ts",
                           F.coalesce("vhost", F.lit("$default")).alias("vhost"),
                           F.coalesce("user", F.lit("(none)")).alias("user")))
    spans = (connections.groupBy("mesh", "router", "ident", F.coalesce("epoch", F.lit(-1)).alias("run"))
             .agg(F.min("ts").alias("first_seen"), F.max("ts").alias("last_seen"),
                  F.first("vhost").alias("vhost"), F.first("user").alias("user"),
                  F.first("first_snapshot_ts").alias("router_first"),
                  F.first("last_snapshot_ts").alias("router_last")))
    watched = (snapshots.groupBy("mesh").agg((F.max("ts") - F.min("ts")).alias("watched_seconds")))
    return (spans.groupBy("mesh", "vhost", "user")
            .agg(F.count(F.lit(1)).alias("connections"),
                 F.sum((F.col("first_seen") > F.col("router_first")).cast("int")).alias("opened"),
                 F.sum((F.col("last_seen") < F.col("router_last")).cast("int")).alias("closed"))
            .join(watched, "mesh", "left")
            .withColumn("churn_per_hour", (F.col("opened") + F.col("closed"))
                        / F.greatest(F.col("watched_seconds"), F.lit(1.0)) * 3600.0))


def vhost_denials(rows: DataFrame, snapshots: DataFrame) -> DataFrame:
    """Per mesh and vhost: connections approved and denied while watched (vhostStats, where
    the routers enforce policy)."""
    stats = rows.where(F.col("entity") == "vhostStats").select(
        "mesh", "router", "ts", F.coalesce("vhost", "ident").alias("vhost"), "conn_approved", "conn_denied")
    increments = with_increments(stats, snapshots, ["mesh", "router", "vhost"],
                                 ["conn_approved", "conn_denied"])
    return (increments.groupBy("mesh", "vhost")
            .agg(F.coalesce(F.sum("d_conn_approved"), F.lit(0.0)).alias("approved"),
                 F.coalesce(F.sum("d_conn_denied"), F.lit(0.0)).alias("denied")))


def router_summary(rows: DataFrame, snapshots: DataFrame, router_load: DataFrame,
                   capacity: float) -> DataFrame:
    """Per router: peak and mean load (deliveries/s received on its links), share of the
    capacity used at the peak, peak memory, restarts seen and snapshots."""
    load = (router_load.groupBy("mesh", "router")
            .agg(F.max("rate").alias("peak_rate"), F.avg("rate").alias("mean_rate"),
                 F.sum("deliveries").alias("deliveries")))
    routers = (rows.where(F.col("entity") == "router").groupBy("mesh", "router")
               .agg(F.max("memory").alias("peak_memory"), F.count(F.lit(1)).alias("snapshots")))
    runs = (snapshots.groupBy("mesh", "router")
            .agg(F.coalesce(F.max("epoch"), F.lit(0)).alias("restarts"),
                 F.min("ts").alias("first_ts"), F.max("ts").alias("last_ts")))
    return (runs.join(routers, ["mesh", "router"], "left").join(load, ["mesh", "router"], "left")
            .withColumn("peak_rate", F.coalesce("peak_rate", F.lit(0.0)))
            .withColumn("saturation", F.col("peak_rate") / F.lit(capacity)))
