"""The routing protocol's traffic, counted by the address qdrouterd lists it under.

qdrouterd's interior routers show their protocol addresses in `qdstat -a`: `qdhello` and
`qdrouter` (flood), `qdrouter.ma` (multicast), each as local (this router) and, but for
HELLO, topological (every router); plus one `router` row per other router of the mesh. The
in-process endpoint there is the routing protocol itself: what it received counts as
to-proc, what it sent as from-proc. This module keeps those two counts by address key.
"""

from __future__ import annotations

from collections import Counter

from .core.address_table import address_key


class ControlCounters:
    def __init__(self, router_id: str) -> None:
        self._router_id = router_id
        self._own = f"_topo/0/{router_id}/"
        self.to_proc: Counter[str] = Counter()
        self.from_proc: Counter[str] = Counter()

    def key(self, address: str) -> str:
        """qdrouterd's key: `_local/X` and this router's `_topo/0/<id>/X` are local (LX),
        `_topo/<area>/all/X` topological (TX), another router's `_topo/<area>/<id>/X` that
        router's address (R<id>)."""
        if address.startswith("_topo/") and not address.startswith(self._own):
            parts = address[6:].split("/", 2)
            if len(parts) != 3:
                return "M0" + address
            return "T" + parts[2] if parts[1] == "all" else "R" + parts[1]
        return address_key(address, self._router_id)

    def received(self, address: str) -> None:
        self.to_proc[self.key(address)] += 1

    def sent(self, address: str) -> None:
        self.from_proc[self.key(address)] += 1
