"""`qdmesh local`: topology edges, port allocation and generated configs (no processes)."""

from __future__ import annotations

import socket
from typing import Dict, List, Set, Tuple

import pytest

from qdrouter.config import parse_config_text
from qdrouter.local_mesh import (
    MeshError,
    allocate_metrics_ports,
    allocate_ports,
    check_ports_free,
    main,
    mesh_edges,
    plan_mesh,
    render_config,
)
from tests.ports import free_port


def pairs(n: int, topology: str) -> Set[Tuple[int, int]]:
    edges = mesh_edges(n, topology)
    unordered = {(min(a, b), max(a, b)) for a, b in edges}
    assert len(unordered) == len(edges), "each router pair is linked at most once"
    return unordered


def degrees(n: int, topology: str) -> Dict[int, int]:
    deg = dict.fromkeys(range(1, n + 1), 0)
    for a, b in pairs(n, topology):
        deg[a] += 1
        deg[b] += 1
    return deg


def connected(n: int, edges: Set[Tuple[int, int]], removed: int = 0) -> bool:
    nodes = [i for i in range(1, n + 1) if i != removed]
    seen = {nodes[0]}
    stack = [nodes[0]]
    while stack:
        u = stack.pop()
        for a, b in edges:
            for x, y in ((a, b), (b, a)):
                if x == u and y != removed and y not in seen:
                    seen.add(y)
                    stack.append(y)
    return len(seen) == len(nodes)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_auto_is_a_full_mesh_up_to_four(n: int) -> None:
    assert pairs(n, "auto") == {(i, j) for i in range(1, n + 1) for j in range(i + 1, n + 1)}


@pytest.mark.parametrize("n", [5, 6, 7, 12, 40])
def test_auto_beyond_four_is_ring_plus_chords(n: int) -> None:
    edges = pairs(n, "auto")
    assert edges == pairs(n, "chords")
    for i in range(1, n + 1):  # each router links to the next one and the one after
        for k in (1, 2):
            j = (i + k - 1) % n + 1
            assert (min(i, j), max(i, j)) in edges
    if n > 5:
        assert set(degrees(n, "auto").values()) == {4}
    assert all(connected(n, edges, removed=r) for r in range(1, n + 1)), "survives losing any router"


def test_line_and_ring() -> None:
    assert pairs(4, "line") == {(1, 2), (2, 3), (3, 4)}
    assert pairs(4, "ring") == {(1, 2), (2, 3), (3, 4), (1, 4)}
    assert pairs(2, "ring") == {(1, 2)}  # a 2-ring is one link, not two
    assert pairs(1, "ring") == set() and pairs(1, "chords") == set() and pairs(1, "full") == set()
    assert pairs(3, "chords") == pairs(3, "full")


def test_unknown_topology() -> None:
    with pytest.raises(MeshError, match="unknown topology"):
        mesh_edges(3, "star")


def test_ports_from_base_and_inter_router_ports_separate() -> None:
    ports, ir = allocate_ports(3, 5672, None)
    assert ports == [5672, 5673, 5674]
    assert ir == [5772, 5773, 5774]
    ports, ir = allocate_ports(150, 10000, None)
    assert not set(ports) & set(ir) and ir[0] == 10150
    assert allocate_ports(2, 6000, 7000) == ([6000, 6001], [7000, 7001])
    with pytest.raises(MeshError, match="overlap"):
        allocate_ports(3, 6000, 6001)
    with pytest.raises(MeshError, match="out of range"):
        allocate_ports(3, 65534, None)


def test_base_port_zero_gives_distinct_free_ports() -> None:
    ports, ir = allocate_ports(5, 0, None)
    assert len(set(ports + ir)) == 10 and all(p > 0 for p in ports + ir)


def test_plan_line_of_three() -> None:
    specs = plan_mesh(3, "line", [5672, 5673, 5674], [5772, 5773, 5774], id_prefix="X")
    assert [s.router_id for s in specs] == ["X1", "X2", "X3"]
    assert [s.port for s in specs] == [5672, 5673, 5674]
    # Router i+1 dials router i: the last router has no listener nobody would use.
    assert [s.connects_to for s in specs] == [(), (1,), (2,)]
    assert [s.inter_router_port for s in specs] == [5772, 5773, None]


def test_single_router_has_no_inter_router_ports() -> None:
    (spec,) = plan_mesh(1, "auto", [5672], [5772])
    assert spec.inter_router_port is None and spec.connects_to == ()
    text = render_config(spec, [spec])
    assert "inter-router" not in text and "mode: interior" in text


def test_router_count_limits() -> None:
    for n in (0, 129):
        with pytest.raises(MeshError, match="--routers"):
            plan_mesh(n, "auto", [1] * max(n, 0), [2] * max(n, 0))


def entities(text: str) -> List[Tuple[str, Dict[str, object]]]:
    return [(e.section, dict(e.attributes)) for e in parse_config_text(text, "mesh.conf")]


