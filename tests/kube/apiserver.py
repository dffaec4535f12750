"""Pytest fixtures: a real Kubernetes control plane on loopback, one per test session.

Import them into a conftest::

    from tests.kube.apiserver import kube_apiserver, kube_control_plane  # noqa: F401

``kube_apiserver`` runs etcd and kube-apiserver (enough for CRDs, CEL validation, kopf
handlers); ``kube_control_plane`` is the same server with kube-controller-manager and
kube-scheduler added (garbage collection through owner references, StatefulSet and Deployment
controllers, pods bound to nodes; no kubelet, so pods never run). Both yield a
``ControlPlane`` with ``.kubeconfig`` (admin kubeconfig path), ``.server`` (URL),
``.api_client()`` and ``.env()`` (os.environ plus KUBECONFIG). The binaries come from
``tests/e2e/cluster/build.sh``; without them the tests skip locally and fail in CI.
"""

from __future__ import annotations

from typing import Iterator

import pytest

from tests.prerequisites import require

from .controlplane import (
    CONTROLLER_BINARIES,
    ControlPlane,
    describe_missing,
    missing_binaries,
    start_control_plane,
)

__all__ = ["ControlPlane", "kube_apiserver", "kube_control_plane"]


@pytest.fixture(scope="session")
def kube_apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """etcd + kube-apiserver on loopback for the whole session (about 10-20 s to start)."""
    missing = missing_binaries()
    require(not missing, describe_missing(missing))
    plane = start_control_plane(tmp_path_factory.mktemp("kube-apiserver"))
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def kube_control_plane(kube_apiserver: ControlPlane) -> ControlPlane:
    """``kube_apiserver`` plus kube-controller-manager and kube-scheduler (started once)."""
    missing = missing_binaries(CONTROLLER_BINARIES)
    require(not missing, describe_missing(missing))
    kube_apiserver.start_controllers()
    return kube_apiserver
