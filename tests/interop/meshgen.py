"""Seeded meshes of qdmesh routers and C routers (qdrouterd 1.19), and the same mesh with every
router a C router: a ``MeshSpec`` drawn from a seed (shape, router ids and kinds, inter-router
costs, hello settings, edge routers on interiors of either kind, a router to kill), and
``GenMesh``, its routers as real processes on 127.0.0.1.

The same seed always gives the same spec; ``spec.all_c()`` is that spec with every router a C
router, so that the two meshes differ in nothing but the routers' kinds."""

from __future__ import annotations

import random
import string
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Dict, List, Sequence, Tuple, Union

from tests.edge.edgeproc import edge as qdmesh_edge
from tests.interop.cpeer import CRouter, require_c_router, section
from tests.interop.mixed_topology import C_ADDRESSES, routes_complete
from tests.mesh.meshproc import MeshRouter, Timers
from tests.ports import free_port
from tests.router.routerproc import Router, RouterDied

QDMESH, C = "qdmesh", "c"
SHAPES = ("line", "ring", "full", "star", "random")
AnyProc = Union[CRouter, Router]


@dataclass(frozen=True)
class RouterSpec:
    rid: str
    kind: str                   # QDMESH or C
    mode: str = "interior"      # or "edge"
    uplink: str | None = None   # an edge router's interior router
    hello: int = 1              # helloIntervalSeconds
    max_age: int = 3            # helloMaxAgeSeconds
    ra_flux: int = 4            # raIntervalFluxSeconds


@dataclass(frozen=True)
class LinkSpec:
    connector: str   # the router with the connector (started after the listener's)
    listener: str
    cost: int


@dataclass(frozen=True)
class MeshSpec:
    seed: int
    shape: str
    routers: Tuple[RouterSpec, ...]   # in start order: interiors, then edges
    links: Tuple[LinkSpec, ...]

    @property
    def interiors(self) -> List[str]:
        return [r.rid for r in self.routers if r.mode == "interior"]

    @property
    def edges(self) -> List[str]:
        return [r.rid for r in self.routers if r.mode == "edge"]

    @property
    def names(self) -> List[str]:
        return [r.rid for r in self.routers]

    def router(self, rid: str) -> RouterSpec:
        return next(r for r in self.routers if r.rid == rid)

    def interior_of(self, rid: str) -> str:
        """The interior router a client of ``rid`` is served through (itself, or its uplink)."""
        spec = self.router(rid)
        return spec.uplink if spec.uplink is not None else rid

    def all_c(self) -> MeshSpec:
        return replace(self, routers=tuple(replace(r, kind=C) for r in self.routers))

    def kinds(self) -> str:
        """Each router's kind, in start order: "Q" qdmesh, "C" the C router ("QCQ+eC": an
        edge router after the plus)."""
        interiors = "".join("C" if self.router(n).kind == C else "Q" for n in self.interiors)
        edges = "".join("C" if self.router(n).kind == C else "Q" for n in self.edges)
        return interiors + (f"+e{edges}" if edges else "")

    def describe(self) -> str:
        links = ", ".join(f"{lk.connector}->{lk.listener}({lk.cost})" for lk in self.links)
        routers = ", ".join(f"{r.rid}:{r.kind}{'/edge@' + r.uplink if r.uplink else ''}"
                            f" hello {r.hello}/{r.max_age} flux {r.ra_flux}" for r in self.routers)
        return f"seed {self.seed} {self.shape} [{routers}] links [{links}]"


def _ids(rng: random.Random, count: int) -> List[str]:
    """Distinct router ids of 2-6 characters: a letter, then letters, digits, '-' or '_'."""
    ids: List[str] = []
    while len(ids) < count:
        rid = rng.choice(string.ascii_letters) + "".join(
            rng.choice(string.ascii_letters + string.digits + "-_") for _ in range(rng.randint(1, 5)))
        if rid not in ids:
            ids.append(rid)
    return ids


def _shape_edges(rng: random.Random, shape: str, n: int) -> List[Tuple[int, int]]:
    """(connector index, listener index) pairs, the connector always the later router."""
    pairs: List[Tuple[int, int]]
    if shape == "line":
        pairs = [(i, i - 1) for i in range(1, n)]
    elif shape == "ring":
        pairs = [(i, i - 1) for i in range(1, n)] + [(n - 1, 0)]
    elif shape == "full":
        pairs = [(j, i) for i in range(n) for j in range(i + 1, n)]
    elif shape == "star":
        hub = rng.randrange(n)
        pairs = [(max(hub, i), min(hub, i)) for i in range(n) if i != hub]
    else:  # a random spanning tree, then a few more links
        pairs = [(i, rng.randrange(i)) for i in range(1, n)]
        spare = [(j, i) for i in range(n) for j in range(i + 1, n) if (j, i) not in pairs]
        pairs += rng.sample(spare, rng.randint(0, min(len(spare), n - 1)))
    return pairs


def generate(seed: int, min_interiors: int = 3, max_interiors: int = 8,
             edge_routers: int = 2, shapes: Sequence[str] = SHAPES) -> MeshSpec:
    """The mesh of ``seed``: min..max interior routers of both kinds (at least one of each),
    0..``edge_routers`` edge routers of either kind on random interiors, costs 1-4 (most 1,
    so that equal-cost paths and their tie-breaks are common), hello 1-2 s, helloMaxAge 3-5
    times it, raIntervalFlux 2-4 s."""
    rng = random.Random(seed)
    n = rng.randint(min_interiors, max_interiors)
    shape = rng.choice(list(shapes))
    kinds = [rng.choice((QDMESH, C)) for _ in range(n)]
    while len(set(kinds)) < 2:
        kinds[rng.randrange(n)] = rng.choice((QDMESH, C))
    ids = _ids(rng, n + edge_routers)
    routers = []
    for i in range(n):
        hello = rng.choice((1, 1, 2))
        routers.append(RouterSpec(ids[i], kinds[i], hello=hello, max_age=hello * rng.randint(3, 5),
                                  ra_flux=rng.randint(2, 4)))
    for i in range(rng.randint(0, edge_routers)):
        routers.append(RouterSpec(ids[n + i], rng.choice((QDMESH, C)), mode="edge",
                                  uplink=ids[rng.randrange(n)]))
    links = tuple(LinkSpec(ids[a], ids[b], rng.choice((1, 1, 1, 2, 3, 4)))
                  for a, b in _shape_edges(rng, shape, n))
    return MeshSpec(seed, shape, tuple(routers), links)


