"""One address in several forms across a mixed mesh (a qdmesh Q1 and a C router C1 joined):
qdrouterd hashes "/x", "x" and "amqp:/x" to one address, advertises a consumer of "/x" as
"M0x" and routes the forms to it; qdmesh keys addresses in the same view
(core/address_view.py), so a consumer of "/x" on one kind gets what producers for "/x", "x"
and "amqp:/x" send on the other kind, both ways, by link target and by `to` (left as the
producer wrote it)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from tests.interop.mixed_topology import MixedMesh, line, remote_count, running
from tests.router.amqpclient import Net, send_by_link_and_by_to

NAMES = ["Q1", "C1"]
PRODUCER_FORMS = ["/{}", "{}", "amqp:/{}"]


@pytest.fixture(scope="module")
def mesh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MixedMesh]:
    workdir: Path = tmp_path_factory.mktemp("address-forms")
    yield from running(MixedMesh(workdir, NAMES, line(NAMES)), "Q1 and C1 to join")


@pytest.mark.parametrize("consumer_on, producer_on", [("C1", "Q1"), ("Q1", "C1")])
def test_a_consumer_of_slash_x_gets_every_form_from_the_other_kind(
        mesh: MixedMesh, net: Net, consumer_on: str, producer_on: str) -> None:
    name = f"forms-{consumer_on}"
    receiver = net.connect(mesh[consumer_on].url).receiver(f"/{name}")
    # Advertised in the view: the producer's router knows a consumer for "M0<name>".
    net.wait(lambda: remote_count(mesh[producer_on], name) == 1, 30,
             f"{consumer_on}'s consumer of /{name} known on {producer_on} as M0{name}")
    addresses = [form.format(name) for form in PRODUCER_FORMS]
    outcomes = send_by_link_and_by_to(net, net.connect(mesh[producer_on].url), addresses)
    assert outcomes == ["accepted"] * 2 * len(addresses)
    net.wait(lambda: len(receiver.received) == 2 * len(addresses), 10, "every message at the consumer")
    assert receiver.bodies() == [f"link {a}" for a in addresses] + [f"to {a}" for a in addresses]
    # Routed by the view, delivered with `to` as the producer wrote it.
    assert [r.message.address for r in receiver.received] == [None] * len(addresses) + addresses
