"""One redemption of a grant's token (the POST to the token's URL): every check the contract
names, in this order, each refusal a status and a message naming the field
(linking/wire.py):

400 malformed body -> 404 no such grant -> 403 wrong code (constant-time compare) ->
410 expired -> 409 the grant's role is not one the linking side can make -> 404/409 the mesh
is gone or has no linkAccess (or, for an edge grant, an exposure without an edge port) ->
409 router ids collide -> 410 no redemptions left -> 200 with a client certificate.

The count is taken in the grant's status BEFORE the answer, with the resourceVersion read
(optimistic concurrency): of two redemptions racing for the last one, one replace wins and
the other reads the new count and is refused.  Synchronous (the server runs it in a worker
thread)."""

from __future__ import annotations

import datetime as dt
import hmac
import json
import logging
import re
from typing import Any, Dict, List, Tuple

from kubernetes import client
from kubernetes.client.rest import ApiException

from .. import contract
from ..kube import secrets as store
from ..linking.wire import EDGE, Endpoint, RedeemRequest, RedeemResponse, WireError, error_body
from ..model.errors import SpecError
from ..model.mesh import MeshSpec, parse_mesh
from ..render.link_access import EDGE_PORT_NAME, PORT_NAME, advertised_edge_port, advertised_port
from . import pki
from .grant import ensure_client_ca
from .link_tls import balancer_hosts
from .names import GRANT_PLURAL, client_common_name, link_ca_secret, token_secret
from .spec import GrantSpec, condition, expires_at, parse_grant, redemption_state, stamp

log = logging.getLogger("qdmesh.operator.grants")

Answer = Tuple[int, Dict[str, Any]]
_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
#: Attempts at counting a redemption when other writers keep changing the grant.
COUNT_ATTEMPTS = 10


