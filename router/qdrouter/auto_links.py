"""Auto-links (Qpid Dispatch 0.7 book, 2.5): links the router itself attaches to a container (a broker queue)
when that container's connection is up, re-attaching after failures. An `out` auto-link is
a consumer of its address (phase 0 by default), an `in` auto-link a producer into it
(phase 1 by default), so a waypoint address flows producer -> broker -> consumers."""

from __future__ import annotations

import logging
from typing import Any, Dict, List

from .amqp.bindings.proton_ffi import lib
from .amqp.links.endpoint_listener import EndpointListener
from .amqp.loop.server import AmqpServer
from .core.address_table import phased
from .core.address_view import hash_view
from .core.links import CoreLink
from .management.config_store import ManagedEntity

log = logging.getLogger("qdrouter.ROUTER_CORE")

INACTIVE = "inactive"
ATTACHING = "attaching"
ACTIVE = "active"
FAILED = "failed"
RETRY_S = 2.0


class AutoLink:
    __slots__ = ("address", "connection", "connection_name", "container_id", "external", "identity",
                 "incoming", "last_error", "link", "phase", "retry", "session", "status")

    def __init__(self, entity: ManagedEntity) -> None:
        attrs = entity.attributes
        self.identity = entity.identity
        self.address = str(attrs.get("address") or "")
        self.incoming = attrs.get("direction") == "in"
        phase = attrs.get("phase")
        self.phase = int(phase) if phase is not None else (1 if self.incoming else 0)
        self.connection_name = attrs.get("connection")
        self.container_id = attrs.get("containerId")
        self.external = str(attrs.get("externalAddress") or self.address)
        self.status = INACTIVE
        self.last_error: str | None = None
        self.link: CoreLink | None = None
        self.connection: Any = None
        self.retry: Any = None
        # The proton session of the current attach (its own: see AutoLinks._attach).
        self.session: Any = None

    def matches(self, connection: Any) -> bool:
        if self.connection_name is not None:
            return bool(connection.settings.name == self.connection_name)
        return self.container_id is not None and connection.remote_container == self.container_id


