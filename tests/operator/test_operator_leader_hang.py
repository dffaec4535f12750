"""A leader whose API server stops answering (packets dropped, not refused) stops reconciling
within its renew deadline, before the standby can take the Lease over: every Lease request has
a timeout, and a watchdog ends the process the moment the deadline passes.  Two
``qdmesh-operator`` processes against a REAL API server, the leader's through a TCP proxy the
test freezes (tests/operator/freezable_proxy.py); each logs when it starts and ends a
reconciliation, and no two of them overlap."""

from __future__ import annotations

import datetime
import re
import socket
import time
from pathlib import Path
from typing import List, Tuple

import pytest
import yaml

from tests.kube.controlplane import ControlPlane
from tests.operator.freezable_proxy import FreezableProxy
from tests.operator.kube_operator import Cluster, api_namespace, eventually
from tests.operator.test_operator_leader import health, lease, start_operator
from tests.router.routerproc import free_port

pytestmark = pytest.mark.timeout(240)

# Lease duration, renew deadline, retry period (s): long enough that a loaded machine renews in
# time, short enough for a test.
DURATION, DEADLINE, RETRY = 6.0, 4.0, 1.0
LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) \S+ \S+ (reconciling|reconciled) (\S+) ")


def proxied_kubeconfig(crds: ControlPlane, port: int, path: Path) -> str:
    config = yaml.safe_load(Path(crds.kubeconfig).read_text())
    for cluster in config["clusters"]:
        cluster["cluster"]["server"] = f"https://127.0.0.1:{port}"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def reconciliations(log: Path, ended: float) -> List[Tuple[float, float]]:
    """(start, end) of each reconciliation the operator logged, as time.time(); one it had not
    finished when it stopped ends at ``ended``."""
    spans: List[Tuple[float, float]] = []
    open_: dict = {}
    for line in log.read_text(errors="replace").splitlines():
        found = LINE.match(line)
        if not found:
            continue
        stamp, what, mesh = found.groups()
        when = datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()
        if what == "reconciling":
            open_.setdefault(mesh, []).append(when)
        elif open_.get(mesh):
            spans.append((open_[mesh].pop(0), when))
    spans += [(start, ended) for starts in open_.values() for start in starts]
    return sorted(spans)


def refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError:
        return True
    return False


def test_a_leader_whose_api_server_hangs_stops_before_the_standby_takes_over(
        crds: ControlPlane, tmp_path: Path) -> None:
    api, namespace = api_namespace(crds, "hang")
    kube = Cluster(crds, namespace)
    proxy = FreezableProxy("127.0.0.1", crds.port)
    timings = (f"{DURATION:g}", f"{DEADLINE:g}", f"{RETRY:g}")
    logs = {name: tmp_path / f"{name}.log" for name in ("op-1", "op-2")}
    ports = {name: free_port() for name in logs}
    procs: dict = {}
    try:
        procs["op-1"] = start_operator(
            crds, namespace, "op-1", ports["op-1"], logs["op-1"], "--log-level", "debug",
            "--drift-interval", "1", timings=timings,
            kubeconfig=proxied_kubeconfig(crds, proxy.port, tmp_path / "proxied.kubeconfig"))
        eventually(lambda: lease(api, namespace).holder_identity == "op-1", 60, "op-1 leading")
        procs["op-2"] = start_operator(crds, namespace, "op-2", ports["op-2"], logs["op-2"], "--log-level",
                                       "debug", "--drift-interval", "1", timings=timings)
        answer = eventually(lambda: health(ports["op-2"]), 60, "op-2's health endpoint")
        assert answer.startswith("200 standby"), answer
        kube.create("routermeshes", "RouterMesh", "hung", {"size": 1, "image": "qdmesh/router:0.1.0"})
        eventually(lambda: len(reconciliations(logs["op-1"], time.time())) >= 3, 60,
                   "op-1 reconciling (the mesh, then drift checks every second)")

        frozen_at = time.time()
        proxy.freeze()
        while procs["op-1"].poll() is None and time.time() - frozen_at < 60:
            time.sleep(0.05)
        exited_at = time.time()
        assert procs["op-1"].returncode == 1, "the leader kept running without renewing its Lease"
        # The last renewal started before the freeze: the deadline passes within DEADLINE of it.
        stopped = exited_at - frozen_at
        assert stopped < DEADLINE + 2.0, f"stopped {stopped:.1f}s after the freeze"
        text = logs["op-1"].read_text()
        assert "not renewed for 4s (renew deadline)" in text and "stopping: this replica" in text
        assert refused(ports["op-1"]), "the stopped leader's health endpoint still answers"

        eventually(lambda: lease(api, namespace).holder_identity == "op-2", 60, "op-2 taking over")
        eventually(lambda: reconciliations(logs["op-2"], time.time()), 60, "op-2 reconciling")
        proxy.thaw()
        # Drift checks every second from op-2; none from op-1, which is gone.
        eventually(lambda: len(reconciliations(logs["op-2"], time.time())) >= 3, 60, "op-2's drift checks")

        first = reconciliations(logs["op-1"], exited_at)
        second = reconciliations(logs["op-2"], time.time())
        assert first and second
        last_of_first = max(end for _, end in first)
        first_of_second = min(start for start, _ in second)
        assert last_of_first < first_of_second, (
            f"op-1 reconciled until {last_of_first:.3f}, op-2 started at {first_of_second:.3f}")
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        proxy.close()
