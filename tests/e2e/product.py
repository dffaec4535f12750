"""Helpers for the product end-to-end tests: the Helm chart installed from this checkout, the
RouterMesh and routing resources through the API, router pods, port-forwards and AMQP traffic.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping

from kubernetes import client

from qdmesh_kubectl.cluster import KubeTarget
from qdmesh_kubectl.forward import KubectlPortForward

from .cluster_access import K8S_VERSION

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "qdmesh"
GROUP, API_VERSION = "qdmesh.io", "v1alpha1"
CRD_PLURALS = ("routermeshes", "linkroutes", "autolinks", "vhostpolicies")


# The kubernetes client's models declare every field Optional; these tests read what a running
# cluster always fills in, so its APIs are used untyped.
def core_api(k8s: Any) -> Any:
    return client.CoreV1Api(k8s)


def apps_api(k8s: Any) -> Any:
    return client.AppsV1Api(k8s)


def extensions_api(k8s: Any) -> Any:
    return client.ApiextensionsV1Api(k8s)


def package_version() -> str:
    """The version the images are tagged with (pyproject.toml, as images/build.sh reads it)."""
    found = re.search(r'^version\s*=\s*"([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M)
    assert found, "no version in pyproject.toml"
    return found.group(1)


def kubectl_binary() -> str:
    """The cluster's own kubectl when the local cluster built one, else kubectl on PATH."""
    cache_dir = Path(os.environ.get("QDMESH_K8S_CACHE", "/var/cache/qdmesh/k8s"))
    cache = cache_dir / K8S_VERSION / "bin" / "kubectl"
    if cache.is_file():
        return str(cache)
    found = shutil.which("kubectl")
    assert found, "kubectl is not on PATH"
    return found


def helm_binary() -> str | None:
    return shutil.which("helm") or ("/usr/local/bin/helm" if Path("/usr/local/bin/helm").is_file() else None)


def run(cmd: List[str], timeout: float = 120, env: Mapping[str, str] | None = None) -> str:
    """Run a command; its output goes into the assertion message when it fails."""
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=dict(env) if env is not None else None)
    assert done.returncode == 0, (f"{' '.join(cmd)} exited {done.returncode}\n"
                                  f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}")
    return done.stdout


def helm_install(helm: str, kubeconfig: Path, release: str, namespace: str, values: Dict[str, str]) -> str:
    cmd = [helm, "install", release, str(CHART), "-n", namespace, "--kubeconfig", str(kubeconfig)]
    for key, value in values.items():
        cmd += ["--set", f"{key}={value}"]
    return run(cmd)


def helm_uninstall(helm: str, kubeconfig: Path, release: str, namespace: str) -> None:
    subprocess.run([helm, "uninstall", release, "-n", namespace, "--kubeconfig", str(kubeconfig), "--wait"],
                   capture_output=True, timeout=120)


def crds_established(k8s: Any) -> bool:
    ext = extensions_api(k8s)
    for plural in CRD_PLURALS:
        try:
            crd = ext.read_custom_resource_definition(f"{plural}.{GROUP}")
        except client.ApiException:
            return False
        if not any(c.type == "Established" and c.status == "True" for c in crd.status.conditions or []):
            return False
    return True


def deployment_ready(k8s: Any, namespace: str, name: str) -> bool:
    try:
        dep = apps_api(k8s).read_namespaced_deployment(name, namespace)
    except client.ApiException:
        return False
    return (dep.status.observed_generation or 0) >= dep.metadata.generation and \
        (dep.status.ready_replicas or 0) == dep.spec.replicas == (dep.status.updated_replicas or 0)


# -- custom resources ----------------------------------------------------------------------------
def create_resource(k8s: Any, namespace: str, plural: str, kind: str, name: str,
                    spec: Dict[str, Any]) -> None:
    body = {"apiVersion": f"{GROUP}/{API_VERSION}", "kind": kind, "metadata": {"name": name}, "spec": spec}
    client.CustomObjectsApi(k8s).create_namespaced_custom_object(GROUP, API_VERSION, namespace, plural, body)


def patch_resource(k8s: Any, namespace: str, plural: str, name: str, patch: Dict[str, Any]) -> None:
    """A JSON merge patch of a custom resource (as ``kubectl patch --type merge``)."""
    client.CustomObjectsApi(k8s).patch_namespaced_custom_object(
        GROUP, API_VERSION, namespace, plural, name, patch, _content_type="application/merge-patch+json")


