"""Which page answers which path on one HTTP listener (its `healthz` and `metrics` settings)."""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict

from .health import liveness, readiness
from .metrics import DEFAULT_MAX_ADDRESSES, metrics_text
from .requests import HttpRequest
from .responses import PROMETHEUS_TEXT, Response, error_response, text_response

log = logging.getLogger("qdrouter.HTTP")


class ListenerPages:
    def __init__(self, router: Any, attributes: Dict[str, Any]) -> None:
        self.router = router
        self.max_addresses = int(attributes.get("metricsMaxAddresses", DEFAULT_MAX_ADDRESSES))
        self.pages: Dict[str, Callable[[HttpRequest], Response]] = {}
        if attributes.get("healthz", True):
            self.pages["/healthz"] = self._healthz
            self.pages["/readyz"] = self._readyz
        if attributes.get("metrics", True):
            self.pages["/metrics"] = self._metrics

    def __call__(self, request: HttpRequest) -> Response:
        page = self.pages.get(request.path)
        if page is None:
            known = ", ".join(sorted(self.pages)) or "none"
            return error_response(404, f"no page at {request.path} (pages: {known})")
        return page(request)

    def _healthz(self, request: HttpRequest) -> Response:
        ok, text = liveness(self.router)
        return text_response(200 if ok else 503, text)

    def _readyz(self, request: HttpRequest) -> Response:
        ok, text = readiness(self.router)
        if not ok:
            log.info("/readyz: %s", text.strip())
        return text_response(200 if ok else 503, text)

    def _metrics(self, request: HttpRequest) -> Response:
        return Response(200, metrics_text(self.router, self.max_addresses).encode("utf-8"), PROMETHEUS_TEXT)
