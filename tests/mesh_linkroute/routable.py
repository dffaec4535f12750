"""Waiting until an attach at a router is really link-routed (the destination's advertisement
has crossed the mesh)."""

from __future__ import annotations

import time
from typing import Any, Dict, List

from qdrouter.tools.errors import ManagementError
from tests.mesh.meshproc import Mesh
from tests.router.amqpclient import Net

LINK_TYPE = "org.apache.qpid.dispatch.router.link"


def wait_routable(mesh: Mesh, net: Net, router: str, address: str, receiving: bool = False,
                  timeout: float = 15.0) -> None:
    """Until an attach at ``router`` for ``address`` (a receiver's if ``receiving``, else a
    sender's) is link-routed: the destination's advertisement has crossed the mesh. A router
    that has not heard of the route yet accepts the attach as an ordinary message-routed link,
    so the probe must show in its ``router.link`` rows as a routed link (owningAddr C/D...)."""
    deadline = time.monotonic() + timeout
    client = net.connect(mesh[router].url)
    prefix = "D" if receiving else "C"
    while True:
        probe = client.receiver(address, credit=0) if receiving else client.sender(address)
        name = probe.link.name
        routed = probe.remote_opened and not probe.remote_closed and any(
            row.get("linkName") == name and str(row.get("owningAddr") or "").startswith(prefix)
            for row in _links(mesh, router))
        probe.close()
        if routed:
            return
        assert time.monotonic() < deadline, f"{address} never became link-routable at {router}"
        net.pump(0.3)


def _links(mesh: Mesh, router: str) -> List[Dict[str, Any]]:
    """router.link rows; a management connection that idled out meanwhile is made afresh."""
    try:
        return mesh.mgmt(router).query(LINK_TYPE)
    except ManagementError:
        mesh.drop_clients(router)
        return mesh.mgmt(router).query(LINK_TYPE)
