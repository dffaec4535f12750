"""Management of any size: qdstat through tables of 20,000 addresses and 10,000 links, a
reply far beyond proton's 65,535 values, and QUERY's offset and count as qdrouterd 1.19
answers them. The router answers every one and stays up."""

from __future__ import annotations

import csv
import io
import json
from typing import Any, Dict, List

import pytest

from tests.management.bulk import RawManagement, open_receivers, run_tool_pumping, status
from tests.management.mgmt import ROUTER_ADDRESS, assert_routing
from tests.router.amqpclient import Net
from tests.router.routerproc import Router, RouterFactory

# The receivers' listener has no idle timeout: on a loaded machine a client busy with 20,000
# attaches can miss a heartbeat, and the test is about management, not about heartbeats.
BULK = {"bulk": {"idleTimeoutSeconds": "0"}}


@pytest.fixture
def router(router_factory: RouterFactory) -> Router:
    return router_factory(extra_listeners=BULK)


def qdstat_rows(net: Net, router: Router, option: str) -> List[Dict[str, str]]:
    result = run_tool_pumping(net, "qdstat", "-b", router.urls["bulk"][len("amqp://"):], option, "--csv")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return list(csv.DictReader(io.StringIO(result.stdout)))


@pytest.mark.timeout(180)
def test_qdstat_a_lists_20000_addresses_and_one_reply_holds_them_all(router: Router, net: Net) -> None:
    open_receivers(net, router.urls["bulk"], 20_000, "bulk/")
    rows = qdstat_rows(net, router, "-a")
    bulk = [row for row in rows if row["addr"].startswith("bulk/")]
    assert sorted(row["addr"] for row in bulk) == sorted(f"bulk/{n}" for n in range(20_000))
    assert all(row["class"] == "mobile" and row["local"] == "1" for row in bulk), \
        "each address has its one local receiver"
    # A client that asks for the whole table in one QUERY gets it: about 420,000 values, more
    # than proton's codec (which killed the router) holds in one message.
    reply = RawManagement(net, net.connect(router.url)).request(
        {"operation": "QUERY", "type": "org.amqp.management", "name": "self", "entityType": ROUTER_ADDRESS},
        {"attributeNames": []})
    assert status(reply) == 200
    names, results = reply.body["attributeNames"], reply.body["results"]
    assert len(results) >= 20_000 and len(names) * len(results) > 65_535
    assert router.is_running()
    assert_routing(net, router.url)


@pytest.mark.timeout(180)
def test_qdstat_l_lists_10000_links(router: Router, net: Net) -> None:
    open_receivers(net, router.urls["bulk"], 10_000, "many-links/")
    rows = qdstat_rows(net, router, "-l")
    outgoing = [row for row in rows if row["addr"].startswith("many-links/")]
    assert sorted(row["addr"] for row in outgoing) == sorted(f"many-links/{n}" for n in range(10_000))
    assert {(row["type"], row["dir"]) for row in outgoing} == {("endpoint", "out")}
    assert router.is_running()
    assert_routing(net, router.url)


def query(mgmt: RawManagement, names: List[str] = ["name"], **paging: Any) -> List[List[Any]]:  # noqa: B006
    reply = mgmt.request({"operation": "QUERY", "type": "org.amqp.management", "name": "self",
                          "entityType": ROUTER_ADDRESS, **paging}, {"attributeNames": names})
    assert status(reply) == 200, reply
    assert reply.body["attributeNames"] == names
    return reply.body["results"]


def test_query_offset_and_count_page_as_qdrouterd_does(router: Router, net: Net) -> None:
    """The shapes measured against qdrouterd 1.19 (tests/interop/test_query_paging.py runs
    them against both): rows from offset, at most count; count absent or 0 is every row."""
    links = open_receivers(net, router.urls["bulk"], 1_200, "paged/")
    mgmt = RawManagement(net, net.connect(router.url))
    every = query(mgmt)
    assert len(every) >= 1_200
    pages = [query(mgmt, offset=offset, count=500) for offset in range(0, len(every), 500)]
    assert [len(page) for page in pages[:-1]] == [500] * (len(pages) - 1)
    assert [row for page in pages for row in page] == every
    assert query(mgmt, count=0) == every
    assert query(mgmt, offset=700) == every[700:]
    assert query(mgmt, offset=5, count=3) == every[5:8]
    assert query(mgmt, offset=len(every)) == []
    # A walk reads the live table, as qdrouterd's agent does: an address gone mid-walk moves
    # the later rows up by one.
    links[0].close()
    net.wait(lambda: ["M0paged/0"] not in query(mgmt), 10, "address paged/0 to go")
    remaining = [row for row in every if row != ["M0paged/0"]]
    assert query(mgmt, offset=500, count=500) == remaining[500:1000]


def test_qdmanage_query_pages_through_a_large_table(router: Router, net: Net) -> None:
    open_receivers(net, router.urls["bulk"], 1_200, "listed/")
    result = run_tool_pumping(net, "qdmanage", "-b", router.urls["bulk"][len("amqp://"):], "query",
                              "--type", "router.address", "name", "distribution")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    rows = json.loads(result.stdout)
    assert result.stdout == json.dumps(rows, indent=2) + "\n", "printed a page at a time, as one list"
    listed = sorted(row["name"] for row in rows if row["name"].startswith("M0listed/"))
    assert listed == sorted(f"M0listed/{n}" for n in range(1_200))
    assert all(set(row) == {"name", "distribution"} for row in rows)
