"""The management node's own operations answered in the C router's form: GET-SCHEMA (its keys,
each entity type's fields and each attribute's flags), GET-TYPES, GET-ATTRIBUTES and
GET-OPERATIONS asked of qdrouterd 1.19 and of qdmesh with the same config, compared entry by
entry. What differs on purpose is listed here and in docs/tools.md."""

from __future__ import annotations

from typing import Any, Dict, Tuple

import pytest

from tests.interop.cpeer import CRouter, require_c_router, stop_all
from tests.management.bulk import RawManagement, status
from tests.router.amqpclient import Net
from tests.router.routerproc import Router

PREFIX = "org.apache.qpid.dispatch."
# qdrouterd's own: its deprecated console proxy section, and a type for its unit tests.
ONLY_IN_C = {"console", "dummy"}
# The standard AMQP management type: qdrouterd adds its prefix to the name, qdmesh keeps the
# standard's (docs/tools.md).
AMQP_MANAGEMENT = {"c": PREFIX + "org.amqp.management", "q": "org.amqp.management"}
# qdmesh's additions (docs/tools.md): counters and settings qdrouterd has not.
ONLY_IN_QDMESH = {("router", "internalErrorCount"), ("listener", "metricsMaxAddresses"),
                  ("router.link", "connectionId"), ("vhostStats", "userIdDenied"),
                  ("vhostStats", "targetDenied"), ("connection", "outputBlocked"),
                  ("connection", "outputQueuedBytes"), ("connection", "outputBlockedCount"),
                  ("connection", "inputHeld"), ("connection", "inputHeldCount"),
                  ("router", "outputBlockedCount"), ("router", "outputBlockedConnectionCount"),
                  ("router", "inputHeldConnectionCount"), ("router", "draining"),
                  ("router", "canaryIntervalSeconds"),
                  ("router.node", "roundTripSeconds"), ("router.node", "roundTripAverageSeconds"),
                  ("router.node", "probeFailures"),
                  # Live TLS (docs/security.md): the sslProfile's revision and the certificate loaded.
                  ("sslProfile", "ordinal"), ("sslProfile", "oldestValidOrdinal"),
                  ("sslProfile", "certificateSha256"), ("sslProfile", "certificateNotAfter"),
                  ("sslProfile", "caCertificateSha256"),
                  ("connection", "sslProfileOrdinal")}
# Operations qdmesh adds (docs/security.md, "Live TLS"): qdrouterd 1.19 refuses them.
OPERATIONS_ONLY_IN_QDMESH = {"sslProfile": ["UPDATE"]}


def _their_operations(short: str, operations: Any) -> list:
    """qdrouterd's operations of a type, with those qdmesh adds to it."""
    return sorted([*(operations or []), *OPERATIONS_ONLY_IN_QDMESH.get(short, [])])

Answers = Dict[str, Any]


def answers(net: Net, url: str) -> Answers:
    mgmt = RawManagement(net, net.connect(url))
    found: Answers = {}
    for operation in ("GET-SCHEMA", "GET-TYPES", "GET-ATTRIBUTES", "GET-OPERATIONS"):
        reply = mgmt.request({"operation": operation, "type": "org.amqp.management", "name": "self"}, None)
        assert status(reply) == 200, (operation, reply)
        found[operation] = reply.body
    return found


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> Tuple[Answers, Answers]:
    # Module-scoped processes: the function-scoped factories cannot serve a module fixture.
    net = Net()
    c_router = CRouter(require_c_router(), tmp_path_factory.mktemp("c"), "C", mode="standalone").start()
    ours = Router(tmp_path_factory.mktemp("q")).start()
    try:
        return answers(net, c_router.url), answers(net, ours.url)
    finally:
        stop_all([c_router])
        ours.stop(check=True)


def _without_amqp_management(mapping: Dict[str, Any], side: str) -> Dict[str, Any]:
    return {key: value for key, value in mapping.items() if key != AMQP_MANAGEMENT[side]}


@pytest.mark.parametrize("operation", ["GET-TYPES", "GET-ATTRIBUTES", "GET-OPERATIONS"])
def test_the_same_types_with_the_same_operations_and_attributes(both: Tuple[Answers, Answers],
                                                               operation: str) -> None:
    theirs, ours = (_without_amqp_management(side[operation], key) for side, key in zip(both, "cq"))
    assert set(theirs) - set(ours) == {PREFIX + name for name in ONLY_IN_C}
    assert set(ours) <= set(theirs)
    for entity_type, value in ours.items():
        if operation == "GET-TYPES":
            expected = [AMQP_MANAGEMENT["q"] if name == AMQP_MANAGEMENT["c"] else name
                        for name in theirs[entity_type]]
            assert value == expected, entity_type
        elif operation == "GET-OPERATIONS":
            assert sorted(value) == _their_operations(entity_type[len(PREFIX):], theirs[entity_type]), \
                entity_type
        else:
            short = entity_type[len(PREFIX):]
            extra = {name for name in set(value) - set(theirs[entity_type])
                     if (short, name) in ONLY_IN_QDMESH}
            assert set(value) - extra == set(theirs[entity_type]), entity_type


def test_get_schema_has_the_c_routers_form(both: Tuple[Answers, Answers]) -> None:
    theirs, ours = (side["GET-SCHEMA"] for side in both)
    assert ours["prefix"] == theirs["prefix"] == "org.apache.qpid.dispatch"
    c_types, q_types = theirs["entityTypes"], ours["entityTypes"]
    assert set(c_types) - set(q_types) == ONLY_IN_C and set(q_types) <= set(c_types)
    differences = []
    for key, c_type in c_types.items():
        q_type = q_types.get(key)
        if q_type is None:
            continue
        if _their_operations(key, c_type.get("operations")) != sorted(q_type.get("operations", [])):
            differences.append((key, "operations", c_type.get("operations"), q_type.get("operations")))
        if bool(c_type.get("singleton", False)) != bool(q_type.get("singleton", False)):
            differences.append((key, "singleton", c_type.get("singleton"), q_type.get("singleton")))
        if set(c_type) != set(q_type):
            differences.append((key, "fields", sorted(c_type), sorted(q_type)))
        if key != "org.amqp.management":
            assert q_type["fullyQualifiedType"] == c_type["fullyQualifiedType"]
        for name, c_attr in c_type["attributes"].items():
            q_attr = q_type["attributes"].get(name)
            if q_attr is None:
                differences.append((key, name, "missing"))
                continue
            # Descriptions are qdmesh's own words; types, defaults and flags are qdrouterd's.
            c_flags = {k: v for k, v in c_attr.items() if k != "description"}
            q_flags = {k: v for k, v in q_attr.items() if k != "description"}
            if (key, name) == ("router", "area"):
                q_flags.pop("default", None)  # qdmesh reports the area it uses, "0"
            if c_flags != q_flags:
                differences.append((key, name, c_flags, q_flags))
        extra = set(q_type["attributes"]) - set(c_type["attributes"])
        assert {(key, name) for name in extra} <= ONLY_IN_QDMESH
    assert differences == []
