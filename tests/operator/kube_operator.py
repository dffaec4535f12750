"""Fixtures and helpers for the operator tests against a real API server: the CRDs installed,
the operator running in-process under kopf.testing.KopfRunner, and a small client (Cluster)."""

from __future__ import annotations

import os
import sys
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Tuple

import pytest
import yaml

from tests.kube.controlplane import ControlPlane
from tests.router.routerproc import free_port

CRD_DIR = Path(__file__).resolve().parents[2] / "crds"
G, V = "qdmesh.io", "v1alpha1"
LINE3 = [("B", "A", 1), ("C", "B", 1)]


def api_namespace(crds: ControlPlane, prefix: str) -> Tuple[Any, str]:
    """An API client and a fresh namespace of its own (``prefix-<random>``)."""
    from kubernetes import client

    api = crds.api_client()
    namespace = f"{prefix}-{uuid.uuid4().hex[:8]}"
    client.CoreV1Api(api).create_namespace({"metadata": {"name": namespace}})
    return api, namespace


def eventually(check: Callable[[], Any], timeout: float = 30.0,
               what: str | Callable[[], str] = "condition") -> Any:
    """``check()`` once it is truthy; fails after ``timeout`` s naming ``what`` (a callable:
    what it says then, for a description of the state that did not come)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except Exception as e:  # not there yet (404 and friends)
            last = e
        else:
            if last:
                return last
        time.sleep(0.25)
    said = what if isinstance(what, str) else what()
    raise AssertionError(f"{said} did not happen within {timeout:g}s (last: {last!r})")


class Cluster:
    """API helpers bound to the test namespace."""

    def __init__(self, plane: ControlPlane, namespace: str) -> None:
        from kubernetes import client

        self.plane = plane
        self.ns = namespace
        self.api = plane.api_client()
        self.custom = client.CustomObjectsApi(self.api)
        self.core = client.CoreV1Api(self.api)
        self.apps = client.AppsV1Api(self.api)
        self.policy = client.PolicyV1Api(self.api)

    def create(self, plural: str, kind: str, name: str, spec: Dict[str, Any]) -> Dict[str, Any]:
        body = {"apiVersion": f"{G}/{V}", "kind": kind, "metadata": {"name": name}, "spec": spec}
        return dict(self.custom.create_namespaced_custom_object(G, V, self.ns, plural, body))

    def get(self, plural: str, name: str) -> Dict[str, Any]:
        return dict(self.custom.get_namespaced_custom_object(G, V, self.ns, plural, name))

    def patch_spec(self, plural: str, name: str, spec: Dict[str, Any]) -> Dict[str, Any]:
        return dict(
            self.custom.patch_namespaced_custom_object(
                G, V, self.ns, plural, name, {"spec": spec}, _content_type="application/merge-patch+json"
            )
        )

    def delete(self, plural: str, name: str) -> None:
        self.custom.delete_namespaced_custom_object(G, V, self.ns, plural, name)

    def gone(self, plural: str, name: str) -> bool:
        from kubernetes.client.rest import ApiException

        try:
            self.get(plural, name)
        except ApiException as e:
            return e.status == 404
        return False

    def condition(self, plural: str, name: str, type_: str) -> Dict[str, Any]:
        status = self.get(plural, name).get("status") or {}
        return next((c for c in status.get("conditions") or [] if c["type"] == type_), {})

    def events(self, name: str) -> List[Any]:
        return [e for e in self.core.list_namespaced_event(self.ns).items if e.involved_object.name == name]


@pytest.fixture(scope="module")
def crds(kube_control_plane: ControlPlane) -> ControlPlane:
    from kubernetes import client

    api = client.ApiextensionsV1Api(kube_control_plane.api_client())
    for path in sorted(CRD_DIR.glob("*.yaml")):
        body = yaml.safe_load(path.read_text())
        try:
            api.create_custom_resource_definition(body)
        except client.ApiException as e:
            if e.status != 409:
                raise

    def established() -> bool:
        for path in CRD_DIR.glob("*.yaml"):
            name = yaml.safe_load(path.read_text())["metadata"]["name"]
            conditions = api.read_custom_resource_definition(name).status.conditions or []
            if not any(c.type == "Established" and c.status == "True" for c in conditions):
                return False
        return True

    eventually(established, 60, "CRDs established")
    return kube_control_plane


@pytest.fixture(scope="module")
def operator(crds: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dict[str, Any]]:
    """The operator (kopf, in this process) watching one namespace; drift checks every 1.5 s;
    router URLs from a file the tests write."""
    from kopf.testing import KopfRunner
    from kubernetes import client

    namespace = f"op-{uuid.uuid4().hex[:8]}"
    client.CoreV1Api(crds.api_client()).create_namespace({"metadata": {"name": namespace}})
    urls_file = tmp_path_factory.mktemp("operator") / "router-urls.json"
    urls_file.write_text("{}")
    env = {
        "KUBECONFIG": crds.kubeconfig,
        "QDMESH_DRIFT_INTERVAL": "1.5",
        "QDMESH_ROUTER_URLS": str(urls_file),
        "QDMESH_METRICS_PORT": str(free_port()),
    }
    # The drift timer's interval is read when kopf imports the handlers module.
    assert "qdmesh_operator.handlers" not in sys.modules, "handlers imported before their settings were set"
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    health = free_port()
    runner = KopfRunner(
        [
            "run",
            "--standalone",
            "--namespace",
            namespace,
            f"--liveness=http://127.0.0.1:{health}/healthz",
            "-m",
            "qdmesh_operator.handlers",
        ],
        timeout=60,
    )
    runner.__enter__()
    try:
        yield {
            "namespace": namespace,
            "urls_file": urls_file,
            "health": health,
            "metrics": int(env["QDMESH_METRICS_PORT"]),
            "plane": crds,
        }
    finally:
        runner.__exit__(None, None, None)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    assert runner.exception is None, runner.exception


@pytest.fixture
def kube(operator: Dict[str, Any]) -> Cluster:
    return Cluster(operator["plane"], operator["namespace"])


@contextmanager
def operator_process(crds: ControlPlane, tmp_path_factory: pytest.TempPathFactory,
                     stem: str) -> Iterator[Cluster]:
    """The operator as a process (kopf registers its handlers once per process, and
    test_operator_kube.py has the in-process one) watching a namespace of its own, drift checks
    every 1.5 s, no router answering (an empty router-URL file)."""
    import subprocess

    from kubernetes import client

    from tests.reaper import stop_process

    namespace = f"{stem}-{uuid.uuid4().hex[:8]}"
    client.CoreV1Api(crds.api_client()).create_namespace({"metadata": {"name": namespace}})
    workdir: Path = tmp_path_factory.mktemp(stem)
    urls = workdir / "router-urls.json"
    urls.write_text("{}")
    env = {**crds.env(), "QDMESH_ROUTER_URLS": str(urls), "QDMESH_DRIFT_INTERVAL": "1.5"}
    with open(workdir / "operator.log", "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "qdmesh_operator.main", "-n", namespace,
                                 "--health-port", str(free_port()), "--metrics-port", "0"],
                                env=env, stdout=subprocess.DEVNULL, stderr=log)
    try:
        yield Cluster(crds, namespace)
    finally:
        stop_process(proc)