def test_generated_configs_parse_and_match_the_plan() -> None:
    ports, ir = allocate_ports(6, 20000, None)
    specs = plan_mesh(6, "auto", ports, ir)
    by_port = {s.inter_router_port: s.index for s in specs}
    links: Set[Tuple[int, int]] = set()
    for spec in specs:
        ents = entities(render_config(spec, specs))
        routers = [a for kind, a in ents if kind == "router"]
        assert routers == [{**routers[0], "mode": "interior", "id": spec.router_id}]
        listeners = [a for kind, a in ents if kind == "listener"]
        normal = [a for a in listeners if a.get("role", "normal") == "normal"]
        assert [(a["host"], int(a["port"])) for a in normal] == [("127.0.0.1", spec.port)]
        inter = [int(a["port"]) for a in listeners if a.get("role") == "inter-router"]
        assert inter == ([] if spec.inter_router_port is None else [spec.inter_router_port])
        for kind, a in ents:
            if kind == "connector":
                assert a["role"] == "inter-router"
                links.add((spec.index, by_port[int(a["port"])]))  # type: ignore[arg-type]
        prefixes = {a["prefix"]: a["distribution"] for kind, a in ents if kind == "address"}
        assert prefixes == {"closest": "closest", "balanced": "balanced", "multicast": "multicast"}
    assert links == set(mesh_edges(6, "auto"))


def test_busy_port_is_a_clear_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        busy = s.getsockname()[1]
        # Router 1's ports are checked first, so they must be free: fixed numbers (or busy - 1)
        # were sometimes in use on a busy machine, by other tests' connections.
        free_client, free_inter_router = free_port(), free_port()
        specs = plan_mesh(2, "auto", [free_client, busy], [free_inter_router, 40002])
        with pytest.raises(MeshError, match=f"port {busy} \\(client port of router 2\\) is already in use"):
            check_ports_free(specs)


def test_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["local", "--routers", "0"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("qdmesh: error: --routers")
    assert main([]) == 2
    capsys.readouterr()
    # Each bad value is named with its option, on one line (not the usage and a joint message).
    for argv, says in ((["--timeout", "-1"], "--timeout must be > 0 seconds, not -1"),
                       (["--base-port", "-5"], "--base-port must be >= 0 (0 picks free ports), not -5"),
                       (["--id-prefix", "a/b"], "--id-prefix may only contain")):
        assert main(["local", *argv]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"qdmesh: error: {says}"), err


def test_help_shows_no_none_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["local", "--help"])
    out = capsys.readouterr().out
    assert "(default: None)" not in out
    assert "(default: 5672)" in out


class FakeClient:
    """router.node answers from a fixed view of who knows whom."""

    views: Dict[str, List[str]] = {}

    def __init__(self, address: str, timeout: float = 0) -> None:
        self.router_id = {"127.0.0.1:1": "R1", "127.0.0.1:2": "R2", "127.0.0.1:3": "R3"}[address]

    def query(self, entity_type: str, names: List[str] | None = None) -> List[Dict[str, str]]:
        assert entity_type == "router.node"
        return [{"id": rid} for rid in self.views[self.router_id]]

    def close(self) -> None:
        pass


class FakeProc:
    def __init__(self, spec: object) -> None:
        self.spec = spec

    def exit_code(self) -> None:
        return None


def test_convergence_timeout_names_who_misses_what(monkeypatch: pytest.MonkeyPatch) -> None:
    import qdrouter.tools.management_client as mc
    from qdrouter.local_mesh import wait_converged

    monkeypatch.setattr(mc, "ManagementClient", FakeClient)
    procs = [FakeProc(s) for s in plan_mesh(3, "line", [1, 2, 3], [4, 5, 6])]
    FakeClient.views = {"R1": ["R2", "R3"], "R2": ["R1", "R3"], "R3": ["R2", "R1"]}
    wait_converged(procs, timeout=1, poll=0.01)  # type: ignore[arg-type]
    FakeClient.views = {"R1": ["R2"], "R2": ["R1", "R3"], "R3": []}
    with pytest.raises(MeshError) as info:
        wait_converged(procs, timeout=0.05, poll=0.01)  # type: ignore[arg-type]
    assert str(info.value) == ("mesh did not converge within 0.05s: R1 does not know R3; "
                               "R3 does not know R1, R2")


def test_metrics_port_gives_each_router_an_http_listener_from_that_port() -> None:
    ports, ir = allocate_ports(3, 20000, None)
    metrics = allocate_metrics_ports(3, 28672, ports + ir)
    assert metrics == [28672, 28673, 28674]
    specs = plan_mesh(3, "auto", ports, ir, metrics_ports=metrics)
    for spec, port in zip(specs, metrics):
        http = [a for kind, a in entities(render_config(spec, specs)) if kind == "listener" and a.get("http")]
        assert [(a["host"], int(a["port"]), a["metrics"], a["healthz"]) for a in http] == \
            [("127.0.0.1", port, True, True)]
    # Without the option, no router serves HTTP (as before).
    plain = plan_mesh(3, "auto", ports, ir)
    assert not any(a.get("http") for spec in plain for kind, a in entities(render_config(spec, plain))
                   if kind == "listener")


def test_metrics_ports_that_collide_or_overflow_are_named(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(MeshError, match="--metrics-port 20001: ports 20001-20003 overlap the routers' AMQP"):
        allocate_metrics_ports(3, 20001, [20000, 20001, 20002])
    with pytest.raises(MeshError, match="out of range"):
        allocate_metrics_ports(3, 65534, [])
    free = allocate_metrics_ports(4, 0, [])
    assert len(set(free)) == 4
    for option in ("--metrics-port", "--console-port"):
        assert main(["local", option, "70000"]) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"qdmesh: error: {option} must be between 0 and 65535"), err
