"""ManagementClient's requests and reply handling, against a scripted agent over a real socket."""

from __future__ import annotations

import time
from typing import Any, Callable, List

import pytest
from proton import Message

from qdrouter.tools import (
    BadReply,
    BadRequest,
    ManagementClient,
    ManagementConnectionError,
    ManagementError,
    ManagementTimeout,
    NotFound,
)
from qdrouter.tools.errors import StatusError, status_error

from .conftest import free_port
from .fake_agent import REJECT, FakeAgent, reply

Make = Callable[..., FakeAgent]
LISTENER = "org.apache.qpid.dispatch.listener"


def ok(body: Any, status: int = 200) -> Callable[[Message], Message]:
    return lambda request: reply(status, "OK", body)


def test_query_request_and_rows(fake_agent: Make) -> None:
    agent = fake_agent(ok({"attributeNames": ["name", "port"], "results": [["a", "1"], ["b", "2"]]}))
    with ManagementClient(agent.url) as client:
        assert client.query("listener", ["name", "port"], count=5, offset=1) == [
            {"name": "a", "port": "1"}, {"name": "b", "port": "2"}]
    request = agent.requests[0]
    assert request.properties == {"operation": "QUERY", "type": "org.amqp.management", "name": "self",
                                  "entityType": LISTENER, "count": 5, "offset": 1}
    assert request.body == {"attributeNames": ["name", "port"]}
    assert request.reply_to and request.correlation_id


def test_query_raw_and_all_types(fake_agent: Make) -> None:
    agent = fake_agent(ok({"attributeNames": ["name"], "results": [["a"]]}))
    with ManagementClient(agent.url) as client:
        assert client.query_raw() == (["name"], [["a"]])
    assert "entityType" not in agent.requests[0].properties
    assert agent.requests[0].body == {"attributeNames": []}


def test_entity_operations(fake_agent: Make) -> None:
    bodies = {"CREATE": (201, {"name": "l1", "port": "5"}), "READ": (200, {"name": "l1"}),
              "UPDATE": (200, {"name": "l1", "cost": 2}), "DELETE": (204, None)}
    agent = fake_agent(lambda m: reply(bodies[m.properties["operation"]][0], "",
                                       bodies[m.properties["operation"]][1]))
    with ManagementClient(agent.url) as client:
        assert client.create("listener", {"port": "5", "type": "listener"}, name="l1") == {
            "name": "l1", "port": "5"}
        assert client.read("listener", name="l1") == {"name": "l1"}
        assert client.update("listener", {"cost": 2}, identity="listener/1") == {"name": "l1", "cost": 2}
        assert client.delete(identity="listener/1") is None
    create, read, update, delete = agent.requests
    assert create.properties == {"operation": "CREATE", "type": LISTENER, "name": "l1"}
    assert create.body == {"port": "5", "name": "l1"}  # type travels only as a property
    assert read.properties == {"operation": "READ", "type": LISTENER, "name": "l1"}
    assert update.properties == {"operation": "UPDATE", "type": LISTENER, "identity": "listener/1"}
    assert update.body == {"cost": 2}
    assert delete.properties == {"operation": "DELETE", "identity": "listener/1"}


def test_read_needs_name_or_identity() -> None:
    with pytest.raises(ValueError):
        ManagementClient("127.0.0.1:1").read("listener")


def test_node_operations(fake_agent: Make) -> None:
    answers = {"GET-TYPES": {"t": []}, "GET-ATTRIBUTES": {"t": ["a"]}, "GET-OPERATIONS": {"t": ["READ"]},
               "GET-ANNOTATIONS": {"t": []}, "GET-MGMT-NODES": ["amqp:/_topo/0/R2/$management"],
               "GET-SCHEMA": {"prefix": "p"}, "GET-JSON-SCHEMA": '{"x": 1}', "GET-LOG": [["M", "info"]]}
    agent = fake_agent(lambda m: reply(200, "OK", answers[m.properties["operation"]]))
    with ManagementClient(agent.url) as client:
        assert client.get_types("listener") == {"t": []}
        assert client.get_attributes() == {"t": ["a"]}
        assert client.get_operations() == {"t": ["READ"]}
        assert client.get_annotations() == {"t": []}
        assert client.get_mgmt_nodes() == ["amqp:/_topo/0/R2/$management"]
        assert client.get_schema() == {"prefix": "p"}
        assert client.get_json_schema() == '{"x": 1}'
        assert client.get_log(limit=3) == [["M", "info"]]
    assert agent.requests[0].properties["entityType"] == LISTENER
    assert agent.requests[-1].properties["limit"] == 3
    assert all(r.properties["type"] == "org.amqp.management" and r.properties["name"] == "self"
               for r in agent.requests)


def test_router_option_addresses_a_remote_agent(fake_agent: Make) -> None:
    agent = fake_agent(ok([]))
    with ManagementClient(agent.url, router="R2") as client:
        assert client.address == "_topo/0/R2/$management"
        client.get_mgmt_nodes()


