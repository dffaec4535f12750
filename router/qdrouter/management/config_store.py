"""Configuration entities as management sees them: from the config file or created at run
time, each with an identity, a name and schema-checked attributes."""

from __future__ import annotations

from typing import Any, Dict, Iterator, List

from ..schema import EntityTypeDef
from .entity_names import EntityNames
from .status import ManagementStatus, bad_request, missing_entity, name_taken, wrong_type


class ManagedEntity:
    __slots__ = ("attributes", "etype", "identity", "name", "source")

    def __init__(self, etype: EntityTypeDef, identity: str, name: str, attributes: Dict[str, Any],
                 source: str) -> None:
        self.etype = etype
        self.identity = identity
        self.name = name
        self.attributes = attributes
        self.source = source

    def as_map(self) -> Dict[str, Any]:
        values = {key: value for key, value in self.attributes.items() if key not in ("name", "identity")}
        values["name"] = self.name
        values["identity"] = self.identity
        values["type"] = self.etype.long_name
        return values


class ConfigStore:
    def __init__(self) -> None:
        self._entities: List[ManagedEntity] = []
        self._names = EntityNames()

    def add(self, etype: EntityTypeDef, attributes: Dict[str, Any], source: str,
            identity: str | None = None) -> ManagedEntity:
        default_identity, name = self._names.assign(etype, attributes)
        identity = identity or default_identity
        for existing in self._entities:
            if existing.etype is etype and existing.name == name:
                raise name_taken(etype.short_name, name)
            if existing.identity == identity:
                raise bad_request(f"an entity with identity {identity!r} already exists")
        entity = ManagedEntity(etype, identity, name, dict(attributes), source)
        self._entities.append(entity)
        return entity

    def remove(self, entity: ManagedEntity) -> None:
        self._entities.remove(entity)

    def of_type(self, etype: EntityTypeDef) -> List[ManagedEntity]:
        return [entity for entity in self._entities if entity.etype is etype]

    def find(self, etype: EntityTypeDef | None, name: str | None, identity: str | None) -> ManagedEntity:
        for entity in self._entities:
            if etype is not None and entity.etype is not etype:
                continue
            if identity is not None and entity.identity == identity:
                return entity
            if identity is None and name is not None and entity.name == name:
                return entity
        if etype is not None:
            try:
                other = self.find(None, name, identity)
            except ManagementStatus:
                other = None
            if other is not None:
                raise wrong_type(other.etype.long_name, etype.long_name)
        raise missing_entity(etype.short_name if etype is not None else None, name, identity)

    def __iter__(self) -> Iterator[ManagedEntity]:
        return iter(list(self._entities))
