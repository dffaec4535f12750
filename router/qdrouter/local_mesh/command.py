"""The `qdmesh` command.  `qdmesh local --routers N` runs a mesh of N interior routers on loopback.

Each router is a child process (``python -m qdrouter -c FILE``) with a generated configuration.
The command waits until every router's routing table (``router.node``) lists all the others,
prints where to reach each one, and stops them all on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import signal
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

from ..console import server as console_server
from .plan import HOST, MAX_ROUTERS, TOPOLOGIES, MeshError, plan_mesh, render_config, resolve_topology
from .ports import allocate_metrics_ports, allocate_ports, check_ports_free
from .processes import STOP_GRACE, RouterProcess, child_env, stop_all, wait_converged

_ID_RE = re.compile(r"^[A-Za-z0-9._-]+$")


def tool_command(tool: str) -> str:
    """The command that runs one of qdmesh's tools (qdstat, qdmanage) from any shell: the
    script installed beside this interpreter by its full path (a virtualenv's bin/ need not be
    on PATH), else the one on PATH, else this interpreter with the tool's module."""
    beside = Path(sysconfig.get_path("scripts")) / tool
    if beside.is_file() and os.access(beside, os.X_OK):
        return shlex.quote(str(beside))
    found = shutil.which(tool)
    if found:
        return shlex.quote(found)
    return f"{shlex.quote(sys.executable)} -m qdrouter.tools.{tool}"


class _Interrupted(Exception):
    """SIGINT or SIGTERM arrived."""


def check_local_arguments(args: argparse.Namespace) -> None:
    """One MeshError naming the option, for values argparse lets through."""
    if not 1 <= args.routers <= MAX_ROUTERS:
        raise MeshError(f"--routers must be between 1 and {MAX_ROUTERS}, not {args.routers}")
    if not _ID_RE.match(args.id_prefix):
        raise MeshError(f"--id-prefix may only contain letters, digits, '.', '_' and '-': {args.id_prefix!r}")
    if args.base_port < 0:
        raise MeshError(f"--base-port must be >= 0 (0 picks free ports), not {args.base_port}")
    if args.timeout <= 0:
        raise MeshError(f"--timeout must be > 0 seconds, not {args.timeout:g}")
    for option, port in (("--metrics-port", args.metrics_port), ("--console-port", args.console_port)):
        if port is not None and not 0 <= port <= 65535:
            raise MeshError(f"{option} must be between 0 and 65535 (0 picks a free port), not {port}")


