"""qdrouterd-style logging: per-module levels (`log { module: ROUTER enable: debug+ }`),
written to stderr by default in qdrouterd's line format."""

from __future__ import annotations

import logging
import logging.handlers
import sys
import time
from collections import deque
from typing import Any, Deque, Dict, Iterable, List, Tuple

TRACE = 5
NOTICE = 25
logging.addLevelName(TRACE, "trace")
logging.addLevelName(NOTICE, "notice")

LEVELS: Dict[str, int] = {
    "trace": TRACE,
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": NOTICE,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}
MODULES = ("DEFAULT", "ROUTER", "ROUTER_CORE", "ROUTER_HELLO", "ROUTER_LS", "ROUTER_MA", "MESSAGE",
           "SERVER", "AGENT", "AUTHSERVICE", "CONTAINER", "ERROR", "POLICY", "HTTP", "CONN_MGR",
           "PYTHON", "PROTOCOL")
ROOT = "qdrouter"


class LogSettingError(ValueError):
    pass


def parse_enable(text: str) -> int | None:
    """The lowest level an `enable` string lets through: 'info+' -> info, 'warning,error' ->
    warning, 'none' -> None. (qdrouterd can enable single levels; a threshold is close
    enough for a stream handler and documented as such.)"""
    text = text.strip().lower()
    if text in ("", "none"):
        return None
    lowest: int | None = None
    for part in text.split(","):
        name = part.strip().rstrip("+")
        if name not in LEVELS:
            raise LogSettingError(
                f"unknown log level {part.strip()!r} (expected one of "
                f"{', '.join(LEVELS)}, optionally followed by '+')"
            )
        level = LEVELS[name]
        lowest = level if lowest is None else min(lowest, level)
    return lowest


#: Per module: (includeTimestamp, includeSource) where its log entity sets them; a module
#: that does not takes DEFAULT's, and DEFAULT's are (True, False), as in qdrouterd (log.c).
_INCLUDES: Dict[str, Tuple[bool | None, bool | None]] = {}


def _includes(module: str) -> Tuple[bool, bool]:
    own = _INCLUDES.get(module, (None, None))
    default = _INCLUDES.get("DEFAULT", (None, None))
    timestamp = own[0] if own[0] is not None else default[0]
    source = own[1] if own[1] is not None else default[1]
    return (True if timestamp is None else timestamp), bool(source)


class _QdFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        module = record.name.rsplit(".", 1)[-1] if record.name != ROOT else "DEFAULT"
        with_time, with_source = _includes(module)
        text = f"{module} ({record.levelname.lower()}) {record.getMessage()}"
        if with_time:
            seconds = record.created
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds))
            micros = int((seconds - int(seconds)) * 1_000_000)
            text = f"{stamp}.{micros:06d} +0000 {text}"
        if with_source:
            text += f" ({record.pathname}:{record.lineno})"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


class RecentLog(logging.Handler):
    """The last records, for management's GET-LOG: [module, level, text, file, line, time]."""

    def __init__(self, size: int = 1000) -> None:
        super().__init__()
        self.entries: Deque[List[Any]] = deque(maxlen=size)

    def emit(self, record: logging.LogRecord) -> None:
        module = record.name.rsplit(".", 1)[-1] if record.name != ROOT else "DEFAULT"
        self.entries.append([module, record.levelname.lower(), record.getMessage(), record.pathname,
                             record.lineno, int(record.created)])


RECENT = RecentLog()


def set_includes(includes: Dict[str, Tuple[bool | None, bool | None]]) -> None:
    """Each module's (includeTimestamp, includeSource), None where its log entity sets none."""
    _INCLUDES.clear()
    _INCLUDES.update({module.upper(): flags for module, flags in includes.items()})


def configure(settings: Iterable[Tuple[str, str | None, str | None]] = ()) -> None:
    """Apply (module, enable, outputFile) triples. DEFAULT's level and output are every other
    module's unless it names its own: a module's outputFile takes its records there instead
    (as a qdrouterd log source with its own sink). enable None: the module inherits the level.
    Raises LogSettingError or OSError (a file that cannot be opened) before changing anything."""
    settings = list(settings)
    levels = [(module.upper(), parse_enable(enable) if enable not in (None, "", "default") else None,
               enable not in (None, "", "default")) for module, enable, _ in settings]
    outputs = {module.upper(): output for module, _, output in settings if output}
    handlers: Dict[str, logging.Handler] = {}
    try:
        for module, output in outputs.items():
            try:
                handlers[module] = _handler(output)
            except OSError as error:
                # qdrouterd's words (scripts match them), then the system's reason.
                raise OSError(f"Failed to open log file '{output}': {error.strerror or error}") from None
    except OSError:
        for handler in handlers.values():
            handler.close()
        raise
    root = logging.getLogger(ROOT)
    for name in MODULES:
        _reset(root if name == "DEFAULT" else logging.getLogger(f"{ROOT}.{name}"))
    root.propagate = False
    root.setLevel(logging.INFO)
    for module, level, given in levels:
        logger = root if module == "DEFAULT" else logging.getLogger(f"{ROOT}.{module}")
        if given:
            logger.setLevel(level if level is not None else logging.CRITICAL + 10)
    for module, handler in handlers.items():
        handler.setFormatter(_QdFormatter())
        if module == "DEFAULT":
            continue
        logger = logging.getLogger(f"{ROOT}.{module}")
        logger.addHandler(handler)
        logger.addHandler(RECENT)
        logger.propagate = False
    default = handlers.get("DEFAULT") or logging.StreamHandler(sys.stderr)
    default.setFormatter(_QdFormatter())
    root.addHandler(default)
    root.addHandler(RECENT)


def _handler(output: str) -> logging.Handler:
    if output == "stderr":
        return logging.StreamHandler(sys.stderr)
    if output == "stdout":
        return logging.StreamHandler(sys.stdout)
    if output == "syslog":
        return logging.handlers.SysLogHandler(address="/dev/log")
    return logging.FileHandler(output)


def _reset(logger: logging.Logger) -> None:
    """No handlers (the files of earlier settings closed), the level inherited, records passed
    up to DEFAULT's handlers."""
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        if handler is not RECENT:
            handler.close()
    logger.setLevel(logging.NOTSET)
    logger.propagate = True
