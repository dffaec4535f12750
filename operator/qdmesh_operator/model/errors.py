"""Errors in a resource's spec, each naming the field at fault."""

from __future__ import annotations


class SpecError(ValueError):
    """A spec the operator cannot act on; ``field`` is the path users see (``spec.size``)."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


class ReferenceError_(SpecError):
    """A spec that names another object (a mesh, a connector) which does not exist."""
