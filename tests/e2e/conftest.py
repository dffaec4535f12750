"""Fixtures for the end-to-end suite: a real cluster (kind or the local one), a namespace per
test, images loaded into the nodes, and timings reported at the end of the run.

The suite runs only with ``QDMESH_E2E=1`` (``tests/e2e/run.sh`` sets it after bringing up the
local cluster); otherwise every test here is skipped, so ``python -m pytest`` stays fast.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Tuple

import pytest
from kubernetes import client, config

from tests.prerequisites import require

from .cluster_access import K8S_VERSION, e2e_enabled, image_loader, kubeconfig_path, load_image_archive
from .kube import describe_namespace
from .mesh_fixtures import mesh, operator_namespace  # noqa: F401 (the product suite's session fixtures)

E2E_DIR = Path(__file__).resolve().parent
MKIMAGE = E2E_DIR / "cluster" / "mkimage.py"
BUSYBOX_IMAGE = f"localhost/qdmesh/busybox:{K8S_VERSION}"

_timings: List[Tuple[str, float]] = []

#: The order the files run in.  The product suite's files share one mesh (mesh_fixtures.py), and
#: each relies on the ones before it having left it Ready with its routers: the mesh is made and
#: checked first, changed live, read with qdstat, survives an operator restart, scales and back,
#: then rolls; the files with meshes of their own follow.  A file not named here runs last.
SUITE_ORDER = (
    "test_cluster_smoke.py",
    # Before the shared operator exists: it installs an operator of its own.
    "test_product_upgrade.py",
    "test_product_mesh.py",
    "test_product_live_changes.py",
    "test_product_qdstat.py",
    "test_product_operator_restart.py",
    "test_product_scale.py",
    "test_product_validation.py",
    "test_product_certificates.py",
    "test_product_broker.py",
    "test_product_rolling.py",
    "test_product_examples.py",
    "test_product_console.py",
    "test_product_pypy.py",
    "test_product_edges.py",
    "test_product_alerts.py",
    "test_product_multi_node.py",
    "test_product_node_loss.py",
)


def _in_e2e(item: pytest.Item) -> bool:
    return E2E_DIR in Path(str(item.fspath)).resolve().parents


def _suite_rank(item: pytest.Item) -> int:
    name = Path(str(item.fspath)).name
    return SUITE_ORDER.index(name) if name in SUITE_ORDER else len(SUITE_ORDER)


def pytest_collection_modifyitems(items: List[pytest.Item]) -> None:
    places = [i for i, item in enumerate(items) if _in_e2e(item)]
    # Stable: the tests of one file keep their order; the e2e tests keep their places in the run.
    for place, item in zip(places, sorted((items[i] for i in places), key=_suite_rank)):
        items[place] = item
    for item in items:
        if not _in_e2e(item):
            continue
        item.add_marker(pytest.mark.e2e)
        if not e2e_enabled():
            item.add_marker(pytest.mark.skip(reason="e2e suite: set QDMESH_E2E=1 or run tests/e2e/run.sh"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "e2e: end-to-end test against a real Kubernetes cluster")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _timings:
        return
    terminalreporter.section("e2e timings")
    for name, seconds in _timings:
        terminalreporter.write_line(f"{seconds:8.1f} s  {name}")


@pytest.fixture(scope="session")
def e2e_kubeconfig() -> Path:
    """The kubeconfig of the cluster under test."""
    path = kubeconfig_path()
    require(path is not None, "a Kubernetes cluster: QDMESH_E2E_KUBECONFIG, or "
                              "tests/e2e/cluster/local-cluster.sh up (see docs/e2e.md)")
    assert path is not None
    return path


@pytest.fixture(scope="session")
def k8s(e2e_kubeconfig: Path) -> Any:
    """A kubernetes ``ApiClient`` for the cluster under test."""
    return config.new_client_from_config(config_file=str(e2e_kubeconfig))


@pytest.fixture(scope="session")
def core(k8s: Any) -> Any:
    return client.CoreV1Api(k8s)


@pytest.fixture(scope="session")
def timing() -> Callable[[str, float], None]:
    """``timing(name, seconds)`` records a duration; all are printed at the end of the run."""

    def record(name: str, seconds: float) -> None:
        _timings.append((name, seconds))
        print(f"[e2e timing] {name}: {seconds:.1f} s", file=sys.stderr)

    return record


@pytest.fixture(scope="session")
def load_images(e2e_kubeconfig: Path) -> Callable[[Path], None]:
    """``load_images(archive)`` puts a ``docker save``/OCI archive's images on the nodes."""
    loader = image_loader(e2e_kubeconfig)

    def load(archive: Path) -> None:
        load_image_archive(archive, loader)

    return load


@pytest.fixture(scope="session")
def busybox_image(load_images: Callable[[Path], None], tmp_path_factory: pytest.TempPathFactory,
                  timing: Callable[[str, float], None]) -> str:
    """A small test image (static busybox) present on the nodes; its reference."""
    busybox = Path("/bin/busybox")
    require(busybox.is_file(), "a static busybox (/bin/busybox, Debian's busybox-static)")
    archive = tmp_path_factory.mktemp("images") / "busybox.tar"
    start = time.monotonic()
    subprocess.run([sys.executable, str(MKIMAGE), str(archive), BUSYBOX_IMAGE, "--busybox", str(busybox),
                    "--entrypoint", "/bin/sh"], check=True)
    load_images(archive)
    timing("busybox image built and loaded", time.monotonic() - start)
    return BUSYBOX_IMAGE


@pytest.fixture
def namespace(core: Any, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace named after the test, deleted afterwards (its state is printed when the
    test failed)."""
    stem = re.sub(r"[^a-z0-9-]", "-", request.node.name.lower())[:40].strip("-")
    name = f"e2e-{stem}-{uuid.uuid4().hex[:5]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    report: Dict[str, Any] = getattr(request.node, "e2e_reports", {})
    call = report.get("call")
    if call is not None and call.failed:
        print(f"\n--- namespace {name} at failure:\n{describe_namespace(core, name)}", file=sys.stderr)
    core.delete_namespace(name, propagation_policy="Background")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome: Any = yield
    report = outcome.get_result()
    reports = getattr(item, "e2e_reports", {})
    reports[report.when] = report
    item.e2e_reports = reports  # type: ignore[attr-defined]
