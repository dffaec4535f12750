"""The web console in real headless Chromium against a real mesh of router processes: the
topology shows every router and link, each link coloured by the round trip its routers
measure, a router whose auto-links and link routes are not all active marked, a new consumer
appears in the address table, the per-router pages show qdstat's tables, and a killed router
disappears."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Set, Tuple

import pytest

from tests.console.consoleproc import ConsoleProcess
from tests.mesh.meshproc import Mesh, build_mesh, section, start_order
from tests.mesh.test_canary import CanaryTimers
from tests.router.amqpclient import Net, msg, send_and_settle
from tests.router.routerproc import free_port

# A ring A-B-C-D with a dearer D-A link: every router has two neighbours, costs differ.
EDGES = [("B", "A", 1), ("C", "B", 1), ("D", "C", 1), ("D", "A", 2)]
SCREENSHOTS = os.environ.get("QDMESH_CONSOLE_SCREENSHOTS")  # a directory: save the pages there


def wait_for(driver: Any, what: str, condition: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    last_error = ""
    while time.monotonic() < deadline:
        try:
            result = condition()
            if result:
                return result
        except Exception as error:  # the page re-renders under us: try again
            last_error = f" (last error: {error})"
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}{last_error}\n"
                         f"status: {status_text(driver)}")


def status_text(driver: Any) -> str:
    try:
        return str(driver.execute_script("return document.getElementById('status').textContent"))
    except Exception as error:
        return f"(no status: {error})"


def graph(driver: Any) -> Tuple[Set[str], Set[frozenset], Dict[str, str]]:
    """(routers, inter-router links, {link: cost label}) drawn in the topology SVG."""
    data = driver.execute_script("""
        const svg = document.getElementById('topology');
        return {
          routers: [...svg.querySelectorAll('g.router')].map(
              g => [g.dataset.router, g.getAttribute('class')]),
          edges: [...svg.querySelectorAll('g.edge')].map(
              g => [g.dataset.a, g.dataset.b, g.querySelector('text.cost').textContent]),
        };""")
    routers = {rid for rid, _ in data["routers"]}
    edges = {frozenset((a, b)) for a, b, _ in data["edges"]}
    costs = {"-".join(sorted((a, b))): cost for a, b, cost in data["edges"]}
    return routers, edges, costs


def latencies(driver: Any) -> Dict[frozenset, Tuple[str, str, str]]:
    """{link: (latency class, data-latency-ms, label)} of the links drawn."""
    data = driver.execute_script("""
        return [...document.querySelectorAll('#topology g.edge')].map(g => [
            g.dataset.a, g.dataset.b,
            [...g.classList].find(c => c.startsWith('latency-')) || '',
            g.dataset.latencyMs, g.querySelector('text.cost').textContent]);""")
    return {frozenset((a, b)): (level, ms, label) for a, b, level, ms, label in data}


def coloured_by_latency(level: str, ms: str, label: str) -> bool:
    """A measured link whose colour is the one its round trip calls for."""
    if level == "latency-unknown" or not ms:
        return False
    value = float(ms)
    want = "latency-good" if value < 10 else "latency-slow" if value < 100 else "latency-bad"
    assert level == want, (level, ms, label)
    assert value > 0 and label.endswith(" ms"), (level, ms, label)
    return True


def readiness(driver: Any) -> Dict[str, str]:
    """{router: its readiness title} of the routers marked as not having every route active."""
    return dict(driver.execute_script("""
        return [...document.querySelectorAll('#topology g.router.routes-not-ready')].map(g => [
            g.dataset.router, g.querySelector('.readiness-badge title').textContent]);"""))


def rate(text: str) -> float:
    """A rate cell ("12.5/s") as a number."""
    assert text.endswith("/s"), text
    return float(text[:-2])


def table_rows(driver: Any, table_id: str) -> List[List[str]]:
    return list(driver.execute_script(
        "return [...document.querySelectorAll(arguments[0] + ' tbody tr:not(.empty)')]"
        ".map(tr => [...tr.children].map(td => td.textContent));", f"#{table_id}"))


def view_rows(driver: Any, view: str) -> List[List[str]]:
    """Rows of one qdstat table on a router page."""
    return list(driver.execute_script(
        "return [...document.querySelectorAll(`table[data-view=${arguments[0]}] tbody tr`)]"
        ".map(tr => [...tr.children].map(td => td.textContent));", view))


@pytest.fixture
def mesh(tmp_path: Path) -> Iterator[Mesh]:
    """The ring, router A with a route-container listener, an auto-link and a link route."""
    built = build_mesh(tmp_path, EDGES, timers=CanaryTimers(hello_max_age=3))  # round trips measured
    a = built["A"]
    container_port = free_port()
    a.extra = (section("listener", {"host": "127.0.0.1", "port": container_port, "role": "route-container",
                                    "saslMechanisms": "ANONYMOUS"})
               + section("autoLink", {"address": "queue.orders", "direction": "out",
                                      "containerId": "broker-1"})
               + section("linkRoute", {"prefix": "lr.", "direction": "in", "containerId": "broker-1"}))
    a.write_config()
    a.ports["container"] = container_port
    try:
        for name in start_order(list(built.routers), EDGES):
            built[name].start()
        built.wait_converged(timeout=built.timers.convergence_bound + 10)
        yield built
    finally:
        built.close()
        for router in built.routers.values():
            if router.is_running():
                router.stop(check=True)


def test_topology_tables_and_router_pages(mesh: Mesh, browser: Any, consoles: List[ConsoleProcess],
                                          net: Net, tmp_path: Path) -> None:
    broker = Net()
    broker.container.container_id = "broker-1"  # a route container as a broker would be
    try:
        broker.connect(f"amqp://127.0.0.1:{mesh['A'].ports['container']}")
        console = ConsoleProcess(tmp_path, f"127.0.0.1:{mesh['B'].port}")
        consoles.append(console)
        browser.get(console.url + "/")

        # Every router and every inter-router link, with the link costs.
        wait_for(browser, "4 routers and 4 links in the topology",
                 lambda: graph(browser)[0] == set("ABCD") and len(graph(browser)[1]) == 4)
        _routers, edges, costs = graph(browser)
        assert edges == {frozenset(e[:2]) for e in EDGES}
        assert {key: label.split(" ")[0] for key, label in costs.items()} == {
            "A-B": "1", "B-C": "1", "C-D": "1", "A-D": "2"}
        assert {tuple(row[:3]) for row in table_rows(browser, "edges-table")} == {
            ("A", "B", "1"), ("B", "C", "1"), ("C", "D", "1"), ("A", "D", "2")}
        # Every link coloured by the round trip its routers measure, shown beside its cost.
        wait_for(browser, "every link coloured by its measured round trip",
                 lambda: len(latencies(browser)) == 4
                 and all(coloured_by_latency(*drawn) for drawn in latencies(browser).values()))
        assert all(label.startswith(f"{costs['-'.join(sorted(pair))].split(' ')[0]} · ")
                   for pair, (_, _, label) in latencies(browser).items())
        assert all(row[3].endswith(" ms") for row in table_rows(browser, "edges-table"))
        assert [row[0] for row in table_rows(browser, "routers-table")] == ["A", "B", "C", "D"]
        wait_for(browser, "the broker drawn beside router A", lambda: browser.execute_script(
            "return document.querySelector('#topology g.attachment.container[data-router=\"A\"]"
            "[data-name=\"broker-1\"]') !== null"))
        autolinks = table_rows(browser, "autolinks-table")
        assert [(row[0], row[1], row[2]) for row in autolinks] == [("A", "queue.orders", "out")]
        wait_for(browser, "the link route active (its container is connected)",
                 lambda: [row[0] for row in table_rows(browser, "linkroutes-table")
                          if "lr." in row and "active" in row] == ["A"])

        # A new consumer on router C appears in the address table, then traffic from A.
        assert not [row for row in table_rows(browser, "addresses-table") if row[0] == "console.orders"]
        consumer = net.connect(mesh["C"].url).receiver("console.orders")
        row = wait_for(browser, "console.orders with one consumer on C", lambda: [
            r for r in table_rows(browser, "addresses-table") if r[0] == "console.orders" and r[3] == "1"])
        assert row[0][4] == "C"
        mesh.wait_converged(timeout=10)
        sender = net.connect(mesh["A"].url).sender("console.orders")
        send_and_settle(net, sender, [msg(i) for i in range(20)])
        assert len(consumer.received) == 20
        wait_for(browser, "20 deliveries out of console.orders", lambda: [
            r for r in table_rows(browser, "addresses-table") if r[0] == "console.orders" and r[7] == "20"])
        # Routers are read one after the other: wait for a poll that saw the end on both.
        wait_for(browser, "the sender's link on A and the consumer's on C with 20 deliveries", lambda: {
            ("C", "out", "console.orders", "20"), ("A", "in", "console.orders", "20")}
            <= {(r[0], r[2], r[3], r[5]) for r in table_rows(browser, "links-table")})

        # Rates: while messages flow, the address's in and out rates and the sender link's rate
        # are above zero; once the flow stops they fall back to 0/s (they are not totals).
        if SCREENSHOTS:
            browser.set_window_size(1280, 2300)

        def flowing() -> bool:
            send_and_settle(net, sender, [msg(i) for i in range(5)])
            rows = [r for r in table_rows(browser, "addresses-table") if r[0] == "console.orders"]
            links = [r for r in table_rows(browser, "links-table")
                     if (r[0], r[2], r[3]) == ("A", "in", "console.orders")]
            if not (rows and links and rate(rows[0][6]) > 0 and rate(rows[0][8]) > 0
                    and rate(links[0][6]) > 0):
                return False
            if SCREENSHOTS:  # the mesh page with traffic on it
                browser.save_screenshot(str(Path(SCREENSHOTS) / "mesh.png"))
            return True

        wait_for(browser, "positive in, out and link rates while messages flow", flowing, timeout=30)
        wait_for(browser, "rates back to 0/s once the flow stops", lambda: [
            (r[6], r[8]) for r in table_rows(browser, "addresses-table") if r[0] == "console.orders"]
            == [("0/s", "0/s")])

        # Router C's page: qdstat -g -c -l -a -n --autolinks --linkroutes, by following its link.
        # The table re-renders at each refresh, so the link found may be gone by the click.
        def follow_c() -> bool:
            browser.find_element("css selector", '#routers-table a[href="/router.html?id=C"]').click()
            return True

        wait_for(browser, "router C's link followed", follow_c)
        wait_for(browser, "router C's tables", lambda: browser.execute_script(
            "return document.querySelectorAll('#tables table').length") == 7)
        assert browser.title.startswith("Router C")
        titles = browser.execute_script(
            "return [...document.querySelectorAll('#tables h2')].map(h => h.textContent)")
        assert titles == ["Router Statistics", "Connections", "Router Links", "Router Addresses",
                          "Routers in the Network", "AutoLinks", "Link Routes"]
        nodes = wait_for(browser, "C's routers table", lambda: view_rows(browser, "nodes"))
        # C among them, as qdstat -n lists the router asked (next hop "(self)").
        assert sorted(row[0] for row in nodes) == ["A", "B", "C", "D"]
        assert {row[0]: row[3] for row in nodes if row[0] != "C"} == {"A": "2", "B": "1", "D": "1"}
        assert [row[1] for row in nodes if row[0] == "C"] == ["(self)"]
        general = dict(view_rows(browser, "general"))
        assert general["Router Id"] == "C" and general["Mode"] == "interior"
        wait_for(browser, "C's accepted count of 20 (plus management replies)",
                 lambda: int(dict(view_rows(browser, "general"))["Accepted Count"]) >= 20)
        # The other qdstat views of C: its inter-router connections, the consumer's link and
        # the address it consumes.
        connections = " ".join(" ".join(row) for row in view_rows(browser, "connections"))
        assert "inter-router" in connections and "B" in connections and "D" in connections
        assert any("console.orders" in row for row in view_rows(browser, "addresses"))
        assert any("console.orders" in " ".join(row) and "out" in row for row in view_rows(browser, "links"))
        if SCREENSHOTS:
            browser.save_screenshot(str(Path(SCREENSHOTS) / "router.png"))
        # Router A's page: its auto-link and link route (qdstat --autolinks, --linkroutes).
        browser.get(console.url + "/router.html?id=A")
        wait_for(browser, "router A's link route active on its page", lambda: [
            row for row in view_rows(browser, "linkroutes") if "lr." in row and "active" in row])
        assert [row for row in view_rows(browser, "autolinks") if "queue.orders" in row and "out" in row]
        logs = [entry for entry in browser.get_log("browser") if entry.get("level") == "SEVERE"]
        assert not logs, f"errors in the browser console: {logs}"
    finally:
        broker.close()


def test_killed_router_disappears(mesh: Mesh, browser: Any, consoles: List[ConsoleProcess],
                                  tmp_path: Path) -> None:
    console = ConsoleProcess(tmp_path, f"127.0.0.1:{mesh['A'].port}")
    consoles.append(console)
    browser.get(console.url + "/")
    wait_for(browser, "4 routers in the topology", lambda: graph(browser)[0] == set("ABCD"))
    # No broker connects here: router A's auto-link and link route stay inactive, and A is
    # marked, its title naming them; the others have none and are not.
    marked = wait_for(browser, "router A marked for its inactive routes", lambda: readiness(browser))
    assert list(marked) == ["A"], marked
    assert "0 of 1 auto-links active" in marked["A"] and "0 of 1 link routes active" in marked["A"]
    assert "auto-link queue.orders (out)" in marked["A"] and "link route lr. (in)" in marked["A"]
    routes_cells = {row[0]: row[8] for row in table_rows(browser, "routers-table")}
    assert routes_cells["A"].startswith("0 of 2 (") and routes_cells["B"] == "\u2013", routes_cells
    mesh.kill("C")
    wait_for(browser, "router C gone from the topology and the routers table",
             lambda: graph(browser)[0] == set("ABD")
             and [row[0] for row in table_rows(browser, "routers-table")] == ["A", "B", "D"],
             timeout=mesh.timers.convergence_bound + 20)
    _, edges, _ = graph(browser)
    assert edges == {frozenset("AB"), frozenset("AD")}
    # The page keeps updating: the remaining routers still answer.
    assert "Updated" in status_text(browser)
