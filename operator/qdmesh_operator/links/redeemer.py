"""One pass over a MeshLink that was never redeemed: read its token Secret, redeem it once,
keep the answer in the Secret ``<link>-credentials``.  While that Secret exists the token is
never used again (its code is one-time); the mesh's own reconciliation then gives the routers
the link's connectors and writes the link's status.  Failures are retried with back-off
(Unreachable: 5 s doubling to 5 min; Refused and InvalidToken: every 5 min, in case the token
Secret is fixed)."""

from __future__ import annotations

import base64
import binascii
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Tuple

from kubernetes.client.rest import ApiException

from .. import contract
from ..linking.wire import RedeemRequest, RedeemResponse, Token, WireError
from ..model.errors import SpecError
from . import redeem as redeeming
from .credentials import credentials_name, credentials_secret, of_response
from .redeem import INVALID_TOKEN, REFUSED, UNREACHABLE, RedeemFailed
from .spec import PLURAL, LinkSpec, parse_link
from .status import MESH_NOT_FOUND, not_redeemed_status

FIRST_RETRY_S = 5.0
MAX_RETRY_S = 300.0
INVALID_SPEC = "InvalidSpec"
Redeem = Callable[[Token, RedeemRequest], RedeemResponse]


@dataclass
class Pass:
    """What one pass found: the mesh to reconcile now (the link is redeemed), the status to
    write (it is not), and when to try again (None: not by itself)."""

    mesh: str | None = None
    status: Dict[str, Any] | None = None
    retry_in: float | None = None
    #: The pass sent a redemption (and it succeeded).
    redeemed: bool = False


def _decoded(data: Mapping[str, Any]) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for key, value in data.items():
        try:
            out[key] = base64.b64decode(str(value), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            raise WireError(key, "is not base64 text") from None
    return out


class LinkRedeemer:
    def __init__(self, kube: Any, redeem: Redeem = redeeming.redeem) -> None:
        self.kube = kube
        self.redeem = redeem
        self._failures: Dict[Tuple[str, str], int] = {}
        self._guard = threading.Lock()

    def _backoff(self, key: Tuple[str, str], reason: str) -> float:
        with self._guard:
            count = self._failures[key] = self._failures.get(key, 0) + 1
        if reason == UNREACHABLE:
            return min(MAX_RETRY_S, FIRST_RETRY_S * 2 ** (count - 1))
        return MAX_RETRY_S

    def forget(self, namespace: str, name: str) -> None:
        with self._guard:
            self._failures.pop((namespace, name), None)

    def _secret(self, namespace: str, name: str) -> Dict[str, Any] | None:
        try:
            return dict(self.kube.core.read_namespaced_secret(name, namespace).data or {})
        except ApiException as e:
            if e.status == 404:
                return None
            raise

    def run(self, namespace: str, name: str) -> Pass:
        body = self.kube.get(PLURAL, namespace, name)
        if body is None or body["metadata"].get("deletionTimestamp"):
            self.forget(namespace, name)
            return Pass()
        try:
            spec = parse_link(name, namespace, body.get("spec") or {})
        except SpecError as e:
            return Pass(status=not_redeemed_status(body, INVALID_SPEC, str(e)))
        if self._secret(namespace, credentials_name(name)) is not None:
            self.forget(namespace, name)
            return Pass(mesh=spec.mesh_name)
        key = (namespace, name)
        try:
            response = self._redeem(body, spec)
        except RedeemFailed as e:
            return Pass(status=not_redeemed_status(body, e.reason, e.message),
                        retry_in=self._backoff(key, e.reason))
        secret = credentials_secret(body, of_response(response))
        try:
            self.kube.core.create_namespaced_secret(namespace, secret)
        except ApiException as e:
            if e.status != 409:  # 409: another pass stored it first
                raise
        self.forget(namespace, name)
        return Pass(mesh=spec.mesh_name, redeemed=True)

    def _redeem(self, body: Mapping[str, Any], spec: LinkSpec) -> RedeemResponse:
        where = f"spec.tokenSecretRef.name: Secret {spec.token_secret!r}"
        data = self._secret(spec.namespace, spec.token_secret)
        if data is None:
            raise RedeemFailed(INVALID_TOKEN, f"{where} not found")
        try:
            token = Token.from_data(_decoded(data))
        except WireError as e:
            raise RedeemFailed(INVALID_TOKEN, f"{where}: {e}") from None
        mesh = self.kube.get(contract.MESH_PLURAL, spec.namespace, spec.mesh_name)
        if mesh is None:
            raise RedeemFailed(MESH_NOT_FOUND, f"spec.meshName: RouterMesh {spec.mesh_name!r} not found")
        size = (mesh.get("spec") or {}).get("size")
        size = size if isinstance(size, int) and size > 0 else 1
        request = RedeemRequest(code=token.code, link_name=spec.name, namespace=spec.namespace,
                                mesh_name=spec.mesh_name,
                                router_ids=tuple(contract.router_id(spec.mesh_name, i) for i in range(size)))
        return self.redeem(token, request)


__all__ = ["INVALID_TOKEN", "REFUSED", "UNREACHABLE", "LinkRedeemer", "Pass"]
