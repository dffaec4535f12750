"""Certificates of linking: the link listener's (server), a link's (client) and the
redemption server's, each signed by a CA of the operator's (tls/certs.py makes the CAs).
ECDSA P-256, as the mesh's own certificates.  Pure."""

from __future__ import annotations

import datetime as dt
import ipaddress
from typing import List, Sequence

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ..tls import certs
from ..tls.certs import KeyPair

SERVER_LIFETIME = dt.timedelta(days=365)
#: A link's client certificate: as long as a grant may be kept, within reason; deleting the
#: grant revokes it earlier (its CA leaves the listeners' trusted bundle).
CLIENT_LIFETIME = dt.timedelta(days=365)


def _general_names(hosts: Sequence[str]) -> List[x509.GeneralName]:
    names: List[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


def issue(ca: KeyPair, common_name: str, *, hosts: Sequence[str] = (), server: bool,
          lifetime: dt.timedelta, now: dt.datetime | None = None) -> KeyPair:
    """A certificate signed by ``ca``: for a server naming ``hosts`` (DNS names or IP
    addresses), or for a client (clientAuth only); it never outlives the CA."""
    now = now or certs.utcnow()
    ca_cert, ca_key = certs.load_ca(ca, "the CA")
    key = ec.generate_private_key(ec.SECP256R1())
    public = key.public_key()
    usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
    subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "qdmesh"),
                         x509.NameAttribute(NameOID.COMMON_NAME, common_name[:64])])
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(ca_cert.subject)
               .public_key(public).serial_number(x509.random_serial_number())
               .not_valid_before(now - certs.BACKDATE)
               .not_valid_after(min(now + lifetime, ca_cert.not_valid_after_utc))
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
    if hosts:
        builder = builder.add_extension(x509.SubjectAlternativeName(_general_names(hosts)), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), key_pem)


def needs_renewal(cert_pem: bytes, now: dt.datetime | None = None) -> bool:
    """Less than tls/certs.RENEW_BEFORE left (or not a certificate)."""
    expires = certs.not_after(cert_pem)
    now = now or certs.utcnow()
    return expires is None or expires - now.timestamp() < certs.RENEW_BEFORE.total_seconds()
