"""Fixtures for link-routing tests: real router subprocesses (an edge router ``R1`` with link
routes, and qdmesh routers as route containers) and the shared client event loop.

A second qdmesh router is a real AMQP container: a sender attaching to target X produces to
address X on it, a receiver attaching to source X consumes from X, so a test can put its own
consumers and producers on the container router and watch what passes through the routed link.
"""

from __future__ import annotations

from typing import Any, Callable, Dict

import pytest

from tests.linkroute.lrutil import both_ways, connector, wait_active
from tests.router.fixtures import net, router_factory  # noqa: F401 (shared fixtures)
from tests.router.routerproc import Router, RouterFactory

EdgeFactory = Callable[..., Router]


@pytest.fixture
def container(router_factory: RouterFactory) -> Router:
    """A qdmesh router 'C' used as the route container (its container id is 'C')."""
    return router_factory(router_id="C")


@pytest.fixture
def edge_factory(router_factory: RouterFactory) -> EdgeFactory:
    """``edge(routes, containers={name: port}, active=N)``: router R1 with a route-container
    connector per container and the given linkRoute sections; waits for N active routes.
    Other keywords go to the router factory (``extra_listeners``, ...)."""
    def make(routes: str, containers: Dict[str, int] | None = None, active: int = 0,
             router_id: str = "R1", **router_options: Any) -> Router:
        extra = "".join(connector(name, port) for name, port in (containers or {}).items()) + routes
        r = router_factory(router_id=router_id, extra_config=extra, **router_options)
        if active:
            wait_active(r, active)
        return r
    return make


@pytest.fixture
def edge(edge_factory: EdgeFactory, container: Router) -> Router:
    """R1 link-routing prefix ``lr`` both ways to the container router C (connector 'cont')."""
    return edge_factory(both_ways("lr", connection="cont"), {"cont": container.port}, active=2)
