"""From config text to validated entities: the schema applied to what the parsers read."""

from __future__ import annotations

import secrets
import socket
from dataclasses import dataclass, field
from typing import Dict, List

from ..schema import CONFIG_SECTIONS, EntityTypeDef, Problem, UnknownEntityType, camel_case, entity_type
from ..schema import validate_attributes as _validate
from ..schema.types import closest_name
from .conf_parser import parse_conf_text
from .errors import ConfigError, ConfigProblem
from .json_parser import looks_like_json, parse_json_text
from .sections import LinedDict, RawSection

# Sections older releases accepted, with what replaced them.
REMOVED_SECTIONS = {
    "linkRoutePattern": "use 'linkRoute' with 'prefix', 'direction' (one section per direction) "
                        "and 'connection' instead",
    "fixedAddress": "use 'address' with 'prefix' and 'distribution' (closest, multicast or "
                    "balanced) instead",
    "waypoint": "use an 'address' with 'waypoint: yes' plus an 'autoLink' for each direction "
                "instead",
    "container": "move its settings (workerThreads, saslConfigDir, ...) into the 'router' section",
    "console": "the web console proxy is not supported; serve the console separately",
}


# Attributes that name another entity of the file: section -> (attribute, section referred to).
_REFERENCES = {
    "listener": (("sslProfile", "sslProfile"), ("saslPlugin", "authServicePlugin")),
    "connector": (("sslProfile", "sslProfile"),),
    "authServicePlugin": (("sslProfile", "sslProfile"),),
}


@dataclass
class ConfigEntity:
    """One entity from the config file, ready to be created."""

    type: EntityTypeDef
    #: Canonical camelCase names -> values of the schema's types, defaults included.
    attributes: Dict[str, object]
    #: "file:line" of the line the entity starts on.
    source: str
    #: Accepted things worth a log line, e.g. deprecated attribute names; formatted like errors.
    warnings: List[str] = field(default_factory=list)

    @property
    def section(self) -> str:
        return self.type.config_section or self.type.short_name


def generate_router_id() -> str:
    """A router id for configs that do not set one: Router.<host>.<random>."""
    host = socket.gethostname().split(".")[0] or "localhost"
    host = "".join(c for c in host if c.isprintable() and not c.isspace()) or "localhost"
    return f"Router.{host}.{secrets.token_hex(3)}"


def _resolve_section(name: str) -> EntityTypeDef:
    """The configurable entity type a section name stands for; raises a ValueError explaining."""
    if camel_case(name) in REMOVED_SECTIONS:
        raise ValueError(f"section {name!r} is no longer supported: {REMOVED_SECTIONS[camel_case(name)]}")
    try:
        etype = entity_type(name)
    except UnknownEntityType:
        hint = closest_name(name, list(CONFIG_SECTIONS))
        suffix = f" (did you mean {hint!r}?)" if hint else ""
        raise ValueError(f"unknown section {name!r}{suffix}") from None
    if etype.config_section is None:
        raise ValueError(f"{name!r} cannot be configured in a config file")
    return etype


def _nested_line(value: object, path: tuple[str, ...], default: int | None) -> int | None:
    """The line of the innermost key along `path` that the conf parser recorded."""
    line = default
    for key in path:
        if not isinstance(value, LinedDict) or key not in value:
            break
        line = value.lines.get(key, line)
        value = value[key]
    return line


