"""``address`` entities with ``pattern`` (and ``prefix``, which qdrouterd 1.19 keeps as the
pattern ``prefix/#`` in the same tree): the C router and qdmesh, given the same entities, give
every address the same distribution. Which entity wins is the C router's precedence: the
literal token before '*' before '#', '#' with as few tokens as it can."""

from __future__ import annotations

from typing import Dict, List

from tests.interop.conftest import CRouterFactory
from tests.interop.cpeer import section
from tests.management.bulk import RawManagement, status
from tests.router.amqpclient import Net
from tests.router.routerproc import RouterFactory

ADDRESS = "org.apache.qpid.dispatch.router.address"

# Families that share no first token, each with entities of different distributions, so that
# the distribution an address gets names the entity that won. A '#'-led pattern crosses them.
ENTITIES: List[Dict[str, str]] = [
    {"prefix": "a", "distribution": "closest"},
    {"pattern": "a.*.c", "distribution": "multicast"},
    {"prefix": "a.b", "distribution": "balanced"},
    {"pattern": "b.#.d", "distribution": "closest"},
    {"pattern": "b.*", "distribution": "multicast"},
    {"pattern": "#.z", "distribution": "closest"},
    {"prefix": "c/d.", "distribution": "multicast"},
    {"pattern": "e.*.*", "distribution": "multicast"},
    {"pattern": "e.#", "distribution": "closest"},
]
ADDRESSES = ["a", "a.b", "a.b.c", "a.x.c", "a.x.d", "a/x/c", "ab", "a.z", "q.z", "z", "b.x", "b.x.d",
             "b.d", "b.x.y.d", "b.x.y", "b", "c.d", "c/d/e", "c.de", "e.1.2", "e.1", "e.1.2.3", "e",
             "other", "x.y.z"]


def distributions(net: Net, url: str) -> Dict[str, str]:
    client = net.connect(url)
    links = [client.receiver(address, credit=0, wait=False) for address in ADDRESSES]
    net.wait(lambda: all(link.remote_opened for link in links), 30, "receivers to attach")
    mgmt = RawManagement(net, net.connect(url))
    reply = mgmt.request({"operation": "QUERY", "type": "org.amqp.management", "name": "self",
                          "entityType": ADDRESS}, {"attributeNames": ["key", "distribution"]})
    assert status(reply) == 200
    found = {key[2:]: distribution for key, distribution in reply.body["results"] if key.startswith("M0")}
    return {address: found[address] for address in ADDRESSES}


def _sections() -> str:
    return "".join(section("address", entity) for entity in ENTITIES)


def test_patterns_and_prefixes_bind_as_in_qdrouterd(c_router: CRouterFactory, router_factory: RouterFactory,
                                                    net: Net) -> None:
    theirs = distributions(net, c_router("C", mode="standalone", sections=_sections()).url)
    ours = distributions(net, router_factory(addresses={}, extra_config=_sections()).url)
    assert ours == theirs
    # What the C router shows, by the rules: literal before '*' before '#'.
    assert theirs["a.b.c"] == "balanced"      # the prefix a.b: its 'b' is literal, a.*.c's is '*'
    assert theirs["a.x.c"] == "multicast"     # a.*.c over the prefix a
    assert theirs["ab"] == "balanced"         # no entity: prefixes end on token boundaries
    assert theirs["b.x.y.d"] == "closest"     # b.#.d: '#' takes x.y
    assert theirs["c.de"] == "balanced"       # the prefix c/d. is c/d/#: 'de' is not 'd'
