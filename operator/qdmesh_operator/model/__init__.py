"""Stage 2, model: typed, validated specs: what the custom resources ask for, independent of
Kubernetes I/O (a bad field stops the reconciliation here, named)."""

from .errors import SpecError
from .inputs import ParsedMesh, parse_inputs
from .mesh import MeshSpec

__all__ = ["MeshSpec", "ParsedMesh", "SpecError", "parse_inputs"]
