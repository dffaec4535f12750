"""kopf handlers of MeshAccessGrants and the redemption server's life (registered when the
operator's handlers module imports this one).  Thin: the work is in grant.py, revoke.py and
the mesh's own reconciliation, which writes the link listener's trusted bundle."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Dict

import kopf

from .. import contract
from ..model.errors import SpecError
from ..model.mesh import parse_mesh
from .grant import grant_status
from .names import GRANT_PLURAL
from .revoke import link_names, revoke
from .settings import from_env

log = logging.getLogger("qdmesh.operator.grants")
G, V = contract.GROUP, contract.VERSION
#: Attempts (2 s apart) at revoking a deleted grant's links before its deletion goes ahead
#: anyway (routers that never come back to load the new bundle must not hold it forever).
REVOKE_ATTEMPTS = 150
_state: Dict[str, Any] = {}


def _kube() -> Any:
    from ..handlers import reconciler

    return reconciler().kube


@kopf.on.startup()
async def start_redemption_server(**_: Any) -> None:
    """Only the leader gets here (main.py holds the Lease before kopf starts): standby
    replicas do not listen."""
    from .server import serve

    settings = from_env()
    if not settings.port:
        return
    try:
        _state["server"] = await serve(_kube().api_client, settings)
    except OSError as e:
        # The meshes are reconciled all the same; only redemptions are refused (connection
        # refused) until the operator restarts with a port it can take.
        log.error("the grant redemption server cannot listen on port %s (%s): grant tokens "
                  "cannot be redeemed here", settings.port, e)


@kopf.on.cleanup()
async def stop_redemption_server(**_: Any) -> None:
    runner = _state.pop("server", None)
    if runner is not None:
        await runner.cleanup()


async def _refresh(body: Any, namespace: str, name: str) -> Dict[str, Any]:
    kube = _kube()
    loop = asyncio.get_running_loop()
    status = await loop.run_in_executor(None, grant_status, kube.core, kube.custom, dict(body), from_env())
    current = dict(body.get("status") or {})
    if any(current.get(k) != v for k, v in status.items()):
        await loop.run_in_executor(None, kube.patch_status, GRANT_PLURAL, namespace, name, status)
    return status


@kopf.on.create(G, V, GRANT_PLURAL)
@kopf.on.update(G, V, GRANT_PLURAL, field="spec")
@kopf.on.resume(G, V, GRANT_PLURAL)
async def grant_changed(body: Any, spec: Any, namespace: Any, name: Any, **_: Any) -> None:
    """The grant's Secrets and status, then its mesh (whose listeners trust its client CA)."""
    from ..handlers import run

    await _refresh(body, namespace, name)
    await run(namespace, spec.get("meshName"), "change")


@kopf.timer(G, V, GRANT_PLURAL, interval=30.0, initial_delay=30.0)
async def grant_tick(body: Any, namespace: Any, name: Any, meta: Any, **_: Any) -> None:
    """Ready turns Expired when the window closes (nothing else would say it)."""
    if not meta.get("deletionTimestamp"):
        await _refresh(body, namespace, name)


@kopf.on.delete(G, V, GRANT_PLURAL)
async def grant_deleted(body: Any, spec: Any, namespace: Any, name: Any, retry: int, **_: Any) -> None:
    """Revocation: the mesh's reconciliation drops the grant's CA from the trusted bundle (the
    grant is marked for deletion), then its links' connections are closed; until both are
    done, this is tried again every 2 s."""
    from ..handlers import reconciler, run

    mesh_name = spec.get("meshName")
    kube = reconciler().kube
    loop = asyncio.get_running_loop()
    mesh_body = await loop.run_in_executor(None, kube.get, contract.MESH_PLURAL, namespace, mesh_name) \
        if mesh_name else None
    if mesh_body is None:
        return
    try:
        mesh = parse_mesh(mesh_name, namespace, mesh_body.get("spec") or {})
    except SpecError:
        return
    await run(namespace, mesh_name, "change")
    found = await loop.run_in_executor(None, revoke, kube.core, mesh, link_names(body),
                                       reconciler().credentials)
    if found.done:
        return
    if retry >= REVOKE_ATTEMPTS:
        log.warning("MeshAccessGrant %s/%s deleted before its links could be closed: %s", namespace, name,
                    "; ".join(found.waiting))
        return
    raise kopf.TemporaryError("revoking: " + "; ".join(found.waiting), delay=2)
