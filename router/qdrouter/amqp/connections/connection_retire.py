"""A connection replaced by one made with newer TLS material (amqp/connections/tls_rotation.py) finishes
what it carries and takes nothing new: its sending links leave their addresses (the
replacement's links take their place), and its receiving links get no more credit and are
drained, so the peer gives back the credit it holds and sends the rest on the replacement.
Closing it once its peer has done so and nothing on it is unsettled loses nothing."""

from __future__ import annotations

from typing import Any, Set

from ..bindings.proton_ffi import lib
from .connection import AmqpConnection


def retire(connection: AmqpConnection, dirty: Set[Any]) -> None:
    connection.retiring = True  # no credit to its producers (amqp/data_path/credit_return.py)
    for link in list(connection.links.values()):
        handle = link.handle
        if handle is None:
            continue
        if link.incoming:
            lib.pn_link_set_drain(handle, True)
        else:
            link.credit = 0
            address = link.address
            if address is not None and link in address.consumers:
                address.consumers.remove(link)
    dirty.add(connection)


def credit_out(connection: AmqpConnection) -> int:
    """Credit a retiring connection's peer still holds on its receiving links: until it is
    given back the peer may still be sending, and closing then would lose that."""
    if not connection.retiring:
        return 0
    return sum(max(0, lib.pn_link_credit(link.handle)) for link in connection.links.values()
               if link.incoming and link.handle is not None)
