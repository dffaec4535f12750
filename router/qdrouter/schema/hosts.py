"""Whether a listener's or connector's `host` can name a host at all, before any lookup.

A name the resolver cannot even encode (an empty label as in `a..b`, a label over 63
characters, 200 KB of text) is refused here with a message naming the attribute, rather than
failing later inside the socket layer.
"""

from __future__ import annotations

import ipaddress
import re

#: RFC 1035: a name is at most 253 characters as written, each label at most 63.
MAX_NAME = 253
MAX_LABEL = 63
_LABEL = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?")


def host_problem(host: str) -> str | None:
    """Why `host` cannot be a host name or IP literal; None if it can ('' too: every address)."""
    if host == "":
        return None
    if ":" in host:  # an IPv6 literal, possibly in brackets and with a zone
        literal = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        try:
            ipaddress.ip_address(literal.split("%", 1)[0])
        except ValueError:
            return "is not an IPv6 address"
        return None
    if len(host) > MAX_NAME:
        return f"is {len(host)} characters long (a host name has at most {MAX_NAME})"
    name = host[:-1] if host.endswith(".") else host
    if not name.isascii():
        try:
            name = name.encode("idna").decode("ascii")
        except UnicodeError as error:
            return f"is not a host name ({error})"
    for label in name.split("."):
        if not label:
            return "is not a host name (it has an empty label)"
        if len(label) > MAX_LABEL:
            return f"is not a host name (a label has {len(label)} characters, at most {MAX_LABEL})"
        if not _LABEL.fullmatch(label):
            return f"is not a host name ({short_repr(label)} has characters a host name cannot)"
    return None


def short_repr(value: object) -> str:
    """repr() for a message: a 200 KB string is named by its start and its length."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"
