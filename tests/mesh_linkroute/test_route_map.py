"""`qdstat --map` from one router: the whole mesh, like `qpid-route route map`."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from tests.linkroute.lrutil import both_ways, connector
from tests.router.routerproc import Router, RouterFactory, router_env

from .conftest import LineFactory


def qdstat(router: Router, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "qdrouter.tools.qdstat", "-b", f"127.0.0.1:{router.port}",
                           *args], capture_output=True, text=True, timeout=60, env=router_env(),
                          stdin=subprocess.DEVNULL)


def test_map_from_one_router_shows_every_router_link_broker_and_route(
        line_factory: LineFactory, router_factory: RouterFactory) -> None:
    container: Router = router_factory(router_id="X")
    # An out auto-link to the container: X (a router) accepts the attach as a sender to wp.q.
    auto = "autoLink {\n    address: wp.q\n    direction: out\n    connection: broker\n}\n"
    mesh = line_factory({"C": connector("broker", container.port) + both_ways("lr", connection="broker")
                         + auto})
    deadline = time.monotonic() + 20
    while "wp.q  out  phase 0  via connector broker  [A: absent, B: absent, C: active]" \
            not in qdstat(mesh["A"], "--map").stdout:
        assert time.monotonic() < deadline, "the auto-link on C never showed active in A's map"
        time.sleep(0.5)
    done = qdstat(mesh["A"], "--map")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    for router in ("A", "B", "C"):
        assert f"\n  {router}  mode interior" in text, text
    assert "A <-> B  cost 1" in text and "B <-> C  cost 1" in text, text
    assert "A <-> C" not in text, "a line has no A-C link"
    assert "C --> X" in text, f"the broker (container X) behind C: {text}"
    assert "lr  in  via connector broker" in text and "lr  out  via connector broker" in text, text

    data = json.loads(qdstat(mesh["A"], "--map", "--json").stdout)
    assert sorted(r["id"] for r in data["routers"]) == ["A", "B", "C"]
    assert sorted(tuple(link["routers"]) for link in data["links"]) == [("A", "B"), ("B", "C")]
    states = {(r["prefix"], r["direction"]): r["state"] for r in data["linkRoutes"]}
    assert states[("lr", "in")] == {"C": "active"}, states
    autos = [(r["address"], r["direction"], r["phase"], r["target"], r["state"]) for r in data["autoLinks"]]
    assert autos == [("wp.q", "out", 0, "via connector broker", {"C": "active"})], autos
