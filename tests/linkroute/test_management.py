"""linkRoute entities through the tools: qdstat --linkroutes status, qdmanage create/delete at
run time (Qpid Dispatch 0.7 book, 2.4 configuration, managed like any other entity)."""

from __future__ import annotations

import json

import pytest

from tests.router.amqpclient import ACCEPTED, Net, msg, send_and_settle
from tests.router.routerproc import Router

from .conftest import EdgeFactory
from .lrutil import (
    NO_ROUTE,
    both_ways,
    link_route,
    linkroute_rows,
    qdmanage,
    run_tool,
    statuses,
    tool_out,
    wait_oper_status,
)

# Every test here runs qdstat or qdmanage, up to five times: each run is a Python start that
# takes seconds, tens of seconds on a loaded machine, more than the folder's guard against a
# hung router (60 s) allows for.
pytestmark = pytest.mark.timeout(180)


def test_qdstat_shows_active_and_inactive(edge_factory: EdgeFactory, container: Router) -> None:
    routes = both_ways("up", connection="cont") + link_route("in", pattern="down.#", connection="none")
    edge = edge_factory(routes, {"cont": container.port}, active=2)
    assert statuses(edge) == {("up", "in"): "active", ("up", "out"): "active", ("down.#", "in"): "inactive"}
    text = tool_out("qdstat", edge, "--linkroutes")
    assert text.splitlines()[0] == "Link Routes", text
    assert text.count("active") == 3 and text.count("inactive") == 1, text
    rows = {(r.get("prefix") or r.get("pattern")): r for r in linkroute_rows(edge)}
    assert rows["up"].get("distrib") == "linkBalanced", rows


def test_create_and_delete_at_run_time(edge_factory: EdgeFactory, container: Router, net: Net) -> None:
    edge = edge_factory("", {"cont": container.port})
    consumer = net.connect(container.url).receiver("dyn.q")
    client = net.connect(edge.url)

    before = client.sender("dyn.q")          # no route yet: message-routed on R1, never reaches C
    assert before.remote_opened and not before.remote_closed
    before.close()

    # The tools run with the clients' loop running (net=net): the connections held open
    # across the create and the delete stay alive however long the tools take.
    created = qdmanage(edge, "create", "--type", "linkRoute", "--name", "dyn-in", "prefix=dyn",
                       "direction=in", "connection=cont", net=net)
    assert created["name"] == "dyn-in" and created["prefix"] == "dyn", created
    wait_oper_status(edge, "dyn-in", "active", net)
    rows = qdmanage(edge, "query", "--type", "linkRoute", net=net)
    assert [r["name"] for r in rows] == ["dyn-in"] and rows[0]["operStatus"] == "active", rows

    routed = client.sender("dyn.q")
    outcomes = send_and_settle(net, routed, [msg("via route")])
    assert outcomes[0].state == ACCEPTED
    net.wait(lambda: consumer.bodies() == ["via route"], 10, "the routed message at C")
    routed.close()

    qdmanage(edge, "delete", "--type", "linkRoute", "--name", "dyn-in", net=net)
    assert qdmanage(edge, "query", "--type", "linkRoute", net=net) == []
    assert statuses(edge, net) == {}
    # Without the route a sender to dyn.q is message-routed on R1: a receiver there gets what
    # it sends (with the route still in place it would have gone to C).
    local = client.receiver("dyn.q")
    after = client.sender("dyn.q")
    assert after.remote_opened and not after.remote_closed
    assert send_and_settle(net, after, [msg("not routed")])[0].state == ACCEPTED
    assert local.bodies() == ["not routed"]
    assert consumer.bodies() == ["via route"], "a deleted link route still routes"


def test_create_route_to_missing_container_then_refused(edge_factory: EdgeFactory, net: Net) -> None:
    edge = edge_factory("")
    qdmanage(edge, "create", "--type", "linkRoute", "--name", "p", "pattern=nowhere.*", "direction=out",
             "containerId=ghost")
    assert statuses(edge) == {("nowhere.*", "out"): "inactive"}
    rcv = net.connect(edge.url).receiver("nowhere.q")
    net.wait(lambda: rcv.remote_closed, 5, "the refusal")
    assert rcv.remote_condition is not None and rcv.remote_condition.name == NO_ROUTE


def test_create_rejects_bad_link_routes(edge_factory: EdgeFactory) -> None:
    edge = edge_factory("")
    for attrs in (["direction=in", "connection=c"],                      # neither prefix nor pattern
                  ["prefix=a", "pattern=a.#", "direction=in"],           # both
                  ["prefix=a", "direction=sideways"],                    # bad direction
                  ["prefix=a", "direction=in", "connection=c", "containerId=x"]):
        r = run_tool("qdmanage", edge, "create", "--type", "linkRoute", *attrs)
        assert r.returncode != 0, f"created a bad linkRoute {attrs}: {r.stdout}"
    assert qdmanage(edge, "query", "--type", "linkRoute") == []


@pytest.mark.differs_from_c("qdstat -l of qdrouterd shows a routed link's class as mobile; qdmesh shows the "
                            "route's class (link-in)")
def test_routed_links_in_qdstat_links(edge: Router, container: Router, net: Net) -> None:
    """qdstat -l lists both ends of a routed link (client side and container side), class
    link-in (the route's direction) for a routed sender, with the deliveries that passed."""
    snd = net.connect(edge.url).sender("lr.count")
    assert snd.remote_opened and not snd.remote_closed
    rcv = net.connect(container.url).receiver("lr.count", credit=10)
    for i in range(3):
        snd.send(msg(f"c{i}"))
    net.wait(lambda: len(rcv.received) == 3, 10, "three messages through the routed link")
    links = json.loads(tool_out("qdstat", edge, "-l", "--json", net=net))
    rows = [r for r in links if r.get("addr") == "lr.count"]
    assert len(rows) == 2, rows
    assert {r["class"] for r in rows} == {"link-in"}, rows
    assert {r["dir"] for r in rows} == {"in", "out"}, rows
    assert all(int(r["deliveries"]) == 3 for r in rows), rows


def test_connector_connections_are_outgoing(edge: Router, net: Net) -> None:
    """qdstat -c: the route-container connection the router opened is 'out', a client's 'in'."""
    net.connect(edge.url)
    rows = json.loads(tool_out("qdstat", edge, "-c", "--json", net=net))
    dirs = {r["role"]: r["dir"] for r in rows}
    assert dirs.get("route-container") == "out" and dirs.get("normal") == "in", rows
