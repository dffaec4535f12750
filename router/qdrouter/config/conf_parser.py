"""Reader for the qdrouterd.conf syntax.

    section {               # '{' may also start the next line
        key: value          # the value runs to the end of the line
        key: "quoted # not a comment"
        groups: {           # nested maps, in this syntax or as JSON
            admin: { users: alice, bob }
        }
    }

Values stay text here; the schema decides what type they are.
"""

from __future__ import annotations

import bisect
import json
import re
from typing import List, NoReturn

from ..schema import camel_case
from .errors import ConfigError
from .sections import LinedDict, RawEntry, RawSection

_SECTION_NAME = re.compile(r"[A-Za-z0-9_.$-]+")
_BARE_KEY = re.compile(r"[^\s:{}\[\],#\"']+")
# A '{' opens a map only when a key or the end of the map follows; otherwise it is text such
# as the '{user}' substitution token in policy sources and targets.
_MAP_START = re.compile(r"\{[ \t]*(?:$|\r?\n|#|\"|'|\}|[^\s:{}\[\],#\"']+[ \t]*:(?:\s|\{|$))",
                        re.MULTILINE)
# In a one-line map, ", key:" ends a value; "user: alice, bob" keeps its comma elsewhere.
_NEXT_KEY = re.compile(r",[ \t]*(?:\"[^\"]*\"|'[^']*'|[^\s:{}\[\],#\"']+)[ \t]*:(?:\s|\{|$)",
                       re.MULTILINE)
# Values of these may start with '#', a wildcard in address and host patterns.
_JSON = json.JSONDecoder()
_HASH_VALUE_KEYS = frozenset({"pattern", "bindingKey", "hostname", "aliases", "sourcePattern",
                              "targetPattern"})


