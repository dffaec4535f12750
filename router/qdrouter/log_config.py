"""qdrouterd-style logging: per-module levels (`log { module: ROUTER enable: debug+ }`),
written to stderr by default in qdrouterd's line format."""

from __future__ import annotations

import logging
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


class _QdFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        seconds = record.created
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds))
        micros = int((seconds - int(seconds)) * 1_000_000)
        module = record.name.rsplit(".", 1)[-1] if record.name != ROOT else "DEFAULT"
        text = f"{stamp}.{micros:06d} +0000 {module} ({record.levelname.lower()}) {record.getMessage()}"
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


def configure(settings: Iterable[Tuple[str, str, str | None]] = ()) -> None:
    """Apply (module, enable, outputFile) triples; DEFAULT applies to every module."""
    root = logging.getLogger(ROOT)
    root.handlers.clear()
    root.propagate = False
    handler: logging.Handler = logging.StreamHandler(sys.stderr)
    root.setLevel(logging.INFO)
    for module, enable, output in settings:
        level = parse_enable(enable)
        logger = root if module.upper() == "DEFAULT" else logging.getLogger(f"{ROOT}.{module.upper()}")
        logger.setLevel(level if level is not None else logging.CRITICAL + 10)
        if module.upper() == "DEFAULT" and output and output not in ("stderr",):
            handler = logging.StreamHandler(sys.stdout) if output == "stdout" else logging.FileHandler(output)
    handler.setFormatter(_QdFormatter())
    root.addHandler(handler)
    root.addHandler(RECENT)
