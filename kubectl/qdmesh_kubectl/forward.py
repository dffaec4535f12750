"""Port-forwards to the routers' AMQP port (5672) with `kubectl port-forward`: no exec into pods,
nothing needed in the image, and kubectl's own authentication (exec plugins, OIDC) just works."""

from __future__ import annotations

import queue
import re
import subprocess
import tempfile
import threading
import time
from typing import IO, Dict, List

from .cluster import KubeTarget
from .errors import PluginError

AMQP_PORT = 5672
_FORWARDING = re.compile(r"Forwarding from 127\.0\.0\.1:(\d+) -> \d+")


class KubectlPortForward:
    """One `kubectl port-forward pod/NAME :5672` per router; ``open`` returns host:port."""

    def __init__(self, target: KubeTarget, kubectl: str = "kubectl", timeout: float = 20.0) -> None:
        self.target = target
        self.kubectl = kubectl
        self.timeout = timeout
        self._procs: List[subprocess.Popen] = []

    def _command(self, pod: str) -> List[str]:
        cmd = [self.kubectl, "port-forward", f"pod/{pod}", f":{AMQP_PORT}", "--address", "127.0.0.1",
               "-n", self.target.namespace]
        if self.target.kubeconfig:
            cmd += ["--kubeconfig", self.target.kubeconfig]
        if self.target.context:
            cmd += ["--context", self.target.context]
        return cmd

    def open(self, pod: str) -> str:
        stderr = tempfile.TemporaryFile()
        try:
            proc = subprocess.Popen(self._command(pod), stdout=subprocess.PIPE, stderr=stderr,
                                    stdin=subprocess.DEVNULL, text=True)
        except FileNotFoundError:
            raise PluginError(f"{self.kubectl!r} not found on PATH: kubectl qdstat forwards ports with it"
                              ) from None
        self._procs.append(proc)
        port = _wait_for_port(proc, self.timeout)
        if port is None:
            proc.kill()
            proc.wait()
            stderr.seek(0)
            raise _forward_error(pod, stderr.read().decode(errors="replace"), self.target.namespace)
        return f"127.0.0.1:{port}"

    def close(self) -> None:
        for proc in self._procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self._procs:
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._procs.clear()

    def __enter__(self) -> KubectlPortForward:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _wait_for_port(proc: subprocess.Popen, timeout: float) -> int | None:
    """The local port kubectl announces, or None if it exits (or stays silent) first."""
    lines: queue.Queue = queue.Queue()
    out: IO[str] = proc.stdout  # type: ignore[assignment]

    def pump() -> None:
        for line in out:  # keep draining so kubectl never blocks on a full pipe
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            return None
        if line is None:
            return None
        match = _FORWARDING.search(line)
        if match:
            return int(match.group(1))


def _forward_error(pod: str, stderr: str, namespace: str) -> PluginError:
    text = " ".join(stderr.split())
    if "forbidden" in text.lower():
        return PluginError(f"RBAC forbids port-forward to pod {pod!r} in namespace {namespace!r} "
                           f"(needs 'create' on 'pods/portforward'): {text}")
    return PluginError(f"port-forward to pod {pod!r} failed: {text or 'kubectl port-forward gave no port'}")


Forwards = Dict[str, str]
"""Router pod name -> host:port of its forwarded AMQP port."""
