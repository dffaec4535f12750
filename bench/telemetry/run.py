"""Telemetry benchmark: the analysis job's time on generated snapshot rows (local[2] by default).

    python bench/telemetry/run.py --rows 1000000 10000000 --workdir /tmp/telemetry-bench

For each size: generate the rows as Parquet (not timed), then time ``run_analysis`` in a fresh
Spark session. Prints one Markdown table row per size.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path
from typing import List

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate import snapshot_rows

from qdmesh_telemetry.job import AnalysisOptions, run_analysis
from qdmesh_telemetry.spark_session import make_session


def jvm_cpu_seconds(spark: object) -> float:
    """User + system CPU of Spark's JVM so far (less sensitive to a busy machine than wall time)."""
    pid = spark.sparkContext._gateway.proc.pid  # type: ignore[attr-defined]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(rows: int, workdir: Path, master: str, memory: str, fmt: str) -> str:
    data = workdir / f"rows-{rows}-{fmt}"
    spark = make_session(master, app_name="qdmesh-telemetry-bench", driver_memory=memory)
    try:
        if not data.exists():
            frame = snapshot_rows(spark, rows)
            if fmt == "parquet":
                frame.write.mode("overwrite").parquet(str(data))
            else:
                frame.write.mode("overwrite").json(str(data))
        reader = spark.read.parquet if fmt == "parquet" else spark.read.text
        actual = reader(str(data)).count()
        out = workdir / f"out-{rows}-{fmt}"
        shutil.rmtree(out, ignore_errors=True)
        load = os.getloadavg()[0]
        started, cpu_before = time.monotonic(), jvm_cpu_seconds(spark)
        result = run_analysis(spark, AnalysisOptions([str(data)], out, fmt=fmt, bucket_seconds=60.0))
        seconds, cpu = time.monotonic() - started, jvm_cpu_seconds(spark) - cpu_before
        load = max(load, os.getloadavg()[0])
    finally:
        spark.stop()
    size = sum(f.stat().st_size for f in data.rglob("*") if f.is_file()) / 1e6
    return (f"| {actual:,} | {fmt} ({size:,.0f} MB) | {master} | {seconds:,.1f} | {cpu:,.1f} | "
            f"{actual / seconds:,.0f} | {len(result.findings)} | {load:.1f} |")


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/qdmesh-telemetry-bench"))
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="6g")
    parser.add_argument("--format", choices=("parquet", "json"), default="parquet")
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    print("| snapshot rows | input | master | job seconds | JVM CPU seconds | rows/s | findings "
          "| load avg (max) |")
    print("|---:|---|---|---:|---:|---:|---:|---:|")
    for rows in args.rows:
        print(measure(rows, args.workdir, args.master, args.driver_memory, args.format), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
