"""SASL with Cyrus: ANONYMOUS, PLAIN, SCRAM-SHA-1/256 against users in a sasldb
(saslConfigDir/saslConfigName), authenticatePeer, saslMechanisms, connector credentials."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from qdrouter.tools.management_client import ManagementClient
from tests.policy.harness import PolicyRouter, login, make_sasl_config, refusal, users
from tests.router.amqpclient import Net

ALL = "ANONYMOUS PLAIN SCRAM-SHA-1 SCRAM-SHA-256"


def connection_rows(url: str) -> list:
    with ManagementClient(url) as client:
        return [dict(row) for row in client.query("connection")]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-1", "SCRAM-SHA-256"])
def test_users_in_the_sasldb_log_in(policy_router: PolicyRouter, net: Net, mechanism: str) -> None:
    router = policy_router("", users=users("alice"),
                           extra_listeners={"admin": {"saslMechanisms": "ANONYMOUS"}})
    client = login(net, router.url, "alice", mechanism=mechanism)
    assert client.alive
    rows = [row for row in connection_rows(router.urls["admin"]) if row["user"] == "alice"]
    assert len(rows) == 1
    assert rows[0]["sasl"] == mechanism and rows[0]["isAuthenticated"] is True
    assert "Authentication failed" in refusal(net, router.url, "alice", password="wrong", mechanism=mechanism)
    assert "Authentication failed" in refusal(net, router.url, "mallory", mechanism=mechanism)


def test_anonymous_unless_authenticate_peer(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router("", users=users("alice"), listener={"authenticatePeer": "true"},
                           extra_listeners={"open": {"saslMechanisms": ALL}})
    assert "Authentication failed" in refusal(net, router.url, None)
    login(net, router.url, "alice")
    anonymous = login(net, router.urls["open"], None)
    assert anonymous.alive


def test_sasl_mechanisms_limit_what_is_offered(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router("", users=users("alice"), listener={"saslMechanisms": "SCRAM-SHA-256"})
    login(net, router.url, "alice", mechanism="SCRAM-SHA-256")
    assert "Authentication failed" in refusal(net, router.url, "alice", mechanism="PLAIN")
    assert "Authentication failed" in refusal(net, router.url, None)


def test_connector_authenticates_with_sasl_username_and_password(policy_router: PolicyRouter,
                                                                tmp_path: Path) -> None:
    server = policy_router("", users=users("broker-link"), listener={"authenticatePeer": "true",
                                                                      "role": "route-container"},
                           extra_listeners={"admin": {"saslMechanisms": "ANONYMOUS"}})
    good = (f"connector {{\n    name: good\n    host: 127.0.0.1\n    port: {server.port}\n"
            f"    role: route-container\n    saslMechanisms: SCRAM-SHA-256\n    saslUsername: broker-link\n"
            f"    saslPassword: pw-broker-link\n}}\n")
    bad = good.replace("name: good", "name: bad").replace("pw-broker-link", "nope")
    secret = tmp_path / "link-password"
    secret.write_text("pw-broker-link\n")
    from_file = good.replace("name: good", "name: from-file").replace("pw-broker-link", f"file:{secret}")
    client = policy_router(good + bad + from_file)
    deadline = time.monotonic() + 15
    status: dict = {}
    while time.monotonic() < deadline:
        with ManagementClient(client.url) as admin:
            status = {row["name"]: row["connectionStatus"] for row in admin.query("connector")}
        if status == {"good": "Operational", "bad": "Failed", "from-file": "Operational"}:
            break
        time.sleep(0.3)
    assert status == {"good": "Operational", "bad": "Failed", "from-file": "Operational"}
    rows = connection_rows(server.urls["admin"])
    users_seen = [row["user"] for row in rows if row["role"] == "route-container"]
    assert users_seen == ["broker-link", "broker-link"]


def test_sasl_config_name_picks_the_cyrus_config_file(policy_router: PolicyRouter, net: Net,
                                                      tmp_path: Path) -> None:
    # Only 'custom.conf' points at the sasldb holding alice: her login proves the router told
    # Cyrus saslConfigDir and saslConfigName (the default name, qdrouterd, has no file here).
    sasl_dir = make_sasl_config(tmp_path / "sasl", users("alice"), name="custom")
    router = policy_router("", listener={"saslMechanisms": "PLAIN SCRAM-SHA-256"},
                           router_extra=f"    saslConfigDir: {sasl_dir}\n    saslConfigName: custom\n")
    assert login(net, router.url, "alice", mechanism="SCRAM-SHA-256").alive
    assert "Authentication failed" in refusal(net, router.url, "alice", password="wrong", mechanism="PLAIN")
