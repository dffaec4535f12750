"""Fault containment (docs/architecture.md, "The fault boundary"): a failure while the router
handles one connection's work closes that connection with amqp:internal-error, is logged once
with its traceback and counted, and every other client keeps being served with nothing lost.

The failures are made to order with the router's test hooks (-T, management's TEST-FAULT:
router/qdrouter/management/fault_hooks.py), on real router processes and real clients."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any, Dict, List

import pytest

from tests.management.mgmt import ROUTER, MgmtClient
from tests.prerequisites import require
from tests.router.amqpclient import ACCEPTED, Client, Net, ReceiverLink, SenderLink, msg
from tests.router.routerproc import Router, RouterFactory, build_proton_shim, router_env
from tests.router.test_pypy import PYPY
from tests.router_http.scrape import get, scrape

pytestmark = pytest.mark.qdmesh_only("qdmesh's fault boundary, made to fail by its own test hooks "
                                     "(-T, TEST-FAULT) and counted in internalErrorCount")

# Both within a sender's window (linkCapacity, 250): a sender has no more unsettled messages
# in the router than that until their consumers settle some (docs/routing.md, "Flow control").
BUSY = 240      # the bystander's messages while the failure happens, and as many after it
HELD = 200      # messages the failing client holds unsettled for the bystander


def _router(router_factory: RouterFactory, hooks: bool = True) -> Router:
    router = router_factory(router_id="Faulty", args=["-T"] if hooks else [],
                            extra_listeners={"http": {"http": "true"}})
    router.tracebacks_allowed = 1 if hooks else 0
    return router


def _arm(net: Net, router: Router, **props: str) -> Any:
    """TEST-FAULT over a management connection of its own, closed after the reply."""
    client = net.connect(router.url)
    reply = MgmtClient(net, client).request("TEST-FAULT", props=props)
    client.close()
    return reply


def _router_row(net: Net, router: Router) -> Dict[str, Any]:
    client = net.connect(router.url)
    row = MgmtClient(net, client).query(ROUTER)[0]
    client.close()
    return row


def _qdmanage_router(router: Router) -> Dict[str, Any]:
    """`qdmanage query --type router`, as an operator would ask."""
    result = subprocess.run([sys.executable, "-m", "qdrouter.tools.qdmanage", "-b", router.url,
                             "query", "--type", "router"], capture_output=True, text=True,
                            timeout=30, env=router_env())
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert len(rows) == 1, rows
    return dict(rows[0])


def _send(net: Net, sender: SenderLink, count: int, address: str) -> List[str]:
    tags = [sender.send(msg(f"{address}-{n}")) for n in range(count)]
    return tags


def _assert_internal_error(net: Net, client: Client) -> None:
    net.wait(lambda: client.remote_closed or client.transport_closed, 10,
             "the failing client's connection to be closed")
    assert client.error is not None, "closed without a condition"
    assert client.error.name == "amqp:internal-error", client.error
    description = client.error.description or ""
    assert description.startswith("internal error: ArmedFault: test hook"), description
    assert "\n" not in description


def _assert_contained_once(net: Net, router: Router, what: str) -> None:
    """Counted once (management, qdmanage, /metrics), one traceback in the log, and healthy."""
    assert router.is_running()
    assert get(router.ports["http"], "/healthz")[0] == 200
    assert _router_row(net, router)["internalErrorCount"] == 1
    assert _qdmanage_router(router)["internalErrorCount"] == 1
    samples = scrape(router.ports["http"])
    assert samples[("qdmesh_internal_errors_total", ())] == 1
    log = router.stderr_text()
    assert log.count("Traceback") == 1, log[-4000:]
    assert f"Internal error {what} on connection" in log, log[-4000:]
    assert "amqp:internal-error" in log


class Bystander:
    """A client that sends unsettled to a receiver on another client while the failure
    happens, and holds none of its messages itself: everything it sent must get an outcome."""

    def __init__(self, net: Net, router: Router) -> None:
        self.net = net
        self.producer = net.connect(router.url)
        self.consumer = net.connect(router.url)
        # Unsettled until told otherwise: the router must keep tracking them across the fault.
        self.receiver: ReceiverLink = self.consumer.receiver("closest/busy", credit=500, settle=None)
        self.sender = self.producer.sender("closest/busy")

    def send(self) -> List[str]:
        return _send(self.net, self.sender, BUSY, "busy")

    def wait_held(self) -> None:
        self.net.wait(lambda: len(self.receiver.received) >= BUSY, 30,
                      f"{BUSY} messages at the bystander's receiver")

    def settle_and_check(self, tags: List[str]) -> None:
        self.receiver.settle_unsettled(ACCEPTED)
        self.receiver.settle_policy = ACCEPTED
        more = _send(self.net, self.sender, BUSY, "busy-after")
        self.net.wait(lambda: all(t in self.sender.outcomes for t in tags + more), 30,
                      "outcomes for all the bystander's messages")
        assert self.sender.outcome_counts() == {"accepted": 2 * BUSY}
        assert len(self.receiver.received) == 2 * BUSY
        assert self.producer.alive and self.consumer.alive


def test_a_failing_delivery_closes_only_its_connection(router_factory: RouterFactory, net: Net) -> None:
    _delivery_fault(router_factory, net)


def test_a_failing_delivery_on_pypy_closes_only_its_connection(router_factory: RouterFactory, net: Net,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """PyPy walks a batch by index (amqp/loop/server.py): the batch resumes at the next index."""
    require(PYPY.exists(), f"a PyPy venv with python-qpid-proton at {PYPY} (.ci/setup.d/15-pypy.sh)")
    build = build_proton_shim(str(PYPY))
    assert build.returncode == 0, f"the proton shim does not build for PyPy:\n{build.stderr[-3000:]}"
    monkeypatch.setenv("QDROUTER_TEST_CMD", f"{PYPY} -m qdrouter")
    _delivery_fault(router_factory, net)


def _delivery_fault(router_factory: RouterFactory, net: Net) -> None:
    router = _router(router_factory)
    bystander = Bystander(net, router)
    # The failing client also consumes: what it holds unsettled must go back to its producer.
    victim = net.connect(router.url)
    held = victim.receiver("closest/held", credit=HELD, settle=None)
    held_sender = bystander.producer.sender("closest/held")
    held_tags = _send(net, held_sender, HELD, "held")
    net.wait(lambda: len(held.received) == HELD, 20, "the messages the failing client holds")

    assert _arm(net, router, point="delivery", address="faulty").status == 200
    faulty = victim.sender("faulty")
    net.wait(lambda: faulty.credit > 0, 10, "credit on the armed address")
    # What the failing client sent, held unsettled by the bystander's consumer.
    from_victim = bystander.consumer.receiver("closest/from-victim", credit=HELD, settle=None)
    victim_sender = victim.sender("closest/from-victim")
    _send(net, victim_sender, HELD, "from-victim")
    net.wait(lambda: len(from_victim.received) == HELD, 20, "the failing client's messages")

    # The bystander's messages and the failing delivery leave together: the router reads
    # them in the same loop turn, and the failure falls in the middle of their batch.
    busy_tags = bystander.send()
    faulty.send(msg("the delivery that fails"))
    _assert_internal_error(net, victim)
    bystander.wait_held()
    # Settling what the failed client sent, after it has gone, harms nobody.
    assert from_victim.settle_unsettled(ACCEPTED) == HELD

    # The failing client's peers hear the fate of what it held, as on any connection loss.
    net.wait(lambda: all(t in held_sender.outcomes for t in held_tags), 10,
             "outcomes of the messages the failed client held")
    assert held_sender.outcome_counts() == {"modified": HELD}
    bystander.settle_and_check(busy_tags)
    _assert_contained_once(net, router, "handling a delivery")
    assert "link 'sender-" in router.stderr_text()
    # The hook fired once: the address is an ordinary one again.
    again = net.connect(router.url)
    receiver = again.receiver("faulty")
    sender = again.sender("faulty")
    _send(net, sender, 100, "faulty")
    net.wait(lambda: len(sender.outcomes) == 100, 10, "deliveries to the address after the fault")
    assert sender.outcome_counts() == {"accepted": 100} and len(receiver.received) == 100


def test_a_failing_management_request_closes_only_its_connection(router_factory: RouterFactory,
                                                                 net: Net) -> None:
    router = _router(router_factory)
    bystander = Bystander(net, router)
    # A management client that stays connected across the failure.
    steady = MgmtClient(net, net.connect(router.url))
    assert _arm(net, router, point="management").status == 200
    victim = net.connect(router.url)
    request = MgmtClient(net, victim)

    busy_tags = bystander.send()
    request.sender.send(request.message("QUERY", props={"entityType": ROUTER},
                                        body={"attributeNames": []}))
    _assert_internal_error(net, victim)
    bystander.wait_held()

    # The agent still answers, on a connection that was open all along.
    assert steady.query(ROUTER)[0]["internalErrorCount"] == 1
    bystander.settle_and_check(busy_tags)
    _assert_contained_once(net, router, "handling a delivery")


def test_a_failing_http_request_gets_500_and_the_server_keeps_serving(router_factory: RouterFactory,
                                                                      net: Net) -> None:
    router = _router(router_factory)
    bystander = Bystander(net, router)
    assert _arm(net, router, point="http").status == 200
    busy_tags = bystander.send()
    status, text, _ = get(router.ports["http"], "/metrics")
    assert status == 500 and "internal error" in text, (status, text)
    bystander.wait_held()
    bystander.settle_and_check(busy_tags)
    assert get(router.ports["http"], "/healthz")[0] == 200
    assert scrape(router.ports["http"])[("qdmesh_internal_errors_total", ())] == 1
    assert _router_row(net, router)["internalErrorCount"] == 1
    log = router.stderr_text()
    assert log.count("Traceback") == 1 and "Internal error answering HTTP GET /metrics" in log, log[-3000:]


def test_test_hooks_are_refused_unless_the_router_runs_with_them(router_factory: RouterFactory,
                                                                 net: Net) -> None:
    router = _router(router_factory, hooks=False)
    for props in ({"point": "delivery", "address": "faulty"}, {"point": "management"}, {"point": "http"}):
        reply = _arm(net, router, **props)
        assert reply.status == 403, reply
        assert "-T/--test-hooks" in reply.description
    # Nothing was armed: the next request and a delivery to the address go through.
    client = net.connect(router.url)
    receiver = client.receiver("faulty")
    sender = client.sender("faulty")
    _send(net, sender, 10, "faulty")
    net.wait(lambda: len(sender.outcomes) == 10, 10, "deliveries to the address")
    assert sender.outcome_counts() == {"accepted": 10} and len(receiver.received) == 10
    assert _router_row(net, router)["internalErrorCount"] == 0
    assert scrape(router.ports["http"])[("qdmesh_internal_errors_total", ())] == 0


def test_test_fault_names_a_bad_point(router_factory: RouterFactory, net: Net) -> None:
    router = _router(router_factory)
    router.tracebacks_allowed = 0
    reply = _arm(net, router, point="disk")
    assert reply.status == 400 and "'point'" in reply.description, reply
    reply = _arm(net, router, point="control")
    assert reply.status == 400 and "interior" in reply.description, reply
    reply = _arm(net, router, point="delivery")
    assert reply.status == 400 and "'address'" in reply.description, reply
