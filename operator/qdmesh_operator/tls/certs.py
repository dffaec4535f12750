"""The certificates of mode Managed, made with ``cryptography``: a CA per RouterMesh and one
certificate all its routers present on inter-router connections (as server and as client).

ECDSA P-256 keys; the CA lives 10 years, the routers' certificate 1 year (never beyond the
CA) and is renewed when it has less than 30 days left.  Pure functions: no Kubernetes here."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import List, Sequence

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from .. import contract

CA_LIFETIME = dt.timedelta(days=3650)
LEAF_LIFETIME = dt.timedelta(days=365)
RENEW_BEFORE = dt.timedelta(days=30)
BACKDATE = dt.timedelta(minutes=5)  # tolerate clocks a little behind the operator's


class CertificateError(ValueError):
    """Stored certificate material that cannot be used (names what is wrong)."""


@dataclass(frozen=True)
class KeyPair:
    """A PEM certificate and its PEM (PKCS#8, unencrypted) private key."""

    cert_pem: bytes
    key_pem: bytes


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def inter_router_dns_names(mesh: str, namespace: str) -> List[str]:
    """Names the routers are reached by on inter-router connections: ``<pod>.<mesh>-routers.
    <namespace>.svc`` (contract.router_host), with or without the cluster domain."""
    domain = f"{contract.headless_service(mesh)}.{namespace}.svc"
    return [f"*.{domain}", f"*.{domain}.cluster.local"]


def edge_dns_names(mesh: str, namespace: str) -> List[str]:
    """Names on the edge routers' certificate.  Nothing checks them (interior routers and the
    operator accept any certificate of the mesh's CA from an edge router, which has no stable
    name: Deployment and DaemonSet pods get none in DNS), but a certificate should name its
    holder."""
    return [f"{mesh}-edge.{namespace}.svc"]


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "qdmesh"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name[:64])])


def new_ca(common_name: str, now: dt.datetime | None = None) -> KeyPair:
    """A self-signed CA that may sign end-entity certificates only (path length 0)."""
    now = now or utcnow()
    key = _new_key()
    name = _name(common_name)
    public = key.public_key()
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(public)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - BACKDATE).not_valid_after(now + CA_LIFETIME)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, key_cert_sign=True, crl_sign=True,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
            .sign(key, hashes.SHA256()))
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def load_cert(pem: bytes, what: str) -> x509.Certificate:
    try:
        return x509.load_pem_x509_certificate(pem)
    except ValueError as e:
        raise CertificateError(f"{what} is not a PEM certificate: {e}") from None


def not_after(pem: bytes) -> float | None:
    """When a PEM certificate expires, in Unix time; None if it is not one."""
    try:
        return x509.load_pem_x509_certificate(pem).not_valid_after_utc.timestamp()
    except ValueError:
        return None


def load_ca(pair: KeyPair, what: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    cert = load_cert(pair.cert_pem, what)
    try:
        key = serialization.load_pem_private_key(pair.key_pem, password=None)
    except (ValueError, TypeError) as e:
        raise CertificateError(f"{what}: the CA key is not an unencrypted PEM key: {e}") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.public_key() != cert.public_key():
        raise CertificateError(f"{what}: the CA key does not belong to the CA certificate")
    return cert, key


def issue_leaf(ca: KeyPair, common_name: str, *, dns_names: Sequence[str],
               now: dt.datetime | None = None, lifetime: dt.timedelta = LEAF_LIFETIME) -> KeyPair:
    """A certificate signed by ``ca`` for both ends of a TLS connection (serverAuth and
    clientAuth), naming ``dns_names``; it never outlives the CA."""
    now = now or utcnow()
    ca_cert, ca_key = load_ca(ca, "the CA")
    key = _new_key()
    public = key.public_key()
    not_after = min(now + lifetime, ca_cert.not_valid_after_utc)
    ca_ski = ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    cert = (x509.CertificateBuilder().subject_name(_name(common_name)).issuer_name(ca_cert.subject)
            .public_key(public).serial_number(x509.random_serial_number())
            .not_valid_before(now - BACKDATE).not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, key_cert_sign=False, crl_sign=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                  ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in dns_names]),
                           critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def renewal_reason(leaf_pem: bytes, ca_pem: bytes, dns_names: Sequence[str],
                   now: dt.datetime | None = None) -> str | None:
    """Why the routers' certificate must be replaced, or None while it is good: not signed by
    the CA, names other than ``dns_names``, or less than RENEW_BEFORE left."""
    now = now or utcnow()
    try:
        leaf = load_cert(leaf_pem, "tls.crt")
    except CertificateError as e:
        return str(e)
    ca = load_cert(ca_pem, "the CA certificate")
    try:
        leaf.verify_directly_issued_by(ca)
    except (InvalidSignature, ValueError, TypeError):
        return "it is not signed by the mesh CA"
    try:
        names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        have = sorted(names.get_values_for_type(x509.DNSName))
    except x509.ExtensionNotFound:
        have = []
    if have != sorted(dns_names):
        return f"it names {have}, the routers need {sorted(dns_names)}"
    left = leaf.not_valid_after_utc - now
    if left < RENEW_BEFORE:
        return f"it expires {leaf.not_valid_after_utc:%Y-%m-%d %H:%M} UTC ({max(left.days, 0)} days left)"
    return None


def fingerprint(cert_pem: bytes) -> str:
    """SHA-256 fingerprint (hex) of a certificate: which certificate the routers were started with."""
    return load_cert(cert_pem, "certificate").fingerprint(hashes.SHA256()).hex()


def key_matches(cert_pem: bytes, key_pem: bytes) -> bool:
    """Whether ``key_pem`` is the private key of the certificate ``cert_pem``."""
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except (ValueError, TypeError):
        return False
    return isinstance(key, ec.EllipticCurvePrivateKey) and \
        key.public_key() == load_cert(cert_pem, "certificate").public_key()
