"""Property: whatever a management CREATE or UPDATE holds, the router answers 2xx or a 4xx with
a description, and a refused request changes nothing.

Hypothesis generates requests for every entity type that takes CREATE or UPDATE (from the
schema, so a new type is covered by itself): attributes of the schema with values of their
type, in and out of range, of other types, and the hostile ones clients have sent (a host no
resolver can encode, 200 KB of text, NUL, maps where text belongs). They go over AMQP to one
real router. After each request:

- no 5xx, and a 4xx names what was wrong (its description is not just the status's name);
- refused: the entities of that type are exactly what they were (nothing half-created);
- created: READ finds it, and DELETE takes it away again, leaving the type as it was;
- updated: updating back restores the type as it was.

The run is derandomized (the same examples every time) and kept to EXAMPLES requests, so it
cannot flake and stays well under a minute.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from qdrouter.schema import ENTITY_TYPES, AttributeDef, EntityTypeDef, entity_type
from tests.management.mgmt import MgmtClient, Reply, assert_routing
from tests.router.amqpclient import Net
from tests.router.fixtures import stop_checked
from tests.router.routerproc import Router

pytestmark = pytest.mark.qdmesh_only(
    "the property holds qdmesh to its own rule (every refusal a 4xx naming the field, nothing "
    "half-created); qdrouterd 1.19 answers many of these requests 500 or creates then fails")

EXAMPLES = 150

# A vhost to UPDATE, and the policy entity it needs.
CONFIG = """
vhost {
    hostname: tenant.example
    maxConnections: 10
    groups: {
        $default: {
            remoteHosts: *
            sources: *
            targets: *
        }
    }
}
"""

TYPES: List[EntityTypeDef] = [t for t in ENTITY_TYPES.values()
                              if "CREATE" in t.operations or "UPDATE" in t.operations]
# Drawn from with these twice as often: the types hostile clients have broken before.
OFTEN = ("listener", "connector", "router.config.address", "router.config.autoLink", "vhost")
WEIGHTED = TYPES + [t for t in TYPES if t.short_name in OFTEN]

# What each type needs to be creatable at all; the generated attributes go on top.
BASES: Dict[str, Dict[str, Any]] = {
    "listener": {"host": "127.0.0.1", "port": "0", "saslMechanisms": "ANONYMOUS"},
    "connector": {"host": "127.0.0.1", "port": "1"},
    "router.config.address": {"prefix": "prop"},
    "router.config.linkRoute": {"prefix": "prop", "direction": "in", "connection": "broker"},
    "router.config.autoLink": {"address": "prop", "direction": "in", "connection": "broker"},
    "router.config.exchange": {"address": "prop"},
    "router.config.binding": {"exchangeName": "x", "nextHopAddress": "prop"},
    "vhost": {"hostname": "prop.example"},
    "router.connection.linkRoute": {"pattern": "prop", "direction": "in"},
}

# Which existing entity an UPDATE of the type goes to.
UPDATE_TARGETS: Dict[str, Dict[str, str]] = {
    "log": {"name": "log/AGENT"},
    "vhost": {"name": "vhost/tenant.example"},
    "router.link": {"identity": "999999"},
}

# Run-time state, not configuration: it may change between two QUERYs of an unchanged entity.
VOLATILE = {"connectionStatus", "connectionMsg", "failoverUrls", "operStatus", "linkRef",
            "lastError", "bindingCount", "receivedCount", "droppedCount", "forwardedCount",
            "divertedCount", "matchedCount"}

HOSTILE_TEXT = ["", "a..b", "x" * 64 + ".example", "h" * 200_000, "a\x00b", "\u00e9\u2603",
                "-1", "99999999999999999999", "${HOME}", "../../etc/passwd", " padded "]

hostile = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2 ** 63), max_value=2 ** 63 - 1),
    st.sampled_from([0, 1, -1, 9, 10, 99, -5, 511, 512, 32767, 32768, 65535, 2 ** 31, 2 ** 32]),
    st.sampled_from(HOSTILE_TEXT),
    st.text(max_size=12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.lists(st.integers(min_value=0, max_value=9), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(min_value=0, max_value=9), max_size=2),
)

# Stands for the router's own listening port: a listener there cannot listen.
IN_USE = "<the router's port>"

# Paths are never ones the router could write or that exist: an UPDATE of a log's outputFile
# must not leave files around the machine.
UNUSABLE_PATHS = ["/nonexistent-dir/x.pem", "/nonexistent-dir/x.log", "", "a\x00b"]


def _good_value(etype: EntityTypeDef, attr: AttributeDef) -> st.SearchStrategy[Any]:
    if attr.choices:
        return st.sampled_from(attr.choices)
    if attr.type == "boolean":
        return st.booleans()
    if attr.type == "integer":
        low = attr.minimum if attr.minimum is not None else -3
        high = attr.maximum if attr.maximum is not None else 100_000
        return st.integers(min_value=low - 2, max_value=min(high, low + 100_000) + 2)
    if attr.type == "path" or attr.name in ("outputFile", "uidNameMappingFile"):
        return st.sampled_from(UNUSABLE_PATHS)
    if attr.name == "host":
        return st.sampled_from(["127.0.0.1", "localhost", "::1", "", "a..b", "h" * 300])
    if attr.name == "port":
        return st.sampled_from(["0", IN_USE, "70000", "amqpx", "-3", "05672"])
    if attr.name == "enable":
        return st.sampled_from(["info+", "notice+", "warning", "none", "bogus", "info+,nonsense"])
    if attr.type in ("map", "properties"):
        return st.dictionaries(st.sampled_from(["$default", "g", "users", "remoteHosts"]),
                               st.one_of(st.text(max_size=5), st.dictionaries(
                                   st.sampled_from(["users", "maxSessions", "sources", "x"]),
                                   st.one_of(st.text(max_size=5), st.integers(-2, 70000)),
                                   max_size=3)), max_size=3)
    return st.text(alphabet=st.characters(codec="utf-8"), max_size=16)


def _attribute_names(etype: EntityTypeDef) -> List[str]:
    names = [a.name for a in etype.attributes.values() if a.name not in ("name", "type")]
    return [*names, "identity", "colour", "max-frame-size"]


@st.composite
def requests(draw: st.DrawFn) -> Tuple[str, EntityTypeDef, Dict[str, Any], Dict[str, Any]]:
    etype = draw(st.sampled_from(WEIGHTED))
    operations = [op for op in ("CREATE", "UPDATE") if op in etype.operations]
    operation = draw(st.sampled_from(operations))
    keys = draw(st.lists(st.sampled_from(_attribute_names(etype)), unique=True, max_size=5))
    body: Dict[str, Any] = dict(BASES.get(etype.short_name, {})) if operation == "CREATE" else {}
    for key in keys:
        attr = etype.attributes.get(key)
        good = _good_value(etype, attr) if attr is not None else st.text(max_size=5)
        body[key] = draw(st.one_of(good, good, hostile))
    if operation == "CREATE":
        where = {"name": draw(st.sampled_from(["p1", "p2", "p\x00", "p" * 300]))}
    else:
        where = dict(UPDATE_TARGETS.get(etype.short_name, {"name": "nothing"}))
    return operation, etype, where, body


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tuple[Router, Net, MgmtClient]]:
    workdir: Path = tmp_path_factory.mktemp("properties")
    router = Router(workdir, extra_config=CONFIG).start()
    net = Net()
    try:
        yield router, net, MgmtClient(net, net.connect(router.url))
    finally:
        net.close()
        stop_checked([router])


def _state(mgmt: MgmtClient, etype: EntityTypeDef) -> List[Dict[str, Any]]:
    rows = mgmt.query(etype.long_name, [], timeout=20) if etype.short_name != "router.link" else \
        mgmt.query(etype.long_name, ["identity", "adminStatus"], timeout=20)
    return sorted(({k: v for k, v in row.items() if k not in VOLATILE} for row in rows),
                  key=lambda row: str(row.get("identity")))


def _send(mgmt: MgmtClient, operation: str, etype: EntityTypeDef, where: Dict[str, Any],
          body: Any) -> Reply:
    return mgmt.request(operation, type=etype.long_name, body=body, timeout=20, **where)


def _restore(mgmt: MgmtClient, operation: str, etype: EntityTypeDef, where: Dict[str, Any],
             before: List[Dict[str, Any]], reply: Reply) -> None:
    """Undo an accepted request, so that every example starts from the same router."""
    if operation == "CREATE":
        identity = reply.body["identity"]
        read = mgmt.request("READ", type=etype.long_name, identity=identity, timeout=20)
        assert read.status == 200 and read.body["name"] == reply.body["name"], read
        if "DELETE" in etype.operations:
            gone = mgmt.request("DELETE", type=etype.long_name, identity=identity, timeout=20)
            assert gone.status == 204, gone
        return
    old = next(row for row in before if row.get("name") == where.get("name"))
    back = {a.name: old[a.name] for a in etype.attributes.values()
            if a.update and old.get(a.name) is not None}
    restored = _send(mgmt, "UPDATE", etype, where, back)
    assert restored.status == 200, restored


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(request=requests())
# Refusals that come only when the entity is applied, after every check of its values passed:
@example(request=("CREATE", entity_type("listener"), {"name": "p1"},
                  {**BASES["listener"], "port": IN_USE}))
@example(request=("CREATE", entity_type("listener"), {"name": "p1"},
                  {**BASES["listener"], "role": "inter-router"}))
@example(request=("CREATE", entity_type("connector"), {"name": "p1"},
                  {**BASES["connector"], "sslProfile": "missing"}))
@example(request=("UPDATE", entity_type("log"), UPDATE_TARGETS["log"],
                  {"enable": "info+", "outputFile": "/nonexistent-dir/x.log"}))
def test_any_create_or_update_is_answered_and_a_refusal_changes_nothing(
        setup: Tuple[Router, Net, MgmtClient],
        request: Tuple[str, EntityTypeDef, Dict[str, Any], Dict[str, Any]]) -> None:
    router, _, mgmt = setup
    operation, etype, where, body = request
    body = {key: str(router.port) if value == IN_USE else value for key, value in body.items()}
    before = _state(mgmt, etype)
    reply = _send(mgmt, operation, etype, where, body)
    event(f"{operation} {etype.short_name} -> {reply.status}")
    assert reply.status < 500, f"{operation} {etype.short_name} {where} {body!r:.300}: {reply!r:.600}"
    assert router.is_running()
    if reply.status >= 300:
        assert reply.description and reply.description[:3] != str(reply.status), reply
        assert len(reply.description) < 2000, "the description echoes the whole request"
        assert _state(mgmt, etype) == before, \
            f"{operation} {etype.short_name} {body!r:.300} -> {reply!r:.300}"
        return
    _restore(mgmt, operation, etype, where, before, reply)
    after = _state(mgmt, etype)
    if operation == "UPDATE":
        # An attribute that was unset cannot be unset again by UPDATE: it keeps the value given.
        target = where.get("name")
        unset = {key for row in before if row.get("name") == target
                 for key, value in row.items() if value is None}
        after = [{k: (None if row.get("name") == target and k in unset and k in body else v)
                  for k, v in row.items()} for row in after]
    assert after == before, f"{operation} {etype.short_name} {body!r:.300} -> {reply!r:.300}"


def test_the_router_still_routes_after_the_properties(setup: Tuple[Router, Net, MgmtClient]) -> None:
    router, net, _ = setup
    assert_routing(net, router.url)
