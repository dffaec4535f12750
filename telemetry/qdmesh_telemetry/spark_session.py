"""The Spark session the analysis runs in: local[*] unless told otherwise or under spark-submit."""

from __future__ import annotations

import os
from typing import Dict

from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"


def local_parallelism(master: str) -> int:
    """Cores of a ``local[N]``/``local[*]`` master (for a shuffle partition count that fits)."""
    inside = master[len("local["):-1] if master.startswith("local[") else "1"
    if inside in ("*", ""):
        return os.cpu_count() or 2
    try:
        return max(1, int(inside.split(",")[0]))
    except ValueError:
        return os.cpu_count() or 2


def make_session(master: str | None = None, app_name: str = "qdmesh-analyse",
                 driver_memory: str | None = None, conf: Dict[str, str] | None = None) -> SparkSession:
    """A session on ``master``; with none, spark-submit's (when it launched us) or local[*]."""
    builder = SparkSession.builder.appName(app_name).config("spark.sql.session.timeZone", "UTC")
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit already chose the master
    if master is None and not under_submit:
        master = DEFAULT_MASTER
    if master is not None:
        builder = builder.master(master)
    if master is not None and master.startswith("local"):
        # 200 shuffle partitions (the default) make every small stage slow on one machine.
        builder = builder.config("spark.sql.shuffle.partitions", str(2 * local_parallelism(master)))
        builder = builder.config("spark.ui.showConsoleProgress", "false")
        # Adaptive execution re-plans every shuffle in a job of its own: on one machine that
        # doubles the job count (measured: 91 -> 49 jobs, twice as fast) for no gain.
        builder = builder.config("spark.sql.adaptive.enabled", "false")
    if driver_memory:
        builder = builder.config("spark.driver.memory", driver_memory)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
