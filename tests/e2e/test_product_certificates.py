"""A whole rotation of the shared mesh's inter-router CA on its RUNNING routers, while unsettled
messages cross the mesh.

The mesh's CA is made to expire within the operator's rotation window the way an old CA would:
the same CA (subject and key) re-issued with an expiry 60 days away, so the routers'
certificate, signed by that key, stays valid.  The operator then rotates in three steps, each
loaded by every router through management once the kubelet has updated the Secret's files:
the new CA trusted beside the old, the routers' certificate from the new CA, the old CA
dropped.  Every message is accepted exactly once, no pod is replaced or restarted, and every
router reports the new certificate and a trust bundle without the old CA."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import time
from pathlib import Path
from typing import Any, Dict, List

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization

from qdmesh_operator.tls.material import leaf_sha256
from qdmesh_operator.tls.rotation import ROTATE_BEFORE

from .kube import eventually
from .mesh_fixtures import MESH, MeshState, Timing, mesh_whole
from .product import port_forwards, read_resource, router_pods, status_summary
from .traffic import Traffic, entity_rows

PROFILE_TYPE = "org.apache.qpid.dispatch.sslProfile"
STEPS = ["CARotationStarted", "CARotated", "CertificateRenewed", "CARetired"]


def test_a_ca_rotation_reaches_running_routers_with_every_message_accepted_once(
        mesh: MeshState, core: Any, k8s: Any, e2e_kubeconfig: Path, timing: Timing) -> None:
    mesh.require_ready()
    ns = mesh.namespace
    ca_secret, leaf_secret = f"{MESH}-inter-router-ca", f"{MESH}-inter-router-tls"
    before = router_pods(k8s, ns, MESH)
    old = _decoded(core, ns, ca_secret)
    old_leaf = _decoded(core, ns, leaf_secret)["tls.crt"]
    old_key = x509.load_pem_x509_certificate(old["ca.crt"]).public_key()
    history: List[str] = []
    with port_forwards(e2e_kubeconfig, ns, mesh.routers) as urls:
        traffic = Traffic(urls, mesh.routers[0], mesh.routers[-1], stem="ca-rotation")
        try:
            traffic.batch("before")
            since = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) - dt.timedelta(seconds=1)
            started = time.monotonic()
            seen: Dict[str, float] = {}  # step -> seconds until its Event was seen
            expiring = _reissued(old["ca.crt"], old["ca.key"], ROTATE_BEFORE - dt.timedelta(days=30))
            core.patch_namespaced_secret(ca_secret, ns,
                                         {"data": {"ca.crt": base64.b64encode(expiring).decode()}})

            def rotated_and_loaded() -> bool:
                steps = _steps(core, ns, since)
                for step in steps:
                    seen.setdefault(step, time.monotonic() - started)
                if steps[-1:] != ["CARetired"]:
                    return False
                ca = _decoded(core, ns, ca_secret)
                if sorted(ca) != ["ca.crt", "ca.key"] or ca["ca.crt"] in (old["ca.crt"], expiring):
                    return False
                leaf = _decoded(core, ns, leaf_secret)
                if leaf["tls.crt"] == old_leaf or leaf["ca.crt"] != ca["ca.crt"]:
                    return False
                want = (leaf_sha256(leaf["tls.crt"]), hashlib.sha256(leaf["ca.crt"]).hexdigest())
                return all((p.get("certificateSha256"), p.get("caCertificateSha256")) == want
                           for p in (_profile(urls[name]) for name in mesh.routers))

            traffic.until(rotated_and_loaded, 420, "the rotation done and loaded by every router", "during")
            for step, seconds in seen.items():
                timing(f"CA near expiry -> Event {step} seen", seconds)
            timing(f"CA near expiry -> rotated, every router runs the new CA's certificate ("
                   f"{len(traffic.sent)} messages sent meanwhile)", time.monotonic() - started)
            traffic.batch("after")
            counts, lost = traffic.settle_all()
        finally:
            traffic.close()
    assert counts == {"accepted": len(traffic.sent)}, counts
    assert lost == [], lost[:5]
    received = traffic.received()
    assert len(received) == len(set(received)), "a message delivered twice"
    assert _steps(core, ns, since) == STEPS
    bundle = x509.load_pem_x509_certificates(_decoded(core, ns, leaf_secret)["ca.crt"])
    assert len(bundle) == 1 and bundle[0].public_key() != old_key, "the old CA is still trusted"
    after = router_pods(k8s, ns, MESH)
    assert after == before, f"router pods replaced or restarted: {before} -> {after}"
    eventually(lambda: mesh_whole(k8s, ns, mesh.size, history, started), 120, "the mesh whole",
               describe=lambda: status_summary(read_resource(k8s, ns, "routermeshes", MESH)))


def _reissued(cert_pem: bytes, key_pem: bytes, left: dt.timedelta) -> bytes:
    """CA ``cert_pem`` signed again by its own key, the same in all but its expiry: ``left``
    from now.  What it signed stays valid under it (same subject, same key)."""
    cert = x509.load_pem_x509_certificate(cert_pem)
    key = serialization.load_pem_private_key(key_pem, password=None)
    now = dt.datetime.now(dt.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(cert.subject).issuer_name(cert.issuer)
               .public_key(cert.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(cert.not_valid_before_utc).not_valid_after(now + left))
    for extension in cert.extensions:
        builder = builder.add_extension(extension.value, extension.critical)
    return builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)  # type: ignore[arg-type]


def _decoded(core: Any, namespace: str, name: str) -> Dict[str, bytes]:
    data = core.read_namespaced_secret(name, namespace).data or {}
    return {k: base64.b64decode(v) for k, v in data.items()}


def _steps(core: Any, namespace: str, since: dt.datetime) -> List[str]:
    """The rotation's Events about the mesh since ``since``, oldest first (the API server's
    timestamps have whole seconds: two Events of one reconciliation are ordered by when they
    were stored)."""
    found = core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={MESH}").items
    events = [e for e in found if e.involved_object.kind == "RouterMesh" and e.reason in STEPS
              and (e.first_timestamp or e.metadata.creation_timestamp) >= since]
    events.sort(key=lambda e: (e.first_timestamp or e.metadata.creation_timestamp,
                               int(e.metadata.resource_version)))
    return [e.reason for e in events]


def _profile(url: str) -> Any:
    rows = [r for r in entity_rows(url, PROFILE_TYPE) if r.get("name") == "inter-router-tls"]
    return rows[0] if rows else {}
