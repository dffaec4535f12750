"""Per-address throughput: deliveries in (from local producers), out (to local consumers) and
through (forwarded between routers), over time and in total."""

from __future__ import annotations

from typing import Tuple

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from .counters import bucket_of, with_increments


def address_name(key: Column) -> Column:
    """The address a client uses, from a router key (``M0orders`` -> ``orders``)."""
    return (F.when(key.rlike("^M[0-9]"), key.substr(F.lit(3), F.length(key)))
            .when(key.rlike("^[A-Z]"), key.substr(F.lit(2), F.length(key)))
            .otherwise(key))


def with_address(frame: DataFrame, key_column: str, out: str = "address") -> DataFrame:
    """Adds ``out`` (the client's name for the address) and ``internal`` (true for the
    router's own addresses: $management, temporary reply addresses, topology addresses)."""
    key = F.col(key_column)
    name = address_name(key)
    internal = (~key.rlike("^M") | name.startswith("$") | name.startswith("_")
                | name.startswith("temp.") | name.contains("$management"))
    return frame.withColumn(out, name).withColumn("internal", F.coalesce(internal, F.lit(True)))


def address_throughput(rows: DataFrame, snapshots: DataFrame, link_increments: DataFrame,
                       bucket_seconds: float) -> Tuple[DataFrame, DataFrame]:
    """(series, totals). series: mesh, address, router, bucket, in/out/through deliveries and
    per-second rates (time-weighted over the intervals ending in the bucket); totals: per mesh
    and address, summed over routers and time, with the peak in-rate.

    ``in`` is deliveriesIngress (entered the mesh here, from local producers), ``out`` is
    deliveriesEgress (left the mesh to local consumers) and ``through`` deliveriesTransit
    (forwarded to another router: one per inter-router hop). Where a router reports no
    deliveriesIngress for an address, ``in`` is what its producers' links delivered; a link
    that closes between two snapshots takes its last interval's deliveries with it, which the
    address's own counter keeps."""
    addresses = rows.where(F.col("entity") == "router.address").select(
        "mesh", "router", "ts", F.col("ident").alias("key"), "ingress", "egress", "transit")
    increments = with_increments(addresses, snapshots, ["mesh", "router", "key"],
                                 ["ingress", "egress", "transit"])
    increments = with_address(increments.where(F.col("dt").isNotNull()), "key")
    keys = ["mesh", "address", "internal", "router", "bucket"]
    leaving = (increments.withColumn("bucket", bucket_of(F.col("ts"), bucket_seconds))
               .groupBy(*keys)
               .agg(F.sum("d_ingress").alias("ingress"), F.count("d_ingress").alias("ingress_seen"),
                    F.sum("d_egress").alias("out"), F.sum("d_transit").alias("through"),
                    F.sum("dt").alias("seconds"))
               .withColumn("ingress_rate", F.col("ingress") / F.col("seconds"))
               .withColumn("out_rate", F.col("out") / F.col("seconds"))
               .withColumn("through_rate", F.col("through") / F.col("seconds"))
               .drop("seconds"))
    producers = link_increments.where(F.col("dt").isNotNull() & ~F.col("inter_router")
                                      & (F.col("link_dir") == "in") & F.col("owning_addr").isNotNull())
    entering = (with_address(producers, "owning_addr")
                .withColumn("bucket", bucket_of(F.col("ts"), bucket_seconds))
                .groupBy(*keys, "link").agg(F.sum("d_delivered").alias("n"), F.sum("dt").alias("seconds"))
                .groupBy(*keys).agg(F.sum("n").alias("link_in"),
                                     F.sum(F.col("n") / F.col("seconds")).alias("link_in_rate")))
    counted = F.coalesce(F.col("ingress_seen"), F.lit(0)) > 0
    series = (entering.join(leaving, keys, "full")
              .withColumn("in", F.when(counted, F.col("ingress")).otherwise(F.col("link_in")))
              .withColumn("in_rate", F.when(counted, F.col("ingress_rate")).otherwise(F.col("link_in_rate")))
              .drop("ingress", "ingress_seen", "ingress_rate", "link_in", "link_in_rate")
              .fillna(0.0, subset=["in", "in_rate", "out", "out_rate", "through", "through_rate"]))
    by_bucket = series.groupBy("mesh", "address", "bucket").agg(F.sum("in_rate").alias("in_rate"))
    peaks = by_bucket.groupBy("mesh", "address").agg(F.max("in_rate").alias("peak_in_rate"))
    totals = (series.groupBy("mesh", "address", "internal")
              .agg(F.sum("in").alias("in"), F.sum("out").alias("out"), F.sum("through").alias("through"),
                   F.countDistinct("router").alias("routers"))
              .join(peaks, ["mesh", "address"], "left"))
    return series, totals
