"""The allow/deny matrix of every policy rule, on the pure engine (no router, no proton)."""

from __future__ import annotations

from typing import Any, Dict

import pytest

from qdrouter.policy import ConnectionGrant, Denial, PolicyEngine, PolicyError, parse_vhost
from qdrouter.policy.engine import LIMIT, MESSAGE_SIZE, UNAUTHORIZED
from qdrouter.policy.settings import MAX_INT32

C_WORDS = ("connection disallowed by local policy", "session disallowed by local policy",
           "link disallowed by local policy", "Message size exceeded", "user_id proxy violation",
           "policy violation on target")


def engine_with(vhost: Dict[str, Any], **policy: Any) -> PolicyEngine:
    engine = PolicyEngine()
    engine.configure({"enableVhostPolicy": True, **policy})
    engine.set_vhost(parse_vhost(vhost))
    return engine


def group_vhost(**group: Any) -> Dict[str, Any]:
    settings = {"users": "u1, u2", "remoteHosts": "*", "sources": "*", "targets": "*"}
    settings.update(group)
    return {"hostname": "v", "groups": {"g": settings}}


def grant(engine: PolicyEngine, user: str = "u1", host: str = "127.0.0.1", vhost: str = "v"
          ) -> ConnectionGrant:
    decision = engine.open(vhost, user, host)
    assert isinstance(decision, ConnectionGrant), decision
    return decision


def denied(decision: object, condition: str, text: str) -> None:
    assert isinstance(decision, Denial), f"expected a denial, got {decision!r}"
    assert decision.condition == condition
    assert text in decision.description, decision.description
    # qdrouterd's words begin every refusal's description (clients match on them).
    assert decision.description.startswith(C_WORDS), decision.description


# ---- connections ------------------------------------------------------------------------
def test_global_limit_always_enforced_even_without_vhost_policy() -> None:
    engine = PolicyEngine()
    engine.configure({"maxConnections": 2})
    assert engine.socket_accepted() is None and engine.socket_accepted() is None
    denied(engine.socket_accepted(), LIMIT, "maxConnections (2)")
    engine.socket_closed()
    assert engine.socket_accepted() is None
    assert engine.totals.connections_denied == 1 and engine.totals.connections_current == 2
    # With vhost policy off, every open is allowed and carries no group limits.
    decision = engine.open("nowhere", "anyone", "10.0.0.1")
    assert isinstance(decision, ConnectionGrant) and decision.group is None


def test_vhost_by_name_alias_default_or_denied() -> None:
    engine = engine_with({"hostname": "a.com", "aliases": "b.com, c.com", "groups": {
        "g": {"users": "u", "remoteHosts": "*"}}})
    assert grant(engine, "u", vhost="a.com").vhost == "a.com"
    assert grant(engine, "u", vhost="c.com").vhost == "a.com"
    denied(engine.open("d.com", "u", "h"), LIMIT, "no vhost policy for 'd.com'")
    engine.set_vhost(parse_vhost({"hostname": "$default", "allowUnknownUser": True, "groups": {
        "$default": {"remoteHosts": "*"}}}))
    assert grant(engine, "u", vhost="d.com").vhost == "$default"
    engine.configure({"enableVhostPolicy": True, "defaultVhost": ""})
    denied(engine.open("d.com", "u", "h"), LIMIT, "no default vhost")


@pytest.mark.parametrize("allow_unknown, has_default_group, allowed", [
    (False, True, False), (True, True, True), (True, False, False), (False, False, False),
])
def test_unknown_users(allow_unknown: bool, has_default_group: bool, allowed: bool) -> None:
    groups: Dict[str, Any] = {"known": {"users": "u1", "remoteHosts": "*"}}
    if has_default_group:
        groups["$default"] = {"remoteHosts": "*", "maxSenders": 3}
    engine = engine_with({"hostname": "v", "allowUnknownUser": allow_unknown, "groups": groups})
    decision = engine.open("v", "stranger", "h")
    if allowed:
        assert isinstance(decision, ConnectionGrant) and decision.group is not None
        assert decision.group.name == "$default" and decision.group.max_senders == 3
    else:
        denied(decision, LIMIT, "denies user 'stranger'")
    assert grant(engine, "u1", vhost="v").group.name == "known"  # type: ignore[union-attr]


