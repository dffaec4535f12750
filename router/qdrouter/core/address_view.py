"""An address as qdrouterd hashes it (iterator.c's address view): without a leading "/", a
"//host/" authority or a "scheme:/" / "scheme://host/" prefix. qdrouterd takes "/queue/x",
"queue/x" and "amqp:/queue/x" for one address, and advertises its link-route destinations
in this form ("Cqueue" for a prefix "/queue"), so a mesh with qdrouterd must match them so."""

from __future__ import annotations


def hash_view(address: str) -> str:
    if address.startswith("//"):
        slash = address.find("/", 2)
        return address[slash + 1:] if slash >= 0 else address
    if address.startswith("/"):
        return address[1:]
    colon = address.find(":/")
    if colon > 0 and "/" not in address[:colon]:
        rest = address[colon + 2:]
        if rest.startswith("/"):
            slash = rest.find("/", 1)
            return rest[slash + 1:] if slash >= 0 else address
        return rest
    return address
