"""A private Kubernetes control plane on loopback for tests: etcd, kube-apiserver and, on request,
kube-controller-manager and kube-scheduler, from the binaries ``tests/e2e/cluster/build.sh`` puts
in ``${QDMESH_K8S_CACHE:-/var/cache/qdmesh/k8s}/<version>/bin``.

No kubelet: pods are stored and scheduled, never run. For running pods use the local cluster
(``tests/e2e/cluster/local-cluster.sh``).
"""

from __future__ import annotations

import os
import ssl
import urllib.request
from pathlib import Path
from typing import Any, List, Sequence

from .pki import make_pki, write_kubeconfig
from .processes import LoggedProcess, free_port, wait_until

K8S_VERSION = os.environ.get("QDMESH_K8S_VERSION", "v1.36.3")
APISERVER_BINARIES = ("etcd", "kube-apiserver")
CONTROLLER_BINARIES = ("kube-controller-manager", "kube-scheduler")
SERVICE_CIDR = "10.0.0.0/24"
START_TIMEOUT = float(os.environ.get("QDMESH_KUBE_START_TIMEOUT", "120"))


def k8s_bin_dir() -> Path:
    """Where build.sh puts the binaries for ``K8S_VERSION``."""
    root = Path(os.environ.get("QDMESH_K8S_CACHE", "/var/cache/qdmesh/k8s"))
    return root / K8S_VERSION / "bin"


def missing_binaries(names: Sequence[str] = APISERVER_BINARIES) -> List[str]:
    """Which of ``names`` are not built yet (empty when the fixture can run)."""
    return [name for name in names if not os.access(k8s_bin_dir() / name, os.X_OK)]


