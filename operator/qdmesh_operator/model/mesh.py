"""RouterMesh: the typed spec, checked field by field."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Mapping

from .. import contract
from . import topology
from .errors import SpecError
from .fields import Fields, exactly_one
from .link_access import LinkAccess, parse_link_access
from .operations import DisruptionBudget, parse_disruption_budget, parse_maintenance_windows
from .values import check_image, check_resources

NAME_PATTERN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DISTRIBUTIONS = ("multicast", "closest", "balanced", "unavailable")
EXPOSE_TYPES = ("ClusterIP", "NodePort", "LoadBalancer")
TLS_MODES = ("Managed", "Disabled", "Secret", "CertManager")
RESERVED_PORTS = (contract.INTER_ROUTER_PORT, contract.HTTP_PORT, contract.MANAGEMENT_PORT)
MAX_MESH_NAME = 40  # pod names M-NN and Service M-routers stay within DNS label limits
_SECRET_NAME = r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?"  # a Secret's name: a DNS subdomain


@dataclass
class RouterSettings:
    hello_interval: int = 1
    hello_max_age: int = 3
    ra_interval: int = 30
    ra_interval_flux: int = 4
    remote_ls_max_age: int = 60
    worker_threads: int = 4


@dataclass
class InterRouterTls:
    mode: str = "Managed"
    secret_name: str | None = None
    issuer_name: str | None = None
    issuer_kind: str = "Issuer"

    @property
    def enabled(self) -> bool:
        return self.mode != "Disabled"


@dataclass
class ListenerSpec:
    name: str
    port: int
    role: str = "normal"
    sasl_mechanisms: str = "ANONYMOUS"
    authenticate_peer: bool = False
    tls_secret: str | None = None
    require_ssl: bool = False
    expose: str = "ClusterIP"
    node_port: int | None = None


@dataclass
class SecretKeyRef:
    name: str
    key: str


@dataclass
class ConnectorSpec:
    name: str
    host: str
    port: int
    role: str = "route-container"
    tls_secret: str | None = None
    verify_hostname: bool = True
    sasl_mechanisms: str | None = None
    sasl_username: str | None = None
    sasl_password: SecretKeyRef | None = None

    @property
    def password_env(self) -> str:
        """The environment variable the router pod gets the SASL password in."""
        return "QDMESH_SASL_PASSWORD_" + self.name.upper().replace("-", "_")


@dataclass
class AddressSpec:
    prefix: str | None = None
    pattern: str | None = None
    distribution: str = "balanced"
    waypoint: bool = False
    ingress_phase: int | None = None
    egress_phase: int | None = None
    priority: int | None = None

    @property
    def key(self) -> str:
        return f"prefix:{self.prefix}" if self.prefix is not None else f"pattern:{self.pattern}"


@dataclass
class PolicySpec:
    max_connections: int | None = None
    max_message_size: int | None = None
    enable_vhost_policy: bool = False
    enable_vhost_name_patterns: bool = False
    default_vhost: str | None = None


@dataclass
class PodSettings:
    resources: Dict[str, Any] = field(default_factory=dict)
    affinity: Dict[str, Any] = field(default_factory=dict)
    tolerations: List[Any] = field(default_factory=list)
    node_selector: Dict[str, str] = field(default_factory=dict)
    topology_spread: List[Any] = field(default_factory=list)
    labels: Dict[str, str] = field(default_factory=dict)
    annotations: Dict[str, str] = field(default_factory=dict)
    priority_class: str | None = None
    # Secrets (kubernetes.io/dockerconfigjson) for pulling spec.image from a private registry.
    image_pull_secrets: List[str] = field(default_factory=list)
    #: How long a router has to stop when its pod is deleted (it drains meanwhile).
    termination_grace_seconds: int = 30

    def pull_secrets(self) -> List[Dict[str, str]]:
        """The pod spec's imagePullSecrets."""
        return [{"name": name} for name in self.image_pull_secrets]


#: Operator: the operator probes pairs of routers through the mesh at each drift check.
#: Routers: each router measures its neighbours (canaryIntervalSeconds) and the operator reads
#: what they measured, probing nothing itself.
CANARY_MODES = ("Operator", "Routers")


@dataclass
class ConsoleSettings:
    """spec.console: the mesh's web console (``qdmesh console``) in a pod of its own."""
    enabled: bool = False
    interval: int = 2
    resources: Dict[str, Any] = field(default_factory=dict)


