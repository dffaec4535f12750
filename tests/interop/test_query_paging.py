"""QUERY's offset and count, and a list of 64 attribute names or more, asked of the C router
(qdrouterd 1.19) and of qdmesh alike: both answer each shape the same way, on a table of
over 500 rows (more than one page of qdstat's)."""

from __future__ import annotations

from typing import Any, Dict, List

from tests.interop.conftest import CRouterFactory
from tests.management.bulk import RawManagement, open_receivers, status
from tests.router.amqpclient import Net
from tests.router.routerproc import RouterFactory

ADDRESS = "org.apache.qpid.dispatch.router.address"
ROWS = 600


def shapes(net: Net, url: str) -> Dict[str, Any]:
    open_receivers(net, url, ROWS, "paged/")
    mgmt = RawManagement(net, net.connect(url))

    def query(names: List[str], **paging: Any) -> Dict[str, Any]:
        reply = mgmt.request({"operation": "QUERY", "type": "org.amqp.management", "name": "self",
                              "entityType": ADDRESS, **paging}, {"attributeNames": names})
        assert status(reply) == 200
        return reply.body

    def rows(**paging: Any) -> List[List[Any]]:
        return query(["name"], **paging)["results"]

    every = rows()
    return {
        "more than a page": len(every) > 500,
        "count 0 is every row": rows(count=0) == every,
        "count 500 is the first 500": rows(count=500) == every[:500],
        "offset 500 is the rest": rows(offset=500) == every[500:],
        "offset 5 count 3": rows(offset=5, count=3) == every[5:8],
        "offset past the end": rows(offset=len(every) + 10) == [],
        "64 names are every attribute": query(["name"] * 64)["attributeNames"] == query([])["attributeNames"],
        "63 names are those names": query(["name"] * 63)["attributeNames"] == ["name"] * 63,
    }


def test_qdrouterd_and_qdmesh_page_a_query_alike(c_router: CRouterFactory, router_factory: RouterFactory,
                                                  net: Net) -> None:
    of_c = shapes(net, c_router("C", mode="standalone").url)
    assert all(of_c.values()), f"qdrouterd 1.19 answers otherwise: {of_c}"
    assert shapes(net, router_factory().url) == of_c
