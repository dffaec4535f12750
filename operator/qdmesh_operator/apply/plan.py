"""Planning live changes: the management operations that turn a router's live entities into the
desired ones.  Pure; only entities the operator owns (``model.entities.is_managed``) are ever
deleted, so config-made and hand-made entities with plain names are left alone."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Collection, Dict, List, Mapping, Sequence, Tuple

from ..model.entities import LIVE_TYPES, UPDATABLE_TYPES, Entity, is_managed

CREATE = "CREATE"
DELETE = "DELETE"
UPDATE = "UPDATE"


@dataclass
class Op:
    action: str
    type: str
    name: str
    attributes: Dict[str, Any] = field(default_factory=dict)
    reason: str = ""

    def describe(self) -> str:
        return f"{self.action} {self.type} {self.name!r}" + (f" ({self.reason})" if self.reason else "")


def _normal(value: Any) -> Any:
    """Values as the router may report them: booleans as yes/no text, numbers as text."""
    if isinstance(value, str):
        lowered = value.lower()
        if lowered in ("yes", "true"):
            return True
        if lowered in ("no", "false"):
            return False
        if value.isdigit():
            return int(value)
    return value


def difference(want: Mapping[str, Any], have: Mapping[str, Any], path: str = "") -> str | None:
    """The first attribute of ``want`` that ``have`` does not match (None if all match).
    Only the attributes the operator sets are compared: the router adds defaults and status."""
    for key, wanted in want.items():
        actual = have.get(key)
        if isinstance(wanted, Mapping):
            if not isinstance(actual, Mapping):
                return f"{path}{key} is {actual!r}"
            inner = difference(wanted, actual, f"{path}{key}.")
            if inner:
                return inner
            extra = sorted(set(actual) - set(wanted)) if not path else []
            if extra:
                return f"{path}{key} has {extra[0]!r}, which is not wanted"
        elif _normal(wanted) != _normal(actual):
            return f"{path}{key} is {actual!r}, want {wanted!r}"
    return None


LiveRows = Mapping[str, Sequence[Mapping[str, Any]]]
"""Live entities by config type (``linkRoute``), each a row of attributes including ``name``."""


def plan(desired: Sequence[Entity], live: LiveRows, keep: Collection[str] = ()) -> List[Op]:
    """Operations, in a safe order (deletes from dependents up, then updates, then creates from
    listeners and connectors down), that make ``live`` match ``desired``.  ``keep``: names of
    owned entities that exist only in the config file (they change by a restart, not here)."""
    have: Dict[Tuple[str, str], Mapping[str, Any]] = {}
    for type_ in LIVE_TYPES:
        for row in live.get(type_, ()):
            name = row.get("name")
            if is_managed(name):
                have[(type_, str(name))] = row
    deletes: List[Op] = []
    updates: List[Op] = []
    creates: List[Op] = []
    wanted_keys = set()
    for entity in desired:
        key = (entity.type, entity.name)
        wanted_keys.add(key)
        found = have.get(key)
        if found is None:
            creates.append(Op(CREATE, entity.type, entity.name, dict(entity.attributes), "missing"))
            continue
        why = difference(entity.attributes, found)
        if why is None:
            continue
        fixed = UPDATABLE_TYPES.get(entity.type)
        if fixed is not None and all(difference({k: entity.attributes[k]}, found) is None
                                     for k in fixed if k in entity.attributes):
            changeable = {k: v for k, v in entity.attributes.items() if k not in fixed}
            updates.append(Op(UPDATE, entity.type, entity.name, changeable, why))
        else:
            deletes.append(Op(DELETE, entity.type, entity.name, reason=f"replaced: {why}"))
            creates.append(Op(CREATE, entity.type, entity.name, dict(entity.attributes), f"replaced: {why}"))
    for (type_, name) in have:
        if (type_, name) not in wanted_keys and name not in keep:
            deletes.append(Op(DELETE, type_, name, reason="no longer wanted"))
    order = {t: i for i, t in enumerate(LIVE_TYPES)}
    deletes.sort(key=lambda op: -order[op.type])
    creates.sort(key=lambda op: order[op.type])
    return [*deletes, *updates, *creates]