@pytest.mark.parametrize(("status", "cls", "text"), [
    (400, BadRequest, "BadRequest: bad"), (404, NotFound, "NotFound: bad"),
    (501, StatusError, "NotImplemented: bad"), (418, StatusError, "Status418: bad"),
])
def test_error_statuses(fake_agent: Make, status: int, cls: type, text: str) -> None:
    agent = fake_agent(lambda m: reply(status, "bad\nsecond line"))
    with ManagementClient(agent.url) as client, pytest.raises(cls) as info:
        client.read("listener", name="x")
    assert info.value.status_code == status
    assert str(info.value) == text + " second line"  # folded onto one line


def test_status_error_classes() -> None:
    assert isinstance(status_error(404, "x"), NotFound)
    assert isinstance(status_error(403, "x"), ManagementError)


@pytest.mark.parametrize(("answer", "message"), [
    (Message(body={}), "no statusCode"),
    (Message(properties={"statusCode": "abc"}), "non-integer statusCode"),
    (reply(200, "OK", {"results": []}), "not a map with attributeNames"),
    (reply(200, "OK", {"attributeNames": ["a"], "results": [["x", "y"]]}), "row does not match"),
])
def test_bad_replies(fake_agent: Make, answer: Message, message: str) -> None:
    agent = fake_agent(lambda m: answer)
    with ManagementClient(agent.url) as client, pytest.raises(BadReply, match=message):
        client.query("listener")


def test_reply_of_wrong_shape_for_operation(fake_agent: Make) -> None:
    agent = fake_agent(ok("a string"))
    with ManagementClient(agent.url) as client, pytest.raises(BadReply, match="not a list"):
        client.get_mgmt_nodes()


def test_timeout_waiting_for_reply_then_client_still_usable(fake_agent: Make) -> None:
    seen: List[str] = []

    def respond(m: Message) -> Message | None:
        seen.append(m.properties["operation"])
        # The first request is answered late (after the client gave up); the answer must not
        # be taken as the reply to the second request.
        if len(seen) == 1:
            time.sleep(0.8)
            return reply(200, "OK", ["late"])
        return reply(200, "OK", ["fresh"])

    agent = fake_agent(respond)
    # Connected with a generous timeout (a busy machine may take longer than 0.5 s to open the
    # connection and links); the 0.5 s under test is the request's.
    with ManagementClient(agent.url, timeout=5) as client:
        client.connect()
        assert client._conn is not None
        client.timeout = client._conn.timeout = 0.5
        with pytest.raises(ManagementTimeout, match=r"timed out after 0.5s waiting for the GET-MGMT-NODES"):
            client.get_mgmt_nodes()
        client.timeout = 5
        assert client._conn is not None
        client._conn.timeout = 5
        assert client.get_mgmt_nodes() == ["fresh"]


def test_rejected_request_is_a_connection_error(fake_agent: Make) -> None:
    agent = fake_agent(lambda m: REJECT)
    with ManagementClient(agent.url) as client, pytest.raises(ManagementConnectionError, match="rejected"):
        client.get_types()


def test_connection_refused() -> None:
    port = free_port()
    with pytest.raises(ManagementConnectionError) as info:
        ManagementClient(f"127.0.0.1:{port}").get_types()
    assert str(info.value) == f"cannot connect to 127.0.0.1:{port}: connection refused"
    assert isinstance(info.value, ConnectionError)


def test_connect_timeout(silent_port: int) -> None:
    with pytest.raises(ManagementTimeout) as info:
        ManagementClient(f"127.0.0.1:{silent_port}", timeout=0.5).connect()
    assert str(info.value) == f"timed out after 0.5s connecting to 127.0.0.1:{silent_port}"
    assert isinstance(info.value, TimeoutError)


def test_unknown_host() -> None:
    with pytest.raises(ManagementConnectionError, match=r"cannot connect to no-such-host\.invalid:5672"):
        ManagementClient("no-such-host.invalid", timeout=2).connect()


def test_url_forms(fake_agent: Make) -> None:
    agent = fake_agent(ok([]))
    for url in (agent.url, f"amqp://{agent.url}", f"amqp://user:pw@{agent.url}"):
        # The fake agent has no user database: with a Cyrus SASL build of proton, credentials
        # would pick a SCRAM mechanism it cannot verify. The URL forms are what is tested.
        with ManagementClient(url, sasl_mechanisms="ANONYMOUS") as client:
            assert client.host_port == agent.url
            assert client.get_mgmt_nodes() == []
    assert ManagementClient("example.org").host_port == "example.org:5672"


def test_ctrl_c_while_waiting_for_a_reply_is_not_a_management_error(fake_agent: Make) -> None:
    """Ctrl-C in a tool or a script (KeyboardInterrupt) must stop it, not turn into a
    ManagementError that a caller's error handling swallows."""
    agent = fake_agent(ok({"attributeNames": ["name"], "results": []}))
    with ManagementClient(agent.url) as client:
        assert client.query("listener", ["name"]) == []  # connected

        def interrupted(*args: Any, **kwargs: Any) -> None:
            raise KeyboardInterrupt
        connection: Any = client._conn
        waiting = connection.wait
        connection.wait = interrupted
        try:
            with pytest.raises(KeyboardInterrupt):
                client.query("listener", ["name"])
        finally:
            connection.wait = waiting  # closing waits too
