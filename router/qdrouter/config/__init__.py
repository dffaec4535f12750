"""Reading qdrouterd.conf (or its JSON form) into entities checked against the schema."""

from __future__ import annotations

from .defaults import DEFAULT_CONFIG_TEXT, default_config
from .errors import ConfigError, ConfigProblem
from .loader import ConfigEntity, generate_router_id, load_config, parse_config_text
from .ports import port_number

__all__ = [
    "DEFAULT_CONFIG_TEXT",
    "ConfigEntity",
    "ConfigError",
    "ConfigProblem",
    "default_config",
    "generate_router_id",
    "load_config",
    "parse_config_text",
    "port_number",
]
