"""One router at scale: 10,000 connections, 100,000 addresses, 50,000 links, each held by
bench/build/qdm-hold (C, proton's proactor) on a real router process. With all of them in
place the router stays responsive: a management QUERY (the router entity's counts, and one
page of the big entity) answers in under a second, and a message to a new address goes
from a sender to a receiver attached just then in under 50 ms.

10,000 connections need 10,000 descriptors in the router and as many in qdm-hold: the test
raises its process's soft RLIMIT_NOFILE (children inherit it) and needs a hard limit of at
least CONNECTIONS + 1,000 (docs/configuration.md, "Connections and open files")."""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

from qdrouter.tools.management_client import ManagementClient
from tests.prerequisites import require

from .amqpclient import Net, msg
from .routerproc import Router, RouterFactory
from .test_bench_loadgen import proton_c_dev_installed

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from measure import HOLD, ensure_built  # noqa: E402

CONNECTIONS = 10_000
ADDRESSES = 100_000
LINKS = 50_000
# Links per connection: proton finds a link by name among its session's links on each
# attach, so 10,000 links in one session cost it seconds; 200 per connection do not.
LINKS_PER_CONNECTION = 200
QUERY_LIMIT_S = 1.0
ROUND_TRIP_LIMIT_S = 0.050
# Once everything is in place, the router's last full garbage collection may still be
# running: with 100,000 addresses (about 900,000 objects) one takes 1.4 s on CPython
# (docs/configuration.md, "Scale"). The checks measure the router holding its load.
SETTLE_S = 3.0


@pytest.fixture(scope="module")
def load_generators() -> None:
    require(proton_c_dev_installed(),
            "proton-C's headers and pkg-config (libqpid-proton11-dev) for bench/loadgen")
    ensure_built(False)


@pytest.fixture
def open_files() -> Iterator[None]:
    """This process's soft descriptor limit raised for the router and qdm-hold it starts."""
    needed = CONNECTIONS + 1_000
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    require(hard == resource.RLIM_INFINITY or hard >= needed,
            f"a hard open-files limit of at least {needed} (ulimit -Hn is {hard})")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, needed), hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


