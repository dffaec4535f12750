"""A router process assembled from validated configuration entities."""

from __future__ import annotations

import logging
import socket
from typing import Any, Iterable, List, Sequence

from .amqp.connection import ListenerSettings
from .amqp.server import AmqpServer
from .core.address_table import AddressTable

log = logging.getLogger("qdrouter.ROUTER")

# Config sections this release parses and validates but does not act on yet.
NOT_YET_SUPPORTED = (
    "connector",
    "linkRoute",
    "autoLink",
    "policy",
    "vhost",
    "sslProfile",
    "exchange",
    "binding",
    "authServicePlugin",
    "console",
)


class RouterSetupError(Exception):
    """A configuration the router cannot run with; the message is for the user."""


def service_port(port: Any, where: str) -> int:
    text = str(port).strip()
    if text.isdigit():
        return int(text)
    try:
        return socket.getservbyname(text, "tcp")
    except OSError:
        if text == "amqp":
            return 5672
        if text == "amqps":
            return 5671
        raise RouterSetupError(f"{where}: attribute 'port': unknown port or service name {text!r}") from None


def section_of(entity: Any) -> str:
    return str(entity.type.config_section or entity.type.short_name)


class Router:
    def __init__(self, entities: Sequence[Any]) -> None:
        router_entities = [e for e in entities if section_of(e) == "router"]
        settings = router_entities[0].attributes if router_entities else {}
        self.id = str(settings.get("id") or "Router.default")
        mode = settings.get("mode", "standalone")
        if mode != "standalone":
            raise RouterSetupError(
                f"{router_entities[0].source}: router: attribute 'mode': {mode!r} is "
                f"not supported yet (only standalone)"
            )
        table = AddressTable()
        for entity in entities:
            if section_of(entity) != "address":
                continue
            attrs = entity.attributes
            if attrs.get("pattern"):
                log.warning("%s: address: 'pattern' is not supported yet; entity ignored", entity.source)
                continue
            table.add_prefix(str(attrs.get("prefix") or ""), str(attrs.get("distribution") or "balanced"))
            if attrs.get("waypoint"):
                log.warning("%s: address: 'waypoint' is not supported yet", entity.source)
        self.table = table
        self.server = AmqpServer(self.id, table)
        self._listeners: List[Any] = [e for e in entities if section_of(e) == "listener"]
        for entity in entities:
            if section_of(entity) in NOT_YET_SUPPORTED:
                log.warning(
                    "%s: %s: this entity is not supported yet and has no effect",
                    entity.source,
                    section_of(entity),
                )

    def start_listeners(self) -> List[tuple]:
        bound = []
        for entity in self._listeners:
            attrs = entity.attributes
            role = attrs.get("role", "normal")
            if role != "normal":
                raise RouterSetupError(
                    f"{entity.source}: listener: attribute 'role': {role!r} is not "
                    f"supported yet (only normal)"
                )
            name = str(attrs.get("name") or f"listener/{attrs.get('host', '')}:{attrs.get('port')}")
            settings = ListenerSettings(
                name,
                role=role,
                sasl_mechanisms=str(attrs.get("saslMechanisms") or "ANONYMOUS"),
                idle_timeout_ms=int(attrs.get("idleTimeoutSeconds", 16) or 0) * 1000,
                max_frame_size=int(attrs.get("maxFrameSize", 16384) or 16384),
                strip_annotations=str(attrs.get("stripAnnotations", "both")),
                authenticate_peer=bool(attrs.get("authenticatePeer", False)),
            )
            port = service_port(attrs.get("port", "amqp"), f"{entity.source}: listener")
            try:
                bound.append(self.server.listen(str(attrs.get("host") or ""), port, settings))
            except Exception as error:
                raise RouterSetupError(f"{entity.source}: {error}") from None
        return bound

    def run(self) -> None:
        log.info("Router %s started (standalone)", self.id)
        self.server.run()
        log.info("Router %s stopped", self.id)

    def request_stop(self) -> None:
        self.server.request_stop()


def describe(entities: Iterable[Any]) -> str:
    return ", ".join(section_of(e) for e in entities)
