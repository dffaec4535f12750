"""Meshes mixing qdmesh routers and C routers (qdrouterd 1.19), built from a list of router
names (``Q...`` qdmesh, ``C...`` the C router) and edges, as real processes on 127.0.0.1; and
what the tests ask of them through management (either kind answers the same queries)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, Iterator, List, Sequence, Set, Tuple, Union

from qdrouter.tools.management_client import ManagementClient
from tests.interop.cpeer import CRouter, require_c_router, section
from tests.mesh.meshproc import NODE_TYPE, MeshRouter, Timers
from tests.ports import free_port
from tests.router.amqpclient import Net

AnyRouter = Union[CRouter, MeshRouter]
ADDRESS_TYPE = "org.apache.qpid.dispatch.router.address"
# The C router's address configuration, as the qdmesh routers' (tests/mesh/meshproc.py);
# CRouter already configures "closest".
C_ADDRESSES = (section("address", {"prefix": "multicast", "distribution": "multicast"})
               + section("address", {"prefix": "balanced", "distribution": "balanced"}))


def is_c(name: str) -> bool:
    return name.startswith("C")


class MixedMesh:
    """Routers ``names`` joined by ``edges`` (a, b): ``a`` connects to an inter-router
    listener of ``b``. Routers start in ``names`` order, so an edge's listener should be
    started before its connector (the later router connects to the earlier). ``all_c``: every
    router a C router, whatever its name (the all-C mesh of the same shape and ids)."""

    def __init__(self, workdir: Path, names: Sequence[str], edges: Sequence[Tuple[str, str]],
                 c_extra: Dict[str, str] | None = None, q_extra: Dict[str, str] | None = None,
                 all_c: bool = False) -> None:
        def c_kind(name: str) -> bool:
            return all_c or is_c(name)

        self.names = list(names)
        self.edges = list(edges)
        self.timers = Timers()
        self.binary = require_c_router()
        self.routers: Dict[str, AnyRouter] = {}
        c_sections = {n: C_ADDRESSES + (c_extra or {}).get(n, "") for n in names if c_kind(n)}
        q_routers: Dict[str, MeshRouter] = {}
        for name in names:
            (workdir / name).mkdir()
            if not c_kind(name):
                q_routers[name] = MeshRouter(workdir / name, name, self.timers,
                                             extra_config=(q_extra or {}).get(name, ""))
        for a, b in edges:
            if c_kind(b):
                port = free_port()
                c_sections[b] += section("listener", {"host": "127.0.0.1", "port": port,
                                                      "role": "inter-router", "cost": 1,
                                                      "saslMechanisms": "ANONYMOUS",
                                                      "authenticatePeer": "no"})
            else:
                port = q_routers[b].listen_for(a, 1)
            if c_kind(a):
                c_sections[a] += section("connector", {"host": "127.0.0.1", "port": port,
                                                       "role": "inter-router", "cost": 1})
            else:
                q_routers[a].connectors[b] = ("127.0.0.1", port, 1)
        for name in names:
            if c_kind(name):
                self.routers[name] = CRouter(self.binary, workdir / name, name, sections=c_sections[name])
            else:
                self.routers[name] = q_routers[name]

    @property
    def has_loop(self) -> bool:
        """Whether some two routers have more than one path between them (connected graphs)."""
        return len(self.edges) >= len(self.names)

    def __getitem__(self, name: str) -> AnyRouter:
        return self.routers[name]

    def start(self) -> MixedMesh:
        for name in self.names:
            router = self.routers[name]
            if isinstance(router, MeshRouter):
                router.write_config()
            router.start()
        return self

    def stop(self) -> List[str]:
        """Stop every router; the complaints of qdmesh routers (non-zero exit, traceback)."""
        errors = []
        for router in self.routers.values():
            if isinstance(router, MeshRouter):
                try:
                    router.stop(check=True)
                except AssertionError as exc:
                    errors.append(str(exc))
            else:
                router.stop()
        return errors

    def logs(self) -> str:
        return "\n".join(f"--- {n}\n{r.log() if isinstance(r, CRouter) else r.stderr_text()[-3000:]}"
                         for n, r in self.routers.items())


def running(built: MixedMesh, what: str,
            ready: Callable[[Net], None] | None = None) -> Iterator[MixedMesh]:
    """A module fixture's life of ``built``: started, every router listing every other
    (router.node, ``what`` names the wait), then ``ready``'s own wait, then yielded; stopped
    at the end, failing on what any router logged wrong."""
    try:
        built.start()
        net = Net()
        try:
            net.wait(lambda: all(routes_complete(built[n], built.names) for n in built.names), 30,
                     f"{what}\n{built.logs()}")
            if ready is not None:
                ready(net)
        finally:
            net.close()
        yield built
    finally:
        errors = built.stop()
        assert not errors, "\n\n".join(errors)


def query(url: str, entity: str, attributes: Sequence[str]) -> List[Dict[str, object]]:
    with ManagementClient(url[len("amqp://"):], timeout=5) as client:
        return client.query(entity, list(attributes))


def node_ids(router: AnyRouter) -> Set[str]:
    return {str(row["id"]) for row in query(router.url, NODE_TYPE, ["id"])}


def routes_complete(router: AnyRouter, names: Sequence[str]) -> bool:
    """Whether ``router`` lists exactly ``names`` and has a path to each other one (a next
    hop, or a link of its own). The C router lists a router as soon as it hears of it, and
    computes paths only on its next once-a-second tick: until then it cannot answer it."""
    rows = query(router.url, NODE_TYPE, ["id", "nextHop", "routerLink"])
    return ({str(r["id"]) for r in rows} == set(names)
            and all(r["nextHop"] is not None or r["routerLink"] is not None for r in rows))


def remote_count(router: AnyRouter, address: str) -> int:
    """How many other routers ``router`` knows to have a consumer for mobile ``address``."""
    rows = query(router.url, ADDRESS_TYPE, ["key", "remoteCount"])
    return sum(int(row["remoteCount"] or 0) for row in rows if row["key"] == f"M0{address}")


def distribution(router: AnyRouter, address: str) -> str | None:
    """The treatment ``router`` gives mobile ``address`` (router.address ``distribution``)."""
    rows = query(router.url, ADDRESS_TYPE, ["key", "distribution"])
    return next((str(row["distribution"]) for row in rows if row["key"] == f"M0{address}"), None)


def line(names: Sequence[str]) -> List[Tuple[str, str]]:
    """Each router connects to the one before it."""
    return [(names[i], names[i - 1]) for i in range(1, len(names))]


def ring(names: Sequence[str]) -> List[Tuple[str, str]]:
    """A line closed by the last router connecting to the first too."""
    return [*line(names), (names[-1], names[0])]