@dataclass
class EdgeGroupSpec:
    """spec.edgeGroups[]: edge routers run as a Deployment of ``size`` pods, or (``per_node``)
    as a DaemonSet with one on every node its pod settings allow."""

    name: str
    size: int | None = None
    per_node: bool = False
    pod: PodSettings = field(default_factory=PodSettings)


@dataclass
class MeshSpec:
    name: str
    namespace: str
    size: int = 3
    image: str = ""
    topology: str = topology.FULL_MESH
    degree: int = 3
    router: RouterSettings = field(default_factory=RouterSettings)
    inter_router_tls: InterRouterTls = field(default_factory=InterRouterTls)
    listeners: List[ListenerSpec] = field(default_factory=list)
    connectors: List[ConnectorSpec] = field(default_factory=list)
    addresses: List[AddressSpec] = field(default_factory=list)
    policy: PolicySpec | None = None
    pod: PodSettings = field(default_factory=PodSettings)
    console: ConsoleSettings = field(default_factory=ConsoleSettings)
    #: spec.canary.mode: who measures round trips between routers (docs/operator.md, The canary).
    canary_mode: str = "Operator"
    edge_groups: List[EdgeGroupSpec] = field(default_factory=list)
    disruption_budget: DisruptionBudget = field(default_factory=DisruptionBudget)
    #: Cron expressions (operations/windows.py); empty: a due rolling restart starts at once.
    maintenance_windows: List[str] = field(default_factory=list)
    #: spec.linkAccess: routers of other clusters' meshes may link here (docs/multicluster.md).
    link_access: LinkAccess = field(default_factory=LinkAccess)

    def router_ids(self) -> List[str]:
        return [contract.router_id(self.name, i) for i in range(self.size)]

    def tls_secrets(self) -> List[str]:
        """Secrets mounted for listener and connector TLS, each once."""
        names = {x.tls_secret for x in self.listeners if x.tls_secret}
        names |= {x.tls_secret for x in self.connectors if x.tls_secret}
        return sorted(names)

    def connector(self, name: str) -> ConnectorSpec | None:
        return next((c for c in self.connectors if c.name == name), None)

    def restart_hash(self) -> str:
        """Hash of the settings that only take effect when a router restarts (the static part
        of the config file); the pod template carries it, so a change rolls the routers."""
        static = {"router": asdict(self.router), "policy": asdict(self.policy) if self.policy else None,
                  "interRouterTls": asdict(self.inter_router_tls)}
        return hashlib.sha256(json.dumps(static, sort_keys=True).encode()).hexdigest()[:16]


def parse_mesh(name: str, namespace: str, spec: Mapping[str, Any],
               pinned_image: str | None = None) -> MeshSpec:
    """The MeshSpec of RouterMesh ``name``; raises SpecError naming the first bad field.
    ``pinned_image``: the image the mesh runs already (its status), kept when spec.image is
    not given, so a new operator version with another default image does not roll it."""
    if len(name) > MAX_MESH_NAME:
        raise SpecError("metadata.name", f"must be at most {MAX_MESH_NAME} characters")
    f = Fields(spec, "spec")
    mesh = MeshSpec(name=name, namespace=namespace)
    mesh.size = f.need_integer("size", default=3, minimum=1, maximum=64)
    mesh.image = check_image("spec.image", f.text("image", max_length=512) or pinned_image
                             or contract.default_router_image())
    topo = f.sub("topology")
    mesh.topology = topo.choice("type", (topology.FULL_MESH, topology.REDUNDANT),
                                default=topology.FULL_MESH) or topology.FULL_MESH
    mesh.degree = topo.need_integer("degree", default=3, minimum=2, maximum=16)
    if mesh.topology == topology.REDUNDANT and mesh.degree >= mesh.size:
        raise SpecError("spec.topology.degree", f"must be smaller than spec.size ({mesh.size})")
    mesh.router = _router_settings(f.sub("router"))
    mesh.inter_router_tls = _inter_router_tls(f.sub("interRouter").sub("tls"))
    mesh.listeners = _listeners(f)
    mesh.connectors = _connectors(f)
    mesh.addresses = _addresses(f)
    if f.has("policy"):
        p = f.sub("policy")
        mesh.policy = PolicySpec(
            max_connections=p.integer("maxConnections", minimum=0, maximum=65535),
            max_message_size=p.integer("maxMessageSize", minimum=0),
            enable_vhost_policy=bool(p.boolean("enableVhostPolicy", False)),
            enable_vhost_name_patterns=bool(p.boolean("enableVhostNamePatterns", False)),
            default_vhost=p.text("defaultVhost"))
    mesh.pod = parse_pod_settings(f.sub("pod"), name)
    console = f.sub("console")
    mesh.console = ConsoleSettings(
        enabled=bool(console.boolean("enabled", False)),
        interval=console.need_integer("intervalSeconds", default=2, minimum=1, maximum=60),
        resources=check_resources(console.at("resources"), console.mapping("resources")))
    mesh.canary_mode = f.sub("canary").choice("mode", CANARY_MODES, default="Operator") or "Operator"
    mesh.edge_groups = parse_edge_groups(f, name)
    mesh.disruption_budget = parse_disruption_budget(f.sub("disruptionBudget"))
    mesh.maintenance_windows = parse_maintenance_windows(f)
    mesh.link_access = parse_link_access(f.sub("linkAccess"), {
        contract.AMQP_PORT, *RESERVED_PORTS, *(x.port for x in mesh.listeners)})
    exposed = {x.name for x in mesh.listeners if x.expose != "ClusterIP"}
    for i, group in enumerate(mesh.edge_groups):
        if f"edge-{group.name}" in exposed:  # both would be Service <mesh>-edge-<group>
            raise SpecError(f"spec.edgeGroups[{i}].name", f"its Service {name}-edge-{group.name} would be "
                            f"the one of listener 'edge-{group.name}' (exposed as NodePort or LoadBalancer)")
    return mesh


