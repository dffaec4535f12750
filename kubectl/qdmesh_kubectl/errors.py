"""The one error kubectl-qdstat reports: a sentence for the user, never a traceback."""

from __future__ import annotations


class PluginError(Exception):
    """Something the user can act on (mesh not found, not ready, RBAC, port-forward failed)."""
