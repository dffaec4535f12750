"""Vhosts created, updated and deleted through management at run time (new connections see
each change at once, open ones keep their grant), policyDir files loaded at start, and the
vhostStats/policy entities."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from qdrouter.tools.management_client import ManagementClient, ManagementError
from tests.policy.harness import PolicyRouter, login, refusal, users
from tests.policy.test_enforcement import ADMIN_VHOST
from tests.router.amqpclient import Net
from tests.router.routerproc import Router, router_env, run_qdrouter

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


@pytest.mark.differs_from_c("qdrouterd refuses these vhosts too, with 500 InternalError and its "
                            "PolicyError's words (and tries to resolve '10.*' as a host name); qdmesh "
                            "answers 400 naming the field")
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
            admin.update("vhost", {"groups": {"g": {"remoteHosts": "1.2.3.*"}}}, name="vhost/127.0.0.1")
        assert "must stand alone" in str(raised.value)
        # The failed update left the vhost as it was: management still works.
        assert admin.query("vhost")[0]["groups"]["admins"]["users"] == "anonymous"


def test_policy_dir_json_files_are_loaded_at_start(policy_router: PolicyRouter, net: Net,
                                                   tmp_path: Path) -> None:
    policy_dir = tmp_path / "policies"
    policy_dir.mkdir()
    # qdrouterd's own policy files open with '##' licence lines; indented '#' lines are comments too.
    vhost = json.dumps({"id": "files.example", "allowUnknownUser": True, "groups": {
        "$default": {"remoteHosts": "*", "sources": "in.*", "targets": ["out.a", "out.b"]}}})
    (policy_dir / "a.json").write_text(
        "##\n## Licensed to the Apache Software Foundation\n##\n"
        f"[\n    # the one vhost\n    [\"vhost\", {vhost}]\n]\n")
    (policy_dir / "notes.txt").write_text("not a policy")
    router = policy_router(f"policy {{\n    enableVhostPolicy: true\n    policyDir: {policy_dir}\n}}\n"
                           + ADMIN_VHOST, users=users("u1"))
    client = login(net, router.url, "u1", "files.example")
    assert not client.sender("out.b").remote_closed
    refused = client.sender("out.c")
    net.wait(lambda: refused.remote_closed, what="the refusal")
    with ManagementClient(router.url) as admin:
        assert sorted(v["hostname"] for v in admin.query("vhost")) == ["127.0.0.1", "files.example"]


@pytest.mark.differs_from_c("qdrouterd refuses the file too, but logs a Python traceback with 'invalid "
                            "literal for int()'; qdmesh names the file and the field in one message")
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


def qdmanage_as(router: Router, user: str, *args: str) -> subprocess.CompletedProcess:
    """The real qdmanage command, logging in as ``user`` with PLAIN (its URL names vhost 127.0.0.1)."""
    return subprocess.run([sys.executable, "-m", "qdrouter.tools.qdmanage", "-b", f"127.0.0.1:{router.port}",
                           "--sasl-mechanisms", "PLAIN", "--sasl-username", user, "--sasl-password",
                           f"pw-{user}", *args], capture_output=True, text=True, timeout=30,
                          env=router_env(), stdin=subprocess.DEVNULL)


def test_management_is_restricted_by_policy(policy_router: PolicyRouter) -> None:
    """$management is a target like any other: qdmanage works for the group whose targets allow
    it and is refused, with the rule named, for the group whose targets do not."""
    body = """
policy {
    enableVhostPolicy: true
}
vhost {
    hostname: 127.0.0.1
    groups: {
        ops: {
            users: ops-1
            remoteHosts: *
            sources: *
            targets: $management, app.*
            allowDynamicSource: true
        },
        apps: {
            users: app-1
            remoteHosts: *
            sources: *
            targets: app.*
            allowDynamicSource: true
        }
    }
}
"""
    router = policy_router(body, users=users("ops-1", "app-1"))
    allowed = qdmanage_as(router, "ops-1", "query", "--type=vhost")
    assert allowed.returncode == 0, allowed.stderr
    assert [row["hostname"] for row in json.loads(allowed.stdout)] == ["127.0.0.1"]
    refused = qdmanage_as(router, "app-1", "query", "--type=vhost")
    assert refused.returncode != 0
    assert "targets do not allow '$management'" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    # The refusal is counted as a denied sender of the vhost (seen by the allowed operator).
    stats = qdmanage_as(router, "ops-1", "query", "--type=vhostStats")
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)[0]["senderDenied"] == 1