def parse_pod_settings(pod: Fields, mesh_name: str) -> PodSettings:
    """spec.pod, and each edge group's pod: the same settings for every router pod."""
    settings = PodSettings(
        resources=check_resources(pod.at("resources"), pod.mapping("resources")),
        affinity=pod.mapping("affinity"),
        tolerations=pod.raw_list("tolerations"), node_selector=pod.string_map("nodeSelector"),
        topology_spread=pod.raw_list("topologySpreadConstraints"), labels=pod.string_map("labels"),
        annotations=pod.string_map("annotations"), priority_class=pod.text("priorityClassName"),
        image_pull_secrets=[item.need_text("name", pattern=_SECRET_NAME)
                            for item in pod.objects("imagePullSecrets", max_items=16)],
        termination_grace_seconds=pod.need_integer("terminationGracePeriodSeconds", default=30,
                                                   minimum=1, maximum=3600))
    for key in contract.labels(mesh_name):
        if key in settings.labels:
            raise SpecError(f"{pod.at('labels')}.{key}", "is set by the operator and cannot be overridden")
    return settings


def _router_settings(r: Fields) -> RouterSettings:
    s = RouterSettings(
        hello_interval=r.need_integer("helloIntervalSeconds", default=1, minimum=1, maximum=60),
        hello_max_age=r.need_integer("helloMaxAgeSeconds", default=3, minimum=2, maximum=600),
        ra_interval=r.need_integer("raIntervalSeconds", default=30, minimum=1, maximum=3600),
        ra_interval_flux=r.need_integer("raIntervalFluxSeconds", default=4, minimum=1, maximum=600),
        remote_ls_max_age=r.need_integer("remoteLsMaxAgeSeconds", default=60, minimum=5, maximum=3600),
        worker_threads=r.need_integer("workerThreads", default=4, minimum=1, maximum=64))
    if s.hello_max_age <= s.hello_interval:
        raise SpecError("spec.router.helloMaxAgeSeconds", "must be larger than helloIntervalSeconds")
    if s.ra_interval < s.ra_interval_flux:
        raise SpecError("spec.router.raIntervalSeconds", "must be at least raIntervalFluxSeconds")
    return s


def _inter_router_tls(t: Fields) -> InterRouterTls:
    tls = InterRouterTls(mode=t.choice("mode", TLS_MODES, default="Managed") or "Managed",
                         secret_name=t.text("secretName"))
    if tls.mode == "Secret" and not tls.secret_name:
        raise SpecError("spec.interRouter.tls.secretName", "is required with mode Secret")
    if tls.mode == "CertManager":
        issuer = t.sub("issuerRef")
        if not t.has("issuerRef"):
            raise SpecError("spec.interRouter.tls.issuerRef", "is required with mode CertManager")
        tls.issuer_name = issuer.need_text("name")
        tls.issuer_kind = issuer.choice("kind", ("Issuer", "ClusterIssuer"), default="Issuer") or "Issuer"
    return tls


