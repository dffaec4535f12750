"""The certificate the operator presents to the routers' management listener: the mesh's own
inter-router certificate (it is issued for both TLS ends), read from the Secret the routers
mount, and written to files because proton takes file names.  One private directory per mesh;
files are rewritten only when the Secret's content changes."""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass
from typing import Any, Dict, Tuple

from kubernetes.client.rest import ApiException

from ..model.mesh import MeshSpec
from .names import inter_router_secret

KEYS = ("tls.crt", "tls.key", "ca.crt")


class CredentialsError(Exception):
    """The mesh's certificate cannot be read (names the Secret)."""


@dataclass(frozen=True)
class TlsFiles:
    certificate: str
    key: str
    trust: str
    #: Changes with the Secret's content: a client made with older files is replaced.
    version: str


class ManagementCredentials:
    def __init__(self, root: str | None = None) -> None:
        self._root = root
        self._dirs: Dict[Tuple[str, str], str] = {}
        self._written: Dict[Tuple[str, str], TlsFiles] = {}
        self._lock = threading.Lock()

    def for_mesh(self, core: Any, mesh: MeshSpec) -> TlsFiles | None:
        """None when the mesh's routers listen without TLS (mode Disabled)."""
        if not mesh.inter_router_tls.enabled:
            return None
        name = inter_router_secret(mesh)
        try:
            secret = core.read_namespaced_secret(name, mesh.namespace)
        except ApiException as e:
            raise CredentialsError(f"cannot read Secret {name} for the routers' management: "
                                   f"{e.status} {e.reason}") from None
        data = {k: base64.b64decode(v) for k, v in (secret.data or {}).items()}
        missing = [k for k in KEYS if not data.get(k)]
        if missing:
            raise CredentialsError(f"Secret {name} lacks {', '.join(missing)}: the routers' management "
                                   "cannot be reached yet")
        version = hashlib.sha256(b"\0".join(data[k] for k in KEYS)).hexdigest()[:16]
        key = (mesh.namespace, mesh.name)
        with self._lock:
            written = self._written.get(key)
            if written is not None and written.version == version:
                return written
            directory = self._dirs.get(key)
            if directory is None:
                directory = self._dirs[key] = tempfile.mkdtemp(prefix=f"qdmesh-{mesh.name}-", dir=self._root)
            paths = {}
            for k in KEYS:
                path = os.path.join(directory, f"{version}-{k}")
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(data[k])
                paths[k] = path
            if written is not None:  # the files of the previous version are no longer used
                for old in (written.certificate, written.key, written.trust):
                    try:
                        os.unlink(old)
                    except OSError:
                        pass
            files = TlsFiles(paths["tls.crt"], paths["tls.key"], paths["ca.crt"], version)
            self._written[key] = files
            return files

    def forget(self, namespace: str, name: str) -> None:
        """The mesh is gone: its files and directory go too."""
        key = (namespace, name)
        with self._lock:
            self._written.pop(key, None)
            directory = self._dirs.pop(key, None)
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)

    def meshes(self) -> int:
        """How many meshes have files written now."""
        with self._lock:
            return len(self._dirs)
