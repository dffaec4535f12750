"""Reading snapshot rows into Spark: the raw schema, typed columns, and malformed rows set aside.

Attributes are read as text (JSON numbers become their digits), so one schema fits every entity
type and every router version; the columns the analysis uses are then cast once. A row
that is not JSON, lacks mesh/router/entity/ts, or carries a non-numeric counter is malformed:
counted, shown in the report, and left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Tuple

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, StringType, StructField, StructType

CORRUPT = "_corrupt_record"

# Numeric attributes the analysis reads (typed column name -> management attribute).
NUMBERS: Dict[str, str] = {
    "uptime": "uptimeSeconds",
    "memory": "memoryUsage",
    "capacity": "capacity",
    "undelivered": "undeliveredCount",
    "unsettled": "unsettledCount",
    "delivered": "deliveryCount",
    "presettled": "presettledCount",
    "dropped_presettled": "droppedPresettledCount",
    "accepted": "acceptedCount",
    "rejected": "rejectedCount",
    "released": "releasedCount",
    "modified": "modifiedCount",
    "credit": "creditAvailable",
    "ingress": "deliveriesIngress",
    "egress": "deliveriesEgress",
    "transit": "deliveriesTransit",
    "conn_approved": "connectionsApproved",
    "conn_denied": "connectionsDenied",
}

# Text attributes (typed column name -> attributes tried in order).
TEXTS: Dict[str, Tuple[str, ...]] = {
    "ident": ("identity", "name", "key", "id"),
    "name": ("name", "linkName", "identity"),
    "link_type": ("linkType",),
    "link_dir": ("linkDir",),
    "owning_addr": ("owningAddr",),
    "connection_id": ("connectionId",),
    "role": ("role",),
    "container": ("container",),
    "user": ("user",),
    "vhost": ("vhost", "tenant", "hostname"),
    "oper_status": ("operStatus",),
    "last_error": ("lastError",),
    "address": ("address", "addr", "prefix", "pattern", "key"),
}

ATTRIBUTES = sorted(set(NUMBERS.values()) | {name for names in TEXTS.values() for name in names})

# Only the attributes the analysis reads, each as text (JSON numbers become their digits): the
# JSON reader skips the rest, and a struct field is found at once where a map is searched.
RAW_SCHEMA = StructType([
    StructField("mesh", StringType()),
    StructField("router", StringType()),
    StructField("entity", StringType()),
    StructField("ts", DoubleType()),
    StructField("attributes", StructType([StructField(name, StringType()) for name in ATTRIBUTES])),
])


@dataclass
class Snapshots:
    rows: DataFrame          # typed, valid rows (cached)
    malformed_count: int
    malformed_samples: List[Tuple[str, str]]  # (reason, row text)
    total_rows: int


def read_raw(spark: SparkSession, paths: List[str], fmt: str = "json") -> DataFrame:
    """Every row under ``paths`` (directories are read recursively), with a corrupt-record column."""
    if fmt == "parquet":
        frame = spark.read.option("recursiveFileLookup", "true").schema(RAW_SCHEMA).parquet(*paths)
        return frame.withColumn(CORRUPT, F.lit(None).cast(StringType()))
    if fmt != "json":
        raise ValueError(f"format: expected json or parquet, got {fmt!r}")
    schema = StructType([*RAW_SCHEMA.fields, StructField(CORRUPT, StringType())])
    return (spark.read.schema(schema)
            .option("mode", "PERMISSIVE")
            .option("columnNameOfCorruptRecord", CORRUPT)
            .option("recursiveFileLookup", "true")
            .json(list(paths)))


def _first_text(names: Tuple[str, ...]) -> Column:
    return F.coalesce(*[F.col("attributes")[n] for n in names])


def _malformed_reason() -> Column:
    reason = F.when(F.col(CORRUPT).isNotNull(), F.lit("not a snapshot row (bad JSON or field types)"))
    for column in ("mesh", "router", "entity", "ts"):
        reason = reason.when(F.col(column).isNull(), F.lit(f"missing {column}"))
    reason = reason.when(F.isnan("ts") | (F.col("ts") <= 0), F.lit("ts is not a time"))
    for typed, attribute in NUMBERS.items():
        raw = F.col("attributes")[attribute]
        reason = reason.when(raw.isNotNull() & F.col(typed).isNull(), F.lit(f"{attribute} is not a number"))
    return reason


def load_snapshots(spark: SparkSession, paths: List[str], fmt: str = "json", mesh: str | None = None,
                   samples: int = 20) -> Snapshots:
    raw = read_raw(spark, paths, fmt)
    if mesh is not None:
        raw = raw.where((F.col("mesh") == mesh) | F.col("mesh").isNull())
    typed = raw.select(
        "mesh", "router", "entity", "ts", "attributes", CORRUPT,
        *[F.col("attributes")[a].try_cast(DoubleType()).alias(t) for t, a in NUMBERS.items()],
        *[_first_text(names).alias(t) for t, names in TEXTS.items()],
    ).withColumn("malformed", _malformed_reason())
    marked = typed.drop("attributes").persist()
    counts = {r["bad"]: r["n"] for r in marked.groupBy(F.col("malformed").isNotNull().alias("bad"))
              .agg(F.count(F.lit(1)).alias("n")).collect()}
    bad = int(counts.get(True, 0))
    sample_rows: List[Tuple[str, str]] = []
    if bad:
        shown = marked.where(F.col("malformed").isNotNull()).select(
            "malformed", F.coalesce(F.col(CORRUPT), F.to_json(F.struct("mesh", "router", "entity", "ts")))
            .alias("text")).limit(samples).collect()
        sample_rows = [(str(r["malformed"]), str(r["text"])[:300]) for r in shown]
    valid = marked.where(F.col("malformed").isNull()).drop("malformed", CORRUPT)
    return Snapshots(rows=valid, malformed_count=bad, malformed_samples=sample_rows,
                     total_rows=bad + int(counts.get(False, 0)))