def _listeners(f: Fields) -> List[ListenerSpec]:
    out: List[ListenerSpec] = []
    ports = {contract.AMQP_PORT: "the default amqp listener"}
    for item in f.objects("listeners", max_items=16):
        name = item.need_text("name", max_length=15, pattern=NAME_PATTERN)
        port = item.need_integer("port", minimum=1, maximum=65535)
        if port in RESERVED_PORTS:
            raise SpecError(item.at("port"),
                            f"{port} is reserved (55672 inter-router, 55673 the operator's management, "
                            "8672 health and metrics)")
        if port in ports:
            raise SpecError(item.at("port"), f"{port} is already used by {ports[port]}")
        ports[port] = f"listener {name!r}"
        if any(x.name == name for x in out):
            raise SpecError(item.at("name"), f"two listeners are called {name!r}")
        listener = ListenerSpec(
            name=name, port=port, role=item.choice("role", ("normal", "route-container"), default="normal")
            or "normal", sasl_mechanisms=item.text("saslMechanisms", default="ANONYMOUS") or "ANONYMOUS",
            authenticate_peer=bool(item.boolean("authenticatePeer", False)),
            tls_secret=item.text("tlsSecretName"), require_ssl=bool(item.boolean("requireSsl", False)),
            expose=item.choice("expose", EXPOSE_TYPES, default="ClusterIP") or "ClusterIP",
            node_port=item.integer("nodePort", minimum=30000, maximum=32767))
        if listener.node_port is not None and listener.expose != "NodePort":
            raise SpecError(item.at("nodePort"), "is only allowed with expose NodePort")
        if listener.require_ssl and not listener.tls_secret:
            raise SpecError(item.at("requireSsl"), "needs tlsSecretName")
        out.append(listener)
    return out


def _connectors(f: Fields) -> List[ConnectorSpec]:
    out: List[ConnectorSpec] = []
    for item in f.objects("connectors", max_items=32):
        name = item.need_text("name", max_length=63, pattern=NAME_PATTERN)
        if any(x.name == name for x in out):
            raise SpecError(item.at("name"), f"two connectors are called {name!r}")
        password = None
        if item.has("saslPasswordSecretRef"):
            ref = item.sub("saslPasswordSecretRef")
            password = SecretKeyRef(ref.need_text("name"), ref.need_text("key"))
        out.append(ConnectorSpec(
            name=name, host=item.need_text("host"), port=item.need_integer("port", minimum=1, maximum=65535),
            role=item.choice("role", ("route-container", "normal"), default="route-container")
            or "route-container", tls_secret=item.text("tlsSecretName"),
            verify_hostname=bool(item.boolean("verifyHostname", True)),
            sasl_mechanisms=item.text("saslMechanisms"), sasl_username=item.text("saslUsername"),
            sasl_password=password))
    return out


def _addresses(f: Fields) -> List[AddressSpec]:
    out: List[AddressSpec] = []
    for item in f.objects("addresses", max_items=256):
        exactly_one(item, "prefix", "pattern")
        a = AddressSpec(
            prefix=item.text("prefix", max_length=512), pattern=item.text("pattern", max_length=512),
            distribution=item.choice("distribution", DISTRIBUTIONS, default="balanced") or "balanced",
            waypoint=bool(item.boolean("waypoint", False)),
            ingress_phase=item.integer("ingressPhase", minimum=0, maximum=9),
            egress_phase=item.integer("egressPhase", minimum=0, maximum=9),
            priority=item.integer("priority", minimum=0, maximum=9))
        if any(x.key == a.key for x in out):
            raise SpecError(item.path, f"a second address for {a.key} would never apply")
        out.append(a)
    return out


MAX_EDGE_GROUP_NAME = 16  # Service and workload <mesh>-edge-<group> stay a DNS label (63)


def parse_edge_groups(f: Fields, mesh_name: str) -> List[EdgeGroupSpec]:
    out: List[EdgeGroupSpec] = []
    for item in f.objects("edgeGroups", max_items=32):
        name = item.need_text("name", max_length=MAX_EDGE_GROUP_NAME, pattern=NAME_PATTERN)
        if any(x.name == name for x in out):
            raise SpecError(item.at("name"), f"two edge groups are called {name!r}")
        per_node = bool(item.boolean("perNode", False))
        size = item.integer("size", minimum=0, maximum=1000)
        if per_node == (size is not None):
            raise SpecError(item.path, "needs exactly one of size (a Deployment of that many edge "
                            "routers) or perNode: true (a DaemonSet, one edge router per node)")
        out.append(EdgeGroupSpec(name=name, size=size, per_node=per_node,
                                 pod=parse_pod_settings(item.sub("pod"), mesh_name)))
    return out
