"""Fixtures of the two-cluster stage (tests/e2e/run-multicluster.sh): two Kubernetes clusters,
"east" and "west", whose kubeconfigs are named by ``QDMESH_E2E_EAST_KUBECONFIG`` and
``QDMESH_E2E_WEST_KUBECONFIG``; the chart installed in each; a fresh namespace in each; and the
address at which a pod of one cluster reaches a NodePort of the other.

Without either variable these tests are not part of the run (a plain ``pytest``, and the
single-cluster stages, tests/e2e/run.sh and run-kind.sh, which also run with QDMESH_E2E=1):
they are skipped as belonging to another stage. With only one of them the prerequisite is
missing (tests/prerequisites.py: skipped locally, a failure in CI).
"""

from __future__ import annotations

import os
import re
import sys
import time
import uuid
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List

import pytest
from kubernetes import client, config

from tests.prerequisites import require

from ..kube import describe_namespace, eventually
from ..mesh_fixtures import print_operator_log
from ..product import crds_established, deployment_ready, helm_binary, helm_install, helm_uninstall

EAST_ENV = "QDMESH_E2E_EAST_KUBECONFIG"
WEST_ENV = "QDMESH_E2E_WEST_KUBECONFIG"
Timing = Callable[[str, float], None]


HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: List[pytest.Item]) -> None:
    if os.environ.get(EAST_ENV) or os.environ.get(WEST_ENV):
        return
    skip = pytest.mark.skip(reason="the two-cluster stage: bash tests/e2e/run-multicluster.sh")
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(skip)


@dataclass(frozen=True)
class Cluster:
    """One of the two clusters: its name in the tests, kubeconfig and API clients."""

    name: str
    kubeconfig: Path
    api: Any  # kubernetes.client.ApiClient
    core: Any  # kubernetes.client.CoreV1Api


def _cluster(name: str, env: str) -> Cluster:
    value = os.environ.get(env)
    require(bool(value) and Path(str(value)).is_file(),
            f"two clusters: {EAST_ENV} and {WEST_ENV} (bash tests/e2e/run-multicluster.sh, docs/e2e.md)")
    path = Path(str(value))
    api = config.new_client_from_config(config_file=str(path))
    return Cluster(name, path, api, client.CoreV1Api(api))


def node_address(cluster: Cluster) -> str:
    """The InternalIP of the cluster's (first) node: with kind, its node container's address on
    the Docker network both clusters share, where a pod of the other cluster reaches its
    NodePorts."""
    for node in cluster.core.list_node().items:
        for address in node.status.addresses or []:
            if address.type == "InternalIP":
                return str(address.address)
    raise AssertionError(f"cluster {cluster.name}: no node with an InternalIP")


@pytest.fixture(scope="session")
def east() -> Cluster:
    return _cluster("east", EAST_ENV)


@pytest.fixture(scope="session")
def west() -> Cluster:
    return _cluster("west", WEST_ENV)


def _fresh_namespace(cluster: Cluster, stem: str) -> str:
    name = f"e2e-{stem}-{uuid.uuid4().hex[:5]}"
    cluster.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    return name


#: The node port of east's MeshAccessGrant redemption server (tokens name it with east's node).
GRANT_SERVER_NODE_PORT = 32443


@contextmanager
def _chart(cluster: Cluster, helm: str) -> Iterator[str]:
    """The chart from this checkout installed (not yet waited for) in ``cluster``; east's
    redemption server is reachable from west at east's node."""
    namespace = _fresh_namespace(cluster, "qdmesh-system")
    values = {"image.pullPolicy": "Never", "operator.logLevel": "info"}
    if cluster.name == "east":
        values.update({"grantServer.host": node_address(cluster), "grantServer.service.type": "NodePort",
                       "grantServer.service.nodePort": str(GRANT_SERVER_NODE_PORT)})
    try:
        helm_install(helm, cluster.kubeconfig, "qdmesh", namespace, values)
        yield namespace
    finally:
        print_operator_log(cluster.core, namespace)
        helm_uninstall(helm, cluster.kubeconfig, "qdmesh", namespace)
        cluster.core.delete_namespace(namespace, propagation_policy="Background")


@pytest.fixture(scope="session")
def operators(east: Cluster, west: Cluster, timing: Timing) -> Iterator[Dict[str, str]]:
    """The chart installed in both clusters, operators ready: cluster name -> operator namespace.
    Both installs start before either is waited for, so the two operators start together."""
    helm = helm_binary()
    require(helm is not None, "helm (.ci/setup.d/30-helm-tools.sh)")
    assert helm is not None
    started = time.monotonic()
    with ExitStack() as stack:
        namespaces = {c.name: stack.enter_context(_chart(c, helm)) for c in (east, west)}
        for cluster in (east, west):
            _wait_operator(cluster, namespaces[cluster.name])
        timing("helm install in both clusters -> both operators ready", time.monotonic() - started)
        yield namespaces


def _wait_operator(cluster: Cluster, namespace: str) -> None:
    describe = lambda: describe_namespace(cluster.core, namespace)  # noqa: E731
    eventually(lambda: crds_established(cluster.api), 60, f"{cluster.name}: the chart's CRDs Established",
               describe=describe)
    eventually(lambda: deployment_ready(cluster.api, namespace, "qdmesh"), 180,
               f"{cluster.name}: operator Deployment ready", describe=describe)


@contextmanager
def namespace_for(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace named after the requesting test (or module), deleted afterwards."""
    stem = re.sub(r"[^a-z0-9-]", "-", request.node.name.lower())[:30].strip("-")
    name = _fresh_namespace(cluster, stem)
    try:
        yield name
    finally:
        call = getattr(request.node, "e2e_reports", {}).get("call")
        if call is not None and call.failed:
            state = describe_namespace(cluster.core, name)
            print(f"\n--- {cluster.name}: namespace {name} at failure:\n{state}", file=sys.stderr)
        cluster.core.delete_namespace(name, propagation_policy="Background")


@pytest.fixture
def east_namespace(east: Cluster, operators: Dict[str, str], request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace in east (the operator installed), deleted afterwards."""
    with namespace_for(east, request) as name:
        yield name


@pytest.fixture
def west_namespace(west: Cluster, operators: Dict[str, str], request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace in west (the operator installed), deleted afterwards."""
    with namespace_for(west, request) as name:
        yield name
