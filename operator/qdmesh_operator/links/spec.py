"""A MeshLink's spec, parsed: every problem names its field.  Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from .. import contract
from ..model.errors import SpecError

PLURAL = contract.MESH_LINK_PLURAL
KIND = "MeshLink"
DEFAULT_COST = 10
MAX_CONNECTIONS = 64


@dataclass(frozen=True)
class LinkSpec:
    name: str
    namespace: str
    mesh_name: str
    token_secret: str
    cost: int = DEFAULT_COST
    #: None: the default, min(2, the mesh's size).
    connections: int | None = None
    verify_hostname: bool = True

    def routers(self, mesh_size: int) -> int:
        """How many of the mesh's routers (ordinals 0 to this - 1) hold a link connection."""
        wanted = self.connections if self.connections is not None else 2
        return max(0, min(wanted, mesh_size))


def _int(spec: Mapping[str, Any], key: str, low: int, high: int) -> int | None:
    value = spec.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise SpecError(f"spec.{key}", f"must be an integer from {low} to {high}")
    return value


def parse_link(name: str, namespace: str, spec: Mapping[str, Any]) -> LinkSpec:
    mesh = spec.get("meshName")
    if not isinstance(mesh, str) or not mesh:
        raise SpecError("spec.meshName", "must name the local RouterMesh")
    ref = spec.get("tokenSecretRef")
    secret = ref.get("name") if isinstance(ref, Mapping) else None
    if not isinstance(secret, str) or not secret:
        raise SpecError("spec.tokenSecretRef.name", "must name the Secret holding the token")
    verify = spec.get("verifyHostname", True)
    if not isinstance(verify, bool):
        raise SpecError("spec.verifyHostname", "must be true or false")
    cost = _int(spec, "cost", 1, 1_000_000)
    return LinkSpec(name=name, namespace=namespace, mesh_name=mesh, token_secret=secret,
                    cost=DEFAULT_COST if cost is None else cost,
                    connections=_int(spec, "connections", 1, MAX_CONNECTIONS), verify_hostname=verify)
