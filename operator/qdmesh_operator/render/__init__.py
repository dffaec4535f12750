"""Stage 5, render: router config files and Kubernetes manifests from the desired state (pure
functions; mesh.py puts them together)."""

from .conf import RenderError
from .mesh import RenderedMesh, render_mesh

__all__ = ["RenderError", "RenderedMesh", "render_mesh"]
