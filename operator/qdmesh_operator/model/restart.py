"""The parts of a RouterMesh's spec that only a restart applies (the static part of each
router's config), each hashed on its own: the status keeps them, so a rolling restart names
which of them changed (operations/reasons.py).  The pod template carries one hash of them
all (MeshSpec.restart_hash)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from typing import Any, Dict

from .mesh import MeshSpec


def _hash(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def restart_sections(mesh: MeshSpec) -> Dict[str, str]:
    """Hash of each part, by the name its reason is told by (``router``, ``policy``,
    ``interRouter.tls``)."""
    return {"router": _hash(asdict(mesh.router)),
            "policy": _hash(asdict(mesh.policy) if mesh.policy else None),
            "interRouter.tls": _hash(asdict(mesh.inter_router_tls))}
