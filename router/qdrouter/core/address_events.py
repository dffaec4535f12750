"""What the core tells other parts of the router about addresses, and what it asks them.

The core's Forwarder (core/forwarder.py) names two interfaces, as the C router's routing
engine names the calls between its sub-engines:

- ``AddressListener``: told when an address's local consumers, remote consumers or the
  paths to them change. A part subclasses it, overrides what it needs (the rest does
  nothing) and is added with ``Forwarder.add_address_listener``; any number may listen, each
  told in the order added. The mesh hears of mobile addresses gaining or losing their local
  consumers (to advertise them), the adaptor of routes appearing (producers waiting for
  credit may move), an edge's address proxy or an interior's edge hub of every change.
- ``AddressResolver``: asked where a message goes that no address here takes, and which
  address carries another one's messages (an edge's uplink, an interior's edges). A router
  has at most one (its edge role's); ``Forwarder.resolve_with`` refuses a second.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .address_table import Address
    from .links import InFlight


class AddressListener:
    def local_address(self, key: str, present: bool) -> None:
        """Mobile address ``key`` gained its first local consumer (True) or lost its last."""

    def routes_changed(self, address: Address) -> None:
        """``address``'s remote consumers or the paths to them changed while it has
        producers: messages waiting for credit may have somewhere to go now."""

    def address_changed(self, address: Address) -> None:
        """``address``'s consumers or producers (local or remote) changed."""


class AddressResolver(Protocol):
    @property
    def uplink_address(self) -> Address | None:
        """The address an edge router's uplink consumes (None on an interior router):
        multicast from anonymous senders also goes up it, and a message routed by it keeps
        its own key."""

    def unknown_address(self, key: str | None, message: InFlight) -> Address | None:
        """Where ``message`` (to ``key``) goes that no address here takes, or None."""

    def alias(self, key: str) -> Address | None:
        """The address that carries ``key``'s messages (qdrouterd's address classes: an
        interior's ``_edge/<id>`` for ``_edge/<id>/...``, an edge's uplink for ``_topo/...``),
        or None."""
