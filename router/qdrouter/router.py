"""A router process assembled from validated configuration entities."""

from __future__ import annotations

import logging
import time
from typing import Any, Dict, List, Sequence

from .amqp.bindings import proton_shim
from .amqp.bindings.proton_ffi import lib
from .amqp.connections.connection import AmqpConnection, ListenerSettings, configure_sasl
from .amqp.connections.connection_retire import retire
from .amqp.connections.connector import Connector
from .amqp.connections.open_properties import OpenPropertiesError, encode_open_properties
from .amqp.connections.tls import TlsError, TlsProfiles, resolve_password
from .amqp.connections.tls_reload import TlsBindings
from .amqp.connections.tls_rotation import TlsRotation
from .amqp.links.link_routing import LinkRouter
from .amqp.links.policing import install as install_policer
from .amqp.loop.server import AmqpServer, ListenerError
from .auto_links import AutoLinks
from .canary import NeighbourProbe
from .config import port_number
from .core.address_table import AddressTable
from .core.link_route_table import LinkRoute, LinkRouteTable
from .core.links import DEFAULT_LINK_CAPACITY
from .drain import Drain
from .edge.role import EdgeRole
from .http.pages import ListenerPages
from .http.server import HttpListenerError, HttpServer
from .interior import MeshNode
from .log_config import MODULES
from .management.agent import ManagementAgent
from .management.config_effects import ConfigEffects
from .management.config_store import ConfigStore, ManagedEntity
from .management.policy_effects import PolicyEffects
from .management.status import ManagementStatus
from .schema import entity_type
from .tuning import open_files, pypy_jit

log = logging.getLogger("qdrouter.ROUTER")


class RouterSetupError(Exception):
    """A configuration the router cannot run with; the message is for the user."""


