"""``qdmesh-analyse`` / ``python -m qdmesh_telemetry.analyse`` / ``spark-submit analyse.py``:
the analysis job over collected snapshots.

    qdmesh-analyse --input snapshots/ --output report/                  # local[*]
    qdmesh-analyse --input snapshots/ --output report/ --master spark://host:7077
    spark-submit --py-files qdmesh_telemetry.zip analyse.py --input s3a://... --output ...
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import sys
from pathlib import Path
from typing import List

if __package__ in (None, ""):
    # Run as a file (spark-submit .../analyse.py): import the package, not this directory.
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from qdmesh_telemetry.findings import Thresholds


def parse_args(argv: List[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="qdmesh-analyse",
                                     description="Analyse qdmesh-collect snapshots on Spark: Parquet tables, "
                                                 "summary.csv and report.html under --output.")
    parser.add_argument("--input", action="append", required=True, metavar="PATH",
                        help="snapshot directory or file (repeatable; read recursively)")
    parser.add_argument("--output", required=True, help="directory for tables/, summary.csv and report.html")
    parser.add_argument("--format", choices=("json", "parquet"), default="json",
                        help="input format: qdmesh-collect's JSON Lines (default), or Parquet with the "
                             "same columns")
    parser.add_argument("--mesh", help="only this mesh (default: every mesh in the input)")
    parser.add_argument("--master", help="Spark master (default local[*], or spark-submit's)")
    parser.add_argument("--driver-memory",
                        help="Spark driver memory, e.g. 4g (local mode runs in the driver)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="extra Spark setting")
    parser.add_argument("--bucket", type=float, default=60.0, help="seconds per time bucket (default 60)")
    parser.add_argument("--router-capacity", type=float, default=Thresholds.router_capacity,
                        help="deliveries/s one router handles, for saturation and mesh size "
                             "(default %(default)g)")
    parser.add_argument("--saturation", type=float, default=Thresholds.saturation,
                        help="share of capacity that counts as near saturation (default %(default)g)")
    parser.add_argument("--target-utilisation", type=float, default=Thresholds.target_utilisation,
                        help="share of capacity a suggested mesh size aims for (default %(default)g)")
    parser.add_argument("--flaps", type=int, default=Thresholds.flaps,
                        help="auto-link drops or failures that count as flapping (default %(default)d)")
    parser.add_argument("--top", type=int, default=Thresholds.top, help="hottest addresses and links to list")
    args = parser.parse_args(argv)
    for name in ("bucket", "router_capacity", "saturation", "target_utilisation"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')}: must be positive, got {getattr(args, name):g}")
    if args.flaps < 1 or args.top < 1:
        parser.error("--flaps and --top: must be at least 1")
    for item in args.conf:
        if "=" not in item:
            parser.error(f"--conf: expected KEY=VALUE, got {item!r}")
    return args


def main(argv: List[str] | None = None) -> int:
    args = parse_args(argv)
    if importlib.util.find_spec("pyspark") is None:
        # pyspark comes with the telemetry extra (pyproject.toml); Spark also needs Java 17+.
        print("qdmesh-analyse: needs the qdmesh package's [telemetry] extra (pyspark not installed): "
              "in a clone of qdmesh, pip install '.[telemetry]'", file=sys.stderr)
        return 1
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    local_inputs = [p for p in args.input if "://" not in p]
    missing = [p for p in local_inputs if not Path(p).exists()]
    if missing:
        print(f"qdmesh-analyse: --input: no such file or directory: {', '.join(missing)}", file=sys.stderr)
        return 2
    from qdmesh_telemetry.job import AnalysisOptions, run_analysis
    from qdmesh_telemetry.spark_session import make_session

    conf = dict(item.split("=", 1) for item in args.conf)
    thresholds = Thresholds(router_capacity=args.router_capacity, saturation=args.saturation,
                            target_utilisation=args.target_utilisation, flaps=args.flaps, top=args.top)
    options = AnalysisOptions(inputs=list(args.input), output=Path(args.output), fmt=args.format,
                              mesh=args.mesh, bucket_seconds=args.bucket, thresholds=thresholds)
    spark = make_session(args.master, driver_memory=args.driver_memory, conf=conf)
    try:
        result = run_analysis(spark, options)
    finally:
        spark.stop()
    print(f"qdmesh-analyse: {result.total_rows:,} rows ({result.malformed_rows:,} malformed) in "
          f"{result.seconds:.1f} s; {len(result.findings)} findings; report: {result.report}")
    for finding in result.findings:
        print(f"  [{finding.severity}] {finding.message}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
