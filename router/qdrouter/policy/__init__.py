"""Connection and resource policy (book 2.6): pure decisions, no proton.

The AMQP adaptor asks this package whether a connection may open, a session begin, a link
attach or a message pass, and with which limits; it applies the answers itself."""

from __future__ import annotations

from .engine import ConnectionGrant, Denial, PolicyEngine
from .errors import PolicyError
from .settings import GroupSettings, VhostSettings, parse_vhost

__all__ = ["ConnectionGrant", "Denial", "GroupSettings", "PolicyEngine", "PolicyError", "VhostSettings",
           "parse_vhost"]
