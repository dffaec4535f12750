"""Mode Managed (inter-router TLS the operator manages): the certificates it makes (a chain the
openssl command verifies for both TLS ends and the routers' DNS names, key types, usages,
lifetimes, renewal rules), and the reconciler against a REAL API server (tests/kube): Secrets
owned by the RouterMesh, only the routers' certificate mounted, reused on every later
reconciliation and by a restarted operator, renewed near expiry with an Event."""

from __future__ import annotations

import base64
import datetime as dt
import shutil
import subprocess
from pathlib import Path
from typing import Any, Dict, Tuple

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

from qdmesh_operator.kube.api import KubeApi
from qdmesh_operator.model.mesh import parse_mesh
from qdmesh_operator.reconcile import MeshReconciler
from qdmesh_operator.render.manifests import CERT_ANNOTATION
from qdmesh_operator.tls import certs
from qdmesh_operator.tls.secrets import ensure_managed_tls
from tests.kube.controlplane import ControlPlane
from tests.operator.kube_operator import G, V, api_namespace
from tests.prerequisites import require

pytestmark = pytest.mark.timeout(180)

DNS = certs.inter_router_dns_names("demo", "messaging")
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def openssl_verify(tmp_path: Path, ca: certs.KeyPair, leaf: certs.KeyPair, *args: str) -> str:
    require(shutil.which("openssl") is not None, "the openssl command")
    (tmp_path / "ca.pem").write_bytes(ca.cert_pem)
    (tmp_path / "leaf.pem").write_bytes(leaf.cert_pem)
    done = subprocess.run(["openssl", "verify", "-CAfile", str(tmp_path / "ca.pem"), *args,
                           str(tmp_path / "leaf.pem")], capture_output=True, text=True, timeout=30)
    return done.stdout + done.stderr


def test_chain_verifies_for_server_and_client_and_the_routers_names(tmp_path: Path) -> None:
    ca = certs.new_ca("demo inter-router CA")
    leaf = certs.issue_leaf(ca, "demo inter-router", dns_names=DNS)
    for purpose in ("sslserver", "sslclient"):
        for host in ("demo-0.demo-routers.messaging.svc", "demo-17.demo-routers.messaging.svc.cluster.local"):
            out = openssl_verify(tmp_path, ca, leaf, "-purpose", purpose, "-verify_hostname", host)
            assert out.strip().endswith(": OK"), out
    out = openssl_verify(tmp_path, ca, leaf, "-verify_hostname", "demo-0.other-routers.messaging.svc")
    assert "hostname mismatch" in out, out
    other = certs.new_ca("demo inter-router CA")
    out = openssl_verify(tmp_path, other, leaf)
    assert not out.strip().endswith(": OK"), out


def test_keys_usages_and_lifetimes() -> None:
    ca_pair = certs.new_ca("demo inter-router CA", NOW)
    ca = x509.load_pem_x509_certificate(ca_pair.cert_pem)
    leaf_pair = certs.issue_leaf(ca_pair, "demo inter-router", dns_names=DNS, now=NOW)
    leaf = x509.load_pem_x509_certificate(leaf_pair.cert_pem)
    for cert in (ca, leaf):
        key = cert.public_key()
        assert isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name == "secp256r1"
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert ca.extensions.get_extension_for_class(x509.KeyUsage).value.key_cert_sign
    assert leaf.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    usage = leaf.extensions.get_extension_for_class(x509.KeyUsage).value
    assert usage.digital_signature and not usage.key_cert_sign
    eku = list(leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)
    assert ExtendedKeyUsageOID.SERVER_AUTH in eku and ExtendedKeyUsageOID.CLIENT_AUTH in eku
    sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["*.demo-routers.messaging.svc",
                                                      "*.demo-routers.messaging.svc.cluster.local"]
    leaf.verify_directly_issued_by(ca)
    assert (ca.not_valid_after_utc - NOW).days == 3650 and (leaf.not_valid_after_utc - NOW).days == 365
    near_end = ca.not_valid_after_utc - dt.timedelta(days=100)
    late = certs.issue_leaf(ca_pair, "demo inter-router", dns_names=DNS, now=near_end)
    assert x509.load_pem_x509_certificate(late.cert_pem).not_valid_after_utc == ca.not_valid_after_utc


