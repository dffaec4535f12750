"""Reading a spec's fields with their types and ranges checked (defence in depth behind the CRD
schema: specs may come from an older CRD, from tests, or from the API server with pruning off)."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Sequence

from .errors import SpecError

_MISSING = object()
# Characters that would end a value or a line in qdrouterd.conf are escaped by the renderer, but
# control characters have no business in any value the operator writes.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class Fields:
    """The fields of one object at ``path`` (``spec``, ``spec.listeners[0]``)."""

    def __init__(self, data: Any, path: str) -> None:
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise SpecError(path, f"must be an object, not {type(data).__name__}")
        self.data: Mapping[str, Any] = data
        self.path = path

    def at(self, key: str) -> str:
        return f"{self.path}.{key}"

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def _get(self, key: str, required: bool) -> Any:
        value = self.data.get(key)
        if value is None:
            if required:
                raise SpecError(self.at(key), "is required")
            return _MISSING
        return value

    def text(self, key: str, *, required: bool = False, default: str | None = None,
             max_length: int = 253, pattern: str | None = None) -> str | None:
        value = self._get(key, required)
        if value is _MISSING:
            return default
        if not isinstance(value, str):
            raise SpecError(self.at(key), f"must be a string, not {type(value).__name__}")
        if not value:
            raise SpecError(self.at(key), "must not be empty")
        if len(value) > max_length:
            raise SpecError(self.at(key), f"must be at most {max_length} characters")
        if _CONTROL.search(value):
            raise SpecError(self.at(key), "must not contain control characters (newlines, tabs, ...)")
        if pattern is not None and not re.fullmatch(pattern, value):
            raise SpecError(self.at(key), f"{value!r} does not match {pattern}")
        return value

    def need_text(self, key: str, **kwargs: Any) -> str:
        value = self.text(key, required=True, **kwargs)
        assert value is not None
        return value

    def integer(self, key: str, *, required: bool = False, default: int | None = None,
                minimum: int | None = None, maximum: int | None = None) -> int | None:
        value = self._get(key, required)
        if value is _MISSING:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpecError(self.at(key), f"must be an integer, not {value!r}")
        if minimum is not None and value < minimum:
            raise SpecError(self.at(key), f"must be at least {minimum} (got {value})")
        if maximum is not None and value > maximum:
            raise SpecError(self.at(key), f"must be at most {maximum} (got {value})")
        return value

    def need_integer(self, key: str, **kwargs: Any) -> int:
        value = self.integer(key, **kwargs)
        if value is None:
            raise SpecError(self.at(key), "is required")
        return value

    def boolean(self, key: str, default: bool | None = None) -> bool | None:
        value = self._get(key, False)
        if value is _MISSING:
            return default
        if not isinstance(value, bool):
            raise SpecError(self.at(key), f"must be true or false, not {value!r}")
        return value

    def choice(self, key: str, choices: Sequence[str], *, default: str | None = None,
               required: bool = False) -> str | None:
        value = self.text(key, required=required, default=default)
        if value is not None and value not in choices:
            raise SpecError(self.at(key), f"{value!r} is not one of {', '.join(choices)}")
        return value

    def objects(self, key: str, max_items: int = 256) -> List[Fields]:
        value = self._get(key, False)
        if value is _MISSING:
            return []
        if not isinstance(value, list):
            raise SpecError(self.at(key), f"must be a list, not {type(value).__name__}")
        if len(value) > max_items:
            raise SpecError(self.at(key), f"must have at most {max_items} items")
        return [Fields(item, f"{self.at(key)}[{i}]") for i, item in enumerate(value)]

    def texts(self, key: str, max_items: int = 256, max_length: int = 512) -> List[str]:
        value = self._get(key, False)
        if value is _MISSING:
            return []
        if not isinstance(value, list):
            raise SpecError(self.at(key), f"must be a list of strings, not {type(value).__name__}")
        holder = Fields({str(i): v for i, v in enumerate(value)}, self.at(key))
        if len(value) > max_items:
            raise SpecError(self.at(key), f"must have at most {max_items} items")
        out = []
        for i in range(len(value)):
            item = holder.need_text(str(i), max_length=max_length)
            if "," in item:
                raise SpecError(f"{self.at(key)}[{i}]", "must not contain ','")
            out.append(item)
        return out

    def sub(self, key: str) -> Fields:
        return Fields(self.data.get(key), self.at(key))

    def mapping(self, key: str) -> Dict[str, Any]:
        """A free-form object (pod settings), passed through as it is."""
        value = self._get(key, False)
        if value is _MISSING:
            return {}
        if not isinstance(value, Mapping):
            raise SpecError(self.at(key), f"must be an object, not {type(value).__name__}")
        return dict(value)

    def string_map(self, key: str) -> Dict[str, str]:
        value = self.mapping(key)
        for k, v in value.items():
            if not isinstance(v, str):
                raise SpecError(f"{self.at(key)}.{k}", "must be a string")
        return value

    def raw_list(self, key: str) -> List[Any]:
        value = self._get(key, False)
        if value is _MISSING:
            return []
        if not isinstance(value, list):
            raise SpecError(self.at(key), f"must be a list, not {type(value).__name__}")
        return list(value)


def exactly_one(fields: Fields, first: str, second: str) -> None:
    if fields.has(first) == fields.has(second):
        raise SpecError(fields.path, f"give exactly one of {first} or {second}")