class Router:
    def __init__(self, entities: Sequence[Any], test_hooks: bool = False,
                 drain_timeout_s: float = 0.0) -> None:
        self.started = time.time()
        # -T/--test-hooks: management's TEST-FAULT may arm failures (management/fault_hooks.py).
        self.test_hooks = test_hooks
        router_entities = [e for e in entities if e.type.short_name == "router"]
        settings = router_entities[0].attributes if router_entities else {}
        self.id = str(settings.get("id") or "Router.default")
        self.mode = str(settings.get("mode", "standalone"))
        if self.mode not in ("standalone", "interior", "edge"):
            raise RouterSetupError(f"{router_entities[0].source}: router: attribute 'mode': {self.mode!r} "
                                   f"is not supported (standalone, interior or edge)")
        configure_sasl(settings.get("saslConfigDir"), settings.get("saslConfigName"))
        self.table = AddressTable()
        # Addresses no address section matches (qdrouterd's default treatment).
        self.table.set_default_distribution(str(settings.get("defaultDistribution") or "balanced"))
        self.server = AmqpServer(self.id, self.table)
        self.policy = PolicyEffects(self)
        self.tls_profiles = TlsProfiles()
        # Who uses which sslProfile, for a management UPDATE of one (amqp/connections/tls_reload.py).
        self.tls_bindings = TlsBindings(self.tls_profiles)
        install_policer(self.server, self.policy.engine)
        self.http = HttpServer(self.server)
        self.link_routes = LinkRouteTable()
        self.mesh: MeshNode | None = None
        if self.mode == "interior":
            timers = {key: float(value) for key, value in settings.items()
                      if key.endswith("Seconds") and isinstance(value, (int, float))}
            self.mesh = MeshNode(self.id, self.server, self.table, timers, link_routes=self.link_routes,
                                 link_route_connected=lambda route: self.route_container(route) is not None)
        self.store = ConfigStore()
        self.effects = ConfigEffects(self)
        link_router = LinkRouter(self.link_routes, self.server.adaptor.dirty, self.route_container,
                                 self.server.adaptor.outbound,
                                 find_mesh_hop=self.mesh.link_route_hop if self.mesh is not None else None)
        self.server.route_links_with(link_router)
        # Round trips to neighbours (qdmesh's own, off by default): router.node and /metrics.
        self.canary: NeighbourProbe | None = None
        canary_interval = int(settings.get("canaryIntervalSeconds") or 0)
        if self.mesh is not None and canary_interval > 0:
            self.canary = NeighbourProbe(self.id, canary_interval, self.mesh, self.server.adaptor.forwarder,
                                         self.server.timers)
        self.edge = EdgeRole(self)
        # SIGTERM drains first (qdrouter/drain.py); added after the mesh and the edge role, so
        # that it hears of clients' attaches after them.
        self.drain = Drain(self.id, self.server, self.mesh, self, drain_timeout_s)
        self.auto_links = AutoLinks(self.server)
        self.server.endpoints.add_listener(self.auto_links)
        self._listening: Dict[str, int] = {}
        self.connectors: Dict[str, Connector] = {}
        reachable = self.mesh.reachable_through if self.mesh is not None else (lambda connection: True)
        handover = 2 * float(settings.get("helloIntervalSeconds") or 1) if self.mesh is not None else 0.0
        self.tls_rotation = TlsRotation(self.server, self.connectors, reachable, handover)
        self._load(entities)
        self.agent = ManagementAgent(self)
        self.effects.apply_logging()
        try:
            for entity in self.store:
                if entity.etype.short_name not in ("listener", "connector", "log", "router"):
                    self.effects.created(entity)
        except ManagementStatus as error:
            raise RouterSetupError(f"{entity.source}: {error.description}") from None

    def _load(self, entities: Sequence[Any]) -> None:
        log_settings = {e.attributes.get("module"): e for e in entities if e.type.short_name == "log"}
        for entity in entities:
            if entity.type.short_name == "log":
                continue
            identity = f"router/{self.id}" if entity.type.short_name == "router" else None
            self.store.add(entity.type, dict(entity.attributes), entity.source, identity)
        log_type = entity_type("log")
        for module in MODULES:
            configured = log_settings.get(module)
            attrs = dict(configured.attributes) if configured is not None else {"module": module}
            if module == "DEFAULT":
                # qdrouterd's DEFAULT log: info and up, timestamps, no source (READ shows them).
                if not attrs.get("enable"):
                    attrs["enable"] = "info+"
                attrs.setdefault("includeTimestamp", True)
                attrs.setdefault("includeSource", False)
            attrs["name"] = f"log/{module}"
            source = configured.source if configured is not None else "(default)"
            self.store.add(log_type, attrs, source, identity=f"log/{module}")

    # ---- listeners (ListenerHost) ------------------------------------------------------
    def start_listeners(self) -> None:
        """Open listeners (failing start-up if one cannot) and start connectors."""
        for kind in ("listener", "connector"):
            for entity in self.store.of_type(entity_type(kind)):
                try:
                    self.effects.created(entity)
                except ManagementStatus as error:
                    raise RouterSetupError(f"{entity.source}: {error.description}") from None

    def open_listener(self, entity: ManagedEntity) -> None:
        if entity.attributes.get("http"):
            self._open_http_listener(entity)
            return
        settings, port = _connection_settings(entity)
        self._check_role(entity, settings.role)
        self.edge.settings(settings)
        self._tls(entity, settings)
        try:
            _, _, fd = self.server.listen(str(entity.attributes.get("host") or ""), port, settings)
        except ListenerError as error:
            self.tls_bindings.detach(settings)
            raise ManagementStatus(400, str(error)) from None
        self._listening[entity.identity] = fd

    def _open_http_listener(self, entity: ManagedEntity) -> None:
        """`http: true`: /healthz, /readyz and /metrics (http/) instead of AMQP."""
        try:
            port = port_number(entity.attributes.get("port", "amqp"))
        except Exception as error:
            raise ManagementStatus(400, f"listener: attribute 'port': {error}") from None
        try:
            _, _, fd = self.http.listen(str(entity.attributes.get("host") or ""), port, entity.name,
                                        ListenerPages(self, entity.attributes))
        except HttpListenerError as error:
            raise ManagementStatus(400, str(error)) from None
        self._listening[entity.identity] = fd

    def _tls(self, entity: ManagedEntity, settings: ListenerSettings) -> None:
        """Attach the entity's sslProfile (if any) to its connection settings."""
        name = entity.attributes.get("sslProfile")
        if not name:
            return
        try:
            self.tls_bindings.attach(self.store, str(name), settings, entity.etype.short_name,
                                     entity.attributes)
        except TlsError as error:
            raise ManagementStatus(400, f"{entity.etype.short_name} {entity.name!r}: {error}") from None

    def update_tls_profile(self, entity: ManagedEntity, changes: Dict[str, Any]) -> None:
        """qdmesh: a management UPDATE of an sslProfile (docs/security.md, "Live TLS"); raises
        TlsError, having changed nothing, if the new material cannot be used."""
        stored = self.tls_bindings.update(self.store, entity.name, entity.attributes, changes)
        entity.attributes.update(stored)
        self.tls_rotation.retire(entity.name, int(stored["oldestValidOrdinal"]))

    def open_connector(self, entity: ManagedEntity) -> None:
        settings, port = _connection_settings(entity)
        self._check_role(entity, settings.role)
        self._tls(entity, settings)
        self.edge.settings(settings)
        mesh = self.mesh if settings.role == "inter-router" else None
        on_up = mesh.connector_opened if mesh is not None else None
        on_down = on_replace = None
        uplink = self.edge.uplink
        if settings.role == "edge" and uplink is not None:
            on_up, on_down, on_replace = uplink.connection_opened, uplink.connection_lost, uplink.hand_over
        elif settings.role == "route-container":
            on_replace = self._container_replaced
        connector = Connector(self.server, str(entity.attributes.get("host") or "127.0.0.1"), port, settings,
                              on_up=on_up, on_down=on_down, on_replace=on_replace)
        self.connectors[entity.identity] = connector
        connector.start()

    def _container_replaced(self, old: AmqpConnection, new: AmqpConnection) -> None:
        """A route container's connection replaced (amqp/connections/tls_rotation.py): auto-links move to
        the new one, new link-routed attaches go there (route_container), the old one only
        finishes what it carries."""
        self.auto_links.move(old, new)
        retire(old, self.server.adaptor.dirty)

    def _check_role(self, entity: ManagedEntity, role: str) -> None:
        """Refuse a role the router's mode cannot use, opening with qdrouterd's words (scripts
        match them) and then naming the attribute and the mode needed."""
        kind = entity.etype.short_name
        needed = ""
        if role == "inter-router" and self.mesh is None:
            needed = "interior"
        elif role == "edge":
            # As qdrouterd: interior routers listen for edges, edge routers connect out.
            needed = "interior" if kind == "listener" else "edge"
            needed = "" if self.mode == needed else needed
        if not needed:
            return
        if self.mode == "standalone":
            words = "role='standalone' not allowed to connect to or accept connections from other routers."
        else:
            words = f"role='{role}' only allowed with router mode='{needed}'."
        raise ManagementStatus(400, f"{words} {kind}: attribute 'role': '{role}' needs router mode "
                                    f"'{needed}' (this router is {self.mode})")

    def close_connector(self, entity: ManagedEntity) -> None:
        connector = self.connectors.pop(entity.identity, None)
        if connector is not None:
            self.tls_bindings.detach(connector.settings)
            connector.stop()

    def hold_connectors(self) -> int:
        """The drain's: no connector dials again (connections up stay up until it ends)."""
        for connector in self.connectors.values():
            connector.hold()
        return len(self.connectors)

    def close_listener(self, entity: ManagedEntity) -> None:
        fd = self._listening.pop(entity.identity, None)
        if fd is not None and not self.http.close_listener(fd):
            listening = self.server.listeners.get(fd)
            if listening is not None:
                self.tls_bindings.detach(listening[1])
            self.server.close_listener(fd)

    def log_entities(self) -> List[ManagedEntity]:
        return self.store.of_type(entity_type("log"))

    # ---- running -----------------------------------------------------------------------
    def route_container(self, route: LinkRoute) -> AmqpConnection | None:
        """The open connection a link route leads to (by connector name or container id)."""
        for connection in self.server.by_fd.values():
            if connection.closed or connection.retiring or connection.settings.role == "inter-router":
                continue
            state = lib.pn_connection_state(connection.pn_connection)
            if not (state & lib.PN_LOCAL_ACTIVE and state & lib.PN_REMOTE_ACTIVE):
                continue
            if route.connection is not None:
                if connection.settings.name == route.connection:
                    return connection
            elif route.container_id is not None and connection.remote_container == route.container_id:
                return connection
        return None

    def add_link_route(self, entity: ManagedEntity) -> None:
        attrs = entity.attributes
        self.link_routes.add(LinkRoute(
            entity.identity, str(attrs.get("direction")), prefix=attrs.get("prefix"),
            pattern=attrs.get("pattern"), connection=attrs.get("connection"),
            container_id=attrs.get("containerId"), add_prefix=attrs.get("addExternalPrefix"),
            del_prefix=attrs.get("delExternalPrefix")))

    def link_route_status(self, entity: ManagedEntity) -> Dict[str, Any]:
        for route in self.link_routes.routes:
            if route.identity == entity.identity:
                return {"operStatus": "active" if self.route_container(route) is not None else "inactive"}
        return {}

    def node_rows(self) -> List[Dict[str, Any]]:
        """router.node: the mesh's routers, neighbours with their measured round trips."""
        rows = self.mesh.node_rows() if self.mesh is not None else []
        if self.canary is not None:
            self.canary.add_to_node_rows(rows)
        return rows

    def connector_status(self, entity: ManagedEntity) -> Dict[str, Any]:
        connector = self.connectors.get(entity.identity)
        if connector is None:
            return {}
        return {"connectionStatus": connector.status, "connectionMsg": connector.message,
                "failoverUrls": connector.places.describe() or None}

    def run(self) -> None:
        log.info("Router %s started (%s)", self.id, self.mode)
        if proton_shim.COMPILED:
            log.info("Data path: proton shim (compiled)")
        else:
            log.warning("Data path: the proton shim's Python fallback (%s), 20-30%% more CPU "
                        "per message; reinstall with a C compiler and Python headers to build it",
                        proton_shim.NOT_COMPILED_BECAUSE)
        if pypy_jit.applied is not None:
            log.info("PyPy JIT: %s (qdrouter/tuning/pypy_jit.py)", pypy_jit.applied)
        if open_files.raised is not None:
            log.info("Open files: soft limit raised to the hard limit (%s)", open_files.raised)
        self.server.run()
        self.server.shutdown()
        log.info("Router %s stopped", self.id)

    def request_drain(self) -> None:
        """SIGTERM: drain, then stop (at once with a drain timeout of 0, or when draining
        already). Safe from a signal handler."""
        self.drain.request()

    def request_stop(self) -> None:
        """Stop at once (SIGINT). Safe from a signal handler."""
        self.server.request_stop()


