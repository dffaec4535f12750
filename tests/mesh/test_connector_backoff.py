"""A connector whose peer is not there: Waiting with the retry delay, attempts after 2, 4,
8 s (the resilient-connection schedule), Operational once a listener appears."""

from __future__ import annotations

import re
import socket
import time
from pathlib import Path
from typing import Dict, List

from qdrouter.amqp.connections.connector import OPEN_TIMEOUT_S
from qdrouter.tools.management_client import ManagementClient
from tests.mesh.meshproc import MeshRouter, Timers, log_time
from tests.mesh.test_topology import qdstat
from tests.router.routerproc import free_port

CONNECTOR = "org.apache.qpid.dispatch.connector"
RETRY = re.compile(r"^(\S+ \S+) \+0000 CONN_MGR .*retrying in (\d+(?:\.\d+)?) s", re.M)
OPERATIONAL = re.compile(r"^(\S+ \S+) \+0000 CONN_MGR .*Connector ir-to-B to .* is operational", re.M)
# Every time compared comes from the router's own log, so the tolerance covers the router's
# scheduling on a busy machine, not the test's polling; it still tells 2, 4 and 8 s apart.
TOLERANCE_S = 1.0


def retry_lines(router: MeshRouter) -> List[tuple]:
    return [(log_time(stamp), float(delay)) for stamp, delay in RETRY.findall(router.stderr_text())]


def connector_row(client: ManagementClient) -> Dict[str, object]:
    rows = client.query(CONNECTOR)
    assert len(rows) == 1, rows
    return rows[0]


def test_connector_backoff_then_operational(tmp_path: Path) -> None:
    port = free_port()
    for name in "AB":
        (tmp_path / name).mkdir()
    a = MeshRouter(tmp_path / "A", "A", Timers())
    b = MeshRouter(tmp_path / "B", "B", Timers())
    a.connectors["B"] = ("127.0.0.1", port, 1)
    a.write_config()
    b.inter_listeners["A"] = (port, 1)
    b.write_config()
    client = ManagementClient(a.url, timeout=5)
    try:
        a.start()
        deadline = time.monotonic() + 10
        while len(retry_lines(a)) < 2:
            assert time.monotonic() < deadline, f"fewer than 2 retry lines in 10s:\n{a.stderr_text()}"
            time.sleep(0.1)
        row = connector_row(client)
        print("while waiting:", row.get("connectionStatus"), "|", row.get("connectionMsg"))
        assert row.get("connectionStatus") == "Waiting", row
        assert re.search(r"retrying in [48] s", str(row.get("connectionMsg"))), row
        # qdstat -c: no connection to B yet, but the connector's state and last error.
        out = qdstat("-b", a.url.replace("amqp://", ""), "-c")
        assert out.returncode == 0, out.stderr
        print(out.stdout)
        connectors = out.stdout.split("Connectors\n", 1)[1].splitlines()
        assert connectors[0].split() == ["name", "host", "role", "cost", "status", "message"]
        assert re.match(rf"\s*ir-to-B\s+127\.0\.0\.1:{port}\s+inter-router\s+1\s+Waiting\s+.*"
                        r"(refused|cannot connect).*retrying in [48] s", connectors[2]), out.stdout
        deadline = time.monotonic() + 10
        while len(retry_lines(a)) < 3:
            assert time.monotonic() < deadline, f"no third retry line:\n{a.stderr_text()}"
            time.sleep(0.1)
        # The listener appears during the 8 s wait: the next attempt (8 s after the third
        # failure) must succeed.
        b.start()
        third = retry_lines(a)[2][0]
        deadline = time.monotonic() + 12
        while connector_row(client).get("connectionStatus") != "Operational":
            assert time.monotonic() < deadline, f"not Operational: {connector_row(client)}"
            time.sleep(0.1)
        operational = OPERATIONAL.findall(a.stderr_text())
        assert operational, f"no 'is operational' line:\n{a.stderr_text()}"
        operational_after = log_time(operational[0]) - third
        lines = retry_lines(a)
        print("retry lines (delay announced):", [d for _, d in lines],
              "gaps:", [round(t2 - t1, 2) for (t1, _), (t2, _) in zip(lines, lines[1:])],
              f"operational {operational_after:.2f}s after the third failure")
        assert [d for _, d in lines[:3]] == [2, 4, 8], lines
        gaps = [t2 - t1 for (t1, _), (t2, _) in zip(lines[:3], lines[1:3])]
        assert abs(gaps[0] - 2) < TOLERANCE_S and abs(gaps[1] - 4) < TOLERANCE_S, gaps
        assert abs(operational_after - 8) < TOLERANCE_S, operational_after
        assert connector_row(client).get("connectionMsg"), "no connectionMsg when Operational"
    finally:
        client.close()
        a.stop(check=False)
        b.stop(check=False)


def test_connection_that_never_opens_is_given_up_and_dialled_again(tmp_path: Path) -> None:
    """A peer that takes the TCP connection but never answers (as a vanished pod's address, or
    a hung process, looks from the connector): after OPEN_TIMEOUT_S the connector drops it,
    says why, and dials again, instead of waiting for the kernel."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)   # never accepts: the kernel completes the handshake, nobody speaks
    (tmp_path / "A").mkdir()
    a = MeshRouter(tmp_path / "A", "A", Timers())
    a.connectors["B"] = ("127.0.0.1", silent.getsockname()[1], 1)
    a.write_config()
    client = ManagementClient(a.url, timeout=5)
    try:
        started = time.monotonic()
        a.start()
        # The upper bound counts from the router being up: its start-up is not the timeout's.
        up = time.monotonic()
        deadline = up + OPEN_TIMEOUT_S + 10
        while not retry_lines(a):
            assert time.monotonic() < deadline, f"connection never given up:\n{a.stderr_text()}"
            time.sleep(0.2)
        now = time.monotonic()
        assert now - started >= OPEN_TIMEOUT_S - 1, now - started
        assert now - up <= OPEN_TIMEOUT_S + 5, now - up
        assert f"not opened within {OPEN_TIMEOUT_S:g} s" in a.stderr_text(), a.stderr_text()
        row = connector_row(client)
        assert row.get("connectionStatus") == "Waiting" and "not opened" in str(row.get("connectionMsg")), row
        # Dialled again after the first retry delay: a second connection reaches the socket.
        silent.settimeout(0.1)
        accepted = []
        deadline = time.monotonic() + 10
        while len(accepted) < 2:
            assert time.monotonic() < deadline, f"{len(accepted)} connection(s) seen:\n{a.stderr_text()}"
            try:
                accepted.append(silent.accept()[0])
            except socket.timeout:
                pass
        for conn in accepted:
            conn.close()
    finally:
        client.close()
        silent.close()
        a.stop(check=False)
