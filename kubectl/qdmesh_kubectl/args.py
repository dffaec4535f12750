"""kubectl-qdstat's command line: kubectl's flags, qdstat's views and output options."""

from __future__ import annotations

import argparse

from qdrouter import __version__
from qdrouter.tools import table
from qdrouter.tools.cli_common import ToolArgumentParser, positive
from qdrouter.tools.qdstat import _VIEW_OPTIONS as QDSTAT_VIEW_OPTIONS
from qdrouter.tools.qdstat_views import VIEWS

PROG = "kubectl-qdstat"
EDGE_ROUTERS = "edge-routers"
USAGE = "kubectl qdstat [MESH | pod/NAME] [view] [options]"
DESCRIPTION = """\
qdstat for the routers of a qdmesh RouterMesh. Reaches each router's management (port 5672)
through `kubectl port-forward`, and prints the view for every router of the mesh with a
router column (or for one router with --router or pod/NAME).

kubectl's -n is the namespace here: qdstat's -n (nodes) is --nodes."""
EPILOG = """\
examples:
  kubectl qdstat mymesh                      general statistics, one column per router
  kubectl qdstat mymesh -a                   addresses of every router
  kubectl qdstat -n prod mymesh --links --router mymesh-1
  kubectl qdstat pod/mymesh-0 --nodes        the routers one router sees
  kubectl qdstat mymesh --map                routers, links and costs, brokers, routes
  kubectl qdstat mymesh --edge-routers       the edge routers and their interior router
  kubectl qdstat mymesh -l --router mymesh-edge-apps-7d9f-x2k4p   one edge router's links"""

# qdstat's own view options (so a view added to qdstat is here too), without the short -n:
# that is kubectl's namespace flag, so nodes is --nodes only.
_VIEW_OPTIONS = [(None if short == "-n" else short, long, view) for short, long, view in QDSTAT_VIEW_OPTIONS]


def build_parser() -> ToolArgumentParser:
    parser = ToolArgumentParser(prog=PROG, usage=USAGE, description=DESCRIPTION, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"{PROG} (qdmesh) {__version__}")
    parser.add_argument("target", metavar="MESH | pod/NAME",
                        help="a RouterMesh name, or pod/NAME for one router pod")
    kube = parser.add_argument_group("kubectl options")
    kube.add_argument("-n", "--namespace", help="namespace (default: the context's, else 'default')")
    kube.add_argument("--context", help="kubeconfig context to use")
    kube.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    kube.add_argument("--router", metavar="POD",
                      help="only this router of the mesh (its pod name, or its ordinal such as 1; an "
                           "edge router by its pod name)")
    views = parser.add_argument_group("what to show (one of)").add_mutually_exclusive_group()
    for short, long, view in _VIEW_OPTIONS:
        flags = [f for f in (short, long) if f]
        if view == "addresses":
            flags.append("--addresses")
        views.add_argument(*flags, dest="show", action="store_const", const=view, help=VIEWS[view].help)
    # Not "--edge": that is qdstat's view of an interior router's edge connections (as
    # qdrouterd's qdstat), which this plugin takes from qdstat like every view.
    views.add_argument("--edge-routers", dest="show", action="store_const", const=EDGE_ROUTERS,
                       help="the mesh's edge routers: group, pod, the interior router each is connected "
                            "to (from the RouterMesh's status; no port-forward)")
    views.add_argument("--map", dest="show", action="store_const", const="map",
                       help="draw the mesh: routers, inter-router links with cost, brokers, link routes "
                            "and auto-links")
    out = parser.add_argument_group("output options")
    out.add_argument("--limit", metavar="N", type=positive(int), help="show at most N rows per router")
    fmt = out.add_mutually_exclusive_group()
    fmt.add_argument("--csv", dest="format", action="store_const", const=table.CSV,
                     help="comma-separated values")
    fmt.add_argument("--json", dest="format", action="store_const", const=table.JSON,
                     help="JSON (with --map: the map as data)")
    conn = parser.add_argument_group("router connection options (as qdstat)")
    conn.add_argument("-t", "--timeout", metavar="SECS", type=positive(float), default=5.0,
                      help="seconds to wait for each router's replies (default 5)")
    conn.add_argument("--sasl-mechanisms", metavar="MECHS", help="allowed SASL mechanisms, space separated")
    conn.add_argument("--sasl-username", metavar="USER", help="SASL user name")
    conn.add_argument("--sasl-password", metavar="PASSWORD", help="SASL password")
    conn.add_argument("--sasl-password-file", metavar="FILE", help="read the SASL password from FILE")
    conn.add_argument("--ssl-certificate", metavar="FILE", help="client certificate (PEM) for TLS")
    conn.add_argument("--ssl-key", metavar="FILE", help="private key (PEM) of the client certificate")
    conn.add_argument("--ssl-trustfile", metavar="FILE", help="CA certificates (PEM) to trust")
    conn.add_argument("--ssl-password", metavar="PASSWORD", help="password of the private key")
    parser.set_defaults(show="general", format=table.TEXT)
    return parser
