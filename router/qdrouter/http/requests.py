"""Parsing one HTTP/1.x request head (the only part these pages need: no bodies)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict
from urllib.parse import parse_qs, unquote, urlsplit

MAX_REQUEST_BYTES = 8192
METHODS = ("GET", "HEAD")
_REQUEST_LINE = re.compile(r"^([A-Z]{1,16}) (\S{1,4096}) HTTP/1\.([01])$")
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


@dataclass
class HttpRequest:
    method: str
    path: str
    query: Dict[str, str] = field(default_factory=dict)
    headers: Dict[str, str] = field(default_factory=dict)


class RequestError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def parse_request(data: bytes) -> HttpRequest | None:
    """The request whose head ``data`` holds, None while the head is incomplete, or
    RequestError for something that is not a request these pages answer."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        # Reject a first line that cannot be HTTP at once, rather than waiting for more.
        first = data.split(b"\r\n", 1)[0]
        if len(first) >= 4 and not re.match(rb"^[A-Z]{1,16}( |$)", first[:17]):
            raise RequestError(400, "not an HTTP request")
        return None
    if end > MAX_REQUEST_BYTES:
        raise RequestError(431, "request header too large")
    try:
        text = data[:end].decode("ascii")
    except UnicodeDecodeError:
        raise RequestError(400, "request head is not ASCII") from None
    lines = text.split("\r\n")
    match = _REQUEST_LINE.match(lines[0])
    if match is None:
        raise RequestError(400, f"malformed request line {lines[0][:80]!r}")
    method, target, _minor = match.groups()
    headers: Dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not _TOKEN.match(name):
            raise RequestError(400, f"malformed header line {line[:80]!r}")
        headers[name.lower()] = value.strip()
    if method not in METHODS:
        raise RequestError(405, f"method {method} not allowed (GET or HEAD)")
    parts = urlsplit(target)
    query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
    return HttpRequest(method, unquote(parts.path) or "/", query, headers)
