"""FakePortForward: a fake of `kubectl port-forward` for tests with no kubelet.

The API server fixture has no kubelet, so nothing can really forward to a pod. The fake maps
pod names to the addresses of real local router processes; everything on either side of it
(the Kubernetes API, the routers, the management protocol) is real.
"""

from __future__ import annotations

from typing import Dict, List


class FakePortForward:
    def __init__(self, addresses: Dict[str, str]) -> None:
        self.addresses = addresses
        self.opened: List[str] = []
        self.closed = False

    def __call__(self, target: object) -> FakePortForward:  # the factory kubectl-qdstat calls
        return self

    def open(self, pod: str) -> str:
        self.opened.append(pod)
        return self.addresses[pod]

    def close(self) -> None:
        self.closed = True

    def __enter__(self) -> FakePortForward:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