class Refused(Exception):
    def __init__(self, status: int, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.status = status
        self.answer = error_body(WireError(field, problem))


def redeem(api_client: Any, namespace: str, grant: str, raw: bytes,
           now: dt.datetime | None = None) -> Answer:
    """The status and JSON body to answer; never raises for anything the client sent."""
    try:
        return 200, _redeem(api_client, namespace, grant, raw, now or dt.datetime.now(dt.timezone.utc))
    except Refused as e:
        log.info("redemption of grant %s/%s refused (%d): %s", namespace, grant, e.status, e)
        return e.status, e.answer


def _request(raw: bytes) -> RedeemRequest:
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise Refused(400, "body", "is not JSON") from None
    try:
        return RedeemRequest.from_json(body)
    except WireError as e:
        raise Refused(400, e.field, e.problem) from None


def _grant(custom: Any, namespace: str, name: str) -> Dict[str, Any]:
    named = _NAME.fullmatch(namespace) and _NAME.fullmatch(name)
    if not named or len(namespace) > 63 or len(name) > 253:
        raise Refused(404, "grant", "the URL names no MeshAccessGrant (not a namespace and name)")
    try:
        found = dict(custom.get_namespaced_custom_object(contract.GROUP, contract.VERSION, namespace,
                                                         GRANT_PLURAL, name))
    except ApiException as e:
        if e.status == 404:
            raise Refused(404, "grant", f"no MeshAccessGrant {namespace}/{name}") from None
        raise
    if (found.get("metadata") or {}).get("deletionTimestamp"):
        raise Refused(404, "grant", f"MeshAccessGrant {namespace}/{name} is being deleted")
    return found


def _mesh(custom: Any, spec: GrantSpec) -> MeshSpec:
    try:
        body = custom.get_namespaced_custom_object(contract.GROUP, contract.VERSION, spec.namespace,
                                                   contract.MESH_PLURAL, spec.mesh_name)
        mesh = parse_mesh(spec.mesh_name, spec.namespace, body.get("spec") or {})
    except ApiException as e:
        if e.status == 404:
            raise Refused(404, "meshName", f"the grant's RouterMesh {spec.mesh_name} is gone") from None
        raise
    except SpecError as e:
        raise Refused(409, "meshName", f"the grant's RouterMesh {spec.mesh_name} is invalid: {e}") from None
    if not mesh.link_access.enabled:
        raise Refused(409, "meshName", f"RouterMesh {spec.mesh_name} has no spec.linkAccess")
    return mesh


def _endpoints(core: Any, mesh: MeshSpec, role: str) -> Tuple[Endpoint, ...]:
    """Where the linking side connects: the inter-router link listener, or for an edge grant
    the edge link listener (which an Ingress or a Route, passing one port, does not expose)."""
    access = mesh.link_access
    hosts: List[str] = [access.host] if access.host else balancer_hosts(core, mesh)
    if not hosts:
        raise Refused(409, "linkAccess", f"the LoadBalancer of RouterMesh {mesh.name} has no address yet")
    if role != EDGE:
        port = advertised_port(mesh)
        if access.type == "NodePort" and access.node_port is None:
            port = _assigned_node_port(core, mesh, PORT_NAME)
        return tuple(Endpoint(host, port) for host in hosts)
    edge_port = advertised_edge_port(mesh)
    if edge_port is None:
        raise Refused(409, "role", f"an edge grant needs RouterMesh {mesh.name}'s linkAccess of type "
                      f"NodePort or LoadBalancer ({access.type} exposes the inter-router listener only)")
    if access.type == "NodePort" and access.edge_node_port is None:
        edge_port = _assigned_node_port(core, mesh, EDGE_PORT_NAME)
    return tuple(Endpoint(host, edge_port) for host in hosts)


def _assigned_node_port(core: Any, mesh: MeshSpec, port_name: str) -> int:
    """The nodePort Kubernetes chose for the link Service (spec.linkAccess.nodePort not given)."""
    try:
        service = core.read_namespaced_service(contract.link_service(mesh.name), mesh.namespace)
    except ApiException as e:
        if e.status == 404:
            raise Refused(409, "linkAccess", f"RouterMesh {mesh.name}'s link Service is not there") from None
        raise
    ports = service.spec.ports or []
    port = next((p.node_port for p in ports if p.name == port_name and p.node_port), None)
    if not port:
        raise Refused(409, "linkAccess", f"the link Service of RouterMesh {mesh.name} has no nodePort yet")
    return int(port)


def _count(custom: Any, namespace: str, name: str, request: RedeemRequest, now: dt.datetime) -> None:
    """Take one redemption in the grant's status, or refuse (410) when none is left."""
    for _ in range(COUNT_ATTEMPTS):
        body = _grant(custom, namespace, name)
        spec = parse_grant(body)
        status = dict(body.get("status") or {})
        used = int(status.get("redemptions") or 0)
        if used >= spec.redemptions_allowed:
            raise Refused(410, "grant", f"all {spec.redemptions_allowed} redemptions of the grant are used")
        links = list(status.get("links") or [])
        links.append({"linkName": request.link_name, "namespace": request.namespace,
                      "meshName": request.mesh_name, "redeemedAt": stamp(now)})
        status.update(redemptions=used + 1, links=links)
        ready, reason, message = redemption_state(spec, {**body, "status": status}, now)
        status["conditions"] = [condition(list(status.get("conditions") or []), ready, reason, message, now,
                                          (body.get("metadata") or {}).get("generation"))]
        replaced = {**body, "status": status}
        try:
            custom.replace_namespaced_custom_object_status(contract.GROUP, contract.VERSION, namespace,
                                                           GRANT_PLURAL, name, replaced)
            return
        except ApiException as e:
            if e.status != 409:  # 409: written meanwhile (another redemption): read it again
                raise
    raise Refused(409, "grant", "the grant changed too often meanwhile; try again")


def _redeem(api_client: Any, namespace: str, name: str, raw: bytes, now: dt.datetime) -> Dict[str, Any]:
    request = _request(raw)
    core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)
    body = _grant(custom, namespace, name)
    token = store.read(core, namespace, token_secret(name))
    code = token[0].get("code", b"") if token is not None else b""
    if not code or not hmac.compare_digest(code, request.code.encode()):
        raise Refused(403, "code", "does not match the grant's token")
    try:
        spec = parse_grant(body)
    except SpecError as e:
        raise Refused(409, "grant", f"the grant is invalid: {e}") from None
    if now >= expires_at(body, spec):
        raise Refused(410, "grant", f"the grant expired at {stamp(expires_at(body, spec))}")
    if spec.role not in request.roles:
        raise Refused(409, "role", f"the grant is for links of role {spec.role}; the linking side makes "
                      f"{', '.join(request.roles)} only")
    mesh = _mesh(custom, spec)
    ours = set(mesh.router_ids())
    clash = sorted(ours & set(request.router_ids))
    if request.mesh_name == mesh.name or clash:
        ids = ", ".join(clash) or f"{request.mesh_name}-N"
        raise Refused(409, "meshName", f"the linking mesh's router ids ({ids}) would collide with "
                      f"RouterMesh {mesh.name}'s: rename one of the meshes")
    endpoints = _endpoints(core, mesh, spec.role)
    link_ca = store.read(core, namespace, link_ca_secret(mesh.name))
    if link_ca is None:
        raise Refused(409, "linkAccess", f"RouterMesh {mesh.name}'s link CA is not made yet; try again")
    client_ca = ensure_client_ca(core, body)
    _count(custom, namespace, name, request, now)
    pair = pki.issue(client_ca, client_common_name(request.namespace, request.link_name, request.mesh_name),
                     server=False, lifetime=pki.CLIENT_LIFETIME, now=now)
    log.info("grant %s/%s redeemed by link %s/%s of mesh %s", namespace, name, request.namespace,
             request.link_name, request.mesh_name)
    return RedeemResponse(mesh_name=mesh.name, namespace=namespace, role=spec.role, endpoints=endpoints,
                          ca_pem=link_ca[0]["ca.crt"].decode(), cert_pem=pair.cert_pem.decode(),
                          key_pem=pair.key_pem.decode(), router_ids=tuple(mesh.router_ids())).to_json()

