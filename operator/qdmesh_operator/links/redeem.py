"""The one request that redeems a token: ``POST`` a wire.RedeemRequest to the token's url over
HTTPS, the server's certificate checked against the token's ``ca.crt`` (and its host name),
with a deadline and a ceiling on the answer's size.  Every way it can go wrong ends as a
:class:`RedeemFailed` with the reason a MeshLink's status shows; nothing else is raised."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import urllib.parse

from ..linking.wire import MAX_BODY_BYTES, RedeemRequest, RedeemResponse, Token, WireError

TIMEOUT_S = 10.0

REFUSED = "Refused"
UNREACHABLE = "Unreachable"
INVALID_TOKEN = "InvalidToken"


class RedeemFailed(Exception):
    """``reason``: Refused (the accepting side said no, its message in ``message``),
    Unreachable (no answer, or one that says to try later) or InvalidToken."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        self.message = message
        super().__init__(f"{reason}: {message}")


def _context(token: Token) -> ssl.SSLContext:
    try:
        context = ssl.create_default_context(cadata=token.ca_pem)
    except (ssl.SSLError, ValueError) as e:
        raise RedeemFailed(INVALID_TOKEN, f"ca.crt: not a usable CA certificate ({e})") from None
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def _server_error(status: int, body: bytes) -> str:
    try:
        found = json.loads(body)
        if isinstance(found, dict) and isinstance(found.get("error"), str):
            return f"{found['error'][:1000]} ({status})"
    except ValueError:
        pass
    return f"HTTP {status}"


def redeem(token: Token, request: RedeemRequest, timeout: float = TIMEOUT_S) -> RedeemResponse:
    url = urllib.parse.urlsplit(token.url)
    if url.scheme != "https" or not url.hostname:
        raise RedeemFailed(INVALID_TOKEN, "url: must be an https:// URL with a host")
    try:
        port = url.port or 443
    except ValueError:
        raise RedeemFailed(INVALID_TOKEN, "url: the port is not a number") from None
    path = url.path or "/"
    connection = http.client.HTTPSConnection(url.hostname, port, timeout=timeout, context=_context(token))
    try:
        payload = json.dumps(request.to_json()).encode()
        connection.request("POST", path, body=payload,
                           headers={"Content-Type": "application/json", "Accept": "application/json"})
        answer = connection.getresponse()
        body = answer.read(MAX_BODY_BYTES + 1)
        status = answer.status
    except ssl.SSLCertVerificationError as e:
        raise RedeemFailed(UNREACHABLE, f"{token.url}: the server's certificate is not the token's "
                           f"CA's ({e.verify_message})") from None
    except (OSError, http.client.HTTPException, socket.timeout) as e:
        raise RedeemFailed(UNREACHABLE, f"{token.url}: {e or type(e).__name__}") from None
    finally:
        connection.close()
    if len(body) > MAX_BODY_BYTES:
        raise RedeemFailed(REFUSED, f"the answer is longer than {MAX_BODY_BYTES} bytes")
    if status >= 500 or status == 429:
        raise RedeemFailed(UNREACHABLE, f"{token.url}: {_server_error(status, body)}; trying again later")
    if status != 200:
        raise RedeemFailed(REFUSED, _server_error(status, body))
    try:
        response = RedeemResponse.from_json(json.loads(body))
    except ValueError as e:  # WireError included
        field = e.field if isinstance(e, WireError) else "body"
        raise RedeemFailed(REFUSED, f"the answer does not parse: {field}: "
                           f"{e.problem if isinstance(e, WireError) else 'not JSON'}") from None
    if response.role not in request.roles:
        raise RedeemFailed(REFUSED, f"the answer is for links of role {response.role}, which this link "
                           f"did not ask for ({', '.join(request.roles)})")
    return response
