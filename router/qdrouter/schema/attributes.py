"""Checking a set of attribute values against one entity type, attribute by attribute."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Tuple, Union

from .coerce import InvalidValue, coerce_value
from .types import EntityTypeDef

CREATE = "create"
UPDATE = "update"

AttributeItems = Union[Mapping[str, object], Iterable[Tuple[str, object]]]


@dataclass(frozen=True)
class Problem:
    """Something wrong with the values given for one entity; `message` is user-facing."""

    message: str
    #: The attribute name as the caller wrote it; None when the problem is the entity as a whole.
    attribute: str | None = None
    #: Keys inside a map-valued attribute leading to the culprit, e.g. (group, setting).
    path: Tuple[str, ...] = ()
    #: Position of the offending item among those given, so callers can point at its source.
    index: int | None = None


@dataclass
class Validated:
    """Outcome of validation: the usable attributes plus everything wrong or outdated."""

    #: Canonical name -> value of the schema's type, in schema order.
    attributes: Dict[str, object]
    problems: List[Problem] = field(default_factory=list)
    #: Accepted but worth telling the user about, e.g. a deprecated attribute name.
    warnings: List[Problem] = field(default_factory=list)
    #: Canonical name -> the name the caller actually used.
    written: Dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems


def _pairs(items: AttributeItems) -> Iterable[Tuple[str, object]]:
    if isinstance(items, Mapping):
        return items.items()
    return items


def _type_matches(etype: EntityTypeDef, value: object) -> bool:
    return value in (etype.long_name, etype.short_name, etype.config_section)


def check_items(etype: EntityTypeDef, items: AttributeItems, *, mode: str = CREATE,
                check_required: bool = True, fill_defaults: bool = True,
                fallbacks: Mapping[str, str] | None = None) -> Validated:
    """Resolve names, refuse unknown and unsettable attributes, coerce values, add defaults.

    Items are pairs rather than only a mapping so that a name given twice, possibly under two
    spellings, is caught instead of silently overwritten.  Required attributes and defaults
    apply to CREATE only; UPDATE changes just what it names.  `fallbacks` maps an attribute to
    another whose value it takes when not given itself (before required attributes are checked).
    """
    out = Validated(attributes={})
    values: dict[str, object] = {}
    for index, (raw_name, value) in enumerate(_pairs(items)):
        attr = etype.resolve_attribute(raw_name)
        if attr is None:
            hint = etype.suggest_attribute(raw_name)
            suffix = f" (did you mean {hint!r}?)" if hint else ""
            out.problems.append(Problem(f"unknown attribute {raw_name!r}{suffix}", raw_name, index=index))
            continue
        if attr.name in out.written:
            first = out.written[attr.name]
            also = f" (also as {first!r})" if first != raw_name else ""
            out.problems.append(Problem(f"attribute {raw_name!r} is given more than once{also}",
                                        raw_name, index=index))
            continue
        out.written[attr.name] = raw_name
        if attr.name == "type":
            # The type is implied by the entity being validated; it may only repeat it.
            if not _type_matches(etype, value):
                out.problems.append(Problem(
                    f"attribute {raw_name!r}: {value!r} does not match the entity type "
                    f"{etype.long_name!r}", raw_name, index=index))
            continue
        if not (attr.create if mode == CREATE else attr.update):
            why = "is read-only" if not attr.settable else (
                "cannot be set at creation" if mode == CREATE else "cannot be changed by update")
            out.problems.append(Problem(f"attribute {raw_name!r} {why}", raw_name, index=index))
            continue
        if etype.is_deprecated_spelling(raw_name):
            out.warnings.append(Problem(
                f"attribute {raw_name!r} is deprecated, use {attr.name!r}", raw_name, index=index))
        try:
            values[attr.name] = coerce_value(attr, value)
        except InvalidValue as e:
            out.problems.append(Problem(f"attribute {raw_name!r}: {e}", raw_name, index=index))

    if mode == CREATE:
        for target, source in (fallbacks or {}).items():
            if target not in values and target not in out.written and source in values:
                values[target] = values[source]
        for attr in etype.attributes.values():
            if attr.name in values or attr.name in out.written:
                continue
            if check_required and attr.required and attr.name != "type":
                out.problems.append(Problem(f"missing required attribute {attr.name!r}"))
            elif fill_defaults and attr.create and attr.default is not None:
                values[attr.name] = attr.default
    out.attributes = {name: values[name] for name in etype.attributes if name in values}
    return out
