"""What creating, updating or deleting a configuration entity does to the running router.

Shared by start-up (entities from the config file) and the management agent, so both
behave the same. Every change is applied fully or not at all.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, Protocol

from .. import log_config
from ..amqp.connections.tls import TlsError
from ..core.address_table import AddressTable
from .config_store import ManagedEntity
from .status import bad_request, forbidden

log = logging.getLogger("qdrouter.AGENT")

# Types the router keeps and reports but does not act on yet (later issues).
NOT_YET_SUPPORTED = frozenset(("router.config.exchange", "router.config.binding", "authServicePlugin"))


class ListenerHost(Protocol):
    table: AddressTable
    auto_links: Any
    link_routes: Any
    policy: Any
    tls_profiles: Any

    def add_link_route(self, entity: ManagedEntity) -> None: ...

    def open_listener(self, entity: ManagedEntity) -> None: ...

    def close_listener(self, entity: ManagedEntity) -> None: ...

    def open_connector(self, entity: ManagedEntity) -> None: ...

    def close_connector(self, entity: ManagedEntity) -> None: ...

    def log_entities(self) -> list: ...

    def update_tls_profile(self, entity: ManagedEntity, changes: Dict[str, Any]) -> None: ...


def _optional(attrs: Dict[str, Any], name: str) -> str | None:
    value = attrs.get(name)
    return None if value is None else str(value)


class ConfigEffects:
    def __init__(self, host: ListenerHost) -> None:
        self.host = host

    def created(self, entity: ManagedEntity) -> None:
        """Apply a new entity; raises ManagementStatus (and changes nothing) if it cannot."""
        kind = entity.etype.short_name
        attrs = entity.attributes
        if kind in ("listener", "connector"):
            if kind == "listener":
                self.host.open_listener(entity)
            else:
                self.host.open_connector(entity)
        elif kind == "router.config.address":
            waypoint = bool(attrs.get("waypoint"))
            ingress = attrs.get("ingressPhase")
            egress = attrs.get("egressPhase")
            phases = None
            if waypoint or ingress is not None or egress is not None:
                phases = (int(ingress or 0), int(egress if egress is not None else (1 if waypoint else 0)))
            try:
                self.host.table.add_config(str(attrs.get("distribution")), prefix=_optional(attrs, "prefix"),
                                           pattern=_optional(attrs, "pattern"), phases=phases)
            except ValueError as error:
                raise bad_request(f"address: {error}") from None
        elif kind == "log":
            self.apply_logging()
        elif kind == "router.config.autoLink":
            self.host.auto_links.add(entity)
        elif kind == "router.config.linkRoute":
            self.host.add_link_route(entity)
        elif kind == "policy":
            self.host.policy.policy_created(entity)
        elif kind == "vhost":
            self.host.policy.vhost_created(entity)
        elif kind in NOT_YET_SUPPORTED:
            log.warning("%s: %s %r is kept but has no effect yet (not supported by this release)",
                        entity.source, kind, entity.name)

    def deleted(self, entity: ManagedEntity) -> None:
        kind = entity.etype.short_name
        if kind == "listener":
            self.host.close_listener(entity)
        elif kind == "connector":
            self.host.close_connector(entity)
        elif kind == "router.config.autoLink":
            self.host.auto_links.remove(entity)
        elif kind == "router.config.linkRoute":
            self.host.link_routes.remove(entity.identity)
        elif kind == "router.config.address":
            attrs = entity.attributes
            self.host.table.remove_config(prefix=_optional(attrs, "prefix"),
                                          pattern=_optional(attrs, "pattern"))
        elif kind == "log":
            raise forbidden("log entities cannot be deleted; update 'enable' instead")
        elif kind == "vhost":
            self.host.policy.vhost_deleted(entity)
        elif kind == "sslProfile":
            self.host.tls_profiles.forget(entity.name)

    def updated(self, entity: ManagedEntity, changes: Dict[str, Any]) -> None:
        if entity.etype.short_name == "sslProfile":
            try:
                self.host.update_tls_profile(entity, changes)  # all of it, or nothing
            except TlsError as error:
                raise bad_request(str(error)) from None
        elif entity.etype.short_name == "vhost":
            self.host.policy.vhost_updated(entity, changes)
        elif entity.etype.short_name == "log":
            previous = dict(entity.attributes)
            entity.attributes.update(changes)
            try:
                self.apply_logging()
            except (log_config.LogSettingError, OSError) as error:
                entity.attributes.clear()
                entity.attributes.update(previous)
                self.apply_logging()  # the failed attempt may have removed the handlers
                attribute = "outputFile" if isinstance(error, OSError) else "enable"
                raise bad_request(f"log: attribute '{attribute}': {error}") from None

    def apply_logging(self) -> None:
        settings = []
        includes = {}
        for entity in self.host.log_entities():
            attrs = entity.attributes
            includes[str(attrs.get("module"))] = (attrs.get("includeTimestamp"), attrs.get("includeSource"))
            enable = attrs.get("enable")
            output = attrs.get("outputFile")
            if enable in (None, "", "default") and not output:
                continue
            settings.append((str(attrs.get("module")), enable, output))
        log_config.configure(settings)
        log_config.set_includes(includes)