def apply_resource(k8s: Any, namespace: str, plural: str, kind: str, name: str, spec: Dict[str, Any],
                   manager: str = "qdmesh-e2e") -> Dict[str, Any]:
    """Server-side apply of a custom resource (as ``kubectl apply --server-side``)."""
    body = {"apiVersion": f"{GROUP}/{API_VERSION}", "kind": kind, "metadata": {"name": name}, "spec": spec}
    api: Any = client.CustomObjectsApi(k8s)
    obj: Dict[str, Any] = api.patch_namespaced_custom_object(
        GROUP, API_VERSION, namespace, plural, name, body, field_manager=manager, force=True,
        _content_type="application/apply-patch+yaml")
    return obj


def delete_resource(k8s: Any, namespace: str, plural: str, name: str) -> None:
    client.CustomObjectsApi(k8s).delete_namespaced_custom_object(GROUP, API_VERSION, namespace, plural, name)


def resource_gone(k8s: Any, namespace: str, plural: str, name: str) -> bool:
    try:
        read_resource(k8s, namespace, plural, name)
    except client.ApiException as e:
        if e.status == 404:
            return True
        raise
    return False


def read_resource(k8s: Any, namespace: str, plural: str, name: str) -> Dict[str, Any]:
    api: Any = client.CustomObjectsApi(k8s)
    obj: Dict[str, Any] = api.get_namespaced_custom_object(GROUP, API_VERSION, namespace, plural, name)
    return obj


def condition(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_:
            return cond
    return None


def is_true(obj: Mapping[str, Any], type_: str) -> bool:
    """Condition ``type_`` is True and was computed for the current spec."""
    cond = condition(obj, type_)
    generation = obj["metadata"].get("generation")
    return cond is not None and cond.get("status") == "True" and cond.get("observedGeneration") == generation


def status_summary(obj: Mapping[str, Any]) -> str:
    conds = (obj.get("status") or {}).get("conditions") or []
    return "; ".join(f"{c.get('type')}={c.get('status')} ({c.get('reason')}: {c.get('message')})"
                     for c in conds) or "no status yet"


# -- router pods ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class PodIdentity:
    uid: str
    restarts: int


def router_pods(k8s: Any, namespace: str, mesh: str) -> Dict[str, PodIdentity]:
    """Router pods of ``mesh`` by name: UID and the router container's restart count."""
    pods = core_api(k8s).list_namespaced_pod(namespace, label_selector=f"{GROUP}/mesh={mesh}").items
    found: Dict[str, PodIdentity] = {}
    for pod in pods:
        restarts = sum(s.restart_count for s in pod.status.container_statuses or [])
        found[pod.metadata.name] = PodIdentity(pod.metadata.uid, restarts)
    return found


@contextmanager
def port_forwards(kubeconfig: Path, namespace: str, pods: List[str]) -> Iterator[Dict[str, str]]:
    """``kubectl port-forward`` to port 5672 of each pod (the plugin's own forwarder);
    yields pod name -> ``host:port``."""
    target = KubeTarget(kubeconfig=str(kubeconfig), context=None, namespace=namespace, api=None)
    forward = KubectlPortForward(target, kubectl=kubectl_binary(), timeout=30)
    try:
        yield {pod: forward.open(pod) for pod in pods}
    finally:
        forward.close()


_FORWARDING = re.compile(r"Forwarding from 127\.0\.0\.1:(\d+)")


@contextmanager
def http_forward(kubeconfig: Path, namespace: str, target: str, port: int) -> Iterator[str]:
    """``kubectl port-forward TARGET :PORT`` (``svc/NAME`` or ``pod/NAME``); yields the local
    base URL, http://127.0.0.1:LOCAL."""
    command = [kubectl_binary(), "port-forward", target, f":{port}", "--address", "127.0.0.1",
               "-n", namespace, "--kubeconfig", str(kubeconfig)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # kubectl's first line names the local port (or the error)
        match = _FORWARDING.search(line)
        assert match, f"kubectl port-forward {target}: {line}"
        yield f"http://127.0.0.1:{match.group(1)}"
    finally:
        proc.terminate()
        proc.wait(10)
