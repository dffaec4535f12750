"""Policy on each message a policed client sends: the adaptor side of the engine's message
checks (size, user-id, an anonymous link's addresses). amqp/links/policing.py polices
connections, sessions and links, and hands the messages of the links it watches here."""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict

from ...core.links import CoreLink
from ...policy import ConnectionGrant, Denial, PolicyEngine
from ...policy.engine import MESSAGE_SIZE, OVERSIZE
from ..bindings.proton_ffi import lib, set_condition
from ..codec.amqp_types import PROPERTIES, MessageFormatError, section_value, skip_value, u32
from ..codec.message_sections import find_sections, read_to
from ..codec.router_annotations import read_annotations

log = logging.getLogger("qdrouter.POLICY")

CONNECTION_FORCED = "amqp:connection:forced"
EDGE_ROLE = "edge"


class MessagePolicer:
    def __init__(self, engine: PolicyEngine, adaptor: Any, refuse_link: Callable[[CoreLink], None]) -> None:
        self.engine = engine
        self.adaptor = adaptor
        # The endpoints' handling of a link the router closed itself (its peer is told).
        self.refuse_link = refuse_link
        # The part read so far of each policed link's current, still arriving message.
        self.partials: Dict[Any, bytearray] = {}

    def forget(self, handle: Any) -> None:
        self.partials.pop(handle, None)

    def held(self, handle: Any) -> bytes | None:
        """What was read so far of a policed link's message still arriving, if anything."""
        held = self.partials.get(handle)
        return bytes(held) if held is not None else None

    def head_denial(self, link: Any, head: bytes) -> Denial | None:
        """The checks of a message's head (user-id, an anonymous link's target) for one that
        streams (amqp/data_path/streaming.py): its size is counted as it arrives."""
        grant: ConnectionGrant = self.adaptor.policed[link.handle]
        user_id = None
        if grant.check_user_id:
            try:
                user_id = read_user_id(head)
            except MessageFormatError:
                user_id = None
        denial = self.engine.message(grant, 0, user_id)
        if denial is None and link.anonymous and grant.group is not None:
            denial = self._check_target(grant, link, head)
        return denial

    def refuse_oversize(self, link: Any, delivery: Any, size: int) -> None:
        """A streamed message passed maxMessageSize after ``size`` bytes (amqp/data_path/streaming.py):
        refused as any oversized message."""
        grant = self.adaptor.policed.get(link.handle)
        denial = self.engine.message(grant, size, None) if grant is not None else None
        if denial is not None:
            log.info("Message from %s (user %s) refused: %s", link.connection.peer, grant.user,
                     denial.description)
            self._oversize(link, delivery, denial)

    def message(self, link: Any, delivery: Any) -> bytes | None:
        """A delivery on a policed link: the complete message if it may pass, else None (it
        was rejected, or is still arriving). Oversized messages are refused while still
        streaming, so a hostile sender cannot make the router buffer them."""
        grant: ConnectionGrant = self.adaptor.policed[link.handle]
        handle = link.handle
        limit = grant.max_message_size
        if lib.pn_delivery_aborted(delivery):
            self.partials.pop(handle, None)
            lib.pn_link_advance(handle)
            lib.pn_delivery_settle(delivery)
            return None
        size = lib.pn_delivery_pending(delivery)
        held = self.partials.get(handle)
        total = size + (len(held) if held is not None else 0)
        if lib.pn_delivery_partial(delivery):
            if limit and total > limit:
                # Refused while still arriving: nothing more of it is read or kept.
                self.partials.pop(handle, None)
                denial = self.engine.message(grant, total, None)
                if denial is not None:
                    self._oversize(link, delivery, denial)
                return None
            # Take what arrived out of proton, so a session window smaller than a message
            # (maxSessionWindow) keeps opening instead of waiting for the message's end.
            if size > 0:
                chunk = self.adaptor.read_message(link, delivery, size, advance=False)
                if held is None:
                    self.partials[handle] = bytearray(chunk)
                else:
                    held += chunk
            return None
        raw: bytes = self.adaptor.read_message(link, delivery, size)
        if held is not None:
            del self.partials[handle]
            held += raw
            raw = bytes(held)
        user_id = None
        if grant.check_user_id:
            try:
                user_id = read_user_id(raw)
            except MessageFormatError:
                user_id = None  # the router's own parsing rejects malformed messages later
        denial = self.engine.message(grant, len(raw), user_id)
        if denial is None and link.anonymous and grant.group is not None:
            denial = self._check_target(grant, link, raw)
        if denial is None:
            return raw
        log.info("Message from %s (user %s) refused: %s", link.connection.peer, grant.user,
                 denial.description)
        if denial.condition == MESSAGE_SIZE:
            self._oversize(link, delivery, denial)
        else:
            self.adaptor.reject_delivery(link, delivery, denial.condition, denial.description)
        return None

    def _oversize(self, link: Any, delivery: Any, denial: Denial) -> None:
        """A message above maxMessageSize: as qdrouterd (router_node.c AMQP_rx_handler), the
        delivery is rejected, its link closed and the connection closed with
        amqp:connection:forced, "Message size exceeded". Not an edge router's: its one
        uplink carries every client of the edge, and one client's message must not cut the
        others off; the message is rejected (closing only the link when it was still
        arriving, so that the rest of it is never read)."""
        connection = link.connection
        if connection.settings.role == EDGE_ROLE:
            if lib.pn_delivery_partial(delivery):
                self._close_link(link, denial)
            else:
                self.adaptor.reject_delivery(link, delivery, denial.condition, denial.description)
            return
        self.adaptor.reject_delivery(link, delivery, denial.condition, denial.description)
        self._close_link(link, denial)
        log.info("Connection %d from %s closed: %s", connection.identity, connection.peer, denial.description)
        set_condition(lib.pn_connection_condition(connection.pn_connection), CONNECTION_FORCED, OVERSIZE)
        lib.pn_connection_close(connection.pn_connection)
        self.adaptor.dirty.add(connection)

    def _check_target(self, grant: ConnectionGrant, link: Any, raw: bytes) -> Denial | None:
        """A message on an anonymous link may go only where its user may attach a sender: the
        address it would be routed by, as the client wrote it, against the targets (qdrouterd:
        qd_policy_approve_message_target). Without this an anonymous sender reaches any
        address, management's among them."""
        try:
            address = routed_address(raw, link.strip_in)
        except MessageFormatError as error:
            # Unreadable, so unroutable: refused here rather than trusting a later parse.
            return Denial("amqp:decode-error", f"invalid message format: {error}")
        if address is None:
            return None  # nowhere to go: the router's routing releases it
        denial = self.engine.message_target(grant, address)
        if denial is not None:
            log.info("Message from %s (user %s, vhost %s) to %r refused: %s", link.connection.peer,
                     grant.user, grant.vhost, address, denial.description)
        return denial

    def _close_link(self, link: Any, denial: Denial) -> None:
        handle = link.handle
        set_condition(lib.pn_link_condition(handle), denial.condition, denial.description)
        lib.pn_link_close(handle)
        self.adaptor.dirty.add(link.connection)
        self.refuse_link(link)



