"""Which sslProfiles the routers load at run time, from which Secret, and what they should hold.

A renewed certificate, a CA added to or dropped from a trust bundle, or a certificate
cert-manager renewed reaches the routers without a restart: Kubernetes updates the files of
a mounted Secret in the running pod, and the apply stage asks each router whose sslProfile
reports other material to load its files again (apply/tls_reload.py).  Interior routers hold
the inter-router profile and one per listener or connector TLS Secret; edge routers hold the
edge profile.  Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Mapping

from ..contract import EDGE_PROFILE, INTER_ROUTER_PROFILE
from ..model.entities import managed_name
from ..model.mesh import MeshSpec
from .material import Material
from .names import edge_secret, inter_router_secret


@dataclass(frozen=True)
class LiveProfile:
    """One sslProfile a router should run with the material of one Secret."""

    profile: str
    secret: str
    material: Material
    #: Whether connections made with older material are replaced once the router has loaded
    #: the new one (router-to-router connections: each replaced only after its successor is
    #: up).  Client-facing profiles keep their connections: a renewed server certificate
    #: does not need clients to reconnect.
    replace_connections: bool


def interior_secrets(mesh: MeshSpec) -> Dict[str, str]:
    """sslProfile name -> Secret, for the profiles of interior routers."""
    profiles = {managed_name("tls", secret): secret for secret in mesh.tls_secrets()}
    secret = inter_router_secret(mesh)
    if secret:
        profiles[INTER_ROUTER_PROFILE] = secret
    return profiles


def edge_secrets(mesh: MeshSpec) -> Dict[str, str]:
    """The same for edge routers (the edge profile only)."""
    secret = edge_secret(mesh) if mesh.edge_groups else None
    return {EDGE_PROFILE: secret} if secret else {}


def secrets_read(mesh: MeshSpec) -> List[str]:
    """Every Secret whose material the routers should load, each once."""
    return sorted({*interior_secrets(mesh).values(), *edge_secrets(mesh).values()})


def live_profiles(secrets: Mapping[str, str], materials: Mapping[str, Material]) -> List[LiveProfile]:
    """The profiles whose Secret was read (a missing or unreadable Secret is left alone: the
    router keeps what it runs)."""
    return [LiveProfile(profile, secret, materials[secret],
                        replace_connections=profile in (INTER_ROUTER_PROFILE, EDGE_PROFILE))
            for profile, secret in sorted(secrets.items()) if secret in materials]
