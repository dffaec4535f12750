"""The one validation entry point shared by the config file loader and the management agent."""

from __future__ import annotations

from typing import Mapping

from .attributes import CREATE, UPDATE, AttributeItems, Validated, check_items
from .rules import FALLBACKS, check_entity, entity_warnings, normalize_groups
from .types import EntityTypeDef, SchemaError

__all__ = ["CREATE", "UPDATE", "validate_attributes"]


def validate_attributes(etype: EntityTypeDef, items: AttributeItems, *,
                        mode: str = CREATE) -> Validated:
    """Check attribute values for creating (mode CREATE) or updating (mode UPDATE) an entity.

    CREATE: every required attribute must be present, defaults are filled in, and the
    cross-attribute rules are applied.  UPDATE: only the named attributes are checked; they must
    be updatable.  The caller strips `name`/`identity` used to locate the entity before UPDATE,
    and should re-run `check_entity` on the merged result.
    Names may be camelCase, hyphenated or deprecated; results use the canonical names.
    """
    if mode not in (CREATE, UPDATE):
        raise SchemaError(f"unknown validation mode {mode!r}")
    out = check_items(etype, items, mode=mode, fallbacks=FALLBACKS.get(etype.short_name))
    groups = out.attributes.get("groups")
    if etype.short_name == "vhost" and isinstance(groups, Mapping):
        normalized, problems = normalize_groups(groups, out.written.get("groups", "groups"))
        out.attributes["groups"] = normalized
        out.problems.extend(problems)
    # Combination rules on half-valid input would only echo the problems already found.
    if mode == CREATE and out.ok:
        out.problems.extend(check_entity(etype, out.attributes, out.written))
        out.warnings.extend(entity_warnings(etype, out.attributes, out.written))
    return out
