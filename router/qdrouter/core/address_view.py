"""An address as qdrouterd hashes it (iterator.c's ITER_VIEW_ADDRESS_HASH): without a leading
"/", a "//host/" authority or a "scheme:/" / "scheme://host/" prefix, and without one trailing
separator ("." or "/"). qdrouterd takes "/queue/x", "queue/x", "amqp:/queue/x" and "queue/x/"
for one address, shows it so (`qdstat -a`: "queue/x"), advertises it so to other routers
(MAU "M0queue/x", link-route destinations "Cqueue" for a prefix "/queue"), and matches its
address and link-route configuration against it. qdmesh keys every address it routes by (and
matches link routes) in this view, so a mesh mixing the two agrees on what is one address.
What goes on the wire (link targets, `to`, a link-routed attach) keeps the client's form."""

from __future__ import annotations

_SEPARATORS = "./"

# view_initialize()'s states, walking to the first octet of the node id.
_START, _SLASH_LEFT, _SKIPPING, _SCANNING, _COLON, _COLON_SLASH = range(6)


def _node_id_start(address: str) -> int:
    """Where iterator.c's view_initialize() puts the view's start (0: a relative address)."""
    state, save = _START, 0
    for index, octet in enumerate(address):
        if state == _START:
            if octet == "/":
                state, save = _SLASH_LEFT, index + 1
            else:
                state = _SCANNING
        elif state == _SLASH_LEFT:
            if octet != "/":
                return save
            state = _SKIPPING
        elif state == _SKIPPING:
            if octet == "/":
                return index + 1
        elif state == _SCANNING:
            if octet == ":":
                state = _COLON
        elif state == _COLON:
            if octet == "/":
                state, save = _COLON_SLASH, index + 1
            else:
                state = _SCANNING
        elif octet != "/":  # _COLON_SLASH: "scheme:/path"
            return save
        else:  # "scheme://host/path"
            state = _SKIPPING
    return 0  # never reached a node id: qdrouterd takes the whole address


def hash_view(address: str) -> str:
    # The common case (no leading "/", no ":/") needs no walk: the view starts at 0. This runs
    # for every message an anonymous sender sends.
    start = _node_id_start(address) if address[:1] == "/" or ":/" in address else 0
    end = len(address)
    # qd_iterator_remove_trailing_separator(): one separator at the end does not count.
    if end > start and address[end - 1] in _SEPARATORS:
        end -= 1
    return address[start:end] if start or end != len(address) else address