class ControlPlane:
    """etcd + kube-apiserver on free loopback ports; ``start_controllers`` adds the rest.

    ``server`` is the API URL and ``kubeconfig`` the path of an admin (system:masters)
    kubeconfig; ``pki`` holds the CA and keys.
    """

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.bin = k8s_bin_dir()
        self.pki = make_pki(workdir / "pki", ips=("127.0.0.1", "10.0.0.1"))
        self.port = free_port()
        self.server = f"https://127.0.0.1:{self.port}"
        self.kubeconfig = str(write_kubeconfig(workdir / "admin.kubeconfig", self.server, self.pki,
                                               "admin", "admin"))
        self.processes: List[LoggedProcess] = []
        self.controllers_running = False

    def _start(self, name: str, argv: List[str]) -> LoggedProcess:
        proc = LoggedProcess(name, [str(self.bin / name), *argv], self.workdir / f"{name}.log")
        self.processes.append(proc)
        return proc

    def start(self) -> None:
        client_port, peer_port = free_port(), free_port()
        etcd_url = f"http://127.0.0.1:{client_port}"
        self._start("etcd", [
            "--name=qdmesh-test", f"--data-dir={self.workdir / 'etcd'}",
            f"--listen-client-urls={etcd_url}", f"--advertise-client-urls={etcd_url}",
            f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}",
            f"--initial-cluster=qdmesh-test=http://127.0.0.1:{peer_port}",
            # Test data is thrown away: skipping fsync makes writes cheap on a shared disk.
            "--unsafe-no-fsync", "--log-level=warn",
        ])
        pki = self.pki
        self._start("kube-apiserver", [
            f"--etcd-servers={etcd_url}", "--bind-address=127.0.0.1", f"--secure-port={self.port}",
            "--advertise-address=127.0.0.1",
            # The kubernetes Service cannot point at a loopback address: do not reconcile it.
            "--endpoint-reconciler-type=none",
            f"--tls-cert-file={pki / 'apiserver.crt'}", f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--client-ca-file={pki / 'ca.crt'}",
            f"--service-account-key-file={pki / 'service-account.pub'}",
            f"--service-account-signing-key-file={pki / 'service-account.key'}",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-cluster-ip-range={SERVICE_CIDR}", "--authorization-mode=RBAC",
            "--allow-privileged=true", f"--cert-dir={self.workdir / 'apiserver-certs'}",
            "--v=1",
        ])
        wait_until(self.ready, START_TIMEOUT, "kube-apiserver /readyz", watched=self.processes)

    def start_controllers(self) -> None:
        """Add kube-controller-manager (garbage collector, StatefulSet, Deployment... controllers)
        and kube-scheduler; idempotent."""
        if self.controllers_running:
            return
        # --secure-port=0: neither serves HTTPS (nothing here asks them), so no port can clash.
        pki = self.pki
        cm_config = write_kubeconfig(self.workdir / "controller-manager.kubeconfig", self.server, pki,
                                     "controller-manager", "controller-manager")
        self._start("kube-controller-manager", [
            f"--kubeconfig={cm_config}", f"--authentication-kubeconfig={cm_config}",
            f"--authorization-kubeconfig={cm_config}",
            "--secure-port=0", "--leader-elect=false",
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={pki / 'service-account.key'}",
            f"--root-ca-file={pki / 'ca.crt'}",
            f"--cluster-signing-cert-file={pki / 'ca.crt'}", f"--cluster-signing-key-file={pki / 'ca.key'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}", "--controllers=*",
            # Tests want owner-reference deletion and StatefulSet pods to happen promptly.
            "--concurrent-gc-syncs=5", "--v=1",
        ])
        sched_config = write_kubeconfig(self.workdir / "scheduler.kubeconfig", self.server, pki,
                                        "scheduler", "scheduler")
        self._start("kube-scheduler", [
            f"--kubeconfig={sched_config}", f"--authentication-kubeconfig={sched_config}",
            f"--authorization-kubeconfig={sched_config}",
            "--secure-port=0", "--leader-elect=false", "--v=1",
        ])
        self.controllers_running = True

    def ready(self) -> bool:
        context = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        context.load_cert_chain(str(self.pki / "admin.crt"), str(self.pki / "admin.key"))
        try:
            with urllib.request.urlopen(f"{self.server}/readyz", context=context, timeout=5) as reply:
                return bool(reply.status == 200)
        except OSError:
            return False

    def requests_made(self, verb: str, resource: str = "") -> int:
        """How many requests of ``verb`` (GET, LIST, WATCH, PATCH, APPLY for server-side
        apply...) on ``resource`` (any, if empty) the API server has answered, from its own
        metrics."""
        context = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        context.load_cert_chain(str(self.pki / "admin.crt"), str(self.pki / "admin.key"))
        with urllib.request.urlopen(f"{self.server}/metrics", context=context, timeout=30) as reply:
            text = reply.read().decode()
        total = 0
        for line in text.splitlines():
            if (line.startswith("apiserver_request_total{") and f'verb="{verb}"' in line
                    and (not resource or f'resource="{resource}"' in line)):
                total += int(float(line.rsplit(" ", 1)[1]))
        return total

    def api_client(self) -> Any:
        """A ``kubernetes.client.ApiClient`` logged in as admin."""
        from kubernetes import config

        return config.new_client_from_config(config_file=self.kubeconfig)

    def env(self) -> dict:
        """Environment for a child process (kopf, kubectl) that should use this cluster."""
        # No grant redemption server unless a test asks for one (--grant-server-port): operator
        # processes of tests running side by side would otherwise all take its one port.
        return {**os.environ, "KUBECONFIG": self.kubeconfig, "QDMESH_GRANT_SERVER_PORT": "0"}

    def stop(self) -> None:
        for proc in reversed(self.processes):
            proc.stop()
        self.processes.clear()
        self.controllers_running = False


def start_control_plane(workdir: Path, controllers: bool = False) -> ControlPlane:
    """Start a control plane in ``workdir``; stops whatever started if any part fails."""
    plane = ControlPlane(workdir)
    try:
        plane.start()
        if controllers:
            plane.start_controllers()
    except BaseException:
        plane.stop()
        raise
    return plane


def describe_missing(missing: Sequence[str]) -> str:
    names = ", ".join(missing)
    return f"Kubernetes binaries ({names}) in {k8s_bin_dir()}: run tests/e2e/cluster/build.sh"