class AutoLinks(EndpointListener):
    def __init__(self, server: AmqpServer) -> None:
        self.server = server
        self.endpoints = server.endpoints
        self.forwarder = server.adaptor.forwarder
        self.links: Dict[str, AutoLink] = {}

    # ---- configuration -----------------------------------------------------------------
    def add(self, entity: ManagedEntity) -> None:
        auto = AutoLink(entity)
        self.links[auto.identity] = auto
        for connection in list(self.server.by_fd.values()):
            if auto.matches(connection) and _is_open(connection):
                self._attach(auto, connection)
                break

    def remove(self, entity: ManagedEntity) -> None:
        auto = self.links.pop(entity.identity, None)
        if auto is None:
            return
        if auto.retry is not None:
            auto.retry.cancel()
        link = auto.link
        if link is not None and link.handle is not None:
            handle = link.handle
            self.endpoints.link_watchers.pop(handle, None)
            self.endpoints.link_closed_locally(link)
            lib.pn_link_close(handle)
            _end_session(auto)
            self.server.adaptor.dirty.add(link.connection)

    def status(self, entity: ManagedEntity) -> Dict[str, Any]:
        auto = self.links.get(entity.identity)
        if auto is None:
            return {}
        return {"operStatus": auto.status, "lastError": auto.last_error, "phase": auto.phase,
                "linkRef": str(auto.link.identity) if auto.link is not None else None}

    # ---- connections -------------------------------------------------------------------
    def connection_opened(self, connection: Any) -> None:
        for auto in self.links.values():
            if auto.link is None and auto.matches(connection):
                self._attach(auto, connection)

    def move(self, old: Any, new: Any) -> None:
        """``new`` replaces ``old`` (made with newer TLS material, amqp/connections/tls_rotation.py): each
        auto-link on ``old`` is attached on ``new`` now; its link on ``old`` stays for what is
        in flight (amqp/connections/connection_retire.py) and no longer counts as the auto-link's."""
        for auto in self.links.values():
            if auto.connection is old:
                auto.link = None
                auto.session = None  # ends with the old connection
                self._attach(auto, new)

    def _attach(self, auto: AutoLink, connection: Any) -> None:
        if auto.retry is not None:
            auto.retry.cancel()
            auto.retry = None
        # A session of its own: a container may refuse one link by ending its session
        # (RabbitMQ does), which must not take the other auto-links down with it.
        session = lib.pn_session(connection.pn_connection)
        connection.session_settings(session)
        lib.pn_session_open(session)
        auto.session = session
        name = f"qdlink.auto.{auto.identity}.{self.endpoints.new_link_id()}".encode()
        if auto.incoming:
            pn_link = lib.pn_receiver(session, name)
            lib.pn_terminus_set_address(lib.pn_link_source(pn_link), auto.external.encode())
        else:
            pn_link = lib.pn_sender(session, name)
            lib.pn_terminus_set_address(lib.pn_link_target(pn_link), auto.external.encode())
        lib.pn_link_open(pn_link)
        settings = connection.settings
        link = CoreLink(self.endpoints.new_link_id(), name.decode(), auto.incoming,
                        phased(hash_view(auto.address), auto.phase), connection, pn_link,
                        settings.strip_in, settings.strip_out)
        link.capacity = settings.link_capacity
        auto.link = link
        auto.connection = connection
        auto.status = ATTACHING
        self.endpoints.register(connection, link)
        self.endpoints.link_watchers[pn_link] = lambda up, error: self._changed(auto, link, up, error)
        if auto.incoming:
            self.forwarder.producer_attached(link)
        else:
            self.forwarder.consumer_attached(link)
        self.server.adaptor.dirty.add(connection)
        log.info("Auto-link %s: attaching %s %s on connection %d", auto.identity,
                 "from" if auto.incoming else "to", auto.external, connection.identity)

    def _changed(self, auto: AutoLink, link: CoreLink, up: bool, error: str | None) -> None:
        if auto.link is not link:
            return
        if up:
            handle = link.handle
            remote = (lib.pn_link_remote_source(handle) if auto.incoming
                      else lib.pn_link_remote_target(handle))
            if lib.pn_terminus_get_address(remote):
                auto.status = ACTIVE
                auto.last_error = None
                log.info("Auto-link %s is active", auto.identity)
            return
        auto.link = None
        connection = auto.connection
        if error == "connection closed" or connection is None or connection.closed:
            auto.session = None  # goes with its connection
            auto.status = INACTIVE
            auto.last_error = error if error != "connection closed" else auto.last_error
            # Another open connection it matches takes it on: the connector's replacement
            # made with newer TLS material (amqp/connections/tls_rotation.py), or a second connector.
            alternate = next((other for other in list(self.server.by_fd.values())
                              if other is not connection and not other.closed and _is_open(other)
                              and auto.matches(other)), None)
            if alternate is not None:
                self._attach(auto, alternate)
            return
        # Each attempt has a session of its own: ended with it, so that retries on a
        # long-lived connection do not pile sessions up (the peer's end frees it).
        _end_session(auto)
        auto.status = FAILED
        auto.last_error = error or "detached by the container"
        log.warning("Auto-link %s failed: %s; retrying in %g s", auto.identity, error, RETRY_S)
        auto.retry = self.server.timers.call_later(RETRY_S, lambda: self._retry(auto))

    def _retry(self, auto: AutoLink) -> None:
        auto.retry = None
        connection = auto.connection
        if auto.identity in self.links and auto.link is None and connection is not None \
                and not connection.closed and _is_open(connection):
            self._attach(auto, connection)

    def rows(self) -> List[AutoLink]:
        return list(self.links.values())


def _end_session(auto: AutoLink) -> None:
    session, auto.session = auto.session, None
    if session is not None and not lib.pn_session_state(session) & lib.PN_LOCAL_CLOSED:
        lib.pn_session_close(session)


def _is_open(connection: Any) -> bool:
    state = lib.pn_connection_state(connection.pn_connection)
    return bool(state & lib.PN_LOCAL_ACTIVE and state & lib.PN_REMOTE_ACTIVE)