class Holder:
    """qdm-hold's connections and links on a router, until stopped."""

    def __init__(self, router: Router, connections: int, links: int = 0, address: str = "scale",
                 distinct: bool = False, timeout: float = 60.0) -> None:
        argv = [str(HOLD), "-c", f"127.0.0.1:{router.port}", "-n", str(connections), "-L", str(links),
                "-a", address, "-t", str(timeout)]
        if distinct:
            argv.append("--distinct")
        started = time.monotonic()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("{"):
            self.stop()
            pytest.fail(f"qdm-hold was not ready (exit {self.proc.poll()}): {self.proc.stderr.read()[-2000:]}"
                        f"\n{router.describe()[-3000:]}")
        self.ready: Dict[str, Any] = json.loads(line)
        self.seconds = time.monotonic() - started
        print(f"qdm-hold: {self.ready} in {self.seconds:.1f} s")
        time.sleep(SETTLE_S)

    def stop(self) -> None:
        """Killed: the router sees every socket drop at once, and must carry on (the
        routers are then stopped and checked for a clean exit)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def holders() -> Iterator[List[Holder]]:
    started: List[Holder] = []
    yield started
    for holder in started:
        holder.stop()


def timed_query(mgmt: ManagementClient, entity_type: str, names: List[str],
                count: int | None = None) -> List[Dict[str, Any]]:
    started = time.monotonic()
    rows = mgmt.query(entity_type, names, count=count)
    took = time.monotonic() - started
    print(f"QUERY {entity_type} count={count}: {took * 1000:.0f} ms")
    assert took < QUERY_LIMIT_S, f"QUERY {entity_type} (count {count}) took {took:.2f} s"
    return rows


def router_counts(router: Router) -> Dict[str, int]:
    with ManagementClient(router.url, timeout=30) as mgmt:
        mgmt.connect()
        return timed_query(mgmt, "router", ["addrCount", "linkCount", "connectionCount"])[0]


def assert_page_answers(router: Router, entity_type: str) -> None:
    with ManagementClient(router.url, timeout=30) as mgmt:
        mgmt.connect()
        rows = timed_query(mgmt, entity_type, ["identity", "name"], count=10)
        assert len(rows) == 10


def assert_new_address_round_trip(router: Router) -> None:
    """A receiver attaches to an address nobody used, a sender to it, one message: median
    of five addresses, on connections already open."""
    net = Net()
    try:
        client = net.connect(router.url)
        took = []
        for _ in range(5):
            address = f"fresh/{uuid.uuid4().hex}"
            started = time.monotonic()
            receiver = client.receiver(address, credit=1)
            sender = client.sender(address)
            sender.send(msg("hello", to=address))
            net.wait(lambda r=receiver: len(r.bodies()) == 1, 10, f"the message on {address}")
            took.append(time.monotonic() - started)
            assert receiver.bodies() == ["hello"]
        print("new address round trips, ms: " + ", ".join(f"{t * 1000:.1f}" for t in took))
        assert statistics.median(took) < ROUND_TRIP_LIMIT_S, f"round trips took {took}"
    finally:
        net.close()


def open_files_limits(pid: int) -> List[str]:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return line.split()[3:5]
    raise AssertionError("no 'Max open files' in /proc/PID/limits")


@pytest.mark.timeout(60)
def test_router_raises_its_open_files_limit_to_hold_more_connections(
        load_generators: None, router_factory: RouterFactory, holders: List[Holder]) -> None:
    """Started with a soft limit of 256 (the router inherits it), the router raises it to
    the hard limit and holds 1,000 connections; qdm-hold has the usual limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    require(hard == resource.RLIM_INFINITY or hard >= 2_000,
            f"a hard open-files limit of at least 2000 (ulimit -Hn is {hard})")
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
    try:
        router = router_factory()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    raised, limit = open_files_limits(router.pid)
    assert raised == limit, f"soft {raised}, hard {limit}"
    assert "Open files: soft limit raised to the hard limit (256 -> " in router.stderr_text()
    holders.append(Holder(router, 1_000))
    assert router_counts(router)["connectionCount"] >= 1_000


@pytest.mark.timeout(120)
def test_ten_thousand_connections(load_generators: None, open_files: None, router_factory: RouterFactory,
                                  holders: List[Holder]) -> None:
    router = router_factory()
    holders.append(Holder(router, CONNECTIONS))
    counts = router_counts(router)
    assert counts["connectionCount"] >= CONNECTIONS + 1
    assert_page_answers(router, "connection")
    assert_new_address_round_trip(router)
    assert router.is_running()


@pytest.mark.timeout(150)
def test_hundred_thousand_addresses(load_generators: None, router_factory: RouterFactory,
                                    holders: List[Holder]) -> None:
    router = router_factory()
    holders.append(Holder(router, ADDRESSES // LINKS_PER_CONNECTION, LINKS_PER_CONNECTION,
                          address="scale/address", distinct=True, timeout=120))
    counts = router_counts(router)
    assert counts["addrCount"] >= ADDRESSES, f"{counts}\n{router.describe()[-3000:]}"
    assert_page_answers(router, "router.address")
    assert_new_address_round_trip(router)
    assert router.is_running()


@pytest.mark.timeout(120)
def test_fifty_thousand_links(load_generators: None, router_factory: RouterFactory,
                              holders: List[Holder]) -> None:
    router = router_factory()
    holders.append(Holder(router, LINKS // LINKS_PER_CONNECTION, LINKS_PER_CONNECTION,
                          address="scale/links", timeout=90))
    counts = router_counts(router)
    assert counts["linkCount"] >= LINKS, f"{counts}\n{router.describe()[-3000:]}"
    assert_page_answers(router, "router.link")
    assert_new_address_round_trip(router)
    assert router.is_running()
