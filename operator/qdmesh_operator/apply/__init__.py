"""Stage 6, apply: the only modules that change what runs: Kubernetes objects, then live
entities on each router through AMQP management (management.py, plan.py) and the TLS material
they load at run time (tls_reload.py), then the
StatefulSet's rolling gate (mesh.py puts them together)."""

from .converged import mesh_converged
from .management import ClientPool, RouterOutcome
from .mesh import Applied, apply_mesh
from .router_urls import overrides, router_urls
from .tls_reload import TlsReload, running_revision

__all__ = ["Applied", "ClientPool", "RouterOutcome", "TlsReload", "apply_mesh", "mesh_converged", "overrides",
           "router_urls", "running_revision"]
