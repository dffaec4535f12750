"""Which of a reconciliation's statuses the API server already holds: writing one again changes
nothing but costs a request, a watch event to every watcher and the operator's own handling
of that event.  Most drift checks of a settled mesh change no status at all."""

from __future__ import annotations

from typing import Any, Dict, Iterable, Mapping, Set, Tuple

Key = Tuple[str, str]


def changes(stored: Any, patch: Any) -> bool:
    """Whether merge-patching ``stored`` with ``patch`` (RFC 7386: None removes a key, maps
    merge, anything else replaces) would change it."""
    if not isinstance(patch, Mapping):
        return bool(stored != patch)
    if not isinstance(stored, Mapping):
        return True
    for key, value in patch.items():
        if value is None:
            if key in stored:
                return True
        elif key not in stored or changes(stored[key], value):
            return True
    return False


def unchanged_statuses(statuses: Mapping[Key, Mapping[str, Any]],
                       stored: Iterable[Tuple[Key, Mapping[str, Any]]]) -> Set[Key]:
    """The keys of ``statuses`` whose object, as read (``stored``: (key, body) pairs), already
    has that status."""
    bodies: Dict[Key, Mapping[str, Any]] = dict(stored)
    return {key for key, status in statuses.items()
            if key in bodies and not changes(bodies[key].get("status") or {}, status)}
