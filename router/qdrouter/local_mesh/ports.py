"""The ports of a local mesh: ranges from the options, or free ones the kernel picks, and a
check that none is taken before any router starts."""

from __future__ import annotations

import socket
from typing import List, Sequence, Tuple

from .plan import HOST, MeshError, RouterSpec


def allocate_ports(n: int, base_port: int, inter_router_base: int | None) -> Tuple[List[int], List[int]]:
    """(client ports, inter-router ports).  base_port 0: free ports picked by the kernel."""
    if base_port == 0:
        free = _free_ports(2 * n)
        return free[:n], free[n:]
    if inter_router_base is None:
        # Far enough above the client ports that the two ranges never overlap.
        inter_router_base = base_port + max(100, n)
    ports = list(range(base_port, base_port + n))
    ir_ports = list(range(inter_router_base, inter_router_base + n))
    if set(ports) & set(ir_ports):
        raise MeshError(f"client ports {ports[0]}-{ports[-1]} overlap inter-router ports "
                        f"{ir_ports[0]}-{ir_ports[-1]}")
    if base_port < 1 or max(ports + ir_ports) > 65535 or min(ir_ports) < 1:
        raise MeshError(f"ports out of range: client {ports[0]}-{ports[-1]}, "
                        f"inter-router {ir_ports[0]}-{ir_ports[-1]}")
    return ports, ir_ports


def allocate_metrics_ports(n: int, base_port: int | None, taken: Sequence[int]) -> List[int]:
    """One HTTP port per router from ``base_port`` (0: free ones); none when not asked for."""
    if base_port is None:
        return []
    if base_port == 0:
        return [p for p in _free_ports(n + len(taken)) if p not in taken][:n]
    ports = list(range(base_port, base_port + n))
    if set(ports) & set(taken):
        raise MeshError(f"--metrics-port {base_port}: ports {ports[0]}-{ports[-1]} "
                        "overlap the routers' AMQP ports")
    if base_port < 1 or ports[-1] > 65535:
        raise MeshError(f"--metrics-port {base_port}: ports out of range ({ports[0]}-{ports[-1]})")
    return ports


def _free_ports(count: int) -> List[int]:
    # Hold every socket until all are bound, so the kernel cannot hand out the same port twice.
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            socks.append(s)
            s.bind((HOST, 0))
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # Same option as the router's listener: a port left in TIME_WAIT is not "busy".
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((HOST, port))
        except OSError:
            return True
    return False


def check_ports_free(specs: Sequence[RouterSpec]) -> None:
    for spec in specs:
        for port, what in ((spec.port, "client"), (spec.inter_router_port, "inter-router"),
                           (spec.metrics_port, "metrics")):
            if port is not None and port_in_use(port):
                raise MeshError(f"port {port} ({what} port of router {spec.index}) is already in use; "
                                "choose another --base-port, or --base-port 0 for free ports")
