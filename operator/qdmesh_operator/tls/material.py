"""What an sslProfile should run with, as a router reports it: the SHA-256 of its leaf
certificate (DER) and of its CA file's bytes.

The routers load TLS material at run time (an sslProfile UPDATE re-reads its files), so the
operator compares what each router reports (``certificateSha256``, ``caCertificateSha256``)
with what the Secret mounted in its pod holds, and asks a router whose material differs to
load it again.  Kubernetes swaps all the keys of a mounted Secret at once, so a router that
reports the Secret's leaf and CA bundle runs exactly what the Secret holds.  Pure."""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass
from typing import Any, Mapping

from cryptography import x509
from cryptography.hazmat.primitives import serialization


@dataclass(frozen=True)
class Material:
    """Fingerprints of an sslProfile's material: "" where a part is absent or unreadable."""

    certificate_sha256: str
    ca_sha256: str

    def matches(self, row: Mapping[str, Any]) -> bool:
        """Whether a router's sslProfile row reports this material."""
        return (str(row.get("certificateSha256") or "") == self.certificate_sha256
                and str(row.get("caCertificateSha256") or "") == self.ca_sha256)

    def short(self) -> str:
        return self.certificate_sha256[:12] or "no certificate"


def leaf_sha256(cert_pem: bytes) -> str:
    """The SHA-256 of the first certificate of a PEM file, over its DER (as routers report it)."""
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
    except ValueError:
        return ""
    return hashlib.sha256(cert.public_bytes(serialization.Encoding.DER)).hexdigest()


def of_files(data: Mapping[str, bytes]) -> Material:
    """The material of a TLS Secret's decoded data (``tls.crt``, ``ca.crt``)."""
    cert = data.get("tls.crt") or b""
    ca = data.get("ca.crt") or b""
    return Material(leaf_sha256(cert) if cert else "", hashlib.sha256(ca).hexdigest() if ca else "")


def of_secret_data(data: Mapping[str, str]) -> Material | None:
    """The same from a Secret's ``data`` as the API server returns it (base64); None if it
    cannot be decoded (the router could not load it either)."""
    try:
        return of_files({k: base64.b64decode(v) for k, v in data.items() if k in ("tls.crt", "ca.crt")})
    except (binascii.Error, ValueError):
        return None
