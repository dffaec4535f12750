"""What a test needs from the machine (a broker, a Kubernetes API server, Spark, a browser).

Locally a missing prerequisite skips the test with the reason. CI (``.ci/run`` sets
``QDMESH_REQUIRE_ALL=1``) installs every prerequisite, so there a missing one fails the test
instead: nothing is silently skipped on the machine that decides whether work lands.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Callable, List, Tuple

import pytest


def require(available: bool, what: str) -> None:
    """Skip (locally) or fail (in CI) the calling test unless ``available``."""
    if available:
        return
    if os.environ.get("QDMESH_REQUIRE_ALL") == "1":
        pytest.fail(f"prerequisite missing in CI: {what}", pytrace=False)
    pytest.skip(f"prerequisite missing: {what}")


# -- what the machine lacks, for the run's header and summary (tests/conftest.py) ---------------
INSTALL_COMMAND = "scripts/install-test-prerequisites"


def _c_toolchain() -> bool:
    import sysconfig
    compiler = shutil.which("cc") or shutil.which("gcc")
    return compiler is not None and (Path(sysconfig.get_paths()["include"]) / "Python.h").exists()


def _rabbitmq() -> bool:
    from tests.broker.rabbit import missing_reason
    return missing_reason() is None


def _cyrus() -> bool:
    try:
        from proton import SASL
    except ImportError:
        return False
    return bool(SASL.extended()) and shutil.which("saslpasswd2") is not None


def _pypy() -> bool:
    venv = Path(os.environ.get("QDMESH_PYPY_VENV")
                or Path(os.environ.get("QDMESH_CACHE") or Path.home() / ".cache/qdmesh") / "pypy-venv")
    return (venv / "bin" / "python").exists()


def _proton_c_dev() -> bool:
    import subprocess
    return shutil.which("pkg-config") is not None and subprocess.run(
        ["pkg-config", "--exists", "libqpid-proton"], capture_output=True).returncode == 0


def _c_router() -> bool:
    from tests.interop.cpeer import c_router_binary
    return c_router_binary() is not None


def _helm_tools() -> bool:
    from tests.chart.tools import find_tool
    tools = all(find_tool(tool) is not None for tool in ("helm", "kubeconform"))
    return tools and shutil.which("lua5.4") is not None


def _docker() -> bool:
    return shutil.which("docker") is not None


def _kubernetes() -> bool:
    from tests.kube.controlplane import CONTROLLER_BINARIES, missing_binaries
    return not missing_binaries() and not missing_binaries(CONTROLLER_BINARIES)


def _java_17() -> bool:
    import subprocess
    if shutil.which("java") is None:
        return False
    out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30).stderr
    try:
        return int(out.split('"')[1].split(".")[0]) >= 17
    except (IndexError, ValueError):
        return False


def _chromium() -> bool:
    return shutil.which("chromium") is not None and shutil.which("chromedriver") is not None


def _prometheus() -> bool:
    return shutil.which("promtool") is not None and shutil.which("prometheus") is not None


# (what, the tests that need it, available?, the .ci/setup.d step that installs it). Cheap
# probes only: this runs before every test run. Each test still checks with require().
PREREQUISITES: List[Tuple[str, str, Callable[[], bool], str]] = [
    ("a C compiler and Python's headers", "tests/router (proton shim), bench load generators",
     _c_toolchain, "apt-get install gcc python3-dev"),
    ("RabbitMQ with its AMQP 1.0 plugin", "tests/broker, tests/linkroute, mesh link routes",
     _rabbitmq, "10-rabbitmq.sh"),
    ("python-qpid-proton with Cyrus SASL", "tests/policy, tests/security (SASL)", _cyrus,
     "05-cyrus-proton.sh"),
    ("PyPy with python-qpid-proton", "tests/router/test_pypy.py", _pypy, "15-pypy.sh"),
    ("proton-C's headers", "bench load generator tests", _proton_c_dev, "20-loadgen.sh"),
    ("the C router qdrouterd 1.19", "tests/interop, the edge churn of tests/router/test_soak.py", _c_router,
     "25-qdrouterd-c.sh"),
    ("helm, kubeconform and lua5.4", "tests/chart, tests/gitops", _helm_tools, "30-helm-tools.sh"),
    ("Prometheus and promtool (Debian's prometheus)", "tests/alerts",
     _prometheus, "32-promtool.sh"),
    ("Docker", "tests/images", _docker, "35-images.sh"),
    ("Kubernetes binaries (etcd, kube-apiserver...)", "tests/kube, tests/operator, tests/kubectl",
     _kubernetes, "40-kubernetes.sh"),
    ("Java 17+ for Spark", "tests/telemetry", _java_17, "60-telemetry.sh"),
    ("Chromium and chromedriver", "tests/console, the telemetry report", _chromium, "70-chromium.sh"),
]


def missing_prerequisites() -> List[Tuple[str, str, str]]:
    """(what, which tests skip without it, the step that installs it) for each missing one."""
    missing = []
    for what, tests, available, step in PREREQUISITES:
        try:
            ok = available()
        except Exception:      # a probe that cannot even run means: not there
            ok = False
        if not ok:
            missing.append((what, tests, step))
    return missing
