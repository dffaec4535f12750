"""Renewed certificates and a whole CA rotation reach RUNNING routers: the operator, against a
REAL API server, drives REAL router processes through AMQP management while unsettled
messages cross the mesh.  The test plays the kubelet: it copies each Secret into the routers'
mount directories the way Kubernetes does (a new directory, then the ``..data`` symlink
swapped), one router at a time and only some time after the Secret changed.

Only what a cluster gives differs: the routers run on 127.0.0.1, so their connectors do not
check the host name (the certificate names ``*.live-routers.<namespace>.svc``)."""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from proton import Message
from proton.utils import BlockingConnection

from qdmesh_operator.apply.tls_reload import TlsReload, running_revision
from qdmesh_operator.kube.api import KubeApi
from qdmesh_operator.model.entities import Entity
from qdmesh_operator.reconcile import MeshReconciler
from qdmesh_operator.status import certificates as certificate_status
from qdmesh_operator.tls import certs
from qdmesh_operator.tls.material import leaf_sha256
from qdmesh_operator.tls.rotation import ROTATE_BEFORE, CaSet
from qdrouter.tools.management_client import ManagementClient
from tests.kube.controlplane import ControlPlane
from tests.operator.kube_operator import G, V, api_namespace, eventually
from tests.operator.test_operator_managed_tls_mesh import Rendered, interior, nodes, routers, section
from tests.router.routerproc import Router, free_port

__all__ = ["routers"]  # the fixture, shared with the Managed-TLS mesh tests

pytestmark = pytest.mark.timeout(300)

MESH = "live"
ADDRESS = "live/orders"


# -- pure: what the status says ----------------------------------------------------------------------

def test_a_rotation_step_waits_for_every_router_to_run_the_material() -> None:
    current, waiting = TlsReload("a"), TlsReload("b", waiting=["inter-router-tls"])
    assert running_revision({"a": current, "b": TlsReload("b")}, 2, "rev") == "rev"
    assert running_revision({"a": current}, 2, "rev") is None  # one router did not answer
    assert running_revision({"a": current, "b": waiting}, 2, "rev") is None
    assert running_revision({"a": current, "b": TlsReload("b")}, 2, None) is None


def test_status_names_routers_that_wait_or_cannot_load_and_warns_once() -> None:
    loaded = {"a": TlsReload("a", loaded=["inter-router-tls"]), "b": TlsReload("b")}
    ok, reason, _ = certificate_status.verdict(loaded)
    assert (ok, reason) == (True, "AllRoutersCurrent")
    (event,) = certificate_status.events(loaded, [])
    assert event[:2] == ("Normal", "CertificateLoaded") and "routers a loaded" in event[2]

    waiting = {"a": TlsReload("a", waiting=["inter-router-tls"])}
    ok, reason, message = certificate_status.verdict(waiting)
    assert (ok, reason) == (False, "WaitingForMountedFiles") and "routers a wait" in message

    refused = {"a": TlsReload("a", refused={"inter-router-tls": "sslProfile: UPDATE not allowed (405)"})}
    ok, reason, message = certificate_status.verdict(refused)
    assert (ok, reason) == (False, "ReloadRefused") and "(405)" in message
    (warning,) = certificate_status.events(refused, [])
    assert warning[:2] == ("Warning", "ReloadRefused")
    previous = [certificate_status.condition(refused, 1, [])]
    assert certificate_status.events(refused, previous) == []  # said once, not every time


# -- real routers ---------------------------------------------------------------------------------

