"""The kubernetes package's ApiClient with a timeout on every request.  Without one, a request
to an API server that stops answering (a network path dropped rather than refused) waits
forever, and so does the reconciliation or Lease renewal that made it.  A call that names its
own ``_request_timeout`` keeps it."""

from __future__ import annotations

import os
from typing import Any, Tuple

from kubernetes import client

#: (connect, read) seconds of a request that names no timeout of its own.
DEFAULT_TIMEOUT: Tuple[float, float] = (5.0, 30.0)


def default_timeout() -> Tuple[float, float]:
    """``DEFAULT_TIMEOUT``, its read part replaced by $QDMESH_API_TIMEOUT when set."""
    value = os.environ.get("QDMESH_API_TIMEOUT", "")
    try:
        read = float(value) if value else DEFAULT_TIMEOUT[1]
    except ValueError:
        raise SystemExit(f"qdmesh-operator: QDMESH_API_TIMEOUT={value!r} is not a number") from None
    if read <= 0:
        raise SystemExit(f"qdmesh-operator: QDMESH_API_TIMEOUT={value!r} must be positive")
    return (min(DEFAULT_TIMEOUT[0], read), read)


class TimedApiClient(client.ApiClient):
    def __init__(self, *args: Any, timeout: Tuple[float, float] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.request_timeout = timeout or default_timeout()

    def call_api(self, method: Any, url: Any, header_params: Any = None, body: Any = None,
                 post_params: Any = None, _request_timeout: Any = None) -> Any:
        return super().call_api(method, url, header_params, body, post_params,
                                _request_timeout=_request_timeout or self.request_timeout)
