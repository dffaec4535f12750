"""The `qdmesh` command (command.py): `qdmesh local` runs a mesh of interior routers on
loopback, planned in plan.py (topology, configurations) and ports.py, run as child processes
in processes.py; `qdmesh console` serves the web console of a mesh.  A management client: it
never imports the router's insides."""

from .command import build_parser, check_local_arguments, main, run_local, tool_command
from .plan import (
    HOST,
    MAX_ROUTERS,
    TOPOLOGIES,
    MeshError,
    RouterSpec,
    mesh_edges,
    plan_mesh,
    render_config,
    resolve_topology,
)
from .ports import allocate_metrics_ports, allocate_ports, check_ports_free, port_in_use
from .processes import STOP_GRACE, RouterProcess, stop_all, wait_converged

__all__ = ["HOST", "MAX_ROUTERS", "STOP_GRACE", "TOPOLOGIES", "MeshError", "RouterProcess", "RouterSpec",
           "allocate_metrics_ports", "allocate_ports", "build_parser", "check_local_arguments",
           "check_ports_free", "main", "mesh_edges", "plan_mesh", "port_in_use", "render_config",
           "resolve_topology", "run_local", "stop_all", "tool_command", "wait_converged"]