class Mount:
    """A Secret mounted in a pod, as the kubelet keeps it: ``tls.crt`` -> ``..data/tls.crt``,
    and ``..data`` -> the directory of the latest copy, swapped in one rename."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.copies = 0
        directory.mkdir(parents=True)

    def sync(self, data: Dict[str, bytes]) -> None:
        self.copies += 1
        copy = self.directory / f"..{self.copies}"
        copy.mkdir()
        for key, value in data.items():
            (copy / key).write_bytes(value)
        link = self.directory / "..data_tmp"
        os.symlink(copy.name, link)
        os.replace(link, self.directory / "..data")
        for key in data:
            if not (self.directory / key).is_symlink():
                os.symlink(f"..data/{key}", self.directory / key)

    def files(self) -> Dict[str, str]:
        return {"caCertFile": str(self.directory / "ca.crt"), "certFile": str(self.directory / "tls.crt"),
                "privateKeyFile": str(self.directory / "tls.key")}


class Traffic:
    """A producer on one router sending unsettled messages, one at a time, to a consumer on
    another, until stopped; counts each outcome."""

    def __init__(self, sender_url: str, receiver_url: str) -> None:
        self.accepted = 0
        self.failures: List[str] = []
        self.received = 0
        self._stop = threading.Event()
        self._receiver = BlockingConnection(receiver_url, timeout=30)
        self._incoming = self._receiver.create_receiver(ADDRESS, credit=100)
        self._sender_url = sender_url
        self._threads = [threading.Thread(target=self._send, daemon=True),
                         threading.Thread(target=self._receive, daemon=True)]

    def start(self) -> Traffic:
        for t in self._threads:
            t.start()
        return self

    def _send(self) -> None:
        connection = BlockingConnection(self._sender_url, timeout=30)
        try:
            sender = connection.create_sender(ADDRESS)
            n = 0
            while not self._stop.is_set():
                try:
                    sender.send(Message(body=f"m{n}"))  # waits for the outcome; raises unless accepted
                    self.accepted += 1
                except Exception as e:  # every failure is a finding
                    self.failures.append(f"m{n}: {e!r}")
                    return
                n += 1
                time.sleep(0.02)
        finally:
            connection.close()

    def _receive(self) -> None:
        while not self._stop.is_set():
            try:
                self._incoming.receive(timeout=0.5)
            except Exception:  # a timeout while idle
                continue
            self._incoming.accept()
            self.received += 1

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=40)
        self._receiver.close()


def _secret(api: Any, namespace: str, name: str) -> Dict[str, bytes]:
    from kubernetes import client

    data = client.CoreV1Api(api).read_namespaced_secret(name, namespace).data or {}
    return {k: base64.b64decode(v) for k, v in data.items()}


def _profile(router: Router) -> Dict[str, Any]:
    with ManagementClient(router.url) as client:
        return dict(client.read("sslProfile", name="inter-router-tls"))


def _inter_router_ordinals(router: Router) -> List[Tuple[str, Any]]:
    """(dir, sslProfileOrdinal) of each inter-router connection: "out" ones the router made
    through its connectors, "in" ones it accepted."""
    with ManagementClient(router.url) as client:
        return [(str(row.get("dir")), row.get("sslProfileOrdinal")) for row in client.query("connection")
                if row.get("role") == "inter-router"]


def _mesh_of_three(tmp_path: Path, mounts: List[Mount], started: List[Router]) -> List[Router]:
    """live-0 listens; live-1 connects to it; live-2 connects to both (a triangle, so a path
    always remains while one connection is replaced)."""
    rendered = Rendered()
    ports = [free_port(), free_port()]

    def connector(name: str, port: int) -> str:
        attrs = {**rendered.connector.attributes, "host": "127.0.0.1", "port": str(port),
                 "verifyHostname": False}
        return section(Entity("connector", name, attrs))

    bodies = [rendered.profile_with(mounts[0].files()) + rendered.listener_on(ports[0]),
              rendered.profile_with(mounts[1].files()) + rendered.listener_on(ports[1])
              + connector("to-0", ports[0]),
              rendered.profile_with(mounts[2].files()) + connector("to-0", ports[0])
              + connector("to-1", ports[1])]
    found = [interior(tmp_path, f"{MESH}-{i}", body, started) for i, body in enumerate(bodies)]
    eventually(lambda: all(len(nodes(r)) == 2 for r in found), 30, "the three routers to mesh over TLS")
    return found


@pytest.fixture(scope="module")
def cluster(crds: ControlPlane) -> Tuple[Any, str]:
    return api_namespace(crds, "live")


def test_ca_rotation_reaches_running_routers_with_no_restart_and_no_lost_message(
        cluster: Tuple[Any, str], tmp_path: Path, routers: List[Router],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from kubernetes import client

    api, ns = cluster
    core = client.CoreV1Api(api)
    # A CA that expires within ROTATE_BEFORE: the operator starts rotating it at once.
    made = certs.utcnow() - certs.CA_LIFETIME + ROTATE_BEFORE - dt.timedelta(days=1)
    ca = CaSet(certs.new_ca(f"{MESH} inter-router CA", made))
    data = {k: base64.b64encode(v).decode() for k, v in ca.to_data().items()}
    core.create_namespaced_secret(ns, {"metadata": {"name": f"{MESH}-inter-router-ca"}, "type": "Opaque",
                                       "data": data})
    client.CustomObjectsApi(api).create_namespaced_custom_object(G, V, ns, "routermeshes", {
        "apiVersion": f"{G}/{V}", "kind": "RouterMesh", "metadata": {"name": MESH},
        "spec": {"size": 3, "image": "qdmesh/router:0.1.0"}})
    urls_file = tmp_path / "urls.json"
    urls_file.write_text("{}")
    monkeypatch.setenv("QDMESH_ROUTER_URLS", str(urls_file))
    reconciler = MeshReconciler(KubeApi(api))
    events: List[str] = []

    def reconcile() -> Dict[str, Any]:
        report = reconciler.reconcile(ns, MESH, why="drift")
        events.extend(e.reason for e in report.events)
        return report.statuses.get(("routermeshes", MESH)) or {}

    reconcile()
    assert "CARotationStarted" in events, events
    secret = f"{MESH}-inter-router-tls"
    mounts = [Mount(tmp_path / f"mount-{i}") for i in range(3)]
    for mount in mounts:
        mount.sync(_secret(api, ns, secret))
    started = _mesh_of_three(tmp_path, mounts, routers)
    pids = [r.pid for r in started]
    urls_file.write_text(json.dumps({f"{ns}/{r.router_id}": r.url for r in started}))
    traffic = Traffic(started[0].url, started[2].url).start()
    try:
        # The kubelet copies the Secret into one pod at a time, a while after it changed.
        turn = 0
        first_ran: Dict[Tuple[str, str], int] = {}
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline:
            status = reconcile()
            condition = next((c for c in status.get("conditions", [])
                              if c["type"] == "CertificatesLoaded"), {})
            rotated = sorted(_secret(api, ns, f"{MESH}-inter-router-ca")) == ["ca.crt", "ca.key"] \
                and "CARetired" in events
            if rotated and condition.get("status") == "True":
                break
            mounts[turn % 3].sync(_secret(api, ns, secret))
            turn += 1
            for router in started:  # the ordinal at which each router first ran each certificate
                profile = _profile(router)
                first_ran.setdefault((router.router_id, profile["certificateSha256"]), profile["ordinal"])
            time.sleep(0.5)
        else:
            raise AssertionError(f"the rotation did not complete: events {events}, status {status}")
        eventually(lambda: traffic.accepted > 50, 30, "traffic after the rotation")
    finally:
        traffic.stop()
    assert traffic.failures == [], traffic.failures[:5]
    assert traffic.accepted > 50
    for step in ("CARotationStarted", "CARotated", "CertificateRenewed", "CertificateLoaded", "CARetired"):
        assert step in events, (step, events)
    assert "RollingRestart" not in events and "ReloadRefused" not in events, events
    assert [r.pid for r in started] == pids and all(r.is_running() for r in started)
    # Every router runs the new CA's certificate and trusts only the new CA...
    final = _secret(api, ns, secret)
    ca_now = _secret(api, ns, f"{MESH}-inter-router-ca")
    assert final["ca.crt"] == ca_now["ca.crt"] != ca.signing.cert_pem
    for router in started:
        assert _profile(router)["certificateSha256"] == leaf_sha256(final["tls.crt"]), router.router_id

    def connections_current() -> bool:
        """Every router-to-router connection made, on both sides, with the new certificate:
        those a router made at or after the ordinal it last replaced from, and those it
        accepted at or after the ordinal at which it loaded the new certificate (the last
        replacements, one at a time, may still be under way when the rotation is done)."""
        for router in started:
            profile = _profile(router)
            loaded_at = first_ran.get((router.router_id, leaf_sha256(final["tls.crt"])), profile["ordinal"])
            found = _inter_router_ordinals(router)
            if len(found) != 2 or profile["oldestValidOrdinal"] < loaded_at:
                return False
            for direction, ordinal in found:
                floor = profile["oldestValidOrdinal"] if direction == "out" else loaded_at
                if ordinal is None or ordinal < floor:
                    return False
        return True

    def describe() -> str:
        return "every inter-router connection made with the new certificate: " + "; ".join(
            f"{r.router_id} {_inter_router_ordinals(r)} (ordinal {_profile(r)['ordinal']}, oldest valid "
            f"{_profile(r)['oldestValidOrdinal']}, first ran the new certificate at "
            f"{first_ran.get((r.router_id, leaf_sha256(final['tls.crt'])))})" for r in started)

    eventually(connections_current, 90, describe)
    eventually(lambda: all(len(nodes(r)) == 2 for r in started), 30, "the mesh whole after the rotation")
