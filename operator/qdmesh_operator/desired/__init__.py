"""Stage 4, desired: every router's entities, from the model (state.py; pure)."""

from .state import MeshState, mesh_state

__all__ = ["MeshState", "mesh_state"]
