"""The kopf handlers of MeshLinks: redeem a new link (retried with back-off until it is),
then reconcile its mesh, which gives the routers the link's connectors and writes the link's
status; a link deleted leaves its mesh's routers (connectors removed through management) and
its credentials Secret is deleted.  Registered by the operator's handlers module."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable

import kopf
from kubernetes.client.rest import ApiException

from .. import contract, leader
from .credentials import credentials_name
from .redeemer import LinkRedeemer
from .spec import PLURAL

log = logging.getLogger("qdmesh.operator.links")
Run = Callable[[str, str, str], Awaitable[Any]]


def register(run: Run, kube: Callable[[], Any]) -> None:
    """``run(namespace, mesh, why)``: reconcile a mesh and write what it decided; ``kube()``:
    the operator's KubeApi."""
    state: dict = {}

    def redeemer() -> LinkRedeemer:
        if "redeemer" not in state:
            state["redeemer"] = LinkRedeemer(kube())
        found: LinkRedeemer = state["redeemer"]
        return found

    @kopf.on.create(contract.GROUP, contract.VERSION, PLURAL, id="meshlinks-create")
    @kopf.on.update(contract.GROUP, contract.VERSION, PLURAL, field="spec", id="meshlinks-update")
    @kopf.on.resume(contract.GROUP, contract.VERSION, PLURAL, id="meshlinks-resume")
    async def link_changed(name: str, namespace: Any, **_: Any) -> None:
        if not leader.may_reconcile():  # a token is redeemed by the replica holding the Lease only
            raise kopf.TemporaryError("not holding the Lease", delay=60)
        loop = asyncio.get_running_loop()
        done = await loop.run_in_executor(None, redeemer().run, namespace, name)
        if done.status is not None:
            await loop.run_in_executor(None, redeemer().kube.patch_status, PLURAL, namespace, name,
                                       done.status)
        if done.mesh:
            await run(namespace, done.mesh, "change")
        if done.retry_in is not None:
            raise kopf.TemporaryError(str((done.status or {}).get("conditions", [{}])[0].get("message")),
                                      delay=done.retry_in)

    @kopf.on.delete(contract.GROUP, contract.VERSION, PLURAL, id="meshlinks-delete")
    async def link_deleted(name: str, namespace: Any, spec: Any, **_: Any) -> None:
        # Still there (held by kopf's finalizer) but marked for deletion: the mesh's
        # reconciliation leaves it out, so its connectors leave the routers first.
        loop = asyncio.get_running_loop()
        mesh = (spec or {}).get("meshName")
        if mesh:
            await run(namespace, mesh, "change")
        redeemer().forget(namespace, name)
        try:
            await loop.run_in_executor(None, redeemer().kube.core.delete_namespaced_secret,
                                       credentials_name(name), namespace)
        except ApiException as e:
            if e.status != 404:
                raise
