"""Routing-protocol messages on the wire, with the AMQP types qdrouterd gives them.

The protocol package builds bodies as plain dicts; the codec (as proton) encodes every Python int as
an AMQP long and every key as a string. That is what upstream does for the bodies its
Python router composes (HELLO, RA, LSU, LSR: string keys, long numbers), but MAU and MAR
are composed in C (src/router_core/modules/mobile_sync/mobile.c): symbol keys, and the
treatment hints are AMQP ints. Readers on both sides look keys up by their text and accept
either integer width, yet a qdrouterd and a qdmesh router in one mesh should see exactly the
bodies they would see from each other, so the types are matched here.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping

from . import Int, Message, Properties, Symbol, encode_message

# Bodies composed by upstream's C mobile-sync module rather than by its Python router.
_C_COMPOSED = frozenset({"MAU", "MAR"})


def wire_body(opcode: str, body: Mapping[str, Any]) -> Dict[Any, Any]:
    """``body`` with upstream's AMQP types for ``opcode``'s message."""
    if opcode not in _C_COMPOSED:
        return dict(body)
    typed: Dict[Any, Any] = {}
    for key, value in body.items():
        if key == "hints" and isinstance(value, (list, tuple)):
            value = [Int(hint) for hint in value]
        typed[Symbol(key)] = value
    return typed


def encode_control(address: str, opcode: str, body: Mapping[str, Any],
                   annotations: Dict[str, Any]) -> bytes:
    """One control message: ``to`` = address, application properties {'opcode': opcode}
    (a string key, as AMQP requires of application properties; qdrouterd sends a symbol, which
    readers on both sides accept), symbol-keyed annotations, the typed body."""
    return encode_message(Message(annotations=annotations, properties=Properties(to=address),
                                  application_properties={"opcode": opcode},
                                  body=wire_body(opcode, body)))
