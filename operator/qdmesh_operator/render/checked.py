"""Config texts the router's parser has already accepted, so that a reconciliation that renders
what it rendered before (every drift check of a mesh nobody changed) does not parse it again:
parsing is most of a reconciliation's CPU.  Kept by digest, the most recently used first, and
at most ``capacity`` of them: memory bounded whatever the number of meshes."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

#: Enough for every router and edge group of a few hundred meshes; about 100 bytes each.
CAPACITY = 4096


class AcceptedTexts:
    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self._digests: OrderedDict[bytes, None] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _digest(text: str, name: str) -> bytes:
        return hashlib.blake2b(f"{name}\0{text}".encode(), digest_size=16).digest()

    def known(self, text: str, name: str) -> bool:
        digest = self._digest(text, name)
        with self._lock:
            if digest in self._digests:
                self._digests.move_to_end(digest)
                return True
        return False

    def add(self, text: str, name: str) -> None:
        digest = self._digest(text, name)
        with self._lock:
            self._digests[digest] = None
            self._digests.move_to_end(digest)
            while len(self._digests) > self.capacity:
                self._digests.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._digests)


ACCEPTED = AcceptedTexts()
