"""Interior and edge routers (real processes) for edge tests: an interior router with a
listener for edges, edge routers with edge connectors to one or more interiors."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, List, Sequence

from tests.router.routerproc import Router, free_port

TIMERS = ("    helloIntervalSeconds: 1\n    helloMaxAgeSeconds: 3\n"
          "    raIntervalSeconds: 30\n    raIntervalFluxSeconds: 4\n")


def _set_mode(router: Router, mode: str) -> None:
    text = router.config_path.read_text().replace("    mode: standalone", f"    mode: {mode}")
    if mode == "interior":
        text = text.replace(f"    id: {router.router_id}\n", f"    id: {router.router_id}\n{TIMERS}", 1)
    router.config_path.write_text(text)


def interior(workdir: Path, router_id: str, connect_to: Sequence[int] = (), extra: str = "",
             edge_listener: Dict[str, str] | None = None) -> Router:
    """An interior router: a client listener (default), an edge listener (``ports['edge']``,
    ``edge_listener`` its further attributes), an inter-router listener (``ports['mesh']``),
    connectors to other interiors' mesh ports."""
    sections = "".join(
        "connector {\n    host: 127.0.0.1\n" f"    port: {port}\n    role: inter-router\n" "}\n"
        for port in connect_to)
    router = Router(workdir, router_id,
                    extra_listeners={"edge": {"role": "edge", **(edge_listener or {})},
                                     "mesh": {"role": "inter-router"}},
                    extra_config=sections + extra)
    _set_mode(router, "interior")
    return router


def edge(workdir: Path, router_id: str, uplinks: Sequence[int], extra: str = "",
         connector: Dict[str, str] | None = None) -> Router:
    """An edge router with a client listener and one edge connector per interior port
    (``connector``: further attributes of each, or other values for its host or role)."""
    sections = "".join(
        "connector {\n" + "".join(f"    {key}: {value}\n" for key, value in
                                  {"name": f"uplink{i}", "host": "127.0.0.1", "port": port, "role": "edge",
                                   **(connector or {})}.items()) + "}\n"
        for i, port in enumerate(uplinks))
    router = Router(workdir, router_id, extra_config=sections + extra)
    _set_mode(router, "edge")
    return router


class Routers:
    """Routers started by one test, stopped (and checked) at its end."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.started: List[Router] = []

    def _dir(self, name: str) -> Path:
        path = self.tmp_path / name
        path.mkdir(exist_ok=True)
        return path

    def interior(self, router_id: str, **kwargs: Any) -> Router:
        router = interior(self._dir(router_id), router_id, **kwargs)
        self.started.append(router)
        return router.start()

    def edge(self, router_id: str, uplinks: Sequence[int], **kwargs: Any) -> Router:
        router = edge(self._dir(router_id), router_id, uplinks, **kwargs)
        self.started.append(router)
        return router.start()


    def stop(self, router: Router) -> None:
        """Stop one router mid-test (checked as at the end)."""
        self.started.remove(router)
        router.stop(check=True)


RoutersFactory = Callable[[], Routers]
__all__ = ["Routers", "edge", "free_port", "interior"]
