"""Every config the C router's source ships loads in qdmesh as it loads in the C router: the
C router's ``etc/qdrouterd.conf`` and each config listing of its user guide, judged by the C
router's own config loader and by qdmesh's, side by side."""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

import pytest

from qdrouter.config.errors import ConfigError
from qdrouter.config.loader import parse_config_text
from qdrouter.schema import UnknownEntityType, entity_type
from tests.interop.shipped_configs import ShippedConfig, c_router_schema, c_router_verdicts, shipped_configs

_UNKNOWN_ATTRIBUTE = re.compile(r"Unknown attribute '([^']+)'")


# A config, the C router's error (None: it loads it) and qdmesh's.
Verdicts = Tuple[ShippedConfig, Optional[str], Optional[str]]


def _qdmesh_verdict(config: ShippedConfig) -> str | None:
    try:
        parse_config_text(config.loadable_text, config.origin)
    except ConfigError as error:
        return str(error)
    return None


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> List[Verdicts]:
    configs = shipped_configs()
    folder = tmp_path_factory.mktemp("shipped")
    files = []
    for number, config in enumerate(configs):
        path = folder / f"{number}.conf"
        path.write_text(config.loadable_text)
        files.append(path)
    by_c = c_router_verdicts(files)
    return [(config, by_c[path], _qdmesh_verdict(config)) for config, path in zip(configs, files)]


def test_the_archive_holds_the_configs_a_user_copies(verdicts: list) -> None:
    origins = [config.origin for config, _, _ in verdicts]
    # etc/qdrouterd.conf and the guide's listings (54 in 1.19.0): a broken extraction shows here.
    assert "etc/qdrouterd.conf" in origins
    assert len(origins) >= 50, origins


# Listings qdmesh refuses on purpose, by a word of their origin: the attribute its message
# names, and says is not supported (docs/configuration.md, "Listener and connector attributes").
# None today: every listing the C router loads, qdmesh loads.
DELIBERATELY_REFUSED: Dict[str, str] = {}


def _deliberate(origin: str, error: str) -> bool:
    for word, attribute in DELIBERATELY_REFUSED.items():
        if word in origin:
            assert f"'{attribute}'" in error and "not supported" in error, error
            return True
    return False


def test_every_config_the_c_router_loads_qdmesh_loads(verdicts: list) -> None:
    refused = {config.origin: ours for config, theirs, ours in verdicts
               if theirs is None and ours is not None and not _deliberate(config.origin, ours)}
    assert refused == {}, "\n\n".join(f"{origin}:\n{error}" for origin, error in refused.items())
    loaded_by_both = [config for config, theirs, ours in verdicts if theirs is None and ours is None]
    assert len(loaded_by_both) >= 40


def test_an_attribute_the_c_router_does_not_know_qdmesh_names_too(verdicts: list) -> None:
    """The guide's reliability page uses ``addr`` for listeners and connectors, which 1.19's
    schema does not have: both routers refuse those files, each naming the attribute."""
    named: Dict[str, str] = {}
    for config, theirs, ours in verdicts:
        unknown = _UNKNOWN_ATTRIBUTE.search(theirs or "")
        if unknown is None:
            continue
        named[config.origin] = unknown.group(1)
        assert ours is not None, f"{config.origin}: the C router refuses it ({theirs}); qdmesh loaded it"
        assert f"unknown attribute '{unknown.group(1)}'" in ours, ours
    assert named, "the 1.19 guide has listings with attributes its schema lacks; none were found"


def test_what_both_refuse_qdmesh_explains_by_file_and_line(verdicts: list) -> None:
    """Where the C router cannot parse a listing (the guide's vhost examples give ``groups``
    values that are not the JSON the C parser requires), qdmesh either reads it (its parser
    takes the nested sections in conf syntax) or says which line is wrong: never a traceback."""
    for config, theirs, ours in verdicts:
        if theirs is not None and ours is not None:
            assert re.search(rf"{re.escape(config.origin)}(:\d+)?: ", ours), ours


def test_every_attribute_of_the_1_19_schema_is_known() -> None:
    """No "unknown attribute" for an attribute the C router's schema lets a config set."""
    schema = c_router_schema()
    missing: Dict[str, List[str]] = {}
    entity_types = schema["entityTypes"]
    assert isinstance(entity_types, dict)
    for name, definition in entity_types.items():
        settable = [attr for attr, spec in definition.get("attributes", {}).items() if spec.get("create")]
        if not settable or name in ("entity", "dummy"):  # the abstract base and a test-only type
            continue
        try:
            ours = entity_type(name)
        except UnknownEntityType:
            missing[name] = ["(the whole entity type)"]
            continue
        absent = [attr for attr in settable if attr not in ours.attributes]
        if absent:
            missing[name] = absent
    assert missing == {}
