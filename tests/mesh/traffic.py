"""Traffic helpers for mesh tests: waiting for address propagation, trace annotations."""

from __future__ import annotations

import time
from typing import Any, Dict, List

from qdrouter.tools.errors import ManagementError
from tests.mesh.meshproc import Mesh
from tests.router.amqpclient import Net, ReceiverLink

ADDRESS_TYPE = "org.apache.qpid.dispatch.router.address"


def address_row(mesh: Mesh, rid: str, address: str) -> Dict[str, Any] | None:
    try:
        rows = mesh.mgmt(rid).query(ADDRESS_TYPE)
    except ManagementError:
        mesh.drop_clients(rid)
        return None
    for row in rows:
        if row.get("key") in (f"M0{address}", f"M{address}"):
            return row
    return None


def wait_remote(mesh: Mesh, rid: str, address: str, remote: int, timeout: float | None = None,
                net: Net | None = None) -> float:
    """Wait until ``rid`` knows ``remote`` other routers with consumers of ``address``
    (mobile-address propagation; bounded by raIntervalFlux + hellos). Pass the test's
    ``net`` when it has clients open: it is pumped meanwhile, so the routers do not close
    them for idleness on a slow machine."""
    timeout = mesh.timers.convergence_bound if timeout is None else timeout
    start = time.monotonic()
    row = None
    while time.monotonic() - start < timeout:
        row = address_row(mesh, rid, address)
        if row is not None and row.get("remoteCount") == remote:
            return time.monotonic() - start
        if net is not None:
            net.pump(0.1)
        else:
            time.sleep(0.1)
    raise AssertionError(f"{rid} never saw {remote} remote consumers of {address} in {timeout}s: {row}")


def trace_of(rec: Any) -> List[str]:
    ann = rec.message.annotations or {}
    return [str(x) for x in ann.get("x-opt-qd.trace", [])]


def wait_received(net: Net, receivers: List[ReceiverLink], total: int, timeout: float = 15) -> None:
    net.wait(lambda: sum(len(r.received) for r in receivers) >= total, timeout,
             f"{total} messages at the receivers (have {[len(r.received) for r in receivers]})")