def run_local(args: argparse.Namespace) -> int:
    check_local_arguments(args)
    ports, ir_ports = allocate_ports(args.routers, args.base_port, args.inter_router_base_port)
    metrics_ports = allocate_metrics_ports(args.routers, args.metrics_port, ports + ir_ports)
    specs = plan_mesh(args.routers, args.topology, ports, ir_ports, args.id_prefix, metrics_ports)
    check_ports_free(specs)
    tmp = None
    if args.log_dir:
        workdir = Path(args.log_dir)
        try:
            workdir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise MeshError(f"cannot create --log-dir {workdir}: {e.strerror}") from None
    else:
        tmp = tempfile.TemporaryDirectory(prefix="qdmesh-")
        workdir = Path(tmp.name)
    procs = [RouterProcess(spec, args.python, workdir) for spec in specs]
    console: console_server.BackgroundConsole | None = None
    stopping = False

    def on_signal(signum: int, frame: Any) -> None:
        nonlocal stopping
        if not stopping:  # a second Ctrl-C must not interrupt the shutdown itself
            stopping = True
            raise _Interrupted()

    old = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        env = child_env()
        for p in procs:
            p.start(render_config(p.spec, specs), env)
        topology = resolve_topology(args.routers, args.topology)
        noun = "router" if args.routers == 1 else "routers"
        print(f"Starting {args.routers} interior {noun}, topology {topology}, "
              f"configs and logs in {workdir} ...", flush=True)
        wait_converged(procs, args.timeout)
        width = max(len(s.router_id) for s in specs)
        qdstat = tool_command("qdstat")
        for s in specs:
            print(f"  {s.router_id:<{width}}  amqp://{s.address}   watch: {qdstat} -b {s.address} -n",
                  flush=True)
            if s.metrics_port is not None:
                print(f"  {'':<{width}}  metrics: http://{HOST}:{s.metrics_port}/metrics", flush=True)
        if args.console_port is not None:
            try:
                console = console_server.BackgroundConsole(specs[0].address, HOST, args.console_port)
            except OSError as e:
                raise MeshError(f"cannot serve the console on {HOST}:{args.console_port}: "
                                f"{e.strerror}") from None
            print(f"  console: http://{HOST}:{console.port}/ (the mesh read through {specs[0].router_id})",
                  flush=True)
        print(f"Mesh of {args.routers} {noun} ready. Ctrl-C to stop.", flush=True)
        while True:
            for p in procs:
                if p.exit_code() is not None:
                    raise p.died()
            time.sleep(0.5)
    except _Interrupted:
        print(f"Stopping {len(procs)} router(s) ...", flush=True)
        killed = stop_all(procs)
        print("Stopped." + (f" (killed after {STOP_GRACE:g}s: {', '.join(killed)})" if killed else ""),
              flush=True)
        return 0
    finally:
        stopping = True
        if console is not None:
            console.stop()
        stop_all(procs)  # no-op after a clean stop; on errors, takes the others down too
        for sig, handler in old.items():
            signal.signal(sig, handler)
        if tmp is not None:
            tmp.cleanup()


class _DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows defaults, except None ones: their help says what happens instead."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None:
            return action.help
        return super()._get_help_string(action)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="qdmesh", description="Tools for qdmesh router meshes.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    local = sub.add_parser("local", help="run a mesh of interior routers on this machine",
                           description="Run N interior routers on 127.0.0.1 as child processes, wait until "
                           "they have all found each other, and keep them running until Ctrl-C.",
                           formatter_class=_DefaultsHelpFormatter)
    local.add_argument("--routers", "-n", type=int, default=3, help="number of routers")
    local.add_argument("--topology", choices=TOPOLOGIES, default="auto",
                       help="auto: full mesh up to 4 routers, else chords (a ring where each router "
                       "connects to the next two)")
    local.add_argument("--base-port", type=int, default=5672,
                       help="client port of router 1 (router 2 gets the next, ...); 0 picks free ports")
    local.add_argument("--inter-router-base-port", type=int, default=None,
                       help="first inter-router listener port (default: base port + max(100, N))")
    local.add_argument("--id-prefix", default="R", help="router ids are PREFIX1 .. PREFIXN")
    local.add_argument("--log-dir", default=None,
                       help="keep configs and router logs here (default: a temporary directory, removed)")
    local.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the mesh to converge")
    local.add_argument("--python", default=sys.executable, help="interpreter that runs the routers")
    local.add_argument("--metrics-port", type=int, default=None, metavar="PORT",
                       help="give each router an HTTP listener for Prometheus (/metrics, /healthz, /readyz) "
                       "on PORT, PORT+1, ...; 0 picks free ports (default: none)")
    local.add_argument("--console-port", type=int, default=None, metavar="PORT",
                       help="also serve the web console of the mesh (qdmesh console) on PORT; "
                       "0 picks a free port (default: none)")
    console = sub.add_parser("console", help="serve a read-only web console of a mesh",
                             description="Serve a read-only web console of the mesh that ROUTER belongs to.")
    console_server.add_arguments(console)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    if args.command == "console":
        console_server.check_arguments(parser, args)
        return console_server.run_console(args)
    try:
        return run_local(args)
    except MeshError as e:
        print(f"qdmesh: error: {e}", file=sys.stderr, flush=True)
        return 1
