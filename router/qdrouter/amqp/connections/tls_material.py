"""An sslProfile's files checked before they are used (a management UPDATE is validated whole
first), and what an operator reads back: the leaf certificate's SHA-256 and expiry.

Every check opens the files by path, afresh: Kubernetes updates a mounted Secret by swapping
a `..data` symlink, so a handle or inode kept from an earlier read would name old material."""

from __future__ import annotations

import datetime
import hashlib
import re
import ssl
from dataclasses import dataclass
from typing import Callable, Tuple

_PEM_CERT = re.compile(rb"-----BEGIN CERTIFICATE-----\s*(.+?)\s*-----END CERTIFICATE-----", re.S)
# Larger PEM files are refused: a certificate chain is a few kilobytes.
MAX_PEM_BYTES = 1 << 20


class MaterialError(ValueError):
    """Unusable TLS material; str() names the attribute and the file."""


@dataclass(frozen=True)
class CertificateInfo:
    sha256: str = ""       # hex SHA-256 of the leaf certificate's DER; "" without one
    not_after: str = ""    # its expiry, ISO 8601 UTC


def _read(attribute: str, path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_PEM_BYTES + 1)
    except OSError as error:
        raise MaterialError(f"attribute '{attribute}': cannot read {path!r}: {error.strerror}") from None
    if len(data) > MAX_PEM_BYTES:
        raise MaterialError(f"attribute '{attribute}': {path!r} is larger than {MAX_PEM_BYTES} bytes")
    return data


def file_sha256(attribute: str, path: str | None) -> str:
    """Hex SHA-256 of a file's bytes ("" without a file); raises MaterialError naming the
    attribute.  For a CA file: what an operator compares with the Secret it mounted."""
    return hashlib.sha256(_read(attribute, path)).hexdigest() if path else ""


def certificate_info(cert_file: str | None) -> CertificateInfo:
    """The leaf (first) certificate of ``cert_file``; raises MaterialError naming certFile."""
    if not cert_file:
        return CertificateInfo()
    data = _read("certFile", cert_file)
    found = _PEM_CERT.search(data)
    if found is None:
        raise MaterialError(f"attribute 'certFile': {cert_file!r} holds no PEM certificate")
    try:
        der = ssl.PEM_cert_to_DER_cert(found.group(0).decode("ascii"))
        not_after = _not_after(der)
    except (ValueError, IndexError, UnicodeDecodeError):
        raise MaterialError(f"attribute 'certFile': {cert_file!r} is not a valid PEM certificate") from None
    return CertificateInfo(hashlib.sha256(der).hexdigest(), not_after)


def check_material(cert_file: str | None, key_file: str | None, ca_file: str | None,
                   password: str | None) -> CertificateInfo:
    """Load the material as a TLS context would, naming the attribute and file at fault:
    unreadable files, bad PEM, a key that does not match the certificate, a wrong password."""
    info = certificate_info(cert_file)
    if cert_file:
        key = key_file or cert_file
        encrypted = b"ENCRYPTED" in _read("privateKeyFile", key)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        # A callable, never None: without one OpenSSL would prompt on the terminal.
        secret: Callable[[], str] = lambda: password or ""  # noqa: E731
        try:
            context.load_cert_chain(cert_file, key, password=secret)
        except (ssl.SSLError, ValueError, OSError) as error:
            attribute, why = _credentials_fault(str(error), encrypted)
            path = key if attribute == "privateKeyFile" else cert_file
            where = f" ({path!r})" if attribute != "password" else f" for {key!r}"
            raise MaterialError(f"attribute '{attribute}'{where}: {why}") from None
    if ca_file:
        _read("caCertFile", ca_file)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        try:
            context.load_verify_locations(cafile=ca_file)
        except (ssl.SSLError, ValueError, OSError):
            raise MaterialError(f"attribute 'caCertFile': {ca_file!r} holds no valid PEM "
                                f"certificate") from None
    return info


def _credentials_fault(reason: str, encrypted: bool) -> Tuple[str, str]:
    text = reason.lower()
    if "key values mismatch" in text or "key_values_mismatch" in text:
        return "privateKeyFile", "the private key does not match the certificate in certFile"
    if encrypted or "bad decrypt" in text or "bad_decrypt" in text:
        # OpenSSL says only "PEM lib" for a wrong password: an encrypted key that does not
        # load is taken to be the password's fault.
        return "password", "wrong or missing password (the private key cannot be decrypted)"
    return "privateKeyFile", "not a usable PEM private key"


# ---- the expiry, read from the DER (the standard library parses no certificates) ----------
def _element(der: bytes, at: int) -> Tuple[int, int, int]:
    """(tag, start of content, end of content) of the DER element at ``at``."""
    tag = der[at]
    length = der[at + 1]
    start = at + 2
    if length & 0x80:
        count = length & 0x7F
        length = int.from_bytes(der[start:start + count], "big")
        start += count
    end = start + length
    if end > len(der):
        raise ValueError("truncated DER")
    return tag, start, end


def _not_after(der: bytes) -> str:
    _, cert_start, _ = _element(der, 0)          # Certificate
    _, tbs_start, _ = _element(der, cert_start)  # TBSCertificate
    at = tbs_start
    tag, _, end = _element(der, at)
    if tag == 0xA0:                              # [0] version
        at = end
    for _ in range(3):                           # serialNumber, signature, issuer
        _, _, at = _element(der, at)
    _, validity, _ = _element(der, at)
    _, _, after_at = _element(der, validity)     # notBefore
    tag, start, end = _element(der, after_at)    # notAfter
    text = der[start:end].decode("ascii")
    if tag == 0x17:                              # UTCTime: YYMMDDHHMMSSZ
        year = int(text[:2])
        text = f"{1900 + year if year >= 50 else 2000 + year}{text[2:]}"
    elif tag != 0x18:                            # GeneralizedTime: YYYYMMDDHHMMSSZ
        raise ValueError("not a time")
    moment = datetime.datetime.strptime(text.rstrip("Z")[:14], "%Y%m%d%H%M%S")
    return moment.replace(tzinfo=datetime.timezone.utc).isoformat().replace("+00:00", "Z")
