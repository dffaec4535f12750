"""What the operator last applied of each object it owns, and whether the object changed since:
a drift check of a mesh nobody changed then writes nothing to the API server, instead of a
server-side apply of every owned object (a PATCH each, answered with the whole object) every
drift interval.

The record is only trusted for the kinds the operator watches (handlers.py: every object
labelled ``app.kubernetes.io/managed-by=qdmesh-operator``): a watch event whose resourceVersion
is not the one the operator's own apply left drops the object's entry, so the next
reconciliation applies it again (a hand edit, a deletion, another field manager).  An entry
older than ``max_age`` is not trusted either (a watch event missed while the watch was being
reopened, or a watch the operator's RBAC does not allow), and is swept: the record holds only
objects applied within that time, whatever came and went before.

Absence is recorded the same way: an object the operator deletes when the spec turns it off
(the web console) is not deleted again at every drift check once the API server said it is not
there, until a watch event shows it back."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from typing import Any, Callable, Dict, Iterable, Mapping, Tuple

from .. import contract

#: (kind, namespace, name)
Key = Tuple[str, str, str]
#: Seconds an entry is trusted: a drift check older than this applies the object again.
MAX_AGE_S = 600.0
ABSENT = "absent"


def digest(obj: Mapping[str, Any]) -> str:
    """The rendered object's identity: equal digests, equal bodies."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def key_of(obj: Mapping[str, Any]) -> Key:
    meta = obj["metadata"]
    return str(obj["kind"]), str(meta["namespace"]), str(meta["name"])


class AppliedObjects:
    def __init__(self, max_age: float = MAX_AGE_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_age = max_age
        self.clock = clock
        self._guard = threading.Lock()
        # key -> (digest or ABSENT, resourceVersion the apply left, when recorded)
        self._entries: Dict[Key, Tuple[str, str, float]] = {}
        self._watched: set = set()
        self._swept = clock()

    def watching(self, kinds: Iterable[str]) -> None:
        """The kinds whose watch events reach ``seen``: only those are ever skipped."""
        with self._guard:
            self._watched.update(kinds)

    def current(self, obj: Mapping[str, Any], obj_digest: str) -> bool:
        """Whether ``obj`` is what was applied last and nothing changed it since (only for an
        object carrying the label the watches select by: of any other, no event would come)."""
        labels = obj["metadata"].get("labels") or {}
        if labels.get("app.kubernetes.io/managed-by") != contract.MANAGER:
            return False
        return self._fresh(key_of(obj), obj_digest)

    def known_absent(self, kind: str, namespace: str, name: str) -> bool:
        return self._fresh((kind, namespace, name), ABSENT)

    def record(self, obj: Mapping[str, Any], obj_digest: str, resource_version: str) -> None:
        self._put(key_of(obj), obj_digest, resource_version)

    def record_absent(self, kind: str, namespace: str, name: str) -> None:
        self._put((kind, namespace, name), ABSENT, "")

    def seen(self, kind: str, namespace: str, name: str, resource_version: str, deleted: bool) -> None:
        """A watch event: an object that is not as the operator's own apply left it is
        applied again at the next reconciliation."""
        key = (kind, namespace, name)
        with self._guard:
            entry = self._entries.get(key)
            if entry is None:
                return
            if deleted or entry[0] == ABSENT or entry[1] != resource_version:
                del self._entries[key]

    def forget(self, kind: str, namespace: str, name: str) -> None:
        with self._guard:
            self._entries.pop((kind, namespace, name), None)

    def size(self) -> int:
        """Entries held (not ``__len__``: an empty record must not be falsy)."""
        with self._guard:
            return len(self._entries)

    def _fresh(self, key: Key, obj_digest: str) -> bool:
        with self._guard:
            if key[0] not in self._watched:
                return False
            entry = self._entries.get(key)
            return entry is not None and entry[0] == obj_digest and self.clock() - entry[2] < self.max_age

    def _put(self, key: Key, obj_digest: str, resource_version: str) -> None:
        now = self.clock()
        with self._guard:
            self._entries[key] = (obj_digest, resource_version, now)
            if now - self._swept > self.max_age:  # entries no reconciliation renewed: gone
                self._swept = now
                for stale in [k for k, e in self._entries.items() if now - e[2] >= self.max_age]:
                    del self._entries[stale]
