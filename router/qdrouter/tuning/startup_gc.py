"""CPython's cyclic garbage collector and the router's start-up objects.

By the time the router serves its first connection, CPython holds about 24,000 objects the
collector tracks (modules, classes, functions, the management schema, the configuration), all
of them alive for the router's whole life. A full (generation 2) collection traverses every
one: 4-6 ms of CPU on the benchmark host, during which no socket is read or written, so every
message in flight waits that long. That was the longest single pause in the router's loop at
a fixed rate (bench/README.md, "Latency at a fixed rate").

``gc.freeze()`` moves every tracked object to a permanent generation that no collection
visits. Collected first, so start-up's own garbage is not kept; after it, a full collection
scans only what the router made since (connections, links, addresses). A start-up object that
later becomes part of a garbage cycle is never freed; the router's start-up objects are not
thrown away that way (configuration changes at run time make new objects). Objects freed by
their reference count are freed as before, frozen or not.

Only the ``qdrouterd`` command does this, once: a process embedding routers (the tests)
keeps its collector as it is. PyPy's collector is another matter (pypy_gc.py) and has no
``gc.freeze``.
"""

from __future__ import annotations

import gc


def freeze_startup_objects() -> bool:
    """Collect, then freeze what is left; False where the interpreter cannot freeze."""
    freeze = getattr(gc, "freeze", None)
    if freeze is None or not gc.isenabled():
        return False
    gc.collect()
    freeze()
    return True
