"""qdrouterd 1.19's upstream tools (qdstat-c, qdmanage-c) run against a router, and what their
output shows apart from its values; the C router started from a project Router's config."""

from __future__ import annotations

import re
import subprocess
from typing import List

from tests.interop.cpeer import require_c_router
from tests.router.routerproc import Router

DATE_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")


def start_c_router(router: Router) -> Router:
    """Start ``router`` (its config already written) as the C router instead of qdmesh's."""
    router.command = [str(require_c_router())]
    return router.start()


def upstream_tool(tool: str, port: int, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    """Run qdrouterd's ``tool`` ("qdstat" or "qdmanage": the -c build beside the C router)
    against 127.0.0.1:PORT (Debian's python3 runs them)."""
    command = require_c_router().with_name(f"{tool}-c")
    return subprocess.run([str(command), "-b", f"127.0.0.1:{port}", "--timeout", "10", *args],
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def output_shape(text: str) -> List[List[str]]:
    """What a qdstat table view shows apart from its values: each table's title and column
    headings (the line above its '====' rule), and, for the attribute/value tables of -g and
    --policy, each row's attribute name."""
    lines = text.splitlines()
    if lines and DATE_LINE.match(lines[0]):
        lines = lines[2:]  # the date and the router's id
    shape: List[List[str]] = []
    for index, line in enumerate(lines):
        if line.strip().startswith("===") and index > 0:
            heading = lines[index - 1].split()
            shape.append(heading)
            if heading == ["attr", "value"]:
                for row in lines[index + 1:]:
                    if not row.strip():
                        break
                    # Attribute names are words separated by one space; two or more end them.
                    shape.append([row.strip().split("  ")[0]])
        elif line and not line.startswith(" ") and (index + 1 >= len(lines)
                                                    or not lines[index + 1].strip().startswith("===")):
            shape.append([line.strip()])  # a title ("Router Links") or a message ("No Vhosts")
    return shape


def table_rows(text: str) -> List[List[str]]:
    """The rows of the first table in a qdstat view, split into cells on runs of spaces."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.strip().startswith("==="):
            return [re.split(r"\s{2,}", row.strip()) for row in lines[index + 1:] if row.strip()]
    return []
