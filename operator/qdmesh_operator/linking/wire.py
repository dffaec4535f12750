"""What two clusters' operators say to each other when one mesh links to another: the token a
grant hands out, the redemption request, and the answer (docs/multicluster.md).

The accepting cluster's operator serves redemptions over HTTPS (``POST`` to the token's
``url``; the server's certificate is signed by the token's ``ca.crt``). The linking cluster's
operator sends a :class:`RedeemRequest` as JSON and gets a :class:`RedeemResponse` back, or an
error status with ``{"error": "<field>: <problem>"}``:

- 400: the request is malformed (the message names the field);
- 403: the code is wrong;
- 404: no such grant (deleted, or never existed);
- 409: the linking mesh's router ids would collide with the accepting mesh's, or the grant's
  role is not one the linking side says it can make (``roles``);
- 410: the grant has expired or has no redemptions left (the message says which).

Every parser here takes untrusted input (a token pasted by a user, a peer's answer) and
raises :class:`WireError` naming the field, never anything else."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Tuple

#: The keys of a token Secret's data (and of the token document's ``data``).
TOKEN_URL = "url"
TOKEN_CODE = "code"
TOKEN_CA = "ca.crt"
#: A label on token Secrets, so a user (or the linking operator) can find them.
TOKEN_LABEL = "qdmesh.io/access-token"

#: What the linked routers are to the accepting mesh: inter-router peers (full trust: no policy
#: applies), or edge routers (attached to its edge link listener, held to its vhost policy).
INTER_ROUTER = "inter-router"
EDGE = "edge"
ROLES = (INTER_ROUTER, EDGE)
#: Bounds on what a peer may send: a redemption answer larger than this is refused unread.
MAX_BODY_BYTES = 256 * 1024
MAX_ENDPOINTS = 16
MAX_ROUTERS = 1024


class WireError(ValueError):
    """Untrusted input that does not parse; ``field`` names what is wrong."""

    def __init__(self, field_name: str, problem: str) -> None:
        self.field = field_name
        self.problem = problem
        super().__init__(f"{field_name}: {problem}")


def _text(body: Mapping[str, Any], key: str, *, limit: int = 253, where: str = "") -> str:
    value = body.get(key)
    name = f"{where}{key}"
    if not isinstance(value, str) or not value:
        raise WireError(name, "must be a non-empty string")
    if len(value) > limit:
        raise WireError(name, f"longer than {limit} characters")
    return value


def _pem(body: Mapping[str, Any], key: str) -> str:
    value = _text(body, key, limit=64 * 1024)
    if "-----BEGIN " not in value:
        raise WireError(key, "is not PEM")
    return value


@dataclass(frozen=True)
class Token:
    """What a grant gives the linking side: where to redeem, the one-time code, the CA that
    signs the redemption server's certificate."""

    url: str
    code: str
    ca_pem: str

    def data(self) -> Dict[str, str]:
        return {TOKEN_URL: self.url, TOKEN_CODE: self.code, TOKEN_CA: self.ca_pem}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Token:
        url = _text(data, TOKEN_URL, limit=2048)
        if not url.startswith("https://"):
            raise WireError(TOKEN_URL, "must be an https:// URL")
        return cls(url=url, code=_text(data, TOKEN_CODE, limit=256), ca_pem=_pem(data, TOKEN_CA))


@dataclass(frozen=True)
class RedeemRequest:
    """The linking side: its link's name and namespace, its mesh's name, its routers' ids (the
    accepting side refuses ids that would collide with its own) and the roles it can make
    links of (the accepting side refuses a grant of another role before counting it; absent:
    inter-router only, what a linking side that does not say can make)."""

    code: str
    link_name: str
    namespace: str
    mesh_name: str
    router_ids: Tuple[str, ...] = ()
    roles: Tuple[str, ...] = (INTER_ROUTER,)

    def to_json(self) -> Dict[str, Any]:
        return {"code": self.code, "linkName": self.link_name, "namespace": self.namespace,
                "meshName": self.mesh_name, "routerIds": list(self.router_ids), "roles": list(self.roles)}

    @classmethod
    def from_json(cls, body: Any) -> RedeemRequest:
        if not isinstance(body, dict):
            raise WireError("body", "must be a JSON object")
        ids = body.get("routerIds", [])
        if not isinstance(ids, list) or len(ids) > MAX_ROUTERS or not all(
                isinstance(x, str) and 0 < len(x) <= 253 for x in ids):
            raise WireError("routerIds", f"must be a list of at most {MAX_ROUTERS} router ids")
        roles = body.get("roles", [INTER_ROUTER])
        if not isinstance(roles, list) or not roles or len(roles) > len(ROLES) or not all(
                isinstance(x, str) and x in ROLES for x in roles):
            raise WireError("roles", f"must be a non-empty list of {', '.join(ROLES)}")
        return cls(code=_text(body, "code", limit=256), link_name=_text(body, "linkName"),
                   namespace=_text(body, "namespace", limit=63), mesh_name=_text(body, "meshName"),
                   router_ids=tuple(ids), roles=tuple(dict.fromkeys(roles)))


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int


@dataclass(frozen=True)
class RedeemResponse:
    """The accepting side's answer: who it is, where its link listener is reached, the CA that
    signs that listener's certificate, and the client certificate and key issued for this
    link (signed by a CA the listener trusts)."""

    mesh_name: str
    namespace: str
    role: str
    endpoints: Tuple[Endpoint, ...]
    ca_pem: str
    cert_pem: str
    key_pem: str
    router_ids: Tuple[str, ...] = field(default=())

    def to_json(self) -> Dict[str, Any]:
        return {"meshName": self.mesh_name, "namespace": self.namespace, "role": self.role,
                "endpoints": [{"host": e.host, "port": e.port} for e in self.endpoints],
                "ca.crt": self.ca_pem, "tls.crt": self.cert_pem, "tls.key": self.key_pem,
                "routerIds": list(self.router_ids)}

    @classmethod
    def from_json(cls, body: Any) -> RedeemResponse:
        if not isinstance(body, dict):
            raise WireError("body", "must be a JSON object")
        role = _text(body, "role")
        if role not in ROLES:
            raise WireError("role", f"{role!r} is not one of {', '.join(ROLES)}")
        raw = body.get("endpoints")
        if not isinstance(raw, list) or not 0 < len(raw) <= MAX_ENDPOINTS:
            raise WireError("endpoints", f"must list 1 to {MAX_ENDPOINTS} endpoints")
        endpoints: List[Endpoint] = []
        for i, item in enumerate(raw):
            where = f"endpoints[{i}]."
            if not isinstance(item, dict):
                raise WireError(f"endpoints[{i}]", "must be an object")
            port = item.get("port")
            if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
                raise WireError(f"{where}port", "must be a port number")
            endpoints.append(Endpoint(host=_text(item, "host", where=where), port=port))
        ids = body.get("routerIds", [])
        if not isinstance(ids, list) or len(ids) > MAX_ROUTERS or not all(isinstance(x, str) for x in ids):
            raise WireError("routerIds", f"must be a list of at most {MAX_ROUTERS} router ids")
        return cls(mesh_name=_text(body, "meshName"), namespace=_text(body, "namespace", limit=63),
                   role=role, endpoints=tuple(endpoints), ca_pem=_pem(body, "ca.crt"),
                   cert_pem=_pem(body, "tls.crt"), key_pem=_pem(body, "tls.key"),
                   router_ids=tuple(ids))


def error_body(error: WireError) -> Dict[str, str]:
    return {"error": str(error)}
