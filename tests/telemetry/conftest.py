"""Fixtures for the telemetry pipeline: one Spark session (local mode) for the whole run, and
a real mesh of router processes recorded once by the collector while known traffic flows."""

from __future__ import annotations

import shutil
import subprocess
from typing import Any, Iterator

import pytest

from qdmesh_telemetry.job import AnalysisOptions, AnalysisResult, run_analysis
from tests.prerequisites import require
from tests.telemetry.recording import Recording, record_mesh


def java_17() -> bool:
    java = shutil.which("java")
    if java is None:
        return False
    out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
    try:
        version = out.split('"')[1]
    except IndexError:
        return False
    return int(version.split(".")[0]) >= 17


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """Real PySpark in local mode, shared by every telemetry test (starting one takes ~10 s)."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        require(False, "pyspark (the telemetry extra)")
    require(java_17(), "Java 17 or later for Spark")
    from qdmesh_telemetry.spark_session import make_session

    session = make_session("local[2]", app_name="qdmesh-telemetry-tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recording]:
    """A line of three routers A-B-C recorded by the collector around known traffic."""
    with record_mesh(tmp_path_factory.mktemp("mesh")) as recorded:
        yield recorded


@pytest.fixture(scope="session")
def analysis(spark: Any, recording: Recording, tmp_path_factory: pytest.TempPathFactory) -> AnalysisResult:
    """The analysis job run once over the recorded mesh (1 s buckets: rounds are ~1 s apart)."""
    output = tmp_path_factory.mktemp("analysis")
    return run_analysis(spark, AnalysisOptions([str(recording.snapshots)], output,
                                               bucket_seconds=1.0))
