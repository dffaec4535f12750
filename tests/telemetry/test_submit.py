"""The job as an operator starts it: ``spark-submit`` on the module's file (its own JVM)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.prerequisites import require
from tests.router.routerproc import REPO_ROOT, router_env
from tests.telemetry.handmade import edge_case_rows

pytestmark = pytest.mark.timeout(900)


def test_spark_submit_runs_the_job_file(tmp_path: Path) -> None:
    submit = shutil.which("spark-submit")
    require(submit is not None, "spark-submit (pyspark's launcher)")
    data = tmp_path / "in" / "mesh=gaps"
    data.mkdir(parents=True)
    rows = [r for r in edge_case_rows() if r["mesh"] == "gaps"]
    (data / "gaps-1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    env = router_env()
    env["PYTHONPATH"] = f"{REPO_ROOT / 'telemetry'}:{env['PYTHONPATH']}"
    done = subprocess.run(
        [str(submit), "--master", "local[1]", "--conf", "spark.ui.enabled=false",
         "--conf", "spark.sql.shuffle.partitions=1", "--conf", "spark.sql.adaptive.enabled=false",
         str(REPO_ROOT / "telemetry" / "qdmesh_telemetry" / "analyse.py"),
         "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"), "--bucket", "10"],
        capture_output=True, text=True, timeout=280, env=env, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"{len(rows)} rows (0 malformed)" in done.stdout, done.stdout
    assert "address,gaps/feed,in,90.0" in (tmp_path / "out" / "summary.csv").read_text()
    assert (tmp_path / "out" / "report.html").exists()
