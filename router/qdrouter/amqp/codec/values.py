"""Python types for the AMQP types that plain Python values do not say.

A plain ``int`` is an AMQP long, ``float`` a double, ``str`` a string, ``bytes`` a binary,
``list``/``tuple`` a list and ``dict`` a map, as with proton's Python binding; these
wrappers ask for another type. Each is a subclass of the plain type it carries, so code that
compares a decoded symbol with a ``str`` or adds a decoded ``uint`` to an ``int`` works
unchanged, and the decoder gives them back so a value re-encoded keeps its AMQP type.
"""

from __future__ import annotations

from typing import Any, Iterable, List


class Symbol(str):
    """AMQP symbol (ASCII)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Symbol({str.__repr__(self)})"


class Char(str):
    """AMQP char: one Unicode code point."""

    __slots__ = ()


class UByte(int):
    __slots__ = ()


class UShort(int):
    __slots__ = ()


class UInt(int):
    __slots__ = ()


class ULong(int):
    __slots__ = ()


class Byte(int):
    __slots__ = ()


class Short(int):
    __slots__ = ()


class Int(int):
    """AMQP int (32-bit signed); a plain Python int encodes as an AMQP long."""

    __slots__ = ()


class Timestamp(int):
    """AMQP timestamp: milliseconds since the Unix epoch."""

    __slots__ = ()


class Float(float):
    """AMQP float (32-bit); a plain Python float encodes as an AMQP double."""

    __slots__ = ()


class Decimal32(int):
    """The 4 bytes of an IEEE 754 decimal32, as a big-endian unsigned int (as proton gives it)."""

    __slots__ = ()


class Decimal64(int):
    __slots__ = ()


class Decimal128(bytes):
    """The 16 bytes of an IEEE 754 decimal128."""

    __slots__ = ()


class Described:
    """A described value: a descriptor (usually a Symbol or ULong) and the value it describes."""

    __slots__ = ("descriptor", "value")

    def __init__(self, descriptor: Any, value: Any) -> None:
        self.descriptor = descriptor
        self.value = value

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Described) and self.descriptor == other.descriptor
                and self.value == other.value)

    def __hash__(self) -> int:
        return hash((self.descriptor, self.value))

    def __repr__(self) -> str:
        return f"Described({self.descriptor!r}, {self.value!r})"


# Element type names an Array may hold (the AMQP type names).
ARRAY_TYPES = frozenset({
    "null", "boolean", "ubyte", "ushort", "uint", "ulong", "byte", "short", "int", "long",
    "float", "double", "decimal32", "decimal64", "decimal128", "char", "timestamp", "uuid",
    "binary", "string", "symbol", "list", "map", "array",
})


class Array:
    """An AMQP array: ``elements`` all of AMQP type ``element_type`` (a name of ARRAY_TYPES),
    each described by ``descriptor`` when it is not None."""

    __slots__ = ("descriptor", "element_type", "elements")

    def __init__(self, element_type: str, elements: Iterable[Any], descriptor: Any | None = None) -> None:
        if element_type not in ARRAY_TYPES:
            raise ValueError(f"unknown AMQP array element type {element_type!r}")
        self.element_type = element_type
        self.elements: List[Any] = list(elements)
        self.descriptor = descriptor

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Array) and self.element_type == other.element_type
                and self.descriptor == other.descriptor and self.elements == other.elements)

    __hash__ = None  # type: ignore[assignment]  # mutable, as a list

    def __repr__(self) -> str:
        described = f", descriptor={self.descriptor!r}" if self.descriptor is not None else ""
        return f"Array({self.element_type!r}, {self.elements!r}{described})"
