"""The Kubernetes objects of a RouterMesh, as plain dicts ready for server-side apply.

Built in Python rather than templated YAML: these are data structures, and building them as
data keeps every value typed (no quoting rules, no indentation bugs)."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping

from .. import contract
from ..desired.state import TLS_DIR
from ..links.entities import volume as links_volume_of
from ..model.mesh import MeshSpec
from ..operations import RESTARTED_AT_ANNOTATION, reasons
from ..tls.names import CERT_ANNOTATION, MOUNTED_SECRETS_ANNOTATION, inter_router_secret  # noqa: F401
from .link_access import link_objects, link_volume

RESTART_HASH_ANNOTATION = "qdmesh.io/restart-hash"
#: Kubernetes' default terminationGracePeriodSeconds, which the router's default drain timeout
#: (20 s) fits with room for its stop.
DEFAULT_GRACE_SECONDS = 30
#: How a router learns a drain timeout other than its default: an environment variable rather
#: than ``--drain-timeout``, which a router image from before the option would refuse.
DRAIN_TIMEOUT_ENV = reasons.DRAIN_TIMEOUT_ENV
INTER_ROUTER_TLS_DIR = "/etc/qdmesh/inter-router"


owner_reference = contract.owner_reference  # where the tests and older callers look for it


def _metadata(mesh: MeshSpec, name: str, owner: Dict[str, Any] | None) -> Dict[str, Any]:
    meta: Dict[str, Any] = {"name": name, "namespace": mesh.namespace, "labels": contract.labels(mesh.name)}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return meta


def config_map(mesh: MeshSpec, confs: Dict[str, str], owner: Dict[str, Any] | None) -> Dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": _metadata(mesh, contract.config_map(mesh.name), owner),
            "data": dict(sorted(confs.items()))}


def headless_service(mesh: MeshSpec, owner: Dict[str, Any] | None) -> Dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": _metadata(mesh, contract.headless_service(mesh.name), owner),
            "spec": {"clusterIP": "None", "publishNotReadyAddresses": True,
                     "selector": contract.selector(mesh.name),
                     "ports": [{"name": "inter-router", "port": contract.INTER_ROUTER_PORT,
                                "targetPort": "inter-router"},
                               {"name": "amqp", "port": contract.AMQP_PORT, "targetPort": "amqp"}]}}


def _service_port(name: str, port: int, node_port: int | None = None) -> Dict[str, Any]:
    out: Dict[str, Any] = {"name": name, "port": port, "targetPort": port, "protocol": "TCP"}
    if node_port is not None:
        out["nodePort"] = node_port
    return out


def client_services(mesh: MeshSpec, owner: Dict[str, Any] | None) -> List[Dict[str, Any]]:
    """Service ``M`` for amqp and every ClusterIP listener; ``M-<listener>`` for each listener
    exposed as NodePort or LoadBalancer."""
    ports = [_service_port("amqp", contract.AMQP_PORT)]
    ports += [_service_port(x.name, x.port) for x in mesh.listeners if x.expose == "ClusterIP"]
    services = [{"apiVersion": "v1", "kind": "Service", "metadata": _metadata(mesh, mesh.name, owner),
                 "spec": {"type": "ClusterIP", "selector": contract.selector(mesh.name), "ports": ports}}]
    for x in mesh.listeners:
        if x.expose != "ClusterIP":
            services.append({"apiVersion": "v1", "kind": "Service",
                             "metadata": _metadata(mesh, f"{mesh.name}-{x.name}", owner),
                             "spec": {"type": x.expose, "selector": contract.selector(mesh.name),
                                      "ports": [_service_port(x.name, x.port, x.node_port)]}})
    return services


def pod_disruption_budget(mesh: MeshSpec, owner: Dict[str, Any] | None) -> Dict[str, Any]:
    """spec.disruptionBudget (maxUnavailable 1 by default): how many routers a node drain may
    evict at once.  Server-side apply replaces the field the operator no longer sets, so
    switching between maxUnavailable and minAvailable leaves only the new one."""
    budget = mesh.disruption_budget
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": _metadata(mesh, mesh.name, owner),
            "spec": {budget.key: budget.value, "selector": {"matchLabels": contract.selector(mesh.name)}}}


def drain_timeout(grace_seconds: int) -> int:
    """Seconds a router drains for on SIGTERM: its grace period less 10 s for the process to
    close its connections and exit before the kubelet kills it; at least 1."""
    return max(grace_seconds - 10, 1)


def router_command(config: str) -> List[str]:
    """The router container's command line for config file ``config``."""
    return ["qdrouterd", "-c", config]


