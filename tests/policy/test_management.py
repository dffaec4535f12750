"""Vhosts created, updated and deleted through management at run time (new connections see
each change at once, open ones keep their grant), policyDir files loaded at start, and the
vhostStats/policy entities."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qdrouter.tools.management_client import ManagementClient, ManagementError
from tests.policy.harness import PolicyRouter, login, refusal, users
from tests.policy.test_enforcement import ADMIN_VHOST
from tests.router.amqpclient import Net
from tests.router.routerproc import run_qdrouter

NEW_VHOST = {"hostname": "new.example", "maxConnectionsPerUser": 3,
             "groups": {"g": {"users": "u1", "remoteHosts": "*", "sources": "*", "targets": "*"}}}


def test_vhost_crud_applies_to_new_connections(policy_router: PolicyRouter, net: Net) -> None:
    router = policy_router("policy {\n    enableVhostPolicy: true\n}\n" + ADMIN_VHOST, users=users("u1"))
    assert "no vhost policy for 'new.example'" in refusal(net, router.url, "u1", "new.example")
    with ManagementClient(router.url) as admin:
        created = admin.create("vhost", NEW_VHOST, name="new.example")
        assert created["hostname"] == "new.example"
        first = login(net, router.url, "u1", "new.example")
        admin.update("vhost", {"maxConnectionsPerUser": 1}, name="new.example")
        assert "maxConnectionsPerUser (1)" in refusal(net, router.url, "u1", "new.example")
        assert first.alive  # granted before the update: keeps its connection
        row = next(r for r in admin.query("vhostStats") if r["hostname"] == "new.example")
        assert row["connectionsApproved"] == 1 and row["connectionsDenied"] == 1
        assert row["perUserState"] == {"u1": 1}
        admin.delete("vhost", name="new.example")
        assert "no vhost policy for 'new.example'" in refusal(net, router.url, "u1", "new.example")
        assert first.alive
        assert [v["hostname"] for v in admin.query("vhost")] == ["127.0.0.1"]


@pytest.mark.parametrize("attributes, message", [
    ({"hostname": "x", "groups": {"g": {"remoteHosts": "10.*"}}},
     "remoteHosts: '10.*': '*' must stand alone"),
    ({"hostname": "x", "groups": {"g": {"maxSenders": "lots"}}}, "maxSenders"),
    ({"hostname": "x", "groups": {"a": {"users": "u"}, "b": {"users": "u"}}}, "'u' is already in group 'a'"),
])
def test_bad_vhosts_are_refused_naming_the_field(policy_router: PolicyRouter, attributes: dict,
                                                  message: str) -> None:
    router = policy_router("policy {\n    enableVhostPolicy: true\n}\n" + ADMIN_VHOST)
    with ManagementClient(router.url) as admin:
        with pytest.raises(ManagementError) as raised:
            admin.create("vhost", attributes, name="x")
        assert message in str(raised.value)
        assert [v["hostname"] for v in admin.query("vhost")] == ["127.0.0.1"]
        with pytest.raises(ManagementError) as raised:
            admin.update("vhost", {"groups": {"g": {"remoteHosts": "1.2.3.*"}}}, name="127.0.0.1")
        assert "must stand alone" in str(raised.value)
        # The failed update left the vhost as it was: management still works.
        assert admin.query("vhost")[0]["groups"]["admins"]["users"] == "anonymous"


def test_policy_dir_json_files_are_loaded_at_start(policy_router: PolicyRouter, net: Net,
                                                   tmp_path: Path) -> None:
    policy_dir = tmp_path / "policies"
    policy_dir.mkdir()
    (policy_dir / "a.json").write_text(json.dumps([["vhost", {
        "id": "files.example", "allowUnknownUser": True,
        "groups": {"$default": {"remoteHosts": "*", "sources": "in.*", "targets": ["out.a", "out.b"]}}}]]))
    (policy_dir / "notes.txt").write_text("not a policy")
    router = policy_router(f"policy {{\n    enableVhostPolicy: true\n    policyDir: {policy_dir}\n}}\n"
                           + ADMIN_VHOST, users=users("u1"))
    client = login(net, router.url, "u1", "files.example")
    assert not client.sender("out.b").remote_closed
    refused = client.sender("out.c")
    net.wait(lambda: refused.remote_closed, what="the refusal")
    with ManagementClient(router.url) as admin:
        assert sorted(v["hostname"] for v in admin.query("vhost")) == ["127.0.0.1", "files.example"]


def test_bad_policy_dir_file_stops_start_up_naming_the_file(tmp_path: Path) -> None:
    policy_dir = tmp_path / "policies"
    policy_dir.mkdir()
    (policy_dir / "broken.json").write_text('[["vhost", {"id": "x", "maxConnections": "many"}]]')
    config = tmp_path / "r.conf"
    config.write_text(f"router {{\n    id: R\n}}\nlistener {{\n    port: 0\n}}\n"
                      f"policy {{\n    enableVhostPolicy: true\n    policyDir: {policy_dir}\n}}\n")
    result = run_qdrouter(["-c", str(config)])
    assert result.returncode != 0
    assert "maxConnections: expected an integer" in result.stderr
    assert "Traceback" not in result.stderr