def _c_router_attrs(spec: RouterSpec) -> Dict[str, object]:
    return {"helloIntervalSeconds": spec.hello, "helloMaxAgeSeconds": spec.max_age,
            "raIntervalFluxSeconds": spec.ra_flux}


def _listener(port: int, role: str, cost: int | None = None) -> str:
    attrs: Dict[str, object] = {"host": "127.0.0.1", "port": port, "role": role,
                                "saslMechanisms": "ANONYMOUS", "authenticatePeer": "no"}
    if cost is not None:
        attrs["cost"] = cost
    return section("listener", attrs)


class GenMesh:
    """The routers of ``spec`` as processes (not started until ``start()``)."""

    def __init__(self, workdir: Path, spec: MeshSpec) -> None:
        self.spec = spec
        self.binary = require_c_router()
        self.routers: Dict[str, AnyProc] = {}
        c_sections: Dict[str, str] = {r.rid: C_ADDRESSES for r in spec.routers if r.kind == C}
        q_interiors: Dict[str, MeshRouter] = {}
        edge_ports: Dict[str, int] = {}
        for r in spec.routers:
            (workdir / r.rid).mkdir(parents=True)
            if r.mode == "interior" and r.kind == QDMESH:
                timers = Timers(hello_interval=r.hello, hello_max_age=r.max_age, ra_interval_flux=r.ra_flux)
                q_interiors[r.rid] = MeshRouter(workdir / r.rid, r.rid, timers)
        for link in spec.links:
            if link.listener in q_interiors:
                port = q_interiors[link.listener].listen_for(link.connector, link.cost)
            else:
                port = free_port()
                c_sections[link.listener] += _listener(port, "inter-router", link.cost)
            if link.connector in q_interiors:
                q_interiors[link.connector].connectors[link.listener] = ("127.0.0.1", port, link.cost)
            else:
                c_sections[link.connector] += section("connector", {
                    "host": "127.0.0.1", "port": port, "role": "inter-router", "cost": link.cost})
        for uplink in {r.uplink for r in spec.routers if r.uplink is not None}:
            edge_ports[uplink] = free_port()
            if uplink in q_interiors:
                q_interiors[uplink].extra += _listener(edge_ports[uplink], "edge")
            else:
                c_sections[uplink] += _listener(edge_ports[uplink], "edge")
        for r in spec.routers:
            path = workdir / r.rid
            if r.kind == QDMESH:
                self.routers[r.rid] = (q_interiors[r.rid] if r.mode == "interior"
                                       else qdmesh_edge(path, r.rid, [edge_ports[str(r.uplink)]]))
                continue
            if r.mode == "edge":
                c_sections[r.rid] += section("connector", {"host": "127.0.0.1", "role": "edge",
                                                           "port": edge_ports[str(r.uplink)]})
            self.routers[r.rid] = CRouter(self.binary, path, r.rid, mode=r.mode, sections=c_sections[r.rid],
                                          router_attrs=_c_router_attrs(r))

    def __getitem__(self, rid: str) -> AnyProc:
        return self.routers[rid]

    def url(self, rid: str) -> str:
        return self.routers[rid].url

    def start(self) -> GenMesh:
        for rid in self.spec.names:
            self.start_router(rid)
        return self

    def start_router(self, rid: str) -> None:
        router = self.routers[rid]
        if isinstance(router, MeshRouter):
            if router.proc is None:
                router.write_config()
                router.start()
            else:
                router.restart()
        else:
            router.start()

    def kill(self, rid: str) -> None:
        """SIGKILL (a crash) of interior router ``rid``; ``start_router`` starts it again."""
        router = self.routers[rid]
        assert isinstance(router, (MeshRouter, CRouter)), f"{rid} is not an interior router"
        router.hard_kill()

    def converged(self) -> bool:
        """Whether every interior router lists every interior router with a path to it."""
        interiors = self.spec.interiors
        return all(routes_complete(self.routers[n], interiors) for n in interiors)

    def stop(self) -> List[str]:
        """Stop every router, edges first; what the qdmesh routers did wrong (a non-zero exit,
        a traceback)."""
        errors = []
        for rid in reversed(self.spec.names):
            router = self.routers[rid]
            try:
                if isinstance(router, CRouter):
                    router.stop()
                else:
                    router.stop(check=True)
            except RouterDied as exc:
                errors.append(f"{rid}: {exc}")
        return errors

    def logs(self, tail: int = 2500) -> str:
        def text(router: AnyProc) -> str:
            return router.log() if isinstance(router, CRouter) else router.stderr_text()
        return "\n".join(f"--- {rid}\n{text(r)[-tail:]}" for rid, r in self.routers.items())


def build_pair(workdir: Path, spec: MeshSpec) -> Dict[str, GenMesh]:
    """The mixed mesh of ``spec`` and its all-C twin, configured (not started)."""
    return {"mixed": GenMesh(workdir / "mixed", spec), "all-c": GenMesh(workdir / "all-c", spec.all_c())}

