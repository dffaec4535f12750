"""Mode Managed rotates the mesh's CA before it expires, in three steps (tls/rotation.py), each
only once every router runs the step before: against a REAL API server (the Secrets, Events
and pod-template revisions of each step) and with REAL routers (routers holding one step's
files mesh over mutual TLS with routers holding the next step's, so no step splits a mesh)."""

from __future__ import annotations

import base64
import datetime as dt
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from qdmesh_operator.model.mesh import parse_mesh
from qdmesh_operator.tls import certs
from qdmesh_operator.tls.rotation import ROTATE_BEFORE, CaSet, next_step
from qdmesh_operator.tls.secrets import ensure_managed_tls
from tests.kube.controlplane import ControlPlane
from tests.operator.kube_operator import api_namespace
from tests.operator.test_operator_managed_tls import openssl_verify
from tests.operator.test_operator_managed_tls_mesh import Rendered, interior, nodes, routers, write_pair
from tests.router.routerproc import Router, free_port

__all__ = ["routers"]  # the fixture, shared with the Managed-TLS mesh tests

pytestmark = pytest.mark.timeout(180)


def _data(api: Any, namespace: str, name: str) -> Dict[str, bytes]:
    from kubernetes import client

    secret = client.CoreV1Api(api).read_namespaced_secret(name, namespace)
    return {k: base64.b64decode(v) for k, v in (secret.data or {}).items()}


def _pems(bundle: bytes) -> List[bytes]:
    marker = b"-----END CERTIFICATE-----"
    return [part.strip() + b"\n" + marker + b"\n" for part in bundle.split(marker) if part.strip()]


@pytest.fixture(scope="module")
def cluster(crds: ControlPlane) -> Tuple[Any, str]:
    return api_namespace(crds, "rot")


def test_ca_rotation_steps_each_wait_for_the_routers(cluster: Tuple[Any, str], tmp_path: Path) -> None:
    from kubernetes import client

    api, ns = cluster
    core = client.CoreV1Api(api)
    mesh = parse_mesh("delta", ns, {"size": 2})
    owner = None
    first = ensure_managed_tls(core, mesh, owner=owner)
    old_ca = _data(api, ns, "delta-inter-router-ca")
    expires = certs.load_cert(old_ca["ca.crt"], "ca").not_valid_after_utc
    early = expires - ROTATE_BEFORE - dt.timedelta(days=1)
    # Years later (the routers' certificate lives one year, so it is renewed on the way, by
    # the same CA) the CA is not rotated yet.
    first = ensure_managed_tls(core, mesh, owner=owner, now=early, running=first.revision)
    assert [e[1] for e in first.events] == ["CertificateRenewed"], first.events
    assert _data(api, ns, "delta-inter-router-ca") == old_ca
    assert ensure_managed_tls(core, mesh, owner=owner, now=early, running=first.revision).events == []
    old_tls = _data(api, ns, "delta-inter-router-tls")

    # Step 1: a new CA, trusted next to the old one; the routers' certificate is unchanged.
    due = expires - ROTATE_BEFORE + dt.timedelta(days=1)
    step1 = ensure_managed_tls(core, mesh, owner=owner, now=due, running=first.revision)
    assert [e[1] for e in step1.events] == ["CARotationStarted"], step1.events
    ca1, tls1 = _data(api, ns, "delta-inter-router-ca"), _data(api, ns, "delta-inter-router-tls")
    assert ca1["ca.crt"] == old_ca["ca.crt"] and ca1["next-ca.crt"] and ca1["next-ca.key"]
    assert tls1["tls.crt"] == old_tls["tls.crt"]
    assert _pems(tls1["ca.crt"]) == [old_ca["ca.crt"], ca1["next-ca.crt"]]
    assert step1.revision != first.revision and step1.revision.startswith(first.revision)

    # Nothing moves while the routers have not all restarted with step 1.
    for running in (None, first.revision):
        assert ensure_managed_tls(core, mesh, owner=owner, now=due, running=running).events == []
    assert _data(api, ns, "delta-inter-router-ca") == ca1

    # Step 2: the new CA signs a new certificate; the old CA stays trusted.
    step2 = ensure_managed_tls(core, mesh, owner=owner, now=due, running=step1.revision)
    assert [e[1] for e in step2.events] == ["CARotated", "CertificateRenewed"], step2.events
    assert "new CA signs it" in step2.events[1][2]
    ca2, tls2 = _data(api, ns, "delta-inter-router-ca"), _data(api, ns, "delta-inter-router-tls")
    assert (ca2["ca.crt"], ca2["ca.key"]) == (ca1["next-ca.crt"], ca1["next-ca.key"])
    assert ca2["previous-ca.crt"] == old_ca["ca.crt"] and "next-ca.crt" not in ca2
    assert tls2["tls.crt"] != old_tls["tls.crt"]
    assert step2.revision == certs.fingerprint(tls2["tls.crt"])
    # A router still on step 1 trusts the new certificate; one on step 2 trusts the old one.
    at_due = ("-attime", str(int(due.timestamp())))
    new_ca = certs.KeyPair(ca2["ca.crt"], b"")
    new_leaf = certs.KeyPair(tls2["tls.crt"], b"")
    old_leaf = certs.KeyPair(old_tls["tls.crt"], b"")
    for trust, leaf in ((tls1["ca.crt"], new_leaf), (tls2["ca.crt"], old_leaf), (tls2["ca.crt"], new_leaf)):
        out = openssl_verify(tmp_path, certs.KeyPair(trust, b""), leaf, "-purpose", "sslclient", *at_due)
        assert out.strip().endswith(": OK"), out
    out = openssl_verify(tmp_path, new_ca, old_leaf, *at_due)
    assert not out.strip().endswith(": OK"), out

    # Step 3: once every router presents the new certificate, the old CA is dropped, without
    # a new revision (no restart).
    assert ensure_managed_tls(core, mesh, owner=owner, now=due, running=step1.revision).events == []
    step3 = ensure_managed_tls(core, mesh, owner=owner, now=due, running=step2.revision)
    assert [e[1] for e in step3.events] == ["CARetired"], step3.events
    assert step3.revision == step2.revision
    ca3, tls3 = _data(api, ns, "delta-inter-router-ca"), _data(api, ns, "delta-inter-router-tls")
    assert sorted(ca3) == ["ca.crt", "ca.key"] and ca3["ca.crt"] == ca2["ca.crt"]
    assert tls3["tls.crt"] == tls2["tls.crt"] and _pems(tls3["ca.crt"]) == [ca2["ca.crt"]]
    assert ensure_managed_tls(core, mesh, owner=owner, now=due, running=step3.revision).events == []


