"""The configuration a router runs with when given none: the packaged default.conf."""

from __future__ import annotations

from importlib import resources

from .loader import ConfigEntity, parse_config_text

DEFAULT_CONFIG_NAME = "default.conf"

#: Text of the packaged default configuration.
DEFAULT_CONFIG_TEXT: str = resources.files(__package__).joinpath(DEFAULT_CONFIG_NAME).read_text(
    encoding="utf-8")


def default_config() -> list[ConfigEntity]:
    """Entities of the default configuration (each call generates a fresh router id)."""
    return parse_config_text(DEFAULT_CONFIG_TEXT, f"<{DEFAULT_CONFIG_NAME}>")
