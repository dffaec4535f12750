"""The columns qdrouterd's core agent answers for the configuration it keeps itself (addresses,
link routes, auto-links): every attribute, unset ones as null, and some under other names
too. Its tools and scripts written against it read those names (qdstat --autolinks asks for
'addr' and 'dir'), so the rows here carry them as well.
"""

from __future__ import annotations

from typing import Any, Dict

from ..schema import EntityTypeDef

# Names qdrouterd 1.19's core agent answers besides the schema's, per type: its old names for
# an attribute (src/router_core/agent_config_*.c), and 'fallback' for an address's
# enableFallback.
_ALIASES: Dict[str, Dict[str, str]] = {
    "router.config.address": {"fallback": "enableFallback"},
    "router.config.linkRoute": {"dir": "direction"},
    "router.config.autoLink": {"addr": "address", "dir": "direction", "externalAddr": "externalAddress"},
}


# Columns the core agent answers that its schema does not list (qdstat -g reads linksBlocked).
_UNLISTED: Dict[str, list[str]] = {"router": ["linksBlocked"]}


def answers_core_columns(etype: EntityTypeDef | None) -> bool:
    """Whether rows of this type are completed with complete_row."""
    return etype is not None and etype.short_name in _ALIASES


def default_columns(etype: EntityTypeDef) -> list[str]:
    """The columns a QUERY naming none gets: the schema's attributes, then the other names
    qdrouterd's core answers for the type."""
    short = etype.short_name
    return [*etype.attributes, *_ALIASES.get(short, {}), *_UNLISTED.get(short, [])]


def complete_row(etype: EntityTypeDef, row: Dict[str, Any]) -> Dict[str, Any]:
    """``row`` with every column qdrouterd's core answers for this type."""
    complete = {name: row.get(name) for name in etype.attributes}
    complete.update(row)
    for alias, attribute in _ALIASES.get(etype.short_name, {}).items():
        complete[alias] = complete.get(attribute)
    return complete
