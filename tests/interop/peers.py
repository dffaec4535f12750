"""The C router (qdrouterd 1.19, built by .ci/setup.d/25-qdrouterd-c.sh from ../shared/peers) and
its upstream tools, as live peers for the interoperability tests."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import List

from tests.prerequisites import require
from tests.router.routerproc import Router

PREFIX = Path(os.environ.get("QDR_PREFIX", Path.home() / ".cache" / "qdr-1.19.0"))
QDROUTERD_C = PREFIX / "bin" / "qdrouterd-c"
QDSTAT_C = PREFIX / "bin" / "qdstat-c"
QDMANAGE_C = PREFIX / "bin" / "qdmanage-c"
DATE_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
WHY = "the C router qdrouterd 1.19 (bash .ci/setup.d/25-qdrouterd-c.sh builds it)"


def require_c_router() -> None:
    require(QDROUTERD_C.exists() and QDSTAT_C.exists() and QDMANAGE_C.exists(), WHY)


def start_c_router(router: Router) -> Router:
    """Start ``router`` (its config already written) as the C router instead of qdmesh's."""
    require_c_router()
    router.command = [str(QDROUTERD_C)]
    return router.start()


def upstream_tool(tool: Path, port: int, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    """Run qdstat-c or qdmanage-c against 127.0.0.1:PORT (Debian's python3 runs them)."""
    return subprocess.run([str(tool), "-b", f"127.0.0.1:{port}", "--timeout", "10", *args],
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
