"""Test hooks: failures made to order, so that tests can show the fault boundary
(amqp/loop/fault_boundary.py) contains them. TEST ONLY, refused unless the router was started with
`-T/--test-hooks` (as qdrouterd's test hooks are).

The management node operation `TEST-FAULT` arms one failure, by its application property
`point`; each armed failure fires once, then the router is as before:
- `delivery` (with `address`): the router serves the address itself, as an in-process
  endpoint (like `$management`), until the next delivery to it, which raises inside the
  router's delivery handling. Arm it before the sender attaches, and with no consumer of the
  address on this router (a local consumer would be served first, by the fast path).
- `management`: the next request to the management agent raises in the management node's
  delivery handling, before the agent's own catch (which answers 500) is reached.
- `control` (interior routers): the next routing-protocol control message received on an
  inter-router connection raises in the router's control-message handling.
- `http`: the next HTTP request (/healthz, /readyz, /metrics) raises in its page handler.
"""

from __future__ import annotations

from typing import Any, List, Tuple

from ..core.address_table import Address, NodeHandler
from ..core.links import CoreLink, InFlight
from .status import FORBIDDEN, OK, ManagementStatus, bad_request

POINTS = ("delivery", "management", "control", "http")


class ArmedFault(RuntimeError):
    """The failure a test hook raises."""


def arm(router: Any, request: Any) -> Tuple[int, Any]:
    """TEST-FAULT: arm one failure (module docstring); 403 without test hooks."""
    if not getattr(router, "test_hooks", False):
        raise ManagementStatus(FORBIDDEN, "TEST-FAULT: test hooks are off (start the router with "
                                          "-T/--test-hooks)")
    point = request.properties.get("point")
    if point == "delivery":
        address = request.properties.get("address")
        if not isinstance(address, str) or not address:
            raise bad_request("TEST-FAULT: application-property 'address' must be a non-empty string")
        _arm_address(router, address)
        return OK, {"point": point, "address": address}
    if point == "management":
        _arm_management(router)
        return OK, {"point": point}
    if point == "control":
        if router.mesh is None:
            raise bad_request("TEST-FAULT: point 'control' needs router mode 'interior'")
        _arm_control(router)
        return OK, {"point": point}
    if point == "http":
        if not router.http.listeners:
            raise bad_request("TEST-FAULT: point 'http' needs a listener with 'http: true'")
        _arm_http(router)
        return OK, {"point": point}
    raise bad_request(f"TEST-FAULT: application-property 'point' must be one of {', '.join(POINTS)}, "
                      f"not {point!r}")


def _arm_address(router: Any, address: str) -> None:
    table = router.table
    target = table.get(table.ingress_key(address))

    def trip(message: InFlight) -> int:
        table.stand_in(target, previous)
        table.discard_if_unused(target)
        raise ArmedFault(f"test hook: the armed failure of a delivery to {address!r}")

    previous = table.stand_in(target, trip)


def _arm_management(router: Any) -> None:
    table = router.table
    addresses = [table.get(key) for key in router.agent.addresses()]

    def trip(message: InFlight) -> int:
        for address, handler in nodes:
            table.stand_in(address, handler)
        raise ArmedFault("test hook: the armed failure of a management request")

    nodes: List[Tuple[Address, NodeHandler | None]] = [
        (address, table.stand_in(address, trip)) for address in addresses]


def _arm_control(router: Any) -> None:
    adaptor = router.server.adaptor

    class Trip:
        """Takes the next control message in the mesh's place, once, and fails."""

        def control_message(self, link: CoreLink, raw: bytes) -> None:
            adaptor.receive_control_with(original)
            raise ArmedFault("test hook: the armed failure of a control message")

    original = adaptor.receive_control_with(Trip())


def _arm_http(router: Any) -> None:
    listeners = list(router.http.listeners.values())
    pages = [(listener, listener.handler) for listener in listeners]

    def trip(request: Any) -> Any:
        for listener, handler in pages:
            listener.handler = handler
        raise ArmedFault("test hook: the armed failure of an HTTP request")

    for listener in listeners:
        listener.handler = trip
