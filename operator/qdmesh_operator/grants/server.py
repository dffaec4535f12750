"""The redemption server: HTTPS in the operator process (the leader's only: it starts with
kopf, which runs once this replica holds the Lease), ``POST /grants/<namespace>/<grant>``.

Its certificate is issued at start by the operator-level CA (Secret ``qdmesh-grant-server-ca``)
for the host the tokens name.  A body above linking/wire.MAX_BODY_BYTES is refused (413)
unread; each redemption runs in a worker thread (redeem.py) and gets a JSON answer; nothing
a client sends gets a 5xx."""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
import tempfile
from typing import Any, Dict, Tuple

from ..linking.wire import MAX_BODY_BYTES
from ..metrics import METRICS
from . import pki
from .redeem import redeem
from .settings import ServerSettings, ensure_server_ca

log = logging.getLogger("qdmesh.operator.grants")
#: A redemption request is a few hundred bytes; the wire's bound is for answers too.
MAX_REQUEST_BYTES = 16 * 1024


def server_context(core: Any, settings: ServerSettings) -> ssl.SSLContext:
    """TLS with a certificate for ``settings.host`` (files in a private directory: the ssl
    module loads keys from files only, and removes nothing it has loaded)."""
    ca = ensure_server_ca(core, settings)
    pair = pki.issue(ca, settings.host, hosts=[settings.host], server=True, lifetime=pki.SERVER_LIFETIME)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    with tempfile.TemporaryDirectory(prefix="qdmesh-grant-server-") as directory:
        cert, key = os.path.join(directory, "tls.crt"), os.path.join(directory, "tls.key")
        with open(cert, "wb") as f:
            f.write(pair.cert_pem)
        with os.fdopen(os.open(key, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
            f.write(pair.key_pem)
        context.load_cert_chain(cert, key)
    return context


async def serve(api_client: Any, settings: ServerSettings) -> Any:
    """Start listening; returns the aiohttp runner (``await runner.cleanup()`` stops it)."""
    from aiohttp import web
    from kubernetes import client

    loop = asyncio.get_running_loop()

    async def handle(request: web.Request) -> web.Response:
        status, body = await answer(request)
        METRICS.redemption(status)
        return web.json_response(body, status=status)

    async def answer(request: web.Request) -> Tuple[int, Dict[str, Any]]:
        too_large = 413, {"error": f"body: larger than {MAX_REQUEST_BYTES} bytes"}
        if request.content_length is not None and request.content_length > MAX_REQUEST_BYTES:
            return too_large
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return too_large
        namespace, grant = request.match_info["namespace"], request.match_info["grant"]
        try:
            status, body = await loop.run_in_executor(None, redeem, api_client, namespace, grant, raw)
        except Exception as e:  # the API server refused or is away: the client may try again
            log.warning("redemption of grant %s/%s failed: %s", namespace, grant, e)
            status, body = 503, {"error": "grant: the operator cannot read it now; try again"}
        return status, body

    app = web.Application(client_max_size=min(MAX_REQUEST_BYTES, MAX_BODY_BYTES))
    app.router.add_post("/grants/{namespace}/{grant}", handle)
    context = await loop.run_in_executor(None, server_context, client.CoreV1Api(api_client), settings)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "0.0.0.0", settings.port, ssl_context=context).start()
    log.info("grant redemption server on port %d (tokens name https://%s:%d)", settings.port, settings.host,
             settings.advertised_port)
    return runner
