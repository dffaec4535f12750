"""Leader election (operator/qdmesh_operator/leader.py) against a REAL API server: one replica
holds the Lease and the others wait; a released Lease passes at once, one that is no longer
renewed only after its duration; a leader that loses its Lease stops. Then two
``qdmesh-operator`` processes: only the leader reconciles, the standby answers its health
probe, takes over when the leader is SIGKILLed, and releases the Lease when stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from qdmesh_operator.leader import LeaderElector, LeaseSettings
from tests.kube.controlplane import ControlPlane
from tests.operator.kube_operator import Cluster, api_namespace, eventually
from tests.router.routerproc import free_port

pytestmark = pytest.mark.timeout(180)


def settings(namespace: str, identity: str, duration: float = 3.0) -> LeaseSettings:
    return LeaseSettings(name="qdmesh-operator", namespace=namespace, identity=identity,
                         duration_s=duration, renew_deadline_s=duration * 2 / 3, retry_s=0.5)


def lease(api: Any, namespace: str) -> Any:
    from kubernetes import client

    return client.CoordinationV1Api(api).read_namespaced_lease("qdmesh-operator", namespace).spec


def lease_gone(api: Any, namespace: str) -> bool:
    from kubernetes import client

    try:
        lease(api, namespace)
    except client.ApiException as e:
        return e.status == 404
    return False


def test_one_replica_holds_the_lease_and_a_released_one_passes_at_once(crds: ControlPlane) -> None:
    api, namespace = api_namespace(crds, "lease")
    a = LeaderElector(api, settings(namespace, "replica-a"))
    b = LeaderElector(api, settings(namespace, "replica-b"))
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    assert a.try_acquire_or_renew(), "the holder renews"
    assert not b.try_acquire_or_renew()
    spec = lease(api, namespace)
    assert (spec.holder_identity, spec.lease_transitions, spec.lease_duration_seconds) == ("replica-a", 0, 3)
    a.release()
    assert lease_gone(api, namespace), "a released Lease is deleted"
    assert b.try_acquire_or_renew(), "a released Lease is free at once"
    spec = lease(api, namespace)
    assert (spec.holder_identity, spec.lease_transitions) == ("replica-b", 0)
    assert not a.try_acquire_or_renew()


def test_a_lease_no_longer_renewed_passes_only_after_its_duration(crds: ControlPlane) -> None:
    api, namespace = api_namespace(crds, "lease")
    assert LeaderElector(api, settings(namespace, "crashed")).try_acquire_or_renew()
    standby = LeaderElector(api, settings(namespace, "standby"))
    started = time.monotonic()
    while not standby.try_acquire_or_renew():
        time.sleep(0.1)
        assert time.monotonic() - started < 10, "the standby never took over"
    waited = time.monotonic() - started
    # The standby measures the duration from when it first saw the Lease, by its own clock.
    assert 3.0 <= waited < 5.0
    assert lease(api, namespace).holder_identity == "standby"


def test_a_leader_whose_lease_is_taken_stops(crds: ControlPlane) -> None:
    api, namespace = api_namespace(crds, "lease")
    leader = LeaderElector(api, settings(namespace, "leader"))
    assert leader.try_acquire_or_renew()
    lost = threading.Event()
    leader.keep(lost.set)
    time.sleep(1.5)
    assert not lost.is_set(), "renewing, the leader keeps its Lease"
    from kubernetes import client

    # Another party overwrites the Lease (as one that judged it expired would).
    coordination = client.CoordinationV1Api(api)
    taken = coordination.read_namespaced_lease("qdmesh-operator", namespace)
    taken.spec.holder_identity = "usurper"
    coordination.replace_namespaced_lease("qdmesh-operator", namespace, taken)
    # At its next renewal (every 0.5 s), not at the renew deadline (2 s).
    assert lost.wait(1.5), "the leader was not told it lost its Lease"
    leader.release()
    assert lease(api, namespace).holder_identity == "usurper", "release must not touch another's Lease"


def test_a_leader_cut_off_from_the_api_server_stops_within_the_renew_deadline(crds: ControlPlane) -> None:
    from kubernetes import client

    api, namespace = api_namespace(crds, "lease")
    leader = LeaderElector(api, settings(namespace, "leader"))
    assert leader.try_acquire_or_renew()
    # From now on every request of the leader's finds nobody listening.
    unreachable = client.Configuration()
    unreachable.host = f"http://127.0.0.1:{free_port()}"
    unreachable.retries = 0
    leader.api = client.CoordinationV1Api(client.ApiClient(unreachable))
    assert not leader.try_acquire_or_renew(), "an unreachable API server is a failed attempt, not an error"
    lost = threading.Event()
    started = time.monotonic()
    leader.keep(lost.set)
    assert lost.wait(10), "the leader kept going without its Lease"
    # Renew deadline 2 s, counted from the last renewal.
    assert time.monotonic() - started < 4.0
    leader.release()  # cannot reach the server either: logged, not raised


def start_operator(crds: ControlPlane, namespace: str, name: str, health_port: int,
                   log: Path, *options: str, kubeconfig: str | None = None,
                   timings: Tuple[str, str, str] = ("6", "4", "1")) -> subprocess.Popen:
    env = {**os.environ, **crds.env(), "POD_NAME": name, "POD_NAMESPACE": namespace}
    if kubeconfig:
        env["KUBECONFIG"] = kubeconfig
    duration, deadline, retry = timings
    return subprocess.Popen(
        [sys.executable, "-m", "qdmesh_operator.main", "-n", namespace, "--health-port", str(health_port),
         "--metrics-port", "0", "--leader-election", "--lease-duration", duration,
         "--lease-renew-deadline", deadline, "--lease-retry-period", retry, *options],
        env=env, stdout=subprocess.DEVNULL, stderr=open(log, "ab"))


def health(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as answer:
        return str(answer.status) + " " + answer.read().decode()


def test_two_operator_processes_one_reconciles_and_the_standby_takes_over(
        crds: ControlPlane, tmp_path: Path) -> None:
    api, namespace = api_namespace(crds, "ha")
    kube = Cluster(crds, namespace)
    ports: Dict[str, int] = {"op-1": free_port(), "op-2": free_port()}
    procs: Dict[str, subprocess.Popen] = {}
    try:
        procs["op-1"] = start_operator(crds, namespace, "op-1", ports["op-1"], tmp_path / "op-1.log")
        eventually(lambda: lease(api, namespace).holder_identity == "op-1", 30, "op-1 leading")
        procs["op-2"] = start_operator(crds, namespace, "op-2", ports["op-2"], tmp_path / "op-2.log")
        answer = eventually(lambda: health(ports["op-2"]), 30, "op-2's health endpoint")
        assert answer.startswith("200 standby"), answer
        kube.create("routermeshes", "RouterMesh", "first", {"size": 1, "image": "qdmesh/router:0.1.0"})
        eventually(lambda: kube.apps.read_namespaced_stateful_set("first", namespace), 60,
                   "first's StatefulSet")
        assert "became the leader" not in (tmp_path / "op-2.log").read_text()

        procs["op-1"].send_signal(signal.SIGKILL)
        procs["op-1"].wait(10)
        eventually(lambda: lease(api, namespace).holder_identity == "op-2", 30, "op-2 taking over")
        kube.create("routermeshes", "RouterMesh", "second", {"size": 1, "image": "qdmesh/router:0.1.0"})
        eventually(lambda: kube.apps.read_namespaced_stateful_set("second", namespace), 60,
                   "second's StatefulSet")
        assert lease(api, namespace).lease_transitions == 1

        procs["op-2"].send_signal(signal.SIGTERM)
        assert procs["op-2"].wait(30) == 0
        assert lease_gone(api, namespace), "a stopped leader deletes its Lease"
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)


def test_bad_election_settings_are_named(crds: ControlPlane) -> None:
    cases: List[List[str]] = [
        ["--leader-election"],  # no namespace for the Lease
        ["--leader-election", "--lease-namespace", "x", "--lease-duration", "2",
         "--lease-renew-deadline", "5"],
    ]
    expected = ["--leader-election needs --lease-namespace or $POD_NAMESPACE",
                "the lease duration must be longer than the renew deadline"]
    env = {k: v for k, v in os.environ.items() if k not in ("POD_NAMESPACE", "QDMESH_LEADER_ELECTION")}
    for args, message in zip(cases, expected):
        done = subprocess.run([sys.executable, "-m", "qdmesh_operator.main", *args], env=env,
                              capture_output=True, text=True, timeout=30)
        assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr, done.stderr
    bad_env = {**env, "QDMESH_LEADER_ELECTION": "sometimes"}
    done = subprocess.run([sys.executable, "-m", "qdmesh_operator.main"], env=bad_env,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "QDMESH_LEADER_ELECTION='sometimes'" in done.stderr


def test_the_lease_is_owned_by_the_operators_deployment_and_goes_with_it(crds: ControlPlane) -> None:
    """helm uninstall deletes the Deployment and the RBAC together: the last leader may not be
    able to delete its Lease any more, the garbage collector does."""
    from kubernetes import client

    from qdmesh_operator.main import lease_owner

    api, namespace = api_namespace(crds, "owned")
    apps = client.AppsV1Api(api)
    labels = {"app": "qdmesh-operator"}
    deployment = apps.create_namespaced_deployment(namespace, {
        "metadata": {"name": "qdmesh"}, "spec": {"replicas": 0, "selector": {"matchLabels": labels},
                                                 "template": {"metadata": {"labels": labels}, "spec": {
                                                     "containers": [{"name": "op", "image": "x:1"}]}}}})
    os.environ["QDMESH_LEASE_OWNER"] = "deployment/qdmesh"
    try:
        owned = lease_owner(api, settings(namespace, "op-1"))
    finally:
        del os.environ["QDMESH_LEASE_OWNER"]
    assert owned.owner == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "qdmesh",
                           "uid": deployment.metadata.uid}
    assert LeaderElector(api, owned).try_acquire_or_renew()
    from kubernetes.client import CoordinationV1Api

    held = CoordinationV1Api(api).read_namespaced_lease("qdmesh-operator", namespace)
    assert [(o.kind, o.name, o.uid) for o in held.metadata.owner_references] == [
        ("Deployment", "qdmesh", deployment.metadata.uid)]
    apps.delete_namespaced_deployment("qdmesh", namespace)
    # The garbage collector works through a queue: generous on a loaded machine.
    eventually(lambda: lease_gone(api, namespace), 150, "the Lease garbage-collected with its Deployment")
