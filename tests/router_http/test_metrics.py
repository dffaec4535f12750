"""/metrics of a real router process after real AMQP traffic: every counter moved by exactly
what the clients sent and settled."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from qdrouter.tools.management_client import ManagementClient
from tests.prerequisites import require
from tests.router.amqpclient import REJECTED, RELEASED, Net, msg, send_and_settle
from tests.router.routerproc import Router, RouterFactory, build_proton_shim, run_qdrouter

from .scrape import get, interpreter, router_info, scrape, value

HTTP = {"http": {"http": "true"}}


def start(router_factory: RouterFactory, **listener: str) -> Router:
    return router_factory(extra_listeners={"http": {"http": "true", **listener}})


def test_counters_move_by_exactly_the_traffic_sent(router_factory: RouterFactory, net: Net) -> None:
    router = start(router_factory)
    port = router.ports["http"]
    before = scrape(port)
    client = net.connect(router.url)
    accepting = client.receiver("orders")
    rejecting = client.receiver("refunds", settle=REJECTED)
    releasing = client.receiver("returns", settle=RELEASED)
    presettled_rx = client.receiver("ticks")
    sender = client.sender(None)
    outcomes = send_and_settle(net, sender, [msg(i, to="orders") for i in range(7)]
                               + [msg(i, to="refunds") for i in range(3)]
                               + [msg(i, to="returns") for i in range(2)])
    assert len(outcomes) == 12
    ticks = client.sender("ticks", presettled=True)
    for i in range(5):
        ticks.send(msg(i))
    net.wait(lambda: len(presettled_rx.received) == 5, what="5 pre-settled messages")
    # Through an anonymous link (an addressed one gets no credit without a consumer).
    nowhere = client.sender(None, presettled=True)
    for i in range(4):
        nowhere.send(msg(i, to="nobody-listens"))
    net.wait(lambda: value(scrape(port), "qdmesh_dropped_presettled_deliveries_total") == 4, 10,
             "4 dropped pre-settled deliveries in /metrics")
    assert len(accepting.received) == 7 and len(rejecting.received) == 3 and len(releasing.received) == 2

    after = scrape(port)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("qdmesh_deliveries_settled_total", outcome="accepted") == 7
    assert delta("qdmesh_deliveries_settled_total", outcome="rejected") == 3
    assert delta("qdmesh_deliveries_settled_total", outcome="released") == 2
    assert delta("qdmesh_deliveries_settled_total", outcome="modified") == 0
    assert delta("qdmesh_presettled_deliveries_total") == 5
    assert delta("qdmesh_dropped_presettled_deliveries_total") == 4
    # As management's router entity counts them: deliveries to an address the router knows
    # (the 4 dropped ones had none).
    assert delta("qdmesh_deliveries_total", direction="ingress") == 12 + 5
    assert delta("qdmesh_deliveries_total", direction="egress") == 12 + 5
    for address, sent in (("orders", 7), ("refunds", 3), ("returns", 2), ("ticks", 5)):
        assert value(after, "qdmesh_address_deliveries_total", address=address, phase="0",
                     direction="ingress") == sent, address
        assert value(after, "qdmesh_address_deliveries_total", address=address, phase="0",
                     direction="egress") == sent, address
        assert value(after, "qdmesh_address_consumers", address=address, phase="0", where="local") == 1
    assert value(after, "qdmesh_connections", role="normal") == 1
    assert value(after, "qdmesh_links", direction="out") == 4
    assert value(after, "qdmesh_links", direction="in") == 3
    assert value(after, "qdmesh_unsettled_deliveries") == 0
    assert value(after, "qdmesh_process_resident_memory_bytes") == router.vm_rss_kb() * 1024 or \
        abs(value(after, "qdmesh_process_resident_memory_bytes") - router.vm_rss_kb() * 1024) < 8 << 20
    assert value(after, "qdmesh_known_routers") == 0
    # The address table as management lists it (qdstat -a), read while the management client
    # (and its temporary reply address) is still there: the four addresses used here are in it.
    with ManagementClient(router.url, timeout=5) as management:
        keys = [str(row.get("key")) for row in management.query("org.apache.qpid.dispatch.router.address")]
        assert value(scrape(port), "qdmesh_addresses") == len(keys)
    assert {"M0orders", "M0refunds", "M0returns", "M0ticks"} <= set(keys)


def test_unsettled_and_undelivered_are_gauges_of_what_waits(router_factory: RouterFactory, net: Net) -> None:
    router = start(router_factory)
    port = router.ports["http"]
    client = net.connect(router.url)
    holder = client.receiver("held", credit=3, refill=False, settle=None)
    sender = client.sender("held")
    for i in range(5):
        sender.send(msg(i))
    net.wait(lambda: len(holder.received) == 3, what="3 deliveries held unsettled by the receiver")
    net.wait(lambda: value(scrape(port), "qdmesh_undelivered_deliveries") == 2, 10, "2 undelivered")
    samples = scrape(port)
    # Each held delivery is unsettled on the sender's link and on the receiver's.
    assert value(samples, "qdmesh_unsettled_deliveries") == 2 * 3 + 2
    holder.settle_unsettled()
    holder.flow(2)
    net.wait(lambda: len(holder.received) == 5, what="the last 2 deliveries")
    holder.settle_unsettled()
    net.wait(sender.all_settled, what="all 5 settled")
    # The sender settles its end after the router's outcome: give that frame time to arrive.
    net.wait(lambda: value(scrape(port), "qdmesh_unsettled_deliveries") == 0, 5, "no unsettled deliveries")
    samples = scrape(port)
    assert value(samples, "qdmesh_undelivered_deliveries") == 0
    assert value(samples, "qdmesh_deliveries_settled_total", outcome="accepted") == 5


def test_router_totals_do_not_go_down_when_consumers_leave(router_factory: RouterFactory, net: Net) -> None:
    router = start(router_factory)
    port = router.ports["http"]
    client = net.connect(router.url)
    receiver = client.receiver("leaving")
    send_and_settle(net, client.sender("leaving"), [msg(i) for i in range(6)])
    assert value(scrape(port), "qdmesh_deliveries_settled_total", outcome="accepted") == 6
    receiver.close()
    client.close()
    net.wait(lambda: value(scrape(port), "qdmesh_connections", role="normal") == 0, 10, "the client to leave")
    assert value(scrape(port), "qdmesh_deliveries_settled_total", outcome="accepted") == 6


def test_per_address_series_are_bounded_keeping_the_busiest(router_factory: RouterFactory, net: Net) -> None:
    router = start(router_factory, metricsMaxAddresses="2")
    port = router.ports["http"]
    client = net.connect(router.url)
    for address, count in (("quiet", 1), ("busy", 9), ("medium", 4), ("idle", 0)):
        client.receiver(address)
        if count:
            send_and_settle(net, client.sender(address), [msg(i) for i in range(count)])
    samples = scrape(port)
    shown = {dict(labels)["address"] for name, labels in samples if name == "qdmesh_address_deliveries_total"}
    assert shown == {"busy", "medium"}
    assert value(samples, "qdmesh_address_series_omitted") == 2


def test_metrics_can_be_turned_off_per_listener(router_factory: RouterFactory) -> None:
    router = start(router_factory, metrics="false")
    port = router.ports["http"]
    status, text, _ = get(port, "/metrics")
    assert status == 404 and "/healthz" in text
    assert get(port, "/healthz")[0] == 200


@pytest.mark.parametrize("written, says", [
    ("lots", "attribute 'metricsMaxAddresses': 'lots' is not an integer"),
    ("-2", "attribute 'metricsMaxAddresses': -2 is not a number of addresses (0 or more, or -1 for"),
])
def test_a_bad_address_bound_is_a_clear_startup_error(tmp_path: Path, written: str, says: str) -> None:
    config = tmp_path / "bound.conf"
    config.write_text("router {\n    id: Bound\n}\nlistener {\n    host: 127.0.0.1\n    port: 0\n"
                      f"    http: true\n    metricsMaxAddresses: {written}\n}}\n")
    result = run_qdrouter(["-c", str(config)])
    assert result.returncode != 0
    assert says in result.stderr and "bound.conf:8" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_info_names_the_interpreter_running_the_router(router_factory: RouterFactory) -> None:
    # The router runs under the test's own interpreter here (tests/router/test_pypy.py: PyPy).
    router = start(router_factory)
    expected = f"{platform.python_implementation()} {platform.python_version()}"
    assert interpreter(scrape(router.ports["http"])) == expected


def test_info_says_whether_the_proton_shim_is_compiled(router_factory: RouterFactory,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    require(build_proton_shim().returncode == 0, "the proton shim, built (a C compiler, Python headers)")
    compiled = start(router_factory)
    assert router_info(scrape(compiled.ports["http"]))["proton_shim"] == "compiled"
    monkeypatch.setenv("QDROUTER_PROTON_SHIM", "off")
    fallback = start(router_factory)
    assert router_info(scrape(fallback.ports["http"]))["proton_shim"] == "fallback"