def _connection_settings(entity: ManagedEntity) -> tuple[ListenerSettings, int]:
    """Settings shared by listeners and connectors, from the entity's attributes."""
    attrs = entity.attributes
    kind = entity.etype.short_name
    try:
        port = port_number(attrs.get("port", "amqp"))
    except Exception as error:
        raise ManagementStatus(400, f"{kind}: attribute 'port': {error}") from None
    # A connector with credentials offers PLAIN unless told otherwise, as qdrouterd does.
    default_mechanisms = "PLAIN" if kind == "connector" and attrs.get("saslUsername") else "ANONYMOUS"
    settings = ListenerSettings(
        entity.name,
        role=str(attrs.get("role", "normal")),
        sasl_mechanisms=str(attrs.get("saslMechanisms") or default_mechanisms),
        idle_timeout_ms=int(attrs.get("idleTimeoutSeconds") or 0) * 1000,
        max_frame_size=int(attrs.get("maxFrameSize", 16384)),  # below 512: 512, as qdrouterd
        max_sessions=int(attrs.get("maxSessions", 32768)),
        max_session_frames=int(attrs.get("maxSessionFrames") or 0),
        open_properties=_open_properties(entity),
        strip_annotations=str(attrs.get("stripAnnotations", "both")),
        authenticate_peer=bool(attrs.get("authenticatePeer", False)),
        # As qdrouterd: requireSsl requires encryption too (TLS, or a SASL security layer).
        require_encryption=bool(attrs.get("requireEncryption") or attrs.get("requireSsl")),
        handshake_timeout_s=float(attrs.get("initialHandshakeTimeoutSeconds") or 0),
        cost=int(attrs.get("cost") or 1),
        username=attrs.get("saslUsername"),
        password=_sasl_password(entity),
        link_capacity=_link_capacity(entity),
        policy_vhost=str(attrs["policyVhost"]) if attrs.get("policyVhost") else None,
    )
    return settings, port


def _open_properties(entity: ManagedEntity) -> bytes | None:
    attrs = entity.attributes
    failover = attrs.get("failoverUrls") if entity.etype.short_name == "listener" else None
    try:
        return encode_open_properties(failover, attrs.get("openProperties"))
    except OpenPropertiesError as error:
        raise ManagementStatus(400, f"{entity.etype.short_name} {entity.name!r}: {error}") from None


def _link_capacity(entity: ManagedEntity) -> int:
    value = entity.attributes.get("linkCapacity")
    if value is None:
        return DEFAULT_LINK_CAPACITY
    if int(value) < 1:
        raise ManagementStatus(400, f"{entity.etype.short_name} {entity.name!r}: attribute "
                                    f"'linkCapacity': must be at least 1, not {value}")
    return int(value)


def _sasl_password(entity: ManagedEntity) -> str | None:
    """saslPassword as itself, 'env:VAR' or 'file:PATH' (as sslProfile passwords)."""
    try:
        return resolve_password(entity.attributes.get("saslPassword"), None,
                                f"{entity.etype.short_name} {entity.name!r}")
    except TlsError as error:
        message = str(error).replace(": password:", ": attribute 'saslPassword':")
        raise ManagementStatus(400, message) from None
