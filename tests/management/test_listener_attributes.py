"""Listener and connector attributes a client notices: the properties of the router's open
(failoverUrls, openProperties), requireSsl without TLS, and the attributes qdmesh refuses at
load time (multiTenant, messageLoggingComponents, saslPlugin, ...) rather than accept and
ignore. docs/configuration.md, "Listener and connector attributes", has the whole table."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

import pytest
from proton import symbol

from tests.linkroute.lrutil import Peer
from tests.management.mgmt import LISTENER, MgmtClient
from tests.router.amqpclient import Net
from tests.router.routerproc import Router, RouterFactory, free_port, run_qdrouter

CONNECTOR = "org.apache.qpid.dispatch.connector"


def _remote_properties(router_factory: RouterFactory, net: Net, **attrs: str) -> Dict[str, Any]:
    router = router_factory(extra_listeners={"props": attrs})
    client = net.connect(router.urls["props"])
    return dict(client.conn.remote_properties or {})


def test_failover_urls_reach_the_client_as_the_failover_server_list(router_factory: RouterFactory,
                                                                    net: Net) -> None:
    properties = _remote_properties(router_factory, net,
                                    failoverUrls="amqp://backup.example:5673, other.example, amqps://third:1")
    assert properties["failover-server-list"] == [
        {"scheme": "amqp", "network-host": "backup.example", "port": "5673"},
        {"network-host": "other.example", "port": "5672"},
        {"scheme": "amqps", "network-host": "third", "port": "1"},
    ]


def test_open_properties_reach_the_client(router_factory: RouterFactory, net: Net) -> None:
    port = free_port()
    router_factory(extra_config=f"listener {{\n    host: 127.0.0.1\n    port: {port}\n"
                                f"    saslMechanisms: ANONYMOUS\n    openProperties: {{\n"
                                f"        site: north\n        zone: b\n    }}\n}}\n")
    client = net.connect(f"127.0.0.1:{port}")
    properties = dict(client.conn.remote_properties or {})
    assert (properties["site"], properties["zone"]) == ("north", "b")


def test_without_either_no_failover_list_is_sent(router_factory: RouterFactory, net: Net) -> None:
    assert "failover-server-list" not in _remote_properties(router_factory, net)


def test_require_ssl_without_tls_refuses_a_plain_connection(router_factory: RouterFactory,
                                                            net: Net) -> None:
    # As qdrouterd: requireSsl requires encryption, which a plain ANONYMOUS login lacks.
    router = router_factory(extra_listeners={"tls-only": {"requireSsl": "yes"}})
    assert net.connect(router.url).opened
    with pytest.raises(AssertionError):
        net.connect(router.urls["tls-only"])


@pytest.mark.parametrize("key", ["product", "qd.anything", "x-opt-qd.trace", "failover-server-list"])
def test_a_reserved_open_property_key_is_refused(mgmt: MgmtClient, key: str) -> None:
    reply = mgmt.request("CREATE", type=LISTENER, name="reserved",
                         body={"host": "127.0.0.1", "port": str(free_port()),
                               "openProperties": {key: "x"}})
    assert reply.status == 400, reply
    assert "openProperties" in reply.description and key in reply.description, reply
    assert "reserved" not in [row["name"] for row in mgmt.query("listener", ["name"])]


UNSUPPORTED = [
    ("listener", "multiTenant: yes", "multiTenant"),
    ("listener", "messageLoggingComponents: all", "messageLoggingComponents"),
    ("connector", "messageLoggingComponents: message,link", "messageLoggingComponents"),
]


@pytest.mark.qdmesh_only("qdmesh refuses at load what it does not do; qdrouterd 1.19 does these")
@pytest.mark.parametrize("section, line, attribute", UNSUPPORTED)
def test_an_unsupported_attribute_is_refused_at_load_time(tmp_path: Path, section: str, line: str,
                                                          attribute: str) -> None:
    where = "host: 127.0.0.1\n    port: 1" if section == "connector" else f"port: {free_port()}"
    conf = tmp_path / "router.conf"
    conf.write_text(f"router {{\n    mode: standalone\n    id: R1\n}}\n"
                    f"{section} {{\n    {where}\n    {line}\n}}\n")
    result = run_qdrouter(["-c", str(conf)], timeout=20)
    assert result.returncode != 0, result.stderr
    assert attribute in result.stderr and "not supported" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.qdmesh_only("qdmesh refuses at load what it does not do; qdrouterd 1.19 does these")
@pytest.mark.parametrize("kind, body", [
    (LISTENER, {"multiTenant": True}),
    (LISTENER, {"saslPlugin": "auth"}),
])
def test_an_unsupported_attribute_is_refused_by_management(mgmt: MgmtClient, kind: str,
                                                           body: Dict[str, Any]) -> None:
    reply = mgmt.request("CREATE", type=kind, name="unsupported",
                         body={"host": "127.0.0.1", "port": str(free_port()), **body})
    assert reply.status == 400, reply
    assert next(iter(body)) in reply.description and "not supported" in reply.description, reply


@pytest.mark.qdmesh_only("qdmesh's warning text; qdrouterd 1.19 logs its own for trustedCertsFile")
def test_attributes_both_routers_ignore_are_warned_about(router_factory: RouterFactory) -> None:
    router: Router = router_factory(extra_config="connector {\n    host: 127.0.0.1\n    port: 1\n"
                                                 "    allowRedirect: no\n}\n",
                                    extra_listeners={"ignored": {
        "trustedCertsFile": "/etc/ca.pem", "socketAddressFamily": "IPv6", "httpRootDir": "/srv"}})
    text = router.stderr_text()
    assert "httpRootDir" in text and "serves no files" in text, text
    assert "allowRedirect" in text and "not followed" in text, text
    assert "trustedCertsFile" in text and "caCertFile" in text, text
    assert "socketAddressFamily" in text and "ignored" in text, text


class _AnnouncingPeer(Peer):
    """A container whose open names failover servers (as a broker cluster's does)."""

    def __init__(self, net: Net, servers: List[int]) -> None:
        super().__init__(net, container_id="primary")
        self.servers = servers

    def on_connection_init(self, event: Any) -> None:
        super().on_connection_init(event)
        event.connection.properties = {symbol("failover-server-list"): [
            {symbol("network-host"): "127.0.0.1", symbol("port"): str(port)} for port in self.servers]}


def test_a_connector_fails_over_to_the_servers_its_peer_names(router_factory: RouterFactory,
                                                               net: Net) -> None:
    backup = Peer(net, container_id="backup")
    primary = _AnnouncingPeer(net, [backup.port])
    try:
        router = router_factory(extra_config=f"connector {{\n    name: upstream\n    host: 127.0.0.1\n"
                                             f"    port: {primary.port}\n    role: route-container\n}}\n")
        net.wait(lambda: bool(primary.connections), 20, "the connector to reach the primary")
        mgmt = MgmtClient(net, net.connect(router.url))
        row = next(r for r in mgmt.query(CONNECTOR, ["name", "failoverUrls"]) if r["name"] == "upstream")
        assert f"127.0.0.1:{backup.port}" in str(row["failoverUrls"]), row
        primary.drop_connections()
        primary.close()
        net.wait(lambda: bool(backup.connections), 20, "the connector to fail over to the backup")
    finally:
        backup.close()