class _Parser:
    def __init__(self, text: str, source: str) -> None:
        self.text = text
        self.source = source
        self.pos = 0
        self.depth = 0
        self._line_starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]

    # -- position and errors -------------------------------------------------------------

    def line_at(self, pos: int) -> int:
        return bisect.bisect_right(self._line_starts, pos)

    def fail(self, message: str, pos: int | None = None) -> NoReturn:
        line = self.line_at(self.pos if pos is None else pos)
        raise ConfigError.at(self.source, line, f"syntax error: {message}")

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def shown(self) -> str:
        c = self.peek()
        return "end of file" if not c else "end of line" if c == "\n" else repr(c)

    # -- skipping -------------------------------------------------------------------------

    def skip_spaces(self) -> None:
        while self.peek() in (" ", "\t", "\r"):
            self.pos += 1

    def skip_comment(self) -> None:
        end = self.text.find("\n", self.pos)
        self.pos = len(self.text) if end < 0 else end

    def skip_blank(self, commas: bool = False) -> None:
        """Skip whitespace, newlines, comments and, between entries, separating commas."""
        while True:
            c = self.peek()
            if c in (" ", "\t", "\r", "\n"):
                self.pos += 1
            elif c == "#":
                self.skip_comment()
            elif c == "," and commas:
                self.pos += 1
            else:
                return

    # -- grammar --------------------------------------------------------------------------

    def sections(self) -> list[RawSection]:
        result: list[RawSection] = []
        while True:
            self.skip_blank()
            if not self.peek():
                return result
            start = self.pos
            m = _SECTION_NAME.match(self.text, self.pos)
            if not m:
                if self.peek() == "}":
                    self.fail("'}' without a section to close")
                self.fail(f"expected a section name, found {self.shown()}")
            self.pos = m.end()
            self.skip_blank()
            if self.peek() == ":":
                self.fail(f"{m.group()!r} is outside any section (attributes belong inside "
                          f"'section {{ ... }}')", start)
            if self.peek() != "{":
                self.fail(f"expected '{{' after section name {m.group()!r}, found {self.shown()}")
            entries = self.entries(f"section {m.group()!r}")
            result.append(RawSection(m.group(), self.line_at(start), entries))

    def entries(self, what: str) -> list[RawEntry]:
        """The entries of the map whose '{' is at the current position, up to its '}'."""
        open_pos = self.pos
        open_line = self.line_at(open_pos)
        self.pos += 1
        self.depth += 1
        entries: list[RawEntry] = []
        while True:
            self.skip_blank(commas=True)
            c = self.peek()
            if not c:
                self.fail(f"{what} opened at line {open_line} is never closed with '}}'", open_pos)
            if c == "}":
                self.pos += 1
                self.depth -= 1
                return entries
            key_pos = self.pos
            key = self.key()
            self.skip_spaces()
            if self.peek() != ":":
                if self.peek() == "{" and self.depth == 1:
                    self.fail(f"section {key!r} starts inside {what} (opened at line {open_line}); "
                              f"is a '}}' missing?")
                self.fail(f"expected ':' after {key!r}, found {self.shown()}")
            self.pos += 1
            self.skip_spaces()
            inline = self.line_at(self.pos) == open_line
            value = self.value(key, inline, closer="}")
            entries.append(RawEntry(key, value, self.line_at(key_pos)))
            self.skip_spaces()
            if self.peek() not in ("\n", ",", "}", "#", ""):
                self.fail(f"unexpected {self.shown()} after the value of {key!r}")

    def key(self) -> str:
        if self.peek() in ('"', "'"):
            return self.quoted()
        m = _BARE_KEY.match(self.text, self.pos)
        if not m:
            self.fail(f"expected an attribute name, found {self.shown()}")
        self.pos = m.end()
        return m.group()

    def value(self, key: str | None, inline: bool, closer: str) -> object:
        c = self.peek()
        if c in ("{", "[") and (c == "[" or _MAP_START.match(self.text, self.pos)):
            # Strict JSON keeps its own types ({"port": 1} holds a number, not text).
            try:
                value, self.pos = _JSON.raw_decode(self.text, self.pos)
                return value
            except ValueError:
                pass
        if c == "{" and _MAP_START.match(self.text, self.pos):
            return self.nested_map(key)
        if c == "[" and self.depth > 1:
            return self.nested_list(key)
        if c in ('"', "'"):
            return self.quoted()
        hash_value = key is not None and camel_case(key) in _HASH_VALUE_KEYS
        if c in ("\n", "") or (c == "#" and not hash_value) or c == closer:
            return self.value_on_next_line(key)
        return self.bare(hash_value, inline, closer)

    def value_on_next_line(self, key: str | None) -> object:
        """A map may open on the line after its key; any other value must follow the ':'."""
        here = self.pos
        self.skip_blank()
        if self.peek() == "{" and _MAP_START.match(self.text, self.pos):
            return self.nested_map(key)
        self.pos = here
        self.fail(f"{key!r} has no value (write \"\" for an empty string)" if key else
                  "missing value in list")

    def bare(self, hash_value: bool, inline: bool, closer: str) -> str:
        text, start = self.text, self.pos
        braces = 0
        i = start
        while i < len(text):
            c = text[i]
            if c == "\n":
                break
            if c == "#" and ((i == start and not hash_value) or (i > start and text[i - 1] in " \t")):
                break
            if c == "{":
                braces += 1
            elif c == "}":
                if braces == 0 and closer == "}":
                    break
                braces = max(0, braces - 1)
            elif c == "]" and closer == "]":
                break
            elif c == "," and (closer == "]" or (inline and _NEXT_KEY.match(text, i))):
                break
            i += 1
        self.pos = i
        value = text[start:i].rstrip()
        # JSON habits: a separating comma at the end of a line belongs to no value.
        if closer == "}" and value.endswith(","):
            value = value[:-1].rstrip()
        return value

    def quoted(self) -> str:
        quote_pos = self.pos
        if self.peek() == '"':
            try:
                value, self.pos = json.decoder.scanstring(self.text, self.pos + 1)  # type: ignore[attr-defined]
            except ValueError:
                self.fail("unterminated or malformed \"quoted\" string", quote_pos)
            return str(value)
        end = self.text.find("'", self.pos + 1)
        newline = self.text.find("\n", self.pos + 1)
        if end < 0 or 0 <= newline < end:
            self.fail("unterminated 'quoted' string", quote_pos)
        self.pos = end + 1
        return self.text[quote_pos + 1:end]

    def nested_map(self, key: str | None) -> LinedDict:
        result = LinedDict()
        for entry in self.entries(f"map {key!r}" if key else "map"):
            if entry.key in result:
                self.fail(f"key {entry.key!r} appears twice in the same map",
                          self._line_start(entry.line))
            result[entry.key] = entry.value
            result.lines[entry.key] = entry.line or 0
        return result

    def nested_list(self, key: str | None) -> List[object]:
        open_pos = self.pos
        self.pos += 1
        items: list[object] = []
        while True:
            self.skip_blank(commas=True)
            c = self.peek()
            if not c:
                self.fail(f"list {key!r} opened at line {self.line_at(open_pos)} is never closed "
                          f"with ']'", open_pos)
            if c == "]":
                self.pos += 1
                return items
            items.append(self.value(None, True, closer="]"))

    def _line_start(self, line: int | None) -> int:
        return self._line_starts[(line or 1) - 1]


def parse_conf_text(text: str, source: str) -> list[RawSection]:
    """Sections of qdrouterd.conf-syntax `text`; raises ConfigError at the first syntax error."""
    return _Parser(text, source).sections()
