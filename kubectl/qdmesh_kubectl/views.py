"""Any qdstat view over several routers: one table with a router column (or, for the general
view, one value column per router), built from qdrouter.tools' own views and tables."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List

from qdrouter.tools import table
from qdrouter.tools.errors import ManagementError
from qdrouter.tools.mesh_map import ClientFactory
from qdrouter.tools.qdstat import fetch
from qdrouter.tools.qdstat_views import VIEWS


@dataclass
class ViewResult:
    table: table.Table
    failures: Dict[str, str] = field(default_factory=dict)
    """Router -> why it could not be asked."""


def query_routers(view_name: str, routers: Dict[str, str], client_for: ClientFactory,
                  limit: int | None = None) -> ViewResult:
    """Run one view on every router (name -> host:port) and merge the tables (``limit`` rows per router)."""
    view = VIEWS[view_name]
    tables: Dict[str, table.Table] = {}
    failures: Dict[str, str] = {}
    for name, address in routers.items():
        try:
            with client_for(address) as client:
                tables[name] = fetch(client, view, limit)
        except ManagementError as e:
            failures[name] = str(e)
    if view_name == "general":
        merged = _side_by_side(tables, VIEWS[view_name].build([]).title)
    else:
        merged = _with_router_column(tables, view.build([]))
    return ViewResult(merged, failures)


def _with_router_column(tables: Dict[str, table.Table], empty: table.Table) -> table.Table:
    rows: List[List[object]] = []
    for name, t in tables.items():
        rows.extend([name, *row] for row in t.rows)
    return table.Table(empty.title, ["router", *empty.heads], rows)


def _side_by_side(tables: Dict[str, table.Table], title: str) -> table.Table:
    """General statistics: attribute rows, one column per router (routers in their order)."""
    names = list(tables)
    labels: List[str] = []
    values: Dict[str, Dict[str, object]] = {}
    for name, t in tables.items():
        for label, value in t.rows:
            if label not in labels:
                labels.append(label)
            values.setdefault(label, {})[name] = value
    rows = [[label, *[values[label].get(n) for n in names]] for label in labels]
    return table.Table(title, ["attr", *names], rows)
