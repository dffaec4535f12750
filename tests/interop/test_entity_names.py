"""Unnamed and named configuration entities get the same names and identities from qdrouterd
1.19 and from qdmesh, from the same config file (management/entity_names.py), so scripts that
name them (qdmanage read/update/delete --name) work on either router."""

from __future__ import annotations

from typing import Dict, List, Tuple

from tests.interop.conftest import CRouterFactory
from tests.interop.cpeer import section
from tests.management.bulk import RawManagement, status
from tests.router.amqpclient import Net
from tests.router.routerproc import RouterFactory

TYPES = ["listener", "connector", "router.config.address", "router.config.linkRoute",
         "router.config.autoLink", "sslProfile", "vhost"]
SECTIONS = "".join([
    section("listener", {"name": "second", "host": "127.0.0.1", "port": 0, "saslMechanisms": "ANONYMOUS"}),
    section("connector", {"host": "127.0.0.1", "port": 1, "role": "route-container"}),
    section("address", {"prefix": "foo", "distribution": "multicast"}),
    section("address", {"name": "named-addr", "prefix": "bar"}),
    section("linkRoute", {"prefix": "lr", "direction": "in"}),
    section("autoLink", {"address": "al", "direction": "out"}),
    section("sslProfile", {"name": "tls1"}),
    section("vhost", {"hostname": "vh1"}),
])


def names(net: Net, url: str, port: int) -> Dict[str, List[Tuple[str, str]]]:
    mgmt = RawManagement(net, net.connect(url))
    found = {}
    for entity_type in TYPES:
        reply = mgmt.request({"operation": "QUERY", "type": "org.amqp.management", "name": "self",
                              "entityType": f"org.apache.qpid.dispatch.{entity_type}"},
                             {"attributeNames": ["name", "identity"]})
        assert status(reply) == 200, reply
        # The main listener's port differs between the two routers: name it alike.
        found[entity_type] = sorted((str(n).replace(str(port), "PORT"), str(i).replace(str(port), "PORT"))
                                    for n, i in reply.body["results"])
    return found


def test_both_routers_name_entities_alike(c_router: CRouterFactory, router_factory: RouterFactory,
                                          net: Net) -> None:
    c = c_router("C", mode="standalone", sections=SECTIONS)
    # The C test router's config has an address 'closest' before these sections: so has this.
    q = router_factory(addresses={"closest": "closest"}, extra_config=SECTIONS)
    theirs, ours = names(net, c.url, c.port), names(net, q.url, q.port)
    assert ours == theirs
    assert ("listener/127.0.0.1:PORT", "listener/127.0.0.1:PORT") in theirs["listener"]
    assert ("address/1", "2") in theirs["router.config.address"]
    assert ("vhost/vh1", "vhost/vh1") in theirs["vhost"]
