"""A connector whose peer is not there: Waiting with the retry delay, attempts after 2, 4,
8 s (the resilient-connection schedule), Operational once a listener appears."""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Dict, List

from qdrouter.tools.management_client import ManagementClient
from tests.mesh.meshproc import MeshRouter, Timers
from tests.router.routerproc import free_port

CONNECTOR = "org.apache.qpid.dispatch.connector"
RETRY = re.compile(r"^(\S+ \S+) \+0000 CONN_MGR .*retrying in (\d+(?:\.\d+)?) s", re.M)
TOLERANCE_S = 0.6


def retry_lines(router: MeshRouter) -> List[tuple]:
    out = []
    for stamp, delay in RETRY.findall(router.stderr_text()):
        t = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=timezone.utc).timestamp()
        out.append((t, float(delay)))
    return out


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
        operational_after = time.time() - third
        lines = retry_lines(a)
        print("retry lines (delay announced):", [d for _, d in lines],
              "gaps:", [round(t2 - t1, 2) for (t1, _), (t2, _) in zip(lines, lines[1:])],
              f"operational {operational_after:.2f}s after the third failure")
        assert [d for _, d in lines[:3]] == [2, 4, 8], lines
        gaps = [t2 - t1 for (t1, _), (t2, _) in zip(lines[:3], lines[1:3])]
        assert abs(gaps[0] - 2) < TOLERANCE_S and abs(gaps[1] - 4) < TOLERANCE_S, gaps
        assert abs(operational_after - 8) < TOLERANCE_S + 0.5, operational_after
        assert connector_row(client).get("connectionMsg"), "no connectionMsg when Operational"
    finally:
        client.close()
        a.stop(check=False)
        b.stop(check=False)
