"""The operator soak's parts (bench/operator_soak.py): the operator as its own process against a
real API server, the routing resources it is given, and the process measurements (resident set
and CPU from /proc)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import yaml

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.kube.controlplane import ControlPlane  # noqa: E402
from tests.ports import free_port  # noqa: E402

G, V = "qdmesh.io", "v1alpha1"
TICK = os.sysconf("SC_CLK_TCK")
KINDS = (("linkroutes", "LinkRoute"), ("autolinks", "AutoLink"), ("vhostpolicies", "VhostPolicy"))


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` (its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def wait(check: Callable[[], bool], timeout: float, what: str, interval: float = 0.5) -> float:
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"{what}: not within {timeout:g} s")
        time.sleep(interval)
    return time.monotonic() - start


def routing_spec(kind: str, mesh: str, i: int) -> Dict[str, Any]:
    if kind == "LinkRoute":
        return {"meshRef": mesh, "prefix": f"soak{i}.", "containerId": "broker"}
    if kind == "AutoLink":
        return {"meshRef": mesh, "address": f"queue/soak{i}", "direction": "in", "containerId": "broker"}
    return {"meshRef": mesh, "hostname": f"soak{i}.example.com", "maxConnections": 10}


@dataclass
class Soak:
    plane: ControlPlane
    namespace: str
    work: Path
    samples: List[Tuple[str, float, float, float]] = field(default_factory=list)
    proc: subprocess.Popen | None = None
    tracemalloc: bool = False
    operator_src: Path = REPO / "operator"
    snapshots: Dict[str, Path] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        from kubernetes import client

        api = self.plane.api_client()
        self.custom = client.CustomObjectsApi(api)
        self.core = client.CoreV1Api(api)

    # -- the operator process ---------------------------------------------------------------
    def start_operator(self, urls: Dict[str, str], drift: float) -> None:
        urls_file = self.work / "router-urls.json"
        urls_file.write_text(json.dumps(urls))
        env = {**self.plane.env(), "QDMESH_ROUTER_URLS": str(urls_file),
               "PYTHONPATH": os.pathsep.join([str(self.operator_src), str(REPO / "router"), str(REPO)])}
        if self.tracemalloc:
            env["QDMESH_TRACEMALLOC"] = str(self.work / "tracemalloc")
        self.health = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "qdmesh_operator.main", "-n", self.namespace, "--health-port",
             str(self.health), "--metrics-port", "0", "--drift-interval", f"{drift:g}", "--log-level",
             os.environ.get("QDMESH_SOAK_LOG_LEVEL", "warning")],
            env=env, stdout=subprocess.DEVNULL, stderr=open(self.work / "operator.log", "wb"),
            start_new_session=True)

    def wait_started(self, timeout: float) -> None:
        """Until kopf answers its liveness probe (it has listed what it watches)."""
        import urllib.request

        def alive() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"the operator exited; see {self.work}/operator.log")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.health}/healthz", timeout=2) as reply:
                    return bool(reply.status == 200)
            except OSError:
                return False

        wait(alive, timeout, "the operator's liveness endpoint")

    def stop_operator(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def sample(self, phase: str) -> float:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise RuntimeError(f"the operator exited ({self.proc.returncode}); see {self.work}/operator.log")
        rss, cpu = rss_mib(self.proc.pid), cpu_s(self.proc.pid)
        self.samples.append((phase, time.monotonic() - self.started, rss, cpu))
        print(f"{phase:<28} {time.monotonic() - self.started:8.1f} s  RSS {rss:7.1f} MiB  CPU {cpu:7.1f} s",
              flush=True)
        return rss

    def snapshot(self, label: str) -> None:
        """A tracemalloc snapshot of the operator (with --tracemalloc), kept as ``label``."""
        if not self.tracemalloc or self.proc is None:
            return
        directory = self.work / "tracemalloc"
        before = set(directory.glob("*.done")) if directory.exists() else set()
        self.proc.send_signal(signal.SIGUSR2)
        wait(lambda: bool(set(directory.glob("*.done")) - before), 120, f"snapshot {label}", 0.2)
        done = sorted(set(directory.glob("*.done")) - before)[0]
        self.snapshots[label] = done.with_suffix("")

    def compare(self, first: str, second: str, top: int = 15) -> List[str]:
        import tracemalloc

        if first not in self.snapshots or second not in self.snapshots:
            return []
        old = tracemalloc.Snapshot.load(str(self.snapshots[first]))
        new = tracemalloc.Snapshot.load(str(self.snapshots[second]))
        total = sum(s.size_diff for s in new.compare_to(old, "filename"))
        lines = [f"tracemalloc {first} -> {second}: {total / 1024:+.0f} KiB traced"]
        for stat in new.compare_to(old, "traceback")[:top]:
            frames = [f"{f.filename.split('site-packages/')[-1].split('/wt-opmem/')[-1]}:{f.lineno}"
                      for f in stat.traceback if "tracemalloc" not in f.filename][-6:]
            where = " <- ".join(reversed(frames))
            lines.append(f"  {stat.size_diff / 1024:+8.0f} KiB {stat.count_diff:+6d}  {where}")
        return lines

    # -- the API server -----------------------------------------------------------------------
    def items(self, plural: str) -> List[Dict[str, Any]]:
        return list(self.custom.list_namespaced_custom_object(G, V, self.namespace, plural)["items"])

    def create(self, plural: str, kind: str, name: str, spec: Dict[str, Any]) -> None:
        body = {"apiVersion": f"{G}/{V}", "kind": kind, "metadata": {"name": name}, "spec": spec}
        self.custom.create_namespaced_custom_object(G, V, self.namespace, plural, body)

    def delete(self, plural: str, name: str) -> None:
        self.custom.delete_namespaced_custom_object(G, V, self.namespace, plural, name)

    def all_observed(self, plural: str, names: List[str]) -> bool:
        seen = {i["metadata"]["name"]: i for i in self.items(plural)}
        return all(name in seen and (seen[name].get("status") or {}).get("observedGeneration") ==
                   seen[name]["metadata"]["generation"] for name in names)


def install_crds(plane: ControlPlane) -> None:
    from kubernetes import client

    ext = client.ApiextensionsV1Api(plane.api_client())
    names = []
    for path in sorted((REPO / "crds").glob("*.yaml")):
        body = yaml.safe_load(path.read_text())
        names.append(body["metadata"]["name"])
        ext.create_custom_resource_definition(body)

    def established() -> bool:
        for name in names:
            conditions = ext.read_custom_resource_definition(name).status.conditions or []
            if not any(c.type == "Established" and c.status == "True" for c in conditions):
                return False
        return True

    wait(established, 60, "CRDs established")


def start_routers(work: Path, count: int) -> List[Any]:
    from tests.router.routerproc import Router

    routers = []
    for i in range(count):
        directory = work / f"router-{i}"
        directory.mkdir()
        routers.append(Router(directory, router_id=f"R{i}").start())
    return routers