def test_renewal_reasons() -> None:
    ca = certs.new_ca("demo inter-router CA", NOW)
    leaf = certs.issue_leaf(ca, "demo inter-router", dns_names=DNS, now=NOW)
    assert certs.renewal_reason(leaf.cert_pem, ca.cert_pem, DNS, NOW) is None
    assert certs.renewal_reason(leaf.cert_pem, ca.cert_pem, DNS, NOW + dt.timedelta(days=330)) is None
    reason = certs.renewal_reason(leaf.cert_pem, ca.cert_pem, DNS, NOW + dt.timedelta(days=340))
    assert reason is not None and "expires 2027-01-01" in reason and "25 days left" in reason
    reason = certs.renewal_reason(leaf.cert_pem, ca.cert_pem, certs.inter_router_dns_names("demo", "b"), NOW)
    assert reason is not None and "*.demo-routers.b.svc" in reason
    other = certs.new_ca("demo inter-router CA", NOW)
    assert certs.renewal_reason(leaf.cert_pem, other.cert_pem, DNS, NOW) == "it is not signed by the mesh CA"
    assert certs.key_matches(leaf.cert_pem, leaf.key_pem) and not certs.key_matches(leaf.cert_pem, ca.key_pem)


def test_unusable_ca_material_is_named() -> None:
    ca = certs.new_ca("x")
    with pytest.raises(certs.CertificateError, match="Secret s: the CA key does not belong"):
        certs.load_ca(certs.KeyPair(ca.cert_pem, certs.new_ca("y").key_pem), "Secret s")
    with pytest.raises(certs.CertificateError, match="Secret s is not a PEM certificate"):
        certs.load_ca(certs.KeyPair(b"junk", ca.key_pem), "Secret s")


# -- against a real API server ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def cluster(crds: ControlPlane) -> Tuple[Any, str]:
    return api_namespace(crds, "tls")


def _reconciler(api: Any) -> MeshReconciler:
    return MeshReconciler(KubeApi(api), urls=lambda mesh, pods: {})


def _secret(api: Any, namespace: str, name: str) -> Any:
    from kubernetes import client

    return client.CoreV1Api(api).read_namespaced_secret(name, namespace)


def _template_annotations(api: Any, namespace: str, name: str) -> Dict[str, str]:
    from kubernetes import client

    sts = client.AppsV1Api(api).read_namespaced_stateful_set(name, namespace)
    return dict(sts.spec.template.metadata.annotations)


def _create_mesh(api: Any, namespace: str, name: str, spec: Dict[str, Any]) -> Dict[str, Any]:
    from kubernetes import client

    body = {"apiVersion": f"{G}/{V}", "kind": "RouterMesh", "metadata": {"name": name}, "spec": spec}
    return dict(client.CustomObjectsApi(api).create_namespaced_custom_object(G, V, namespace, "routermeshes",
                                                                              body))


def test_default_mesh_gets_owned_secrets_reused_and_only_the_routers_certificate_mounted(
        cluster: Tuple[Any, str]) -> None:
    api, ns = cluster
    body = _create_mesh(api, ns, "alpha", {"size": 2, "image": "qdmesh/router:0.1.0"})
    assert body["spec"]["interRouter"]["tls"]["mode"] == "Managed"  # the schema's default
    report = _reconciler(api).reconcile(ns, "alpha")
    issued = [e.message for e in report.events if e.reason == "CertificateIssued"]
    assert len(issued) == 2 and "alpha-inter-router-ca" in issued[0] and "alpha-inter-router-tls" in issued[1]
    ca, tls = _secret(api, ns, "alpha-inter-router-ca"), _secret(api, ns, "alpha-inter-router-tls")
    for secret in (ca, tls):
        (ref,) = secret.metadata.owner_references
        uid = body["metadata"]["uid"]
        assert (ref.kind, ref.name, ref.uid, ref.controller) == ("RouterMesh", "alpha", uid, True)
    assert sorted(ca.data) == ["ca.crt", "ca.key"]
    assert tls.type == "kubernetes.io/tls" and sorted(tls.data) == ["ca.crt", "tls.crt", "tls.key"]
    assert tls.data["ca.crt"] == ca.data["ca.crt"]
    from kubernetes import client

    sts = client.AppsV1Api(api).read_namespaced_stateful_set("alpha", ns)
    secrets = [v.secret.secret_name for v in sts.spec.template.spec.volumes if v.secret]
    # Never the CA's key; the MeshLinks' Secret (optional: there is none yet) so that links
    # come and go without a restart.
    assert secrets == ["alpha-inter-router-tls", "alpha-links"]
    (mount,) = [m for m in sts.spec.template.spec.containers[0].volume_mounts if m.name == "inter-router-tls"]
    assert mount.mount_path == "/etc/qdmesh/inter-router" and mount.read_only
    # Routers load their certificate at run time: nothing of it is in the pod template.
    assert CERT_ANNOTATION not in _template_annotations(api, ns, "alpha")

    # Again, and from a new reconciler (a restarted operator): nothing is written anew.
    for reconciler in (_reconciler(api), _reconciler(api)):
        again = reconciler.reconcile(ns, "alpha")
        assert not [e for e in again.events if e.reason.startswith("Certificate")]
    for name, secret in (("alpha-inter-router-ca", ca), ("alpha-inter-router-tls", tls)):
        assert _secret(api, ns, name).metadata.resource_version == secret.metadata.resource_version


