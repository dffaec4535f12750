"""``qdmesh-analyse`` without pyspark: one line naming the extra to install, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_without_pyspark_one_line_names_the_telemetry_extra(tmp_path: Path) -> None:
    args = ["--input", str(tmp_path), "--output", str(tmp_path / "report")]
    code = (f"import runpy, sys; sys.modules['pyspark'] = None; sys.argv[1:] = {args!r}; "
            "runpy.run_module('qdmesh_telemetry.analyse', run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().count("\n") == 0, done.stderr
    assert "pyspark not installed" in done.stderr and "pip install '.[telemetry]'" in done.stderr
    assert not (tmp_path / "report").exists()