@pytest.mark.parametrize("hosts, remote, allowed", [
    ("*", "192.0.2.1", True), ("127.0.0.1", "127.0.0.1", True), ("127.0.0.1", "192.0.2.1", False),
    ("192.0.2.0-192.0.2.9", "192.0.2.5", True), ("", "127.0.0.1", False), ("::1", "::1", True),
])
def test_remote_hosts_at_open(hosts: str, remote: str, allowed: bool) -> None:
    engine = engine_with(group_vhost(remoteHosts=hosts))
    decision = engine.open("v", "u1", remote)
    if allowed:
        assert isinstance(decision, ConnectionGrant)
    else:
        denied(decision, LIMIT, f"remoteHosts does not allow '{remote}'")


@pytest.mark.parametrize("limits, opens, message", [
    ({"maxConnections": 2}, [("u1", "h1"), ("u2", "h2")], "maxConnections (2)"),
    ({"maxConnectionsPerUser": 2}, [("u1", "h1"), ("u1", "h2")],
     "maxConnectionsPerUser (2) reached for user 'u1'"),
    ({"maxConnectionsPerHost": 2}, [("u1", "h1"), ("u2", "h1")],
     "maxConnectionsPerHost (2) reached for host 'h1'"),
    ({"maxConnectionsPerRemoteHost": 2}, [("u1", "h1"), ("u2", "h1")],  # the book's name
     "maxConnectionsPerHost (2) reached for host 'h1'"),
])
def test_vhost_connection_limits(limits: Dict[str, int], opens: list, message: str) -> None:
    vhost = group_vhost(remoteHosts="*")
    vhost.update(limits)
    engine = engine_with(vhost)
    grants = [grant(engine, user, host) for user, host in opens]
    denied(engine.open("v", "u1", "h1"), LIMIT, message)
    stats = engine.stats["v"]
    assert stats.connections_denied == 1 and stats.connections_approved == 2 and stats.current == 2
    engine.closed(grants[0])
    assert isinstance(engine.open("v", "u1", "h1"), ConnectionGrant)


def test_group_overrides_per_user_and_per_host_limits() -> None:
    engine = engine_with({"hostname": "v", "maxConnectionsPerUser": 1, "groups": {
        "g": {"users": "u1", "remoteHosts": "*", "maxConnectionsPerUser": 3}}})
    for _ in range(3):
        grant(engine, "u1")
    denied(engine.open("v", "u1", "h"), LIMIT, "maxConnectionsPerUser (3)")


def test_stats_per_user_and_host() -> None:
    engine = engine_with(group_vhost())
    first = grant(engine, "u1", "h1")
    grant(engine, "u1", "h2")
    grant(engine, "u2", "h1")
    row = engine.stats["v"].row()
    assert row["perUserState"] == {"u1": 2, "u2": 1}
    assert row["perHostState"] == {"h1": 2, "h2": 1}
    assert row["connectionsCurrent"] == 3
    engine.closed(first)
    engine.closed(first)  # closing twice changes nothing
    assert engine.stats["v"].row()["perUserState"] == {"u1": 1, "u2": 1}


# ---- sessions, links --------------------------------------------------------------------
def test_max_sessions() -> None:
    engine = engine_with(group_vhost(maxSessions=2))
    g = grant(engine)
    assert engine.session(g, 0) is None and engine.session(g, 1) is None
    denied(engine.session(g, 2), LIMIT, "maxSessions (2)")
    assert engine.stats["v"].session_denied == 1


@pytest.mark.parametrize("group, senders_open, target, message", [
    ({}, 0, "q", None),
    ({"maxSenders": 1}, 1, "q", "maxSenders (1)"),
    ({"maxSenders": 1}, 1, "q", "maxSenders (1)"),
    ({"maxSenders": 0}, 1000, "q", None),  # 0: no limit, as in qdrouterd
    ({}, 0, None, "allowAnonymousSender is false"),
    ({"allowAnonymousSender": True}, 0, None, None),
    ({"targets": "a, b*"}, 0, "bcd", None),
    ({"targets": "a, b*"}, 0, "c", "targets do not allow 'c'"),
    ({"targets": ""}, 0, "a", "targets do not allow 'a'"),
    ({"targets": "$management"}, 0, "$management", None),
    ({"targets": "tmp_{user}"}, 0, "tmp_u1", None),
    ({"targets": "tmp_{user}"}, 0, "tmp_u2", "targets do not allow 'tmp_u2'"),
    ({"targets": None, "targetPattern": "a.*"}, 0, "a.b", None),
    ({"targets": None, "targetPattern": "a.*"}, 0, "a.b.c", "targets do not allow"),
])
def test_sender_matrix(group: Dict[str, Any], senders_open: int, target: str | None,
                       message: str | None) -> None:
    engine = engine_with(group_vhost(**group))
    decision = engine.sender(grant(engine), senders_open, target)
    if message is None:
        assert decision is None
    else:
        denied(decision, LIMIT if "max" in message else UNAUTHORIZED, message)
        assert engine.stats["v"].sender_denied == 1 and engine.totals.links_denied == 1


