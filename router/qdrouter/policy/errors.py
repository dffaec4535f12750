"""The one error policy definitions raise: a message naming the attribute at fault."""

from __future__ import annotations


class PolicyError(ValueError):
    """A vhost or policy definition that cannot be used; str() names the field."""
