"""The upstream tools (qdrouterd 1.19's qdstat and qdmanage) against qdmesh, compared with
the same tools against the C router started from the same config: every view and operation
runs without error and answers in the same shape (the same tables, columns and attribute
rows; values differ where the routers do, and the differences kept are named here and in
docs/tools.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import pytest

from tests.router.fixtures import stop_checked
from tests.router.routerproc import Router

from .peers import output_shape, start_c_router, table_rows, upstream_tool

pytestmark = pytest.mark.timeout(180)

CONFIG = """\
router {{
    mode: interior
    id: {router_id}
    workerThreads: 1
}}
listener {{
    host: 127.0.0.1
    port: {port}
    saslMechanisms: ANONYMOUS
    authenticatePeer: no
}}
address {{
    prefix: closest
    distribution: closest
}}
linkRoute {{
    prefix: queue.lr
    direction: in
    connection: broker
}}
autoLink {{
    address: queue.al
    direction: out
    connection: broker
    externalAddress: /queue/al
}}
policy {{
    maxConnections: 100
    enableVhostPolicy: true
}}
vhost {{
    hostname: $default
    allowUnknownUser: true
    groups: {{
        "$default": {{
            "remoteHosts": "*",
            "sources": "*",
            "targets": "*",
            "allowDynamicSource": true,
            "allowAnonymousSender": true
        }}
    }}
}}
"""

Pair = Dict[str, Router]


@pytest.fixture(scope="module")
def routers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    """A qdmesh router ("qdmesh", id QM) and a C router ("c", id QC) from the same config."""
    made: Pair = {}
    for kind, router_id in (("qdmesh", "QM"), ("c", "QC")):
        workdir: Path = tmp_path_factory.mktemp(kind)
        router = Router(workdir, router_id=router_id)
        router.config_path.write_text(CONFIG.format(router_id=router_id, port=router.port))
        made[kind] = router
    try:
        made["qdmesh"].start()
        start_c_router(made["c"])
        yield made
    finally:
        stop_checked(made.values())


def both(routers: Pair, tool: str, *args: str) -> Tuple[str, str]:
    """The tool's output against each router; each run must succeed without a traceback."""
    out = {}
    for kind, router in routers.items():
        result = upstream_tool(tool, router.port, *args)
        text = result.stdout + result.stderr
        assert result.returncode == 0 and "Traceback" not in text, (
            f"{tool} {' '.join(args)} against the {kind} router:\n{text}")
        out[kind] = result.stdout
    return out["qdmesh"], out["c"]


# The views whose shape is the same on both routers, table for table and column for column.
SAME_SHAPE = ["-g", "-c", "-l", "-n", "-a", "--autolinks", "--linkroutes", "--policy", "--vhosts",
              "--vhostgroups", "--vhoststats"]


@pytest.mark.parametrize("view", SAME_SHAPE)
def test_qdstat_view_has_the_c_routers_shape(routers: Pair, view: str) -> None:
    ours, theirs = both(routers, "qdstat", view)
    assert output_shape(ours) == output_shape(theirs), f"qdmesh:\n{ours}\nC router:\n{theirs}"
    assert output_shape(ours), ours  # the view said something


def test_qdstat_views_that_differ_on_purpose(routers: Pair) -> None:
    """-m lists the C router's memory pools, which a Python router does not have; -e (edge
    routers) is empty on both; --log prints the recent log entries of each."""
    ours, theirs = both(routers, "qdstat", "-m")
    assert "No memory statistics available" in ours and "Memory Pools" in theirs
    ours, theirs = both(routers, "qdstat", "-e")
    assert output_shape(ours) == output_shape(theirs) == []
    ours, theirs = both(routers, "qdstat", "--log")
    assert " ROUTER (info) " in ours and " (info) " in theirs


def test_qdstat_rows_name_the_same_configuration(routers: Pair) -> None:
    for view, wanted in (("--autolinks", ["queue.al", "out", "0", "/queue/al"]),
                         ("--linkroutes", ["queue.lr", "in", "linkBalanced", "inactive"])):
        ours, theirs = both(routers, "qdstat", view)
        for text in (ours, theirs):
            rows = table_rows(text)
            assert rows and rows[0][:len(wanted)] == wanted, text


@pytest.mark.parametrize("how", [("-r", "{router_id}"), ("--all-routers",)])
def test_qdstat_reaches_routers_by_id(routers: Pair, how: Tuple[str, ...]) -> None:
    for router in routers.values():
        args = [arg.format(router_id=router.router_id) for arg in how]
        result = upstream_tool("qdstat", router.port, "-g", *args)
        assert result.returncode == 0, result.stdout + result.stderr
        assert f"Router Id                        {router.router_id}" in result.stdout


