"""The cluster itself works: the node is Ready, a pod runs, a Service resolves through CoreDNS and
answers through kube-proxy. Every other e2e test builds on these."""

from __future__ import annotations

import time
import uuid
from typing import Any, Callable

from kubernetes import client

from .kube import (
    blocking_taints,
    busybox_pod,
    describe_namespace,
    describe_nodes,
    eventually,
    pod_phase,
    pod_ready,
)


def test_nodes_ready(core: Any) -> None:
    nodes = core.list_node().items
    assert nodes, "the cluster has no nodes"
    for node in nodes:
        ready = [c.status for c in node.status.conditions if c.type == "Ready"]
        assert ready == ["True"], f"node {node.metadata.name} is not Ready: {node.status.conditions}"
    # (kind's control-plane nodes keep their NoSchedule taint when it has workers.)
    assert any(not blocking_taints(node) for node in nodes), \
        f"no node takes ordinary pods:\n{describe_nodes(core)}"


def test_pod_runs_and_service_resolves_through_dns(
        core: Any, namespace: str, busybox_image: str, timing: Callable[[str, float], None]) -> None:
    token = uuid.uuid4().hex
    labels = {"app": "web"}
    serve = f"mkdir -p /www && echo {token} > /www/index.html && exec httpd -f -p 8080 -h /www"
    server = busybox_pod("web", busybox_image, serve, labels=labels, restart="Always", port=8080)
    started = time.monotonic()
    core.create_namespaced_pod(namespace, server)
    core.create_namespaced_service(namespace, client.V1Service(
        metadata=client.V1ObjectMeta(name="web"),
        spec=client.V1ServiceSpec(selector=labels, ports=[client.V1ServicePort(port=80, target_port=8080)]),
    ))
    describe = lambda: describe_namespace(core, namespace)  # noqa: E731
    eventually(lambda: pod_ready(core, namespace, "web"), 120, "web pod Ready", describe=describe)
    timing("pod created -> Ready", time.monotonic() - started)

    service_ip = core.read_namespaced_service("web", namespace).spec.cluster_ip
    fqdn = f"web.{namespace}.svc.cluster.local"
    # Debian's static busybox is linked with glibc, whose getaddrinfo crashes without NSS modules
    # in the image (so does wget's -T): resolve with nslookup (its own DNS client), then fetch by
    # address. A Service answers once kube-proxy has programmed it, which may be a moment after
    # the pod is Ready: until then a connection to its IP hangs, so each try is bounded (busybox
    # timeout) and retried, within the two minutes the test waits.
    fetch = ("for i in $(seq 1 10); do "
             f"ip=$(timeout 5 nslookup {fqdn} | sed -n 's/^Address: //p' | tail -1); "
             "[ -n \"$ip\" ] && echo \"resolved: $ip\" && timeout 5 wget -q -O - http://$ip:80/ && exit 0; "
             "sleep 1; done; exit 1")
    client_pod = busybox_pod("client", busybox_image, fetch)
    started = time.monotonic()
    core.create_namespaced_pod(namespace, client_pod)
    eventually(lambda: pod_phase(core, namespace, "client") in ("Succeeded", "Failed"), 120,
               "client pod finished", describe=describe)
    timing("client pod: DNS lookup + HTTP through the Service", time.monotonic() - started)
    output = core.read_namespaced_pod_log("client", namespace)
    assert pod_phase(core, namespace, "client") == "Succeeded", f"client failed:\n{output}\n{describe()}"
    assert service_ip in output, f"{fqdn} did not resolve to the Service IP {service_ip}:\n{output}"
    assert token in output, f"the Service did not answer with the server's page:\n{output}"


def test_kubernetes_service_resolves(core: Any, namespace: str, busybox_image: str) -> None:
    api_ip = core.read_namespaced_service("kubernetes", "default").spec.cluster_ip
    core.create_namespaced_pod(namespace, busybox_pod(
        "lookup", busybox_image, "nslookup kubernetes.default.svc.cluster.local"))
    eventually(lambda: pod_phase(core, namespace, "lookup") in ("Succeeded", "Failed"), 120,
               "lookup pod finished", describe=lambda: describe_namespace(core, namespace))
    output = core.read_namespaced_pod_log("lookup", namespace)
    assert pod_phase(core, namespace, "lookup") == "Succeeded", output
    assert api_ip in output, output
