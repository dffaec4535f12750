"""Tables as qdstat prints them: the text layout of qdrouterd's qdstat, CSV, and JSON."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from typing import Any, Dict, List

INDENT = "  "
SPACING = 2

TEXT = "text"
CSV = "csv"
JSON = "json"
FORMATS = (TEXT, CSV, JSON)


@dataclass
class Table:
    title: str
    heads: List[str]
    rows: List[List[Any]] = field(default_factory=list)

    def records(self) -> List[Dict[str, Any]]:
        """One {heading: value} map per row (the JSON form)."""
        return [dict(zip(self.heads, row)) for row in self.rows]


def cell_text(value: Any) -> str:
    """How one value is shown in a text or CSV cell."""
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ",".join(cell_text(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return str(value)


def format_text(table: Table) -> str:
    """Title, heading line, a rule of '=' and the rows, columns sized to their widest cell.

    Every column but the last is padded to its width plus two spaces; lines start with two
    spaces; the last column is not padded, so lines carry no trailing blanks.
    """
    cells = [[cell_text(v) for v in row] + [""] * (len(table.heads) - len(row)) for row in table.rows]
    widths = [
        max([len(head)] + [len(row[i]) for row in cells]) + SPACING
        for i, head in enumerate(table.heads)
    ]
    lines = [table.title, _line(table.heads, widths), INDENT + "=" * sum(widths)]
    lines.extend(_line(row, widths) for row in cells)
    return "\n".join(lines) + "\n"


def _line(cells: List[str], widths: List[int]) -> str:
    last = len(cells) - 1
    parts = [cell if i == last else cell.ljust(widths[i]) for i, cell in enumerate(cells)]
    return (INDENT + "".join(parts)).rstrip()


def format_csv(table: Table) -> str:
    """A heading row then the data rows (no title), RFC 4180 quoting."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(table.heads)
    for row in table.rows:
        writer.writerow([cell_text(v) for v in row])
    return out.getvalue()


def format_json(table: Table) -> str:
    """A JSON list of {heading: value} objects; values keep their types (numbers stay numbers).

    A cell with nothing in it is null, whether the agent left the attribute unset or the view
    derived an empty string (an address's phase, for one): a script then tests one thing."""
    records = [{head: (None if value == "" else value) for head, value in record.items()}
               for record in table.records()]
    return json.dumps(records, indent=2) + "\n"


def render(table: Table, fmt: str = TEXT) -> str:
    if fmt == CSV:
        return format_csv(table)
    if fmt == JSON:
        return format_json(table)
    return format_text(table)
