"""Rotating the CA of mode Managed without a moment in which two routers distrust each other.

Routers load new TLS material at run time, each when Kubernetes has updated the Secret's files
in its pod, so for a while some routers run one step and others the next; no two of them may
then distrust each other.  Hence three steps, each taken only once every router reports the
material the step before wrote (tls/live.py):

1. *incoming*: a new CA is made and trusted next to the signing one (the routers' trust bundle
   holds both; their certificate is still from the old CA).
2. *promoted*: the new CA signs a new routers' certificate; the old CA stays trusted as the
   *outgoing* one, for routers that have not loaded the new certificate yet.  Connections
   between routers are replaced, one at a time, by ones made with the new certificate.
3. *retired*: the outgoing CA leaves the trust bundle: every router already presents a
   certificate of the new CA.

Pure: the CA Secret's contents in, the next contents out."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Dict, Mapping, Tuple

from . import certs
from .certs import CertificateError, KeyPair

# Long enough for every step to reach every router, many times over, before the old CA expires.
ROTATE_BEFORE = dt.timedelta(days=90)

SIGNING = ("ca.crt", "ca.key")
INCOMING = ("next-ca.crt", "next-ca.key")
OUTGOING = "previous-ca.crt"

Event = Tuple[str, str, str]


@dataclass(frozen=True)
class CaSet:
    """The CAs of one mesh: the one that signs, and those trusted during a rotation."""

    signing: KeyPair
    incoming: KeyPair | None = None
    outgoing_pem: bytes | None = None

    @classmethod
    def from_data(cls, data: Mapping[str, bytes], secret: str) -> CaSet:
        missing = [k for k in SIGNING if not data.get(k)]
        if missing:
            raise CertificateError(f"Secret {secret} lacks {', '.join(missing)}; delete it and the operator "
                                   "makes a new one")
        signing = KeyPair(data["ca.crt"], data["ca.key"])
        certs.load_ca(signing, f"Secret {secret}")
        incoming = None
        if data.get(INCOMING[0]) or data.get(INCOMING[1]):
            incoming = KeyPair(data.get(INCOMING[0], b""), data.get(INCOMING[1], b""))
            certs.load_ca(incoming, f"Secret {secret} ({INCOMING[0]}, {INCOMING[1]})")
        outgoing = data.get(OUTGOING) or None
        if outgoing is not None:
            certs.load_cert(outgoing, f"Secret {secret} {OUTGOING}")
        return cls(signing, incoming, outgoing)

    def to_data(self) -> Dict[str, bytes]:
        data = {SIGNING[0]: self.signing.cert_pem, SIGNING[1]: self.signing.key_pem}
        if self.incoming is not None:
            data.update({INCOMING[0]: self.incoming.cert_pem, INCOMING[1]: self.incoming.key_pem})
        if self.outgoing_pem is not None:
            data[OUTGOING] = self.outgoing_pem
        return data

    def trust_bundle(self) -> bytes:
        """The routers' ca.crt: every CA whose certificates a router must accept now."""
        parts = [self.signing.cert_pem]
        if self.incoming is not None:
            parts.append(self.incoming.cert_pem)
        if self.outgoing_pem is not None:
            parts.append(self.outgoing_pem)
        return b"".join(p if p.endswith(b"\n") else p + b"\n" for p in parts)

    def revision(self, leaf_pem: bytes) -> str:
        """What every router must run before the next step: their certificate, and the incoming
        CA they must trust before it signs anything.  The outgoing CA is left out on purpose:
        nothing waits for it to be dropped (step 3 is the last)."""
        revision = certs.fingerprint(leaf_pem)
        if self.incoming is not None:
            revision += "+next-" + certs.fingerprint(self.incoming.cert_pem)[:16]
        return revision


def next_step(cas: CaSet, rolled_out: bool, common_name: str, now: dt.datetime) -> Tuple[CaSet, Event | None]:
    """At most one step of the rotation; ``rolled_out``: every router runs what the Secrets
    hold now."""
    if cas.incoming is not None:
        if not rolled_out:
            return cas, None
        return CaSet(cas.incoming, None, cas.signing.cert_pem), (
            "Normal", "CARotated", "every router trusts the new inter-router CA: it now signs the routers' "
            "certificate, and the old CA stays trusted until every router has loaded it")
    if cas.outgoing_pem is not None:
        if not rolled_out:
            return cas, None
        return CaSet(cas.signing), ("Normal", "CARetired", "every router presents a certificate of the new "
                                    "inter-router CA: the old CA is no longer trusted")
    expires = certs.load_cert(cas.signing.cert_pem, "the CA").not_valid_after_utc
    if expires - now >= ROTATE_BEFORE:
        return cas, None
    return CaSet(cas.signing, certs.new_ca(common_name, now)), (
        "Normal", "CARotationStarted", f"the inter-router CA expires {expires:%Y-%m-%d}: a new CA is made "
        "and trusted first, then it signs the routers' certificate; the routers load each step without a "
        "restart")