def drain_env(grace_seconds: int) -> List[Dict[str, Any]]:
    """The router container's drain timeout, when its grace period is not the default (with
    the default the pod template stays as earlier operators wrote it: no roll on upgrade)."""
    if grace_seconds == DEFAULT_GRACE_SECONDS:
        return []
    return [{"name": DRAIN_TIMEOUT_ENV, "value": str(drain_timeout(grace_seconds))}]


def certificate(mesh: MeshSpec, owner: Dict[str, Any] | None) -> Dict[str, Any] | None:
    """A cert-manager v1 Certificate for mutual TLS between routers (mode CertManager)."""
    tls = mesh.inter_router_tls
    if tls.mode != "CertManager":
        return None
    domain = f"{contract.headless_service(mesh.name)}.{mesh.namespace}.svc"
    return {"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
            "metadata": _metadata(mesh, f"{mesh.name}-inter-router", owner),
            "spec": {"secretName": inter_router_secret(mesh), "commonName": domain,
                     "dnsNames": [f"*.{domain}", f"*.{domain}.cluster.local"],
                     "usages": ["server auth", "client auth"],
                     "issuerRef": {"name": tls.issuer_name, "kind": tls.issuer_kind,
                                   "group": "cert-manager.io"}}}


def stateful_set(mesh: MeshSpec, owner: Dict[str, Any] | None, *, partition: int = 0,
                 pod_annotations: Mapping[str, str] | None = None,
                 restarted_at: str | None = None, links_volume: bool = False) -> Dict[str, Any]:
    """``pod_annotations``: the certificate stage's (tls/resolve.py), in the pod template.
    ``links_volume``: mount the Secret of the mesh's MeshLinks (links/entities.py)."""
    env: List[Dict[str, Any]] = [{"name": "POD_NAME",
                                  "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                                 {"name": "POD_NAMESPACE",
                                  "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}]
    for c in mesh.connectors:
        if c.sasl_password is not None:
            env.append({"name": c.password_env, "valueFrom": {"secretKeyRef": {
                "name": c.sasl_password.name, "key": c.sasl_password.key}}})
    mounts: List[Dict[str, Any]] = [{"name": "config", "mountPath": contract.CONFIG_DIR, "readOnly": True}]
    volumes: List[Dict[str, Any]] = [{"name": "config",
                                      "configMap": {"name": contract.config_map(mesh.name)}}]
    secrets = mesh.tls_secrets()
    for i, secret in enumerate(secrets):
        mounts.append({"name": f"tls-{i}", "mountPath": f"{TLS_DIR}/{secret}", "readOnly": True})
        volumes.append({"name": f"tls-{i}", "secret": {"secretName": secret}})
    ir_secret = inter_router_secret(mesh)
    if ir_secret:
        mounts.append({"name": "inter-router-tls", "mountPath": INTER_ROUTER_TLS_DIR, "readOnly": True})
        volumes.append({"name": "inter-router-tls", "secret": {"secretName": ir_secret}})
    if links_volume:
        volume, mount = links_volume_of(mesh.name)
        volumes.append(volume)
        mounts.append(mount)
    link = link_volume(mesh)
    if link is not None:
        mounts.append(link[0])
        volumes.append(link[1])
    ports = [{"name": "amqp", "containerPort": contract.AMQP_PORT},
             {"name": "inter-router", "containerPort": contract.INTER_ROUTER_PORT},
             {"name": "management", "containerPort": contract.MANAGEMENT_PORT},
             {"name": "http", "containerPort": contract.HTTP_PORT}]
    ports += [{"name": x.name, "containerPort": x.port} for x in mesh.listeners]
    if mesh.link_access.enabled:
        ports.append({"name": "link", "containerPort": mesh.link_access.port})
        ports.append({"name": "link-edge", "containerPort": mesh.link_access.edge_port})
    container: Dict[str, Any] = {
        "name": "router", "image": mesh.image, "imagePullPolicy": "IfNotPresent",
        "command": router_command(f"{contract.CONFIG_DIR}/$(POD_NAME).conf"),
        "env": env + drain_env(mesh.pod.termination_grace_seconds), "ports": ports, "volumeMounts": mounts,
        # /readyz: management answers and the router reaches a peer, so a rolling update waits
        # for each router to rejoin the mesh before it moves on to the next.
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": "http"}, "periodSeconds": 2,
                           "failureThreshold": 3},
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 10,
                          "failureThreshold": 6, "initialDelaySeconds": 5},
        "securityContext": {"runAsNonRoot": True, "readOnlyRootFilesystem": True,
                            "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
    }
    if mesh.pod.resources:
        container["resources"] = mesh.pod.resources
    pod_spec: Dict[str, Any] = {"containers": [container], "volumes": volumes,
                                "terminationGracePeriodSeconds": mesh.pod.termination_grace_seconds,
                                "enableServiceLinks": False}
    for key, value in (("affinity", mesh.pod.affinity), ("tolerations", mesh.pod.tolerations),
                       ("nodeSelector", mesh.pod.node_selector),
                       ("topologySpreadConstraints", mesh.pod.topology_spread),
                       ("priorityClassName", mesh.pod.priority_class),
                       ("imagePullSecrets", mesh.pod.pull_secrets())):
        if value:
            pod_spec[key] = value
    annotations = {**mesh.pod.annotations, RESTART_HASH_ANNOTATION: mesh.restart_hash(),
                   **(pod_annotations or {})}
    if restarted_at:
        annotations[RESTARTED_AT_ANNOTATION] = restarted_at
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": _metadata(mesh, mesh.name, owner),
            "spec": {"serviceName": contract.headless_service(mesh.name), "replicas": mesh.size,
                     "podManagementPolicy": "Parallel",
                     "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": partition}},
                     "selector": {"matchLabels": contract.selector(mesh.name)},
                     "template": {"metadata": {"labels": {**mesh.pod.labels, **contract.labels(mesh.name)},
                                               "annotations": annotations},
                                  "spec": pod_spec}}}


