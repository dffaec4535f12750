"""Turning a value as written (config text, JSON, AMQP) into the attribute's schema type."""

from __future__ import annotations

import json
from typing import Callable, Dict

from .hosts import short_repr
from .types import (
    BOOLEAN,
    ENTITY_ID,
    ENUM,
    FLOAT,
    INTEGER,
    LIST,
    MAP,
    PATH,
    PROPERTIES,
    STRING,
    AttributeDef,
)

_TRUE = frozenset({"yes", "true", "1"})
_FALSE = frozenset({"no", "false", "0"})


class InvalidValue(ValueError):
    """A value that cannot be converted; str() is a complete, user-facing explanation."""


def _string(attr: AttributeDef, value: object) -> object:
    if isinstance(value, str):
        return value
    # A JSON config may write numbers unquoted ("port": 5672); they mean the same text.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise InvalidValue(f"{short_repr(value)} is not a string")


#: Without a range of its own, an integer attribute holds what qdrouterd's C `long` holds.
INT64_MIN = -(2 ** 63)
INT64_MAX = 2 ** 63 - 1


def _integer(attr: AttributeDef, value: object) -> object:
    number = _as_integer(value)
    low = INT64_MIN if attr.minimum is None else attr.minimum
    high = INT64_MAX if attr.maximum is None else attr.maximum
    if not low <= number <= high:
        if attr.minimum is not None and attr.maximum is not None and high - low <= 1000:
            bound = f"between {low} and {high}"  # a small range, as a phase's 0 to 9: say it all
        else:
            bound = f"at least {low}" if number < low else f"at most {high}"
        raise InvalidValue(f"{number} is out of range: it must be {bound}")
    return number


def _as_integer(value: object) -> int:
    if isinstance(value, bool):
        raise InvalidValue(f"{short_repr(value)} is not an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and len(value) <= 40:  # int() of a huge text costs quadratic time
        try:
            return int(value.strip(), 10)
        except ValueError:
            pass
    raise InvalidValue(f"{short_repr(value)} is not an integer")


def _boolean(attr: AttributeDef, value: object) -> object:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    raise InvalidValue(f"{short_repr(value)} is not a boolean (use yes, no, true, false, 1 or 0)")


def _enum(attr: AttributeDef, value: object) -> object:
    if isinstance(value, str) and value in attr.choices:
        return value
    raise InvalidValue(f"{short_repr(value)} is not one of {', '.join(attr.choices)}")


def _from_json_text(value: object, wanted: type, what: str) -> object:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise InvalidValue(f"{short_repr(value)} is not a {what}") from None
    if not isinstance(value, wanted):
        raise InvalidValue(f"{short_repr(value)} is not a {what}")
    return value


def _map(attr: AttributeDef, value: object) -> object:
    result = _from_json_text(value, dict, "map")
    assert isinstance(result, dict)
    return dict(result)


def _properties(attr: AttributeDef, value: object) -> object:
    result = _map(attr, value)
    assert isinstance(result, dict)
    bad = [k for k in result if not isinstance(k, str)]
    if bad:
        raise InvalidValue(f"property keys must be strings, not {bad[0]!r}")
    return result


def _list(attr: AttributeDef, value: object) -> object:
    if isinstance(value, tuple):
        return list(value)
    result = _from_json_text(value, list, "list")
    assert isinstance(result, list)
    return list(result)


def _float(attr: AttributeDef, value: object) -> object:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and len(value) <= 40:
        try:
            return float(value.strip())
        except ValueError:
            pass
    raise InvalidValue(f"{short_repr(value)} is not a number")


_COERCERS: Dict[str, Callable[[AttributeDef, object], object]] = {
    STRING: _string,
    PATH: _string,
    ENTITY_ID: _string,
    INTEGER: _integer,
    FLOAT: _float,
    BOOLEAN: _boolean,
    ENUM: _enum,
    MAP: _map,
    PROPERTIES: _properties,
    LIST: _list,
}


def coerce_value(attr: AttributeDef, value: object) -> object:
    """`value` converted to `attr`'s type; raises InvalidValue explaining why it cannot be."""
    return _COERCERS[attr.type](attr, value)
