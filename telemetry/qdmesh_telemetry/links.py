"""Link metrics: utilisation, the inter-router traffic matrix, router load, outcomes, backlogs.

Inter-router links are recognised by their connection (role ``inter-router``, whose container
is the peer router's id) or by ``linkType`` ``inter-router`` where the router reports it;
control links (routing protocol traffic) are left out of the traffic figures.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .addresses import with_address
from .counters import bucket_of, with_increments

LINK_COUNTERS = ("delivered", "presettled", "dropped_presettled", "accepted", "rejected", "released",
                 "modified")
OUTCOMES = ("accepted", "released", "rejected", "modified", "dropped_presettled")


@dataclass
class LinkTables:
    increments: DataFrame      # one row per link per snapshot, with peer and d_* increments
    utilisation: DataFrame     # one row per link
    matrix: DataFrame          # mesh, source, target, deliveries, rate
    router_load: DataFrame     # mesh, router, bucket, deliveries, rate
    outcomes: DataFrame        # mesh, router, address, direction, outcome counts
    backlog: DataFrame         # mesh, router, address, ts, undelivered, unsettled, backlog


def link_rows_with_peers(rows: DataFrame) -> DataFrame:
    links = rows.where(F.col("entity") == "router.link").select(
        "mesh", "router", "ts", F.col("ident").alias("link"), F.col("name").alias("link_name"), "link_type",
        "link_dir", "owning_addr", "connection_id", "capacity", "undelivered", "unsettled", "credit",
        *LINK_COUNTERS)
    connections = rows.where(F.col("entity") == "connection").select(
        "mesh", "router", "ts", F.col("ident").alias("connection_id"), F.col("role").alias("conn_role"),
        F.col("container").alias("conn_container"))
    joined = links.join(connections, ["mesh", "router", "ts", "connection_id"], "left")
    inter_router = (F.coalesce(F.col("link_type") == "inter-router", F.lit(False))
                    | F.coalesce(F.col("conn_role") == "inter-router", F.lit(False)))
    control = (F.coalesce(F.col("link_type") == "router-control", F.lit(False))
               | F.coalesce(F.col("link_name").contains("control"), F.lit(False)))
    return (joined.withColumn("inter_router", inter_router)
            .withColumn("control", inter_router & control)
            .withColumn("peer", F.when(inter_router, F.col("conn_container"))))


def link_tables(rows: DataFrame, snapshots: DataFrame, bucket_seconds: float) -> LinkTables:
    increments = with_increments(link_rows_with_peers(rows), snapshots, ["mesh", "router", "link"],
                                 LINK_COUNTERS).persist()
    counted = increments.where(F.col("dt").isNotNull() & ~F.col("control"))
    bucketed = counted.withColumn("bucket", bucket_of(F.col("ts"), bucket_seconds))

    per_bucket = (bucketed.groupBy("mesh", "router", "link", "bucket")
                  .agg(F.sum("d_delivered").alias("n"), F.sum("dt").alias("seconds")))
    peaks = (per_bucket.groupBy("mesh", "router", "link")
             .agg(F.max(F.col("n") / F.col("seconds")).alias("peak_rate")))
    observed = increments.where(~F.col("control"))
    utilisation = (observed.groupBy("mesh", "router", "link")
                   .agg(F.last("link_name", ignorenulls=True).alias("link_name"),
                        F.last("link_dir", ignorenulls=True).alias("link_dir"),
                        F.last("owning_addr", ignorenulls=True).alias("owning_addr"),
                        F.last("peer", ignorenulls=True).alias("peer"),
                        F.max("inter_router").alias("inter_router"),
                        F.coalesce(F.sum("d_delivered"), F.lit(0.0)).alias("deliveries"),
                        F.sum("dt").alias("seconds"),
                        F.avg(F.col("unsettled") / F.col("capacity")).alias("window_use"),
                        F.avg((F.col("credit") == 0).cast("double")).alias("zero_credit_share"),
                        F.max(F.coalesce(F.col("undelivered"), F.lit(0.0))
                              + F.coalesce(F.col("unsettled"), F.lit(0.0))).alias("max_backlog"),
                        F.count(F.lit(1)).alias("snapshots"))
                   .withColumn("rate", F.col("deliveries") / F.col("seconds"))
                   .join(peaks, ["mesh", "router", "link"], "left"))
    # Management, reply and topology links are the mesh's own business, not its traffic.
    utilisation = with_address(utilisation.withColumn("_key", F.coalesce("owning_addr", F.lit(""))), "_key",
                               "_address")
    utilisation = (utilisation.withColumn("internal", ~F.col("inter_router") & F.col("internal"))
                   .drop("_key", "_address"))

    matrix = (counted.where(F.col("inter_router") & (F.col("link_dir") == "out") & F.col("peer").isNotNull())
              .groupBy("mesh", F.col("router").alias("source"), F.col("peer").alias("target"))
              .agg(F.sum("d_delivered").alias("deliveries"), F.sum("dt").alias("link_seconds")))
    span = (counted.groupBy("mesh").agg((F.max("ts") - F.min(F.col("ts") - F.col("dt"))).alias("span")))
    matrix = matrix.join(span, "mesh").withColumn("rate", F.col("deliveries") / F.col("span")).drop("span")

    router_load = (bucketed.where(F.col("link_dir") == "in")
                   .groupBy("mesh", "router", "link", "bucket")
                   .agg(F.sum("d_delivered").alias("n"), F.sum("dt").alias("seconds"))
                   .groupBy("mesh", "router", "bucket")
                   .agg(F.sum("n").alias("deliveries"), F.sum(F.col("n") / F.col("seconds")).alias("rate")))

    endpoint = counted.where(~F.col("inter_router") & F.col("owning_addr").isNotNull())
    outcomes = (with_address(endpoint, "owning_addr")
                .groupBy("mesh", "router", "address", "internal", F.col("link_dir").alias("direction"))
                .agg(F.sum("d_delivered").alias("deliveries"),
                     *[F.sum(f"d_{o}").alias(o) for o in OUTCOMES]))

    backlog = (with_address(increments.where(~F.col("inter_router") & F.col("owning_addr").isNotNull()),
                            "owning_addr")
               .groupBy("mesh", "router", "address", "internal", "ts")
               # A producer's unsettled deliveries are the consumers' unsettled ones seen from the
               # other side: only outgoing links count them.
               .agg(F.sum("undelivered").alias("undelivered"),
                    F.sum(F.when(F.col("link_dir") == "out", F.col("unsettled"))).alias("unsettled"))
               .withColumn("backlog", F.coalesce(F.col("undelivered"), F.lit(0.0))
                           + F.coalesce(F.col("unsettled"), F.lit(0.0))))
    return LinkTables(increments, utilisation, matrix, router_load, outcomes, backlog)


def backlog_trends(backlog: DataFrame) -> DataFrame:
    """Per address and router: first, last and peak backlog, and its slope (messages/s, least
    squares over the snapshots)."""
    return (backlog.groupBy("mesh", "router", "address", "internal")
            .agg(F.min_by("backlog", "ts").alias("first"), F.max_by("backlog", "ts").alias("last"),
                 F.max("backlog").alias("peak"), F.expr("regr_slope(backlog, ts)").alias("slope"),
                 F.count(F.lit(1)).alias("snapshots"), (F.max("ts") - F.min("ts")).alias("seconds")))