def _steps() -> List[Tuple[certs.KeyPair, bytes]]:
    """(routers' certificate, trust bundle) before rotation and after each of its steps, for
    routers on 127.0.0.1 (the certificate names localhost)."""
    due = certs.utcnow()  # real time: the routers check validity against their clock
    made = due - certs.CA_LIFETIME + ROTATE_BEFORE - dt.timedelta(days=1)
    start = CaSet(certs.new_ca("demo inter-router CA", made))
    leaf = certs.issue_leaf(start.signing, "demo inter-router", dns_names=["localhost"])
    out = [(leaf, start.trust_bundle())]
    cas = start
    for _ in range(3):
        cas, event = next_step(cas, True, "demo inter-router CA", due)
        assert event is not None
        if cas.signing != start.signing and certs.renewal_reason(leaf.cert_pem, cas.signing.cert_pem,
                                                                  ["localhost"], due):
            leaf = certs.issue_leaf(cas.signing, "demo inter-router", dns_names=["localhost"])
        out.append((leaf, cas.trust_bundle()))
    return out


def test_routers_one_rotation_step_apart_mesh(tmp_path: Path, routers: List[Router]) -> None:
    rendered = Rendered()
    steps = _steps()
    listeners: List[Router] = []
    for i, (leaf, bundle) in enumerate(steps[:-1]):
        port = free_port()
        files = write_pair(tmp_path / f"l{i}-tls", leaf, bundle)
        body = rendered.profile_with(files) + rendered.listener_on(port)
        listeners.append(interior(tmp_path, f"L{i}", body, routers))
        after_leaf, after_bundle = steps[i + 1]
        files = write_pair(tmp_path / f"c{i}-tls", after_leaf, after_bundle)
        interior(tmp_path, f"C{i}", rendered.profile_with(files) + rendered.connector_to(port), routers)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(nodes(r) != [f"C{i}"] for i, r in enumerate(listeners)):
        time.sleep(0.3)
    assert [nodes(r) for r in listeners] == [["C0"], ["C1"], ["C2"]]


def test_routers_two_steps_apart_do_not_mesh(tmp_path: Path, routers: List[Router]) -> None:
    """Why each step waits for the routers: a router still before the rotation and one that
    has the new CA's certificate and trusts only it cannot talk (the failing case the steps
    avoid)."""
    rendered = Rendered()
    steps = _steps()
    port = free_port()
    listener = interior(tmp_path, "L", rendered.profile_with(write_pair(tmp_path / "l-tls", *steps[0]))
                        + rendered.listener_on(port), routers)
    interior(tmp_path, "C", rendered.profile_with(write_pair(tmp_path / "c-tls", *steps[3]))
             + rendered.connector_to(port), routers)
    time.sleep(4)
    assert nodes(listener) == []

