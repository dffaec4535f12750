"""The router's own AMQP 1.0 codec: values (encoder, decoder) and messages (sections).

Pure Python, no proton import, and no limit on the number of values one message holds
(proton's ``pn_data_t`` holds at most 65,535). Management and the routing protocol's control
messages are built and read here; the data path never decodes a message
(amqp/codec/message_sections.py and router_annotations.py read and splice the few fields it needs).
"""

from __future__ import annotations

from .amqp_types import MessageFormatError
from .decoder import MAX_DEPTH, decode_value, decode_values
from .encoder import AmqpEncodeError, encode_value
from .message import (
    AMQP_DATA,
    AMQP_SEQUENCE,
    AMQP_VALUE,
    Header,
    Message,
    Properties,
    decode_message,
    encode_message,
)
from .values import (
    Array,
    Byte,
    Char,
    Decimal32,
    Decimal64,
    Decimal128,
    Described,
    Float,
    Int,
    Short,
    Symbol,
    Timestamp,
    UByte,
    UInt,
    ULong,
    UShort,
)

__all__ = [
    "AMQP_DATA", "AMQP_SEQUENCE", "AMQP_VALUE", "MAX_DEPTH", "AmqpEncodeError", "Array", "Byte",
    "Char", "Decimal32", "Decimal64", "Decimal128", "Described", "Float", "Header", "Int",
    "Message", "MessageFormatError", "Properties", "Short", "Symbol", "Timestamp", "UByte",
    "UInt", "ULong", "UShort", "decode_message", "decode_value", "decode_values",
    "encode_message", "encode_value",
]
