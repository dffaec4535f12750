"""Where the operator reaches each router's management: the management listener (port
55673, TLS when the mesh's inter-router links use it) at the headless Service's DNS name of
its pod, or (for running the operator outside a cluster against local routers, as its tests
do) through a JSON file named by QDMESH_ROUTER_URLS mapping ``namespace/router-id`` to a
URL."""

from __future__ import annotations

import json
import os
from typing import Dict, Sequence

from .. import contract
from ..model.mesh import MeshSpec

OVERRIDE_ENV = "QDMESH_ROUTER_URLS"


def overrides() -> Dict[str, str] | None:
    path = os.environ.get(OVERRIDE_ENV)
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def router_urls(mesh: MeshSpec, ready_pods: Sequence[str]) -> Dict[str, str]:
    """URLs of the routers to manage: those whose pods are ready (others cannot answer)."""
    override = overrides()
    if override is not None:
        return {rid: override[f"{mesh.namespace}/{rid}"] for rid in mesh.router_ids()
                if f"{mesh.namespace}/{rid}" in override}
    ready = set(ready_pods)
    scheme = "amqps" if mesh.inter_router_tls.enabled else "amqp"
    return {rid: f"{scheme}://{contract.router_host(mesh.name, mesh.namespace, i)}:{contract.MANAGEMENT_PORT}"
            for i, rid in enumerate(mesh.router_ids()) if rid in ready}
