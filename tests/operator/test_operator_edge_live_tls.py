"""The operator's live TLS reaching an edge router, on REAL router processes: an interior router
and an edge router joined by a mutual-TLS edge connection with the edge profile the operator
renders, clients keeping unsettled messages in flight up and down the uplink.  The operator's
apply stage loads the edge's renewed files (an sslProfile UPDATE) and, only once every interior
router runs its new material, asks the edge to replace its uplink: made before the old one
breaks, no restart, every message accepted."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

import pytest

from qdmesh_operator.apply.management import ClientPool, RouterOutcome
from qdmesh_operator.apply.tls_reload import TlsReload, reload_routers, replace_edge_connections
from qdmesh_operator.contract import EDGE_PROFILE
from qdmesh_operator.tls.live import LiveProfile
from qdmesh_operator.tls.material import of_files
from qdrouter.tools.management_client import ManagementClient
from tests.edge.edgeproc import Routers
from tests.edge.helpers import wait_until
from tests.edge.tls_uplink import PROFILE, Traffic, edge_ordinals, install, leaf, tls_pair, update
from tests.router.amqpclient import Net
from tests.router.fixtures import net, stop_checked  # noqa: F401 (the shared fixture)
from tests.security.certs import CertAuthority

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def local_routers(tmp_path: Path) -> Iterator[Routers]:
    made = Routers(tmp_path)
    yield made
    stop_checked(made.started)


def test_edge_uplink_is_replaced_live_once_the_interior_runs_the_new_material(
        local_routers: Routers, net: Net, tmp_path: Path) -> None:  # noqa: F811
    old_ca = CertAuthority(tmp_path / "old-ca", "Old mesh CA")
    new_ca = CertAuthority(tmp_path / "new-ca", "New mesh CA")
    dirs = {name: tmp_path / f"tls-{name}" for name in ("I", "E")}
    for name, directory in dirs.items():
        install(directory, {**leaf(old_ca, name), "ca.pem": old_ca.cert.read_bytes()})
    interior, edge = tls_pair(local_routers, dirs, edge_profile=EDGE_PROFILE)
    wait_until(lambda: edge_ordinals(edge) == [("out", 0)], 30, "the edge's TLS uplink")
    pids = (interior.pid, edge.pid)
    traffic = Traffic(net, interior, edge)
    traffic.run_until(lambda: min(traffic.each_received()) >= 50, 60, "traffic up and down the uplink")

    # The Secrets change (new leaves, both CAs trusted); the kubelet updates the mounted files.
    bundle = old_ca.cert.read_bytes() + new_ca.cert.read_bytes()
    for name in ("I", "E"):
        install(dirs[name], {**leaf(new_ca, name), "ca.pem": bundle})
    material = of_files({"tls.crt": (dirs["E"] / "tls.crt").read_bytes(), "ca.crt": bundle})
    profiles = [LiveProfile(EDGE_PROFILE, "demo-edge-tls", material, replace_connections=True)]
    pool = ClientPool()

    def apply_stage(interior_current: bool) -> TlsReload:
        with ManagementClient(edge.url, timeout=10) as client:
            rows = client.query(PROFILE)
        outcomes = {"E": RouterOutcome("E", edge.url, live={"sslProfile": rows})}
        reloads = reload_routers(outcomes, profiles, pool=pool, tls=None)
        replace_edge_connections(reloads, outcomes, profiles, interior_current=interior_current,
                                 pool=pool, tls=None)
        return reloads["E"]

    try:
        # An interior router still runs its old material: the edge loads its files, keeps its uplink.
        first = apply_stage(interior_current=False)
        assert (first.loaded, first.replacing, first.refused) == ([EDGE_PROFILE], [], {}), first
        after_load = traffic.each_received()
        traffic.run_until(lambda: traffic.grew(after_load, 20),
                          60, "traffic after the edge loaded its files")
        assert edge_ordinals(edge) == [("out", 0)]
        # Every interior router runs the new material (loaded as the operator's interior pass does).
        update(interior, {"ordinal": 1, "oldestValidOrdinal": 1})
        second = apply_stage(interior_current=True)
        assert second.replacing == [EDGE_PROFILE] and second.refused == {}, second
        def remade() -> bool:
            return edge_ordinals(edge) == [("out", 1)] and edge_ordinals(interior) == [("in", 1)]

        traffic.run_until(remade, 60, "the uplink remade with the new material")
        # Nothing left to do: the next pass asks for nothing.
        third = apply_stage(interior_current=True)
        assert (third.loaded, third.replacing, third.waiting) == ([], [], []), third
    finally:
        pool.close()
    replaced = traffic.each_received()
    traffic.run_until(lambda: traffic.grew(replaced, 50),
                      60, "traffic both ways after the replacement")
    for sender in traffic.senders:
        net.wait(sender.all_settled, 30, "every message settled")
        assert sender.outcome_counts() == {"accepted": sender.sent}, sender.outcome_counts()
    assert (interior.pid, edge.pid) == pids
    log = edge.stderr_text()
    assert re.findall(r"Edge connection \(id=\d+\) to interior lost", log) == []
    assert len(re.findall(r"to interior replaced by id=", log)) == 1