def _console_pod_spec(mesh: MeshSpec, container: Dict[str, Any]) -> Dict[str, Any]:
    """The console runs the routers' image, so it pulls with their secrets."""
    spec: Dict[str, Any] = {"containers": [container], "enableServiceLinks": False}
    if mesh.pod.image_pull_secrets:
        spec["imagePullSecrets"] = mesh.pod.pull_secrets()
    return spec


def console_objects(mesh: MeshSpec, owner: Dict[str, Any] | None) -> List[Dict[str, Any]]:
    """spec.console: a Deployment running ``qdmesh console`` (from the router image, which has
    the command) against the mesh's client Service, and a ClusterIP Service ``M-console`` for it.
    The console finds every router through the one it reaches; it only reads management."""
    name = contract.console(mesh.name)
    labels = contract.console_labels(mesh.name)
    meta: Dict[str, Any] = {"name": name, "namespace": mesh.namespace, "labels": labels}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    entry = f"{mesh.name}.{mesh.namespace}.svc:{contract.AMQP_PORT}"
    container: Dict[str, Any] = {
        "name": "console", "image": mesh.image, "imagePullPolicy": "IfNotPresent",
        "command": ["qdmesh", "console", "--router", entry, "--host", "0.0.0.0",
                    "--port", str(contract.CONSOLE_PORT), "--interval", str(mesh.console.interval)],
        "ports": [{"name": "http", "containerPort": contract.CONSOLE_PORT}],
        "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 5},
        "livenessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 10,
                          "failureThreshold": 6},
        "securityContext": {"runAsNonRoot": True, "readOnlyRootFilesystem": True,
                            "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
    }
    if mesh.console.resources:
        container["resources"] = mesh.console.resources
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
                  "spec": {"replicas": 1, "selector": {"matchLabels": contract.console_selector(mesh.name)},
                           "template": {"metadata": {"labels": dict(labels)},
                                        "spec": _console_pod_spec(mesh, container)}}}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": dict(meta),
               "spec": {"type": "ClusterIP", "selector": contract.console_selector(mesh.name),
                        "ports": [{"name": "http", "port": contract.CONSOLE_PORT, "targetPort": "http",
                                   "protocol": "TCP"}]}}
    return [deployment, service]


def with_template_hash(sts: Dict[str, Any]) -> Dict[str, Any]:
    """The StatefulSet with the hash of its pod template in an annotation (how the operator
    notices, later, that the template changed and a rolling restart is due)."""
    from ..rolling import TEMPLATE_HASH, template_hash

    sts["metadata"].setdefault("annotations", {})[TEMPLATE_HASH] = template_hash(sts)
    return sts


def mesh_objects(mesh: MeshSpec, confs: Dict[str, str], *, owner: Dict[str, Any] | None,
                 pod_annotations: Mapping[str, str] | None = None,
                 restarted_at: str | None = None, links_volume: bool = False) -> List[Dict[str, Any]]:
    """Every object of the mesh, in the order to apply them (config before the pods using it).
    The Secrets of mode Managed are not among them: tls.secrets makes those, once."""
    objects = [config_map(mesh, confs, owner), headless_service(mesh, owner), *client_services(mesh, owner),
               pod_disruption_budget(mesh, owner)]
    cert = certificate(mesh, owner)
    if cert is not None:
        objects.append(cert)
    objects.extend(link_objects(mesh, owner))
    if mesh.console.enabled:
        objects.extend(console_objects(mesh, owner))
    objects.append(with_template_hash(stateful_set(mesh, owner, pod_annotations=pod_annotations,
                                                   restarted_at=restarted_at, links_volume=links_volume)))
    return objects