def qdmanage_json(routers: Pair, *args: str) -> Tuple[object, object]:
    ours, theirs = both(routers, "qdmanage", *args)
    return json.loads(ours), json.loads(theirs)


def test_qdmanage_node_operations(routers: Pair) -> None:
    ours, theirs = qdmanage_json(routers, "get-mgmt-nodes")
    assert ours == ["amqp:/_topo/0/QM/$management"] and theirs == ["amqp:/_topo/0/QC/$management"]
    ours, theirs = qdmanage_json(routers, "get-operations", "--type", "listener")
    assert isinstance(ours, dict) and isinstance(theirs, dict)
    listener = "org.apache.qpid.dispatch.listener"
    assert sorted(ours[listener]) == sorted(theirs[listener])
    ours, theirs = qdmanage_json(routers, "get-attributes", "--type", "router.config.autoLink")
    assert isinstance(ours, dict) and isinstance(theirs, dict)
    key = "org.apache.qpid.dispatch.router.config.autoLink"
    assert sorted(ours[key]) == sorted(theirs[key])
    ours, theirs = qdmanage_json(routers, "get-types")
    assert isinstance(ours, dict) and isinstance(theirs, dict)
    # qdmesh answers for the types it has; each of them is one of qdrouterd's, but the standard
    # AMQP management type, which qdmesh names as the schema does and qdrouterd with its prefix.
    assert "org.apache.qpid.dispatch.router.config.autoLink" in ours
    assert set(ours) - {"org.amqp.management"} <= set(theirs)
    ours, theirs = qdmanage_json(routers, "get-json-schema")
    assert isinstance(ours, dict) and isinstance(theirs, dict)
    assert set(ours) == set(theirs) and "entityTypes" in ours
    ours, theirs = qdmanage_json(routers, "get-log", "limit=3")
    for entries in (ours, theirs):
        assert isinstance(entries, list) and 0 < len(entries) <= 3
        assert all(isinstance(entry, list) and len(entry) == 6 for entry in entries), entries


def test_qdmanage_entity_lifecycle(routers: Pair) -> None:
    """create, read, query and delete of an address, and update of a log entity, answered
    with the same attributes by both routers."""
    created, created_c = qdmanage_json(routers, "create", "--type", "address", "--name", "a1",
                                       "prefix=orders", "distribution=multicast")
    read, read_c = qdmanage_json(routers, "read", "--type", "address", "--name", "a1")
    for ours, theirs in ((created, created_c), (read, read_c)):
        assert isinstance(ours, dict) and isinstance(theirs, dict)
        # qdrouterd answers an address's enableFallback as 'fallback' only; qdmesh both.
        assert set(ours) - {"enableFallback"} == set(theirs), (sorted(ours), sorted(theirs))
        for key in ("name", "prefix", "distribution", "waypoint", "fallback", "pattern"):
            assert ours[key] == theirs[key], key
    rows, rows_c = qdmanage_json(routers, "query", "--type", "address", "prefix", "distribution")
    assert rows == rows_c == [{"prefix": "closest", "distribution": "closest"},
                              {"prefix": "orders", "distribution": "multicast"}]
    auto_links, auto_links_c = qdmanage_json(routers, "query", "--type", "autoLink", "addr", "dir",
                                             "externalAddr")
    assert auto_links == auto_links_c == [{"addr": "queue.al", "dir": "out", "externalAddr": "/queue/al"}]
    for router in routers.values():
        deleted = upstream_tool("qdmanage", router.port, "delete", "--type", "address", "--name", "a1")
        assert deleted.returncode == 0, deleted.stdout + deleted.stderr
    rows, rows_c = qdmanage_json(routers, "query", "--type", "address", "prefix")
    assert rows == rows_c == [{"prefix": "closest"}]
    updated, updated_c = qdmanage_json(routers, "update", "--type", "log", "--name", "log/DEFAULT",
                                       "enable=debug+")
    assert isinstance(updated, dict) and isinstance(updated_c, dict)
    assert updated["enable"] == updated_c["enable"] == "debug+"
    logs: List[object]
    logs, _ = qdmanage_json(routers, "query", "--type", "log", "name", "enable")  # type: ignore[assignment]
    assert {"name": "log/DEFAULT", "enable": "debug+"} in logs
