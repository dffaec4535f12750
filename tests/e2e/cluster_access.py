"""Which cluster the e2e suite runs against, and how images get into it.

``QDMESH_E2E_KUBECONFIG`` names the kubeconfig; without it the local cluster's
(``tests/e2e/cluster/local-cluster.sh kubeconfig``) is used when that cluster is up.
``QDMESH_E2E_IMAGE_LOADER`` is ``local`` (containerd of the local cluster), ``kind`` (``kind load
image-archive``; cluster name from ``QDMESH_KIND_CLUSTER``, default ``qdmesh``) or ``none``
(the images are already there); by default it follows the kubeconfig.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

CLUSTER_DIR = Path(__file__).resolve().parent / "cluster"
LOCAL_CLUSTER = CLUSTER_DIR / "local-cluster.sh"
KIND_SCRIPT = CLUSTER_DIR / "kind.sh"
K8S_VERSION = os.environ.get("QDMESH_K8S_VERSION", "v1.36.3")


def e2e_enabled() -> bool:
    return os.environ.get("QDMESH_E2E") == "1"


def local_kubeconfig() -> Path:
    return Path(os.environ.get("QDMESH_CLUSTER_DIR", "/var/tmp/qdmesh-cluster")) / "kubeconfig"


def local_cluster_up() -> bool:
    if not local_kubeconfig().is_file():
        return False
    status = subprocess.run(["bash", str(LOCAL_CLUSTER), "status"], capture_output=True, text=True)
    return status.returncode == 0


def kubeconfig_path() -> Path | None:
    """The kubeconfig the suite uses, or None when no cluster is reachable."""
    explicit = os.environ.get("QDMESH_E2E_KUBECONFIG")
    if explicit:
        return Path(explicit) if Path(explicit).is_file() else None
    return local_kubeconfig() if local_cluster_up() else None


def image_loader(kubeconfig: Path) -> str:
    loader = os.environ.get("QDMESH_E2E_IMAGE_LOADER")
    if loader:
        if loader not in ("local", "kind", "none"):
            raise ValueError(f"QDMESH_E2E_IMAGE_LOADER must be local, kind or none, not {loader!r}")
        return loader
    if kubeconfig.resolve() == local_kubeconfig().resolve():
        return "local"
    return "kind" if "kind-" in kubeconfig.read_text() else "none"


def load_image_archive(archive: Path, loader: str) -> None:
    """Put the images of ``archive`` (docker save / OCI tar) where the cluster's nodes find them."""
    if loader == "none":
        return
    if loader == "local":
        argv = ["bash", str(LOCAL_CLUSTER), "import", str(archive)]
    else:
        argv = ["bash", str(KIND_SCRIPT), "load", str(archive)]
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"loading {archive} with {loader} failed: {result.stderr.strip()}")
