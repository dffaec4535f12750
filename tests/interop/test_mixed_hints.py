"""The treatment hints of mobile-address updates (MAU), used by a router that has no prefix
configuration for an address, as qdrouterd uses them: a line Q1-C1-Q2-C2 where only the C
routers configure ``cmc`` as multicast and only the qdmesh routers configure ``qmc``. A
router without the prefix learns the address from the MAU, with its advertiser's hint, and
distributes it the same way; without hints it would balance it (one consumer per message)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, Sequence

import pytest

from tests.interop.cpeer import section
from tests.interop.mixed_topology import MixedMesh, distribution, line, remote_count, running
from tests.router.amqpclient import Net, msg, send_and_settle

NAMES = ["Q1", "C1", "Q2", "C2"]
C_ONLY = section("address", {"prefix": "cmc", "distribution": "multicast"})
Q_ONLY = section("address", {"prefix": "qmc", "distribution": "multicast"})
Q1_CLOSEST = section("address", {"prefix": "cmc/one", "distribution": "closest"})


@pytest.fixture(scope="module")
def mesh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MixedMesh]:
    workdir: Path = tmp_path_factory.mktemp("hints")
    built = MixedMesh(workdir, NAMES, line(NAMES), c_extra={"C1": C_ONLY, "C2": C_ONLY},
                      q_extra={"Q1": Q_ONLY + Q1_CLOSEST, "Q2": Q_ONLY})
    yield from running(built, "the line to converge")


def multicast_from(net: Net, mesh: MixedMesh, address: str, consumers: Sequence[str], producer: str) -> None:
    receivers = {n: net.connect(mesh[n].url).receiver(address) for n in consumers}
    net.wait(lambda: all(remote_count(mesh[n], address) >= len(set(consumers) - {n}) for n in NAMES), 30,
             f"{address}'s consumers known everywhere")
    sender = net.connect(mesh[producer].url).sender(address)
    net.wait(lambda: sender.credit > 0, 10, f"credit on {producer}")
    bodies = [f"{address} #{i}" for i in range(6)]
    outcomes = send_and_settle(net, sender, [msg(b) for b in bodies], 15)
    assert {o.name for o in outcomes} == {"accepted"}
    net.wait(lambda: all(len(r.received) >= len(bodies) for r in receivers.values()), 10,
             f"every message at each of {consumers} (multicast), not shared out between them")
    net.pump(0.5)
    for name, receiver in receivers.items():
        assert receiver.bodies() == bodies, name


def test_qdmesh_routers_take_the_c_routers_hint(mesh: MixedMesh, net: Net) -> None:
    # Q2 lies between the consumers: balancing, it would send each message one way only.
    multicast_from(net, mesh, "cmc/x", ["C1", "C2"], "Q2")
    assert distribution(mesh["Q1"], "cmc/x") == distribution(mesh["Q2"], "cmc/x") == "multicast"


def test_c_routers_take_the_qdmesh_routers_hint(mesh: MixedMesh, net: Net) -> None:
    multicast_from(net, mesh, "qmc/x", ["Q1", "Q2"], "C1")  # C1 lies between them
    assert distribution(mesh["C2"], "qmc/x") == distribution(mesh["C1"], "qmc/x") == "multicast"


def test_prefix_configuration_wins_over_the_hint(mesh: MixedMesh, net: Net) -> None:
    """A router with a prefix for the address keeps its own: C1 advertises cmc/one/x as
    multicast, Q1 configures cmc/one as closest."""
    net.connect(mesh["C1"].url).receiver("cmc/one/x")
    net.wait(lambda: remote_count(mesh["Q1"], "cmc/one/x") == 1, 30, "cmc/one/x known on Q1")
    assert distribution(mesh["C1"], "cmc/one/x") == "multicast"
    assert distribution(mesh["Q1"], "cmc/one/x") == "closest"
    assert distribution(mesh["Q2"], "cmc/one/x") == "multicast"