def routed_address(data: bytes, strip_in: bool) -> str | None:
    """The address an anonymous link's message is routed by, unnormalised: x-opt-qd.to where
    the link's annotations are trusted (amqp/data_path/inbound.py's rule), else properties.to."""
    ma_start, ma_end, props_start = find_sections(data)
    if ma_start >= 0 and not strip_in:
        to_override = read_annotations(data, ma_start, ma_end).to_override
        if to_override is not None:
            return to_override
    return read_to(data, props_start)


def read_user_id(data: bytes) -> bytes | None:
    """properties.user-id (2nd field, binary) or None when absent."""
    _, _, props_start = find_sections(data)
    if props_start < 0:
        return None
    try:
        vpos = section_value(data, props_start, PROPERTIES)
        code = data[vpos]
        if code == 0xC0:
            count, p = data[vpos + 2], vpos + 3
        elif code == 0xD0:
            count, p = u32(data, vpos + 5), vpos + 9
        else:
            return None
        if count < 2:
            return None
        p = skip_value(data, p)
        code = data[p]
        if code == 0xA0:
            return bytes(data[p + 2:p + 2 + data[p + 1]])
        if code == 0xB0:
            return bytes(data[p + 5:p + 5 + u32(data, p + 1)])
        if code in (0xA1, 0xA3):  # tolerated: a user-id sent as a string or symbol
            return bytes(data[p + 2:p + 2 + data[p + 1]])
        return None
    except IndexError:
        raise MessageFormatError("truncated properties") from None
