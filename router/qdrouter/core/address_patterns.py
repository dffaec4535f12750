"""The address entities' prefixes and patterns, matched as qdrouterd 1.19 matches them.

The C router keeps every ``address`` entity in one parse tree (parse_tree.c): a prefix ``p``
becomes the pattern ``p/#``; addresses and patterns are tokens separated by '.' or '/'; '*'
matches exactly one token and '#' zero or more. An address takes the first entity found by a
depth-first walk that tries, at each token, the literal token before '*' before '#', and '#'
with as few tokens as possible first. So the more literal a pattern, the stronger it binds:
``a.*.c`` wins over the prefix ``a`` for ``a.b.c``, and the prefix ``a.b`` over ``a.*``."""

from __future__ import annotations

import re
from typing import Dict, Generic, List, TypeVar

Payload = TypeVar("Payload")

SEPARATORS = "./"
_SPLIT = re.compile(r"[./]")
ONE = "*"
GLOB = "#"


def tokens(text: str) -> List[str]:
    """As the C router's token iterator: leading separators skipped, one trailing separator
    ends the last token, and two separators in a row hold an empty token."""
    text = text.lstrip(SEPARATORS)
    if not text:
        return []
    parts = _SPLIT.split(text)
    if parts[-1] == "":
        parts.pop()
    return parts


def normalized(pattern: str, *, is_prefix: bool) -> List[str]:
    """The tokens the C router stores for a prefix or pattern attribute (separators stripped
    at both ends; a prefix gains '#'; '#.*' becomes '*.#' and '#.#' becomes '#', which match
    the same addresses). ValueError names the attribute when nothing is left."""
    stripped = pattern.strip(SEPARATORS)
    if not stripped:
        attribute = "prefix" if is_prefix else "pattern"
        raise ValueError(f"attribute '{attribute}': {pattern!r} has no tokens")
    parts = tokens(stripped) + ([GLOB] if is_prefix else [])
    changed = True
    while changed:
        changed = False
        for i in range(len(parts) - 1):
            if parts[i] == GLOB and parts[i + 1] == GLOB:
                del parts[i + 1]
                changed = True
                break
            if parts[i] == GLOB and parts[i + 1] == ONE:
                parts[i], parts[i + 1] = ONE, GLOB
                changed = True
                break
    return parts


class _Node(Generic[Payload]):
    __slots__ = ("children", "glob", "has_payload", "one", "payload")

    def __init__(self) -> None:
        self.children: Dict[str, _Node[Payload]] = {}
        self.one: _Node[Payload] | None = None
        self.glob: _Node[Payload] | None = None
        self.has_payload = False
        self.payload: Payload | None = None

    def child(self, token: str, create: bool) -> _Node[Payload] | None:
        if token == ONE:
            if self.one is None and create:
                self.one = _Node()
            return self.one
        if token == GLOB:
            if self.glob is None and create:
                self.glob = _Node()
            return self.glob
        node = self.children.get(token)
        if node is None and create:
            node = self.children[token] = _Node()
        return node

    def is_empty(self) -> bool:
        return not (self.has_payload or self.children or self.one or self.glob)


class PatternTree(Generic[Payload]):
    """Normalised token sequences -> one payload each; ``match`` gives an address's best."""

    def __init__(self) -> None:
        self._root: _Node[Payload] = _Node()
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def add(self, key: List[str], payload: Payload) -> None:
        """ValueError if an entity with the same tokens is there already (as the C router:
        the prefix ``a`` and the pattern ``a.#`` are the same entry)."""
        node = self._root
        for token in key:
            found = node.child(token, create=True)
            assert found is not None
            node = found
        if node.has_payload:
            raise ValueError("conflicts with an existing address entity")
        node.has_payload, node.payload = True, payload
        self._count += 1

    def remove(self, key: List[str]) -> None:
        path = [self._root]
        for token in key:
            found = path[-1].child(token, create=False)
            if found is None:
                return
            path.append(found)
        if not path[-1].has_payload:
            return
        path[-1].has_payload, path[-1].payload = False, None
        self._count -= 1
        for parent, token, node in reversed(list(zip(path, key, path[1:]))):
            if not node.is_empty():
                break
            if token == ONE:
                parent.one = None
            elif token == GLOB:
                parent.glob = None
            else:
                del parent.children[token]

    def match_key(self, key: List[str]) -> Payload | None:
        """The payload stored under exactly these tokens."""
        node: _Node[Payload] | None = self._root
        for token in key:
            assert node is not None
            node = node.child(token, create=False)
            if node is None:
                return None
        assert node is not None
        return node.payload if node.has_payload else None

    def match(self, address: str) -> Payload | None:
        if not self._count:
            return None
        found = _children(self._root, tokens(address), 0)
        return found.payload if found is not None else None


# The walk of parse_tree.c, returning the first node whose pattern matches.
def _children(node: _Node[Payload], toks: List[str], at: int) -> _Node[Payload] | None:
    if at < len(toks):
        literal = node.children.get(toks[at])
        if literal is not None:
            found = _literal(literal, toks, at + 1)
            if found is not None:
                return found
        if node.one is not None:
            found = _one(node.one, toks, at)
            if found is not None:
                return found
    if node.glob is not None:
        return _glob(node.glob, toks, at)
    return None


def _literal(node: _Node[Payload], toks: List[str], at: int) -> _Node[Payload] | None:
    if at == len(toks) and node.has_payload:
        return node
    return _children(node, toks, at)


def _one(node: _Node[Payload], toks: List[str], at: int) -> _Node[Payload] | None:
    if at == len(toks):
        return None
    at += 1
    if at == len(toks) and node.has_payload:
        return node
    return _children(node, toks, at)


def _glob(node: _Node[Payload], toks: List[str], at: int) -> _Node[Payload] | None:
    while at < len(toks):
        found = _children(node, toks, at)
        if found is not None:
            return found
        at += 1
    return node if node.has_payload else None
