"""HTTP responses: status lines, headers, and the plain-text errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict

REASONS = {
    200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
    431: "Request Header Fields Too Large", 500: "Internal Server Error", 503: "Service Unavailable",
}
TEXT = "text/plain; charset=utf-8"
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


@dataclass
class Response:
    status: int
    body: bytes
    content_type: str = TEXT
    headers: Dict[str, str] = field(default_factory=dict)
    content_length: int | None = None  # HEAD: the length the GET body would have


def text_response(status: int, text: str) -> Response:
    return Response(status, text.encode("utf-8"))


def error_response(status: int, message: str) -> Response:
    headers = {"Allow": "GET, HEAD"} if status == 405 else {}
    return Response(status, f"{status} {REASONS.get(status, '')}: {message}\n".encode(), TEXT, headers)


def encode_response(response: Response) -> bytes:
    length = response.content_length if response.content_length is not None else len(response.body)
    lines = [f"HTTP/1.1 {response.status} {REASONS.get(response.status, 'Unknown')}",
             f"Content-Type: {response.content_type}",
             f"Content-Length: {length}",
             "Cache-Control: no-store",
             "Connection: close"]
    lines += [f"{name}: {value}" for name, value in response.headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii") + response.body