class _Builder:
    """Collects entities and every problem across the whole file."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.entities: list[ConfigEntity] = []
        self.raw: list[RawSection] = []  # the section each entity came from
        self.problems: list[ConfigProblem] = []

    def _problem_line(self, section: RawSection, p: Problem) -> int | None:
        if p.index is not None:
            entry = section.entries[p.index]
            return _nested_line(entry.value, p.path, entry.line)
        for entry in section.entries:
            if p.attribute is not None and entry.key == p.attribute:
                return _nested_line(entry.value, p.path, entry.line)
        return section.line

    def _format(self, section: RawSection, label: str, p: Problem) -> ConfigProblem:
        return ConfigProblem(self.source, self._problem_line(section, p), label, p.message)

    def add(self, section: RawSection) -> None:
        try:
            etype = _resolve_section(section.name)
        except ValueError as e:
            self.problems.append(ConfigProblem(self.source, section.line, None, str(e)))
            return
        label = etype.config_section or section.name
        checked = _validate(etype, section.items())
        self.problems.extend(self._format(section, label, p) for p in checked.problems)
        if not checked.ok:
            return
        attributes = checked.attributes
        if etype.short_name == "router" and "id" not in attributes:
            attributes = {"id": generate_router_id(), **attributes}
        self.entities.append(ConfigEntity(
            type=etype,
            attributes=attributes,
            source=f"{self.source}:{section.line}",
            warnings=[str(self._format(section, label, w)) for w in checked.warnings],
        ))
        self.raw.append(section)

    def check_whole_file(self, sections: list[RawSection]) -> None:
        """Rules spanning entities: singletons, a router present, unique names, references."""
        self._check_singletons(sections)
        self._check_names()
        self._check_references()

    def _check_singletons(self, sections: list[RawSection]) -> None:
        first_line: dict[str, int | None] = {}
        has_router = False
        for section in sections:
            try:
                etype = _resolve_section(section.name)
            except ValueError:
                continue
            has_router = has_router or etype.short_name == "router"
            if etype.singleton:
                if etype.long_name in first_line:
                    self.problems.append(ConfigProblem(
                        self.source, section.line, etype.config_section,
                        f"only one {etype.config_section!r} section is allowed (the first is at line "
                        f"{first_line[etype.long_name]})"))
                else:
                    first_line[etype.long_name] = section.line
        if not has_router:
            self.problems.append(ConfigProblem(
                self.source, None, None, "no 'router' section: a config needs exactly one"))

    def _check_names(self) -> None:
        named: dict[str, tuple[str, int | None]] = {}
        for entity, section in zip(self.entities, self.raw):
            name = entity.attributes.get("name")
            if not isinstance(name, str):
                continue
            if name in named:
                other, other_line = named[name]
                self.problems.append(ConfigProblem(
                    self.source, section.line, entity.section,
                    f"name {name!r} is already used by the {other} at line {other_line}"))
            else:
                named[name] = (entity.section, section.line)

    def _check_references(self) -> None:
        """Attributes naming another section of the file must name one that exists."""
        names: dict[str, set[object]] = {}
        for entity in self.entities:
            names.setdefault(entity.section, set()).add(entity.attributes.get("name"))
        for entity, section in zip(self.entities, self.raw):
            for attr, target in _REFERENCES.get(entity.section, ()):
                value = entity.attributes.get(attr)
                if value is None or value in names.get(target, ()):
                    continue
                written = next((e.key for e in section.entries
                                if entity.type.resolve_attribute(e.key) is entity.type.attributes[attr]),
                               attr)
                problem = Problem(f"attribute {written!r}: there is no {target} named {value!r}", written)
                self.problems.append(self._format(section, entity.section, problem))


def parse_config_text(text: str, source_name: str) -> list[ConfigEntity]:
    """Entities of a config in qdrouterd.conf syntax or, if it starts with '[', JSON.

    Raises ConfigError listing every problem found (a syntax error stops at the first).
    """
    sections = (parse_json_text if looks_like_json(text) else parse_conf_text)(text, source_name)
    builder = _Builder(source_name)
    for section in sections:
        builder.add(section)
    builder.check_whole_file(sections)
    if builder.problems:
        builder.problems.sort(key=lambda p: p.line or 0)
        raise ConfigError(builder.problems)
    return builder.entities


def load_config(path: str) -> list[ConfigEntity]:
    """Entities of the config file at `path`; see parse_config_text."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ConfigError.at(path, None, f"cannot read config file: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise ConfigError.at(path, None, f"config file is not UTF-8 text: {e.reason}") from None
    return parse_config_text(text, path)
