"""Reader for the JSON config form: [["section", {attributes}], ...], as qdrouterd accepts."""

from __future__ import annotations

import bisect
import json
import re

from .errors import ConfigError
from .sections import RawEntry, RawSection

_COMMENT_LINE = re.compile(r"^[ \t]*#.*$", re.MULTILINE)
_ENTRY_SHAPE = 'each entry must be ["section", {attributes}]'


def looks_like_json(text: str) -> bool:
    """True when the first character that is not blank or in a comment line is '[' (or '{':
    no conf file starts so, and a JSON object then gets the JSON form's error, not a
    conf syntax error)."""
    stripped = _COMMENT_LINE.sub("", text).lstrip()
    return stripped.startswith(("[", "{"))


class _Lines:
    def __init__(self, text: str) -> None:
        self._starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]

    def at(self, pos: int) -> int:
        return bisect.bisect_right(self._starts, pos)


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _key_line(text: str, start: int, end: int, key: str, lines: _Lines) -> int | None:
    # Best effort: the first place the key appears as a key within the entry.
    m = re.compile(re.escape(json.dumps(key)) + r"\s*:").search(text, start, end)
    return lines.at(m.start()) if m else None


def blank_comment_lines(text: str) -> str:
    """``text`` with whole-line '#' comments made empty, as qdrouterd reads its JSON files (a
    config in JSON form and policyDir's vhost files); blanking keeps line numbers right."""
    return _COMMENT_LINE.sub("", text)


def parse_json_text(text: str, source: str) -> list[RawSection]:
    """Sections of a JSON config; raises ConfigError for invalid JSON or a wrongly shaped entry."""
    text = blank_comment_lines(text)
    lines = _Lines(text)
    decoder = json.JSONDecoder()
    try:
        json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError.at(source, e.lineno, f"invalid JSON: {e.msg}") from None
    pos = _skip_space(text, 0)
    if not text.startswith("[", pos):
        raise ConfigError.at(source, lines.at(pos), "a JSON config must be a list of entries, "
                             '[["section", {attributes}], ...], not a JSON object')
    pos += 1
    sections: list[RawSection] = []
    while True:
        pos = _skip_space(text, pos)
        if text.startswith(",", pos):
            pos += 1
            continue
        if text.startswith("]", pos):
            return sections
        start = pos
        entry, pos = decoder.raw_decode(text, pos)
        line = lines.at(start)
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)
                and isinstance(entry[1], dict)):
            raise ConfigError.at(source, line, f"{_ENTRY_SHAPE}, not {json.dumps(entry)[:60]}")
        name, attributes = entry
        sections.append(RawSection(name, line, [
            RawEntry(str(key), value, _key_line(text, start, pos, str(key), lines) or line)
            for key, value in attributes.items()
        ]))
