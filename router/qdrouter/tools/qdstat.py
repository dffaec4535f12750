"""The `qdstat` command: a router's status as tables, with qdrouterd's qdstat options."""

from __future__ import annotations

import argparse
import json
from typing import List, Sequence

from . import mesh_map, table
from .cli_common import (
    ToolArgumentParser,
    argv_or_default,
    client_from_args,
    make_parser,
    run_tool,
    write_out,
)
from .errors import ManagementError
from .management_client import ManagementClient
from .qdstat_views import VIEWS, View, with_self_node

PROG = "qdstat"
DESCRIPTION = "Show the status of a qdmesh (or qdrouterd) router: one table per run, default -g."

# (short option or None, long option, view name) in the order --help lists them.
_VIEW_OPTIONS = [
    ("-g", "--general", "general"),
    ("-c", "--connections", "connections"),
    (None, "--connectors", "connectors"),
    ("-e", "--edge", "edges"),
    ("-l", "--links", "links"),
    ("-a", "--address", "addresses"),
    ("-n", "--nodes", "nodes"),
    (None, "--autolinks", "autolinks"),
    (None, "--linkroutes", "linkroutes"),
    (None, "--vhosts", "vhosts"),
    (None, "--vhostgroups", "vhostgroups"),
    ("-m", "--memory", "memory"),
]
MAP_HELP = ("the whole mesh from this router: every router, the inter-router links with their cost, "
            "brokers (route containers), link routes and auto-links with each router's state")


def _row_limit(text: str) -> int | None:
    """--limit N: at most N rows; 0 is no limit, as qdrouterd's qdstat documents it."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 (no limit) or more: {text!r}")
    return value or None


def build_parser() -> ToolArgumentParser:
    parser = make_parser(PROG, DESCRIPTION)
    views = parser.add_argument_group("what to show (one of)").add_mutually_exclusive_group()
    for short, long, view in _VIEW_OPTIONS:
        flags = [f for f in (short, long) if f]
        # -a's long form is --address in qdstat; --addresses is accepted as well.
        if view == "addresses":
            flags.append("--addresses")
        views.add_argument(*flags, dest="show", action="store_const", const=view, help=VIEWS[view].help)
    views.add_argument("--map", dest="show", action="store_const", const="map", help=MAP_HELP)
    out = parser.add_argument_group("output options")
    out.add_argument("--limit", metavar="N", type=_row_limit,
                     help="show at most N rows (0: no limit, the default)")
    fmt = out.add_mutually_exclusive_group()
    fmt.add_argument("--csv", dest="format", action="store_const", const=table.CSV,
                     help="comma-separated values: a heading line, then one line per row")
    fmt.add_argument("--json", dest="format", action="store_const", const=table.JSON,
                     help="a JSON list with one {column: value} object per row")
    parser.set_defaults(show="general", format=table.TEXT)
    return parser


def fetch(client: ManagementClient, view: View, limit: int | None = None,
          self_node: bool = False) -> table.Table:
    """Query the view's entities and build its table (at most ``limit`` rows). ``self_node``:
    the nodes view has a row for the router queried too, as qdrouterd's qdstat -n shows it
    (kubectl-qdstat, which merges the views of every router of a mesh, goes without)."""
    entities = client.query(view.entity_type, [], count=limit)
    if self_node and view.option == "nodes":
        routers = client.query(VIEWS["general"].entity_type)
        entities = with_self_node(routers[0] if routers else None, entities)
    built = view.build(entities)
    if limit is not None:
        built.rows = built.rows[:limit]
    return built


def main(argv: Sequence[str] | None = None) -> int:
    args_list: List[str] = argv_or_default(argv)
    args = build_parser().parse_args(args_list)

    def body() -> int:
        if args.show == "map":
            return mesh_map_body(args)
        view = VIEWS[args.show]
        with client_from_args(args, PROG) as client:
            result = fetch(client, view, args.limit, self_node=True)
            # A connector whose peer is away has no connection to list: -c shows each
            # connector's state and last error under the connections (text only, so that
            # --csv and --json stay one table; --connectors gives them alone).
            extra = None
            if args.show == "connections" and args.format == table.TEXT:
                try:
                    extra = fetch(client, VIEWS["connectors"], args.limit)
                except ManagementError:
                    extra = None   # an agent without connector entities: connections only
        text = table.render(result, args.format)
        if extra is not None and extra.rows:
            text += "\n" + table.render(extra, args.format)
        write_out(text)
        return 0

    return run_tool(PROG, body)


def mesh_map_body(args: argparse.Namespace) -> int:
    """Ask the connected router for the routers it knows (router.node), then each of them,
    through it, for its links, connections and routes."""
    with client_from_args(args, PROG) as client:
        me = client.query("router")
        nodes = client.query("router.node")
    own = str(me[0].get("id")) if me else (args.router or "")
    routers = {own: own}
    routers.update({str(n.get("id")): str(n.get("id")) for n in nodes if n.get("id") and n.get("id") != own})

    def client_for(router_id: str) -> ManagementClient:
        return client_from_args(argparse.Namespace(**{**vars(args), "router": router_id}), PROG)

    snapshot = mesh_map.collect(own, routers, client_for)
    if args.format == table.JSON:
        write_out(json.dumps(mesh_map.as_json(snapshot), indent=2) + "\n")
    else:
        # Not "RouterMesh": a mesh reached by address (qdmesh local, a config file) is no resource.
        write_out(mesh_map.render(snapshot, title=f"Mesh of router {own}"))
    return 1 if snapshot.unreachable else 0


if __name__ == "__main__":
    raise SystemExit(main())
