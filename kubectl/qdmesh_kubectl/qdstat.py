"""`kubectl qdstat`: qdstat views of a RouterMesh's routers, reached through port-forwards."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import uuid
from typing import Callable, Dict, List, Sequence

from qdrouter.tools import mesh_map, table
from qdrouter.tools.cli_common import UsageError, run_tool, sasl_password, write_out
from qdrouter.tools.management_client import ManagementClient

from . import cluster
from .args import EDGE_ROUTERS, PROG, build_parser
from .cluster import KubeTarget, RouterPod
from .edges import edges_summary, edges_table
from .errors import PluginError
from .forward import KubectlPortForward
from .views import query_routers

ForwarderFactory = Callable[[KubeTarget], KubectlPortForward]


def _warn(text: str) -> None:
    sys.stderr.write(f"{PROG}: warning: {text}\n")


def _select_router(target: KubeTarget, pods: List[RouterPod], wanted: str, mesh: str) -> List[RouterPod]:
    """The interior router (pod name or ordinal) or edge router (pod name) ``wanted``."""
    name = f"{mesh}-{wanted}" if wanted.isdigit() else wanted
    chosen = [p for p in pods if p.name == name]
    if not chosen and not wanted.isdigit():
        edges = cluster.edge_pods(target, mesh)
        chosen = [p for p in edges if p.name == name]
        pods = pods + edges
    if not chosen:
        known = ", ".join(p.name for p in pods) or "none"
        raise PluginError(f"router {wanted!r} is not a router of RouterMesh {mesh!r} (its routers: {known})")
    return chosen


def resolve_routers(target: KubeTarget, args: argparse.Namespace) -> tuple:
    """(mesh or pod name, the router pods to ask); errors when there is nothing to ask."""
    if args.target.startswith("pod/") or args.target.startswith("pods/"):
        pod = cluster.one_pod(target, args.target.split("/", 1)[1])
        if not pod.reachable:
            raise PluginError(f"pod {pod.name!r} is not running (phase {pod.phase})")
        return pod.mesh or pod.name, [pod]
    if "/" in args.target:
        raise UsageError(f"unknown target {args.target!r}: give a RouterMesh name or pod/NAME")
    mesh_name = args.target
    mesh = cluster.get_mesh(target, mesh_name)
    pods = cluster.mesh_pods(target, mesh_name)
    if args.router:
        pods = _select_router(target, pods, args.router, mesh_name)
    ready = cluster.mesh_condition(mesh, "Ready") or {}
    why = f" (Ready: {ready.get('reason')}: {ready.get('message')})" if ready.get("message") else ""
    if not pods:
        raise PluginError(f"RouterMesh {mesh_name!r} has no router pods yet{why}")
    running = [p for p in pods if p.reachable]
    if not running:
        states = ", ".join(f"{p.name}: {p.state()}" for p in pods)
        raise PluginError(f"RouterMesh {mesh_name!r} is not ready: no router pod is running ({states}){why}")
    for p in pods:
        if not p.reachable:
            _warn(f"skipping router {p.name} ({p.state()})")
    return mesh_name, running


def _client_factory(args: argparse.Namespace) -> Callable[[str], ManagementClient]:
    password = sasl_password(args)

    def make(address: str) -> ManagementClient:
        return ManagementClient(
            address, timeout=args.timeout, sasl_mechanisms=args.sasl_mechanisms,
            username=args.sasl_username, password=password, ssl_certificate=args.ssl_certificate,
            ssl_key=args.ssl_key, ssl_trustfile=args.ssl_trustfile, ssl_password=args.ssl_password,
            container_id=f"{PROG}-{uuid.uuid4().hex[:12]}")
    return make


def list_edges(target: KubeTarget, args: argparse.Namespace) -> int:
    """--edge-routers: the mesh's edge routers from its status and pods."""
    if "/" in args.target:
        raise UsageError("--edge-routers lists a RouterMesh's edge routers: give the mesh's name")
    mesh = cluster.get_mesh(target, args.target)
    if not (mesh.get("spec") or {}).get("edgeGroups"):
        raise PluginError(f"RouterMesh {args.target!r} has no edge groups (spec.edgeGroups)")
    pods = cluster.edge_pods(target, args.target)
    text = table.render(edges_table(mesh, pods), args.format)
    if args.format == table.TEXT:
        text = edges_summary(mesh) + "\n" + text
    write_out(text)
    return 0


def run(args: argparse.Namespace, forwarder_factory: ForwarderFactory) -> int:
    target = cluster.connect(args.kubeconfig, args.context, args.namespace)
    if args.show == EDGE_ROUTERS:
        return list_edges(target, args)
    name, pods = resolve_routers(target, args)
    client_for = _client_factory(args)
    cluster.check_port_forward_allowed(target)
    with forwarder_factory(target) as forwarder:
        routers: Dict[str, str] = {p.name: forwarder.open(p.name) for p in pods}
        if args.show == "map":
            snapshot = mesh_map.collect(name, routers, client_for)
            if not snapshot.routers:
                raise PluginError("no router answered: " + "; ".join(
                    f"{n}: {why}" for n, why in snapshot.unreachable.items()))
            if args.format == table.JSON:
                write_out(json.dumps(mesh_map.as_json(snapshot), indent=2))
            else:
                write_out(mesh_map.render(snapshot))
            return 1 if snapshot.unreachable else 0
        result = query_routers(args.show, routers, client_for, args.limit)
        # As qdstat -c: the connectors' state and last error under the connections (a connector
        # whose peer is away has no connection to list); text only, so --csv/--json stay one table.
        extra = None
        if args.show == "connections" and args.format == table.TEXT and len(result.failures) < len(routers):
            answered = {pod: address for pod, address in routers.items() if pod not in result.failures}
            extra = query_routers("connectors", answered, client_for, args.limit).table
    for router, why in result.failures.items():
        _warn(f"router {router} did not answer: {why}")
    if len(result.failures) == len(routers):
        raise PluginError("no router answered")
    text = table.render(result.table, args.format)
    if extra is not None and extra.rows:
        text += "\n" + table.render(extra, args.format)
    write_out(text)
    return 1 if result.failures else 0


def missing_extra() -> str | None:
    """One line saying the Kubernetes client (the [kubectl] extra) is not installed, or None."""
    if importlib.util.find_spec("kubernetes") is not None:
        return None
    return (f"{PROG}: needs the qdmesh package's [kubectl] extra (kubernetes not installed): "
            "in a clone of qdmesh, pip install '.[kubectl]'")


def main(argv: Sequence[str] | None = None, forwarder_factory: ForwarderFactory | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    problem = missing_extra()
    if problem:
        sys.stderr.write(problem + "\n")
        return 1

    def body() -> int:
        try:
            return run(args, forwarder_factory or KubectlPortForward)
        except PluginError as e:
            sys.stderr.write(f"{PROG}: error: {e}\n")
            return 1
    return run_tool(PROG, body)


if __name__ == "__main__":
    raise SystemExit(main())
