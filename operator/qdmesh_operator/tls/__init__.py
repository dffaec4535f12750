"""Stage 3, tls: the mesh's inter-router certificates and the operator's own for management
(resolve.py).  In mode Managed the operator keeps a CA and the routers' certificate per
RouterMesh (certs.py, rotation.py) in Secrets it owns (secrets.py); in the other modes it reads
the Secrets the routers mount (mounted.py, credentials.py; names.py says which)."""

from .certs import CertificateError
from .credentials import ManagementCredentials, TlsFiles
from .resolve import Certificates, resolve_certificates

__all__ = ["CertificateError", "Certificates", "ManagementCredentials", "TlsFiles", "resolve_certificates"]