@pytest.mark.parametrize("group, receivers_open, source, dynamic, message", [
    ({}, 0, "q", False, None),
    ({"maxReceivers": 2}, 2, "q", False, "maxReceivers (2)"),
    ({}, 0, None, True, "allowDynamicSource is false"),
    ({"allowDynamicSource": True}, 0, None, True, None),
    ({"sources": "news*"}, 0, "news.today", False, None),
    ({"sources": "news*"}, 0, "sport", False, "sources do not allow 'sport'"),
    ({"sources": "{user}-home-*"}, 0, "u1-home-x", False, None),
    ({"sources": "{user}-home-*"}, 0, "u2-home-x", False, "sources do not allow"),
    ({}, 0, None, False, "needs a source address"),
])
def test_receiver_matrix(group: Dict[str, Any], receivers_open: int, source: str | None, dynamic: bool,
                         message: str | None) -> None:
    engine = engine_with(group_vhost(**group))
    decision = engine.receiver(grant(engine), receivers_open, source, dynamic)
    if message is None:
        assert decision is None
    else:
        denied(decision, LIMIT if "max" in message else UNAUTHORIZED, message)
        assert engine.stats["v"].receiver_denied == 1


# ---- messages ---------------------------------------------------------------------------
@pytest.mark.parametrize("policy_size, vhost_size, group_size, effective", [
    (0, None, None, 0), (100, None, None, 100), (100, 50, None, 50), (100, 50, 20, 20), (0, None, 30, 30),
])
def test_max_message_size_precedence(policy_size: int, vhost_size: int | None, group_size: int | None,
                                     effective: int) -> None:
    vhost = group_vhost(maxMessageSize=group_size)
    vhost["maxMessageSize"] = vhost_size
    engine = engine_with(vhost, maxMessageSize=policy_size)
    g = grant(engine)
    assert g.max_message_size == effective
    if effective:
        assert engine.message(g, effective, None) is None
        denied(engine.message(g, effective + 1, None), MESSAGE_SIZE, f"above maxMessageSize ({effective})")
        assert engine.stats["v"].max_message_size_denied == 1


@pytest.mark.parametrize("proxy, user_id, allowed", [
    (False, None, True), (False, b"u1", True), (False, b"u2", False), (True, b"u2", True),
])
def test_user_id_proxy(proxy: bool, user_id: bytes | None, allowed: bool) -> None:
    engine = engine_with(group_vhost(allowUserIdProxy=proxy))
    g = grant(engine)
    assert g.polices_messages is (not proxy)
    decision = engine.message(g, 10, user_id)
    if allowed:
        assert decision is None
    else:
        denied(decision, UNAUTHORIZED, "user_id 'u2' is not the authenticated user 'u1'")
    assert engine.stats["v"].row()["userIdDenied"] == (0 if allowed else 1)


def test_no_per_message_work_without_limits() -> None:
    engine = PolicyEngine()
    engine.configure({"enableVhostPolicy": False})
    decision = engine.open("v", "u", "h")
    assert isinstance(decision, ConnectionGrant) and not decision.polices_messages