def test_certificate_renewed_near_expiry_with_an_event_and_the_same_pod_template(
        cluster: Tuple[Any, str]) -> None:
    api, ns = cluster
    _create_mesh(api, ns, "beta", {"size": 1, "image": "qdmesh/router:0.1.0"})
    _reconciler(api).reconcile(ns, "beta")
    template = _template_annotations(api, ns, "beta")
    before = _secret(api, ns, "beta-inter-router-tls")
    old_leaf = base64.b64decode(before.data["tls.crt"])
    mesh = parse_mesh("beta", ns, {"size": 1})
    owner = {"apiVersion": f"{G}/{V}", "kind": "RouterMesh", "name": "beta",
             "uid": before.metadata.owner_references[0].uid, "controller": True, "blockOwnerDeletion": True}
    from kubernetes import client

    core = client.CoreV1Api(api)
    in_340_days = certs.utcnow() + dt.timedelta(days=340)
    managed = ensure_managed_tls(core, mesh, owner=owner, now=in_340_days)
    (event,) = managed.events
    assert event[:2] == ("Normal", "CertificateRenewed") and "days left" in event[2], event
    after = _secret(api, ns, "beta-inter-router-tls")
    new_leaf = base64.b64decode(after.data["tls.crt"])
    assert new_leaf != old_leaf and after.data["ca.crt"] == before.data["ca.crt"]
    assert managed.revision == certs.fingerprint(new_leaf)
    # The renewed certificate is then reused (not renewed again); the routers load it where
    # they run (tests/operator/test_operator_live_tls.py): the pod template is unchanged.
    report = _reconciler(api).reconcile(ns, "beta")
    assert not [e for e in report.events if e.reason.startswith("Certificate")]
    assert not [e for e in report.events if e.reason == "RollingRestart"]
    assert _template_annotations(api, ns, "beta") == template
    assert ensure_managed_tls(core, mesh, owner=owner, now=in_340_days).events == []


def test_unusable_ca_secret_stalls_the_mesh_naming_it(cluster: Tuple[Any, str]) -> None:
    api, ns = cluster
    from kubernetes import client

    client.CoreV1Api(api).create_namespaced_secret(ns, {"metadata": {"name": "gamma-inter-router-ca"},
                                                        "stringData": {"ca.crt": "junk"}})
    _create_mesh(api, ns, "gamma", {"size": 1, "image": "qdmesh/router:0.1.0"})
    report = _reconciler(api).reconcile(ns, "gamma")
    status = report.statuses[("routermeshes", "gamma")]
    stalled = next(c for c in status["conditions"] if c["type"] == "Stalled")
    assert stalled["status"] == "True", status
    assert "gamma-inter-router-ca lacks ca.key" in stalled["message"]


def test_disabled_stays_available_and_renders_plain_inter_router_links() -> None:
    from qdmesh_operator.desired.state import mesh_state
    from qdmesh_operator.render.conf import render_all
    from qdmesh_operator.render.manifests import stateful_set

    spec = parse_mesh("demo", "messaging", {"size": 2, "interRouter": {"tls": {"mode": "Disabled"}}})
    conf = render_all(mesh_state(spec, []))["demo-1.conf"]
    assert "sslProfile" not in conf and '"EXTERNAL"' not in conf
    volumes = stateful_set(spec, None)["spec"]["template"]["spec"]["volumes"]
    assert [v["name"] for v in volumes] == ["config"]
    managed = parse_mesh("demo", "messaging", {"size": 2})
    assert managed.inter_router_tls.mode == "Managed"
    assert 'sslProfile: "inter-router-tls"' in render_all(mesh_state(managed, []))["demo-1.conf"]
