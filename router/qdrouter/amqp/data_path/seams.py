"""What the delivery data path asks of the parts beside it, as named, typed interfaces: the
routing protocol (control messages), link routing (deliveries on links it owns) and policy
(messages on links it watches). Those parts live in rooms the data path may not import
(amqp/links/, interior/); they are handed to the adaptor once, by the server that builds
them (DeliveryAdaptor.receive_control_with, AmqpServer.route_links_with and police_with)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ...core.links import CoreLink
    from ...policy import Denial


class ControlReceiver(Protocol):
    def control_message(self, link: CoreLink, raw: bytes) -> None:
        """A routing-protocol message arrived on inter-router control link ``link``."""


class RoutedStreamFlow(Protocol):
    def resume(self) -> None:
        """Consumers' connections took output: streamed routed messages may move on."""

    def tick(self, now: float) -> None:
        """The loop's periodic tick."""


class RoutedLinks(Protocol):
    """Link routing (amqp/links/link_routing.py): links that bypass the core."""

    @property
    def streams(self) -> RoutedStreamFlow: ...

    def on_delivery(self, delivery: Any) -> None:
        """A delivery event on a link the core does not know: a routed link's, perhaps."""

    def on_flow(self, pn_link: Any) -> bool:
        """A flow event on a link the core does not know; True when it was a routed link's."""


class MessagePolicing(Protocol):
    """Policy's checks of messages (amqp/links/policing.py), on links in ``adaptor.policed``."""

    def message(self, link: CoreLink, delivery: Any) -> bytes | None:
        """The complete message if it may pass, else None (refused, or not complete yet)."""

    def held(self, handle: Any) -> bytes | None:
        """What was read so far of a message still arriving, if anything."""

    def head_denial(self, link: CoreLink, head: bytes) -> Denial | None:
        """Why a streamed message's head may not pass, or None."""

    def drop_held(self, handle: Any) -> None:
        """Forget what was read of ``handle``'s message."""

    def refuse_oversize(self, link: CoreLink, delivery: Any, size: int) -> None:
        """A message grew past the size limit: refuse it (and perhaps the link)."""


class _Unpoliced:
    """A router's policer before policy is installed: no link is in ``adaptor.policed``
    then, so nothing here is ever asked."""

    def message(self, link: CoreLink, delivery: Any) -> bytes | None:
        return None

    def held(self, handle: Any) -> bytes | None:
        return None

    def head_denial(self, link: CoreLink, head: bytes) -> Denial | None:
        return None

    def drop_held(self, handle: Any) -> None:
        pass

    def refuse_oversize(self, link: CoreLink, delivery: Any, size: int) -> None:
        pass


UNPOLICED: MessagePolicing = _Unpoliced()