# ---- definitions ------------------------------------------------------------------------
@pytest.mark.parametrize("vhost, message", [
    ({}, "attribute 'hostname' is required"),
    ({"hostname": "v", "maxConnections": -1}, "vhost 'v': maxConnections: -1 is out of range"),
    ({"hostname": "v", "maxConnections": "many"}, "maxConnections: expected an integer"),
    ({"hostname": "v", "allowUnknownUser": "perhaps"}, "allowUnknownUser: expected true or false"),
    ({"hostname": "v", "groups": []}, "groups: expected a map"),
    ({"hostname": "v", "groups": {"g": {"colour": "red"}}}, "group 'g': unknown attribute 'colour'"),
    ({"hostname": "v", "groups": {"g": {"maxSenders": "x"}}}, "group 'g': maxSenders: expected an integer"),
    ({"hostname": "v", "groups": {"g": {"remoteHosts": "1.2.3.*"}}}, "group 'g': remoteHosts"),
    ({"hostname": "v", "groups": {"a": {"users": "x"}, "b": {"users": "x"}}}, "'x' is already in group 'a'"),
    ({"hostname": "v", "groups": {"g": {"sources": "a", "sourcePattern": "b"}}}, "sources or sourcePattern"),
    ({"hostname": "v", "bogus": 1}, "unknown attribute 'bogus'"),
])
def test_bad_definitions_name_the_field(vhost: Dict[str, Any], message: str) -> None:
    with pytest.raises(PolicyError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_vhost(vhost)


def test_update_applies_to_new_connections_only() -> None:
    engine = engine_with(group_vhost(maxSenders=5))
    old = grant(engine)
    engine.set_vhost(parse_vhost(group_vhost(maxSenders=1)))
    new = grant(engine)
    assert engine.sender(old, 3, "q") is None
    denied(engine.sender(new, 1, "q"), LIMIT, "maxSenders (1)")
    # The old connection's count is still kept under the same vhost.
    assert engine.stats["v"].current == 2
    engine.remove_vhost("v")
    denied(engine.open("v", "u1", "h"), LIMIT, "no vhost policy")
    engine.closed(old)
    engine.closed(new)
    assert "v" not in engine.stats


def test_alias_clash_is_refused() -> None:
    engine = engine_with({"hostname": "a", "aliases": "x"})
    with pytest.raises(PolicyError, match="aliases: 'x' already names vhost 'a'"):
        engine.set_vhost(parse_vhost({"hostname": "b", "aliases": "x"}))


@pytest.mark.parametrize("group, address, allowed", [
    ({"targets": "app.*"}, "app.x", True),
    ({"targets": "app.*"}, "secret.x", False),
    ({"targets": "app.*"}, "$management", False),
    ({"targets": "app.*"}, "_local/$management", False),
    ({"targets": "app.*"}, "_topo/0/R/$management", False),
    ({"targets": "app.*"}, "amqp:/app.x", False),  # as written: qdrouterd compares it so
    ({"targets": "app.*"}, "", False),
    ({"targets": "*"}, "", False),
    ({"targets": "*"}, "anything", True),
    ({"targets": "mine.${user}"}, "mine.u1", True),
    ({"targets": "mine.${user}"}, "mine.u2", False),
    ({"targets": None, "targetPattern": "app.#"}, "app.a.b", True),
    ({"targets": None, "targetPattern": "app.#"}, "_topo/0/R/app.x", False),
])
def test_message_targets_on_anonymous_links(group: Dict[str, Any], address: str, allowed: bool) -> None:
    engine = engine_with(group_vhost(**group))
    decision = engine.message_target(grant(engine), address)
    if allowed:
        assert decision is None
    else:
        denied(decision, UNAUTHORIZED, "policy violation on target")
    assert engine.stats["v"].row()["targetDenied"] == (0 if allowed else 1)
    assert engine.totals.total_denials == 0  # as qdrouterd's: a vhost counter only


def test_message_targets_are_not_checked_without_vhost_policy() -> None:
    engine = PolicyEngine()
    engine.configure({"enableVhostPolicy": False})
    decision = engine.open("v", "u", "h")
    assert isinstance(decision, ConnectionGrant)
    assert engine.message_target(decision, "$management") is None


@pytest.mark.parametrize("setting, capability", [
    ("allowWaypointLinks", "qd.waypoint"), ("allowWaypointLinks", "qd.waypoint.2"),
    ("allowFallbackLinks", "qd.fallback"),
])
@pytest.mark.parametrize("allowed", [True, False])
def test_waypoint_and_fallback_capabilities(setting: str, capability: str, allowed: bool) -> None:
    engine = engine_with(group_vhost(**{setting: allowed}))
    g = grant(engine)
    decisions = [engine.sender(g, 0, "q", ["other", capability]),
                 engine.receiver(g, 0, "q", False, [capability])]
    for decision in decisions:
        if allowed:
            assert decision is None
        else:
            denied(decision, UNAUTHORIZED, f"{setting} is false")
    assert engine.sender(g, 0, "q", ["other"]) is None
    row = engine.stats["v"].row()
    assert (row["senderDenied"], row["receiverDenied"]) == ((0, 0) if allowed else (1, 1))


def test_a_blank_user_id_is_no_claim() -> None:
    engine = engine_with(group_vhost())
    assert engine.message(grant(engine), 10, b"") is None


def test_zero_limits_are_no_limits_as_in_qdrouterd() -> None:
    """policy.c applies maxSessions, maxSenders, maxReceivers, maxFrameSize and
    maxSessionWindow only when non-zero."""
    engine = engine_with(group_vhost(maxSessions=0, maxSenders=0, maxReceivers=0, maxFrameSize=0,
                                     maxSessionWindow=0))
    g = grant(engine)
    assert engine.session(g, 1000) is None
    assert engine.sender(g, 1000, "q") is None and engine.receiver(g, 1000, "q", False) is None
    assert engine.frame_size(g, 16384) == 16384
    assert g.group is not None and g.group.max_session_window == MAX_INT32
