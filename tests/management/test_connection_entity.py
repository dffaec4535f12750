"""The connection entity as qdrouterd keeps it: the peer's open properties, and UPDATE with
adminStatus 'deleted' force-closing a client's connection."""

from __future__ import annotations

from proton import symbol

from tests.management.mgmt import MgmtClient
from tests.router.amqpclient import Client, Net
from tests.router.routerproc import Router

CONNECTION = "org.apache.qpid.dispatch.connection"


class PropertiesClient(Client):
    """tests/router's Client, whose open carries connection properties."""

    def __init__(self, net: Net, url: str, properties: dict) -> None:
        super().__init__(net, url, properties=properties)


def connect_with(net: Net, url: str, properties: dict) -> Client:
    client = PropertiesClient(net, url, properties)
    net.clients.append(client)
    net.wait(lambda: client.opened, 10, "the connection with properties to open")
    return client


def identities(mgmt: MgmtClient) -> set:
    return {r["identity"] for r in mgmt.query(CONNECTION)}


def new_row(mgmt: MgmtClient, before: set) -> dict:
    """The row of the one connection opened since ``before`` (the clients share a container id)."""
    rows = [r for r in mgmt.query(CONNECTION) if r["identity"] not in before]
    assert len(rows) == 1, rows
    return rows[0]


def test_connection_shows_the_peers_open_properties(mgmt: MgmtClient, router: Router, net: Net) -> None:
    before = identities(mgmt)
    connect_with(net, router.url, {symbol("app"): "orders", symbol("instance"): 7})
    row = new_row(mgmt, before)
    assert row["properties"] == {"app": "orders", "instance": 7}


def test_admin_status_deleted_closes_a_client_connection(mgmt: MgmtClient, router: Router, net: Net) -> None:
    before = identities(mgmt)
    victim = net.connect(router.url)
    identity = new_row(mgmt, before)["identity"]
    reply = mgmt.request("UPDATE", type=CONNECTION, identity=identity, body={"adminStatus": "deleted"})
    assert reply.status == 200, reply
    assert reply.body["identity"] == identity and reply.body["adminStatus"] == "deleted"
    net.wait(lambda: victim.remote_closed or victim.transport_closed, 10, "the connection to close")
    net.wait(lambda: identity not in [r["identity"] for r in mgmt.query(CONNECTION)], 10, "its row to go")


def test_admin_status_update_that_is_not_enabled_or_deleted_is_refused(mgmt: MgmtClient, router: Router,
                                                                       net: Net) -> None:
    before = identities(mgmt)
    other = net.connect(router.url)
    identity = new_row(mgmt, before)["identity"]
    paused = mgmt.request("UPDATE", type=CONNECTION, identity=identity, body={"adminStatus": "paused"})
    assert paused.status == 400, paused
    missing = mgmt.request("UPDATE", type=CONNECTION, identity="no-such", body={"adminStatus": "deleted"})
    assert missing.status == 400, missing
    assert other.alive
