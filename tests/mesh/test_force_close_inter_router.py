"""Force-closing inter-router connections through management (UPDATE connection adminStatus
deleted): qdmesh closes one the router accepted on a listener (how the operator revokes a
link from another cluster, docs/multicluster.md); the connections a router's own connectors
made are refused with 403, as qdrouterd refuses every inter-router connection."""

from __future__ import annotations

import time
from typing import Any, Dict, List

import pytest

from qdrouter.tools.errors import ManagementError
from qdrouter.tools.management_client import ManagementClient
from tests.mesh.conftest import MeshFactory

CONNECTION = "org.apache.qpid.dispatch.connection"
PAIR = [("B", "A", 1)]  # B connects to A's inter-router listener


def inter_router(url: str, direction: str) -> List[Dict[str, Any]]:
    with ManagementClient(url, timeout=5) as client:
        return [r for r in client.query(CONNECTION)
                if r.get("role") == "inter-router" and r.get("dir") == direction]


def test_a_router_refuses_to_close_an_inter_router_connection_its_connector_made(
        mesh_factory: MeshFactory) -> None:
    mesh = mesh_factory(PAIR)
    b = mesh.routers["B"]
    (out,) = inter_router(b.url, "out")
    with ManagementClient(b.url, timeout=5) as client, pytest.raises(ManagementError) as refused:
        client.update(CONNECTION, {"adminStatus": "deleted"}, identity=str(out["identity"]))
    assert refused.value.status_code == 403
    assert [r["identity"] for r in inter_router(b.url, "out")] == [out["identity"]]


@pytest.mark.differs_from_c("qdrouterd refuses (403) to force-close any inter-router connection; qdmesh "
                            "closes one the router accepted on a listener (docs/routing.md)")
def test_an_accepted_inter_router_connection_is_closed_and_the_peer_reconnects(
        mesh_factory: MeshFactory) -> None:
    mesh = mesh_factory(PAIR)
    a = mesh.routers["A"]
    (accepted,) = inter_router(a.url, "in")
    with ManagementClient(a.url, timeout=5) as client:
        row = client.update(CONNECTION, {"adminStatus": "deleted"}, identity=str(accepted["identity"]))
    assert row["adminStatus"] == "deleted"
    # B's connector makes a new connection: a new identity, and the mesh whole again.
    deadline = time.monotonic() + 30
    while [r["identity"] for r in inter_router(a.url, "in")] in ([], [accepted["identity"]]):
        assert time.monotonic() < deadline, "B did not reconnect within 30 s"
        time.sleep(0.2)
    mesh.wait_converged(timeout=30)
