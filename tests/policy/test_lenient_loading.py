"""Policies qdrouterd loads with a warning load in qdmesh too: a vhost option written in a
user group (it limits nothing there) and a vhost whose hostname is empty."""

from __future__ import annotations

import json
from pathlib import Path

from qdrouter.tools.management_client import ManagementClient
from tests.policy.harness import PolicyRouter, login
from tests.router.amqpclient import Net

MISPLACED_OPTION = """
policy {
    enableVhostPolicy: true
    defaultVhost: $default
}
vhost {
    hostname: $default
    allowUnknownUser: true
    groups: {
        "$default": {
            "remoteHosts": "*",
            "sources": "*",
            "targets": "allowed.*",
            "maxConnections": 1
        }
    }
}
"""


def test_vhost_option_in_a_group_is_ignored_and_the_group_applies(policy_router: PolicyRouter,
                                                                  net: Net) -> None:
    router = policy_router(MISPLACED_OPTION)
    first = login(net, router.url, None, vhost="any.example")
    # maxConnections: 1 in the group limits nothing: a second connection is let in.
    second = login(net, router.url, None, vhost="any.example")
    allowed = second.sender("allowed.q")
    refused = first.sender("other.q")
    net.wait(lambda: refused.remote_closed, what="the refusal of a target the group does not allow")
    assert allowed.remote_opened and not allowed.remote_closed
    assert "unauthorized-access" in str(refused.remote_condition.name)


def test_vhost_with_empty_hostname_loads_and_catches_no_other_name(policy_router: PolicyRouter, net: Net,
                                                                   tmp_path: Path) -> None:
    policy_dir = tmp_path / "policies"
    policy_dir.mkdir()
    empty = {"hostname": "", "allowUnknownUser": True,
             "groups": {"$default": {"remoteHosts": "*", "sources": "*", "targets": "nothing.here"}}}
    default = {"hostname": "$default", "allowUnknownUser": True,
               "groups": {"$default": {"remoteHosts": "*", "sources": "*", "targets": "*",
                                           "allowDynamicSource": True}}}
    (policy_dir / "vhosts.json").write_text(json.dumps([["vhost", empty], ["vhost", default]]))
    router = policy_router(f"policy {{\n    enableVhostPolicy: true\n    policyDir: {policy_dir}\n"
                           "    defaultVhost: $default\n}\n")
    client = login(net, router.url, None, vhost="unknown.example")
    # An unknown vhost name gets the default vhost (which allows every target), not the '' one.
    sender = client.sender("some.target")
    net.wait(lambda: sender.remote_opened or sender.remote_closed, what="the sender's attach")
    assert sender.remote_opened and not sender.remote_closed
    with ManagementClient(router.url) as admin:
        assert sorted(v["hostname"] for v in admin.query("vhost")) == ["", "$default"]
