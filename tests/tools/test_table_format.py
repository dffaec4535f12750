"""qdstat's table layouts: text (qdrouterd's layout), CSV and JSON, from given rows."""

from __future__ import annotations

import csv
import io
import json

from qdrouter.tools.table import Table, cell_text, format_csv, format_json, format_text, render

TABLE = Table("Router Addresses", ["class", "addr", "phs", "in"],
              [["local", "$management", "", 0], ["mobile", "my-address", "0", 12]])


def test_text_layout_matches_qdstat() -> None:
    assert format_text(TABLE).splitlines() == [
        "Router Addresses",
        "  class   addr         phs  in",
        "  ==============================",
        "  local   $management       0",
        "  mobile  my-address   0    12",
    ]


def test_text_columns_widen_to_longest_cell_and_heading() -> None:
    lines = format_text(Table("T", ["a", "longheading"], [["wide-cell-value", "x"]])).splitlines()
    assert lines[1] == "  a                longheading"
    assert lines[3] == "  wide-cell-value  x"
    # The rule spans every column and its spacing.
    assert lines[2] == "  " + "=" * (len("wide-cell-value") + 2 + len("longheading") + 2)


def test_text_has_no_trailing_blanks_and_pads_short_rows() -> None:
    text = format_text(Table("T", ["a", "b", "c"], [["1"], ["1", None, ""]]))
    assert all(line == line.rstrip() for line in text.splitlines())
    assert text.splitlines()[3] == "  1"


def test_empty_table_still_shows_headings() -> None:
    assert format_text(Table("AutoLinks", ["addr", "dir"], [])).splitlines() == [
        "AutoLinks", "  addr  dir", "  ==========="]


def test_cell_text() -> None:
    assert cell_text(None) == ""
    assert cell_text(True) == "True"
    assert cell_text(["a", "b"]) == "a,b"
    assert cell_text({"b": 1, "a": 2}) == '{"a": 2, "b": 1}'


def test_csv_is_heading_then_rows_properly_quoted() -> None:
    t = Table("T", ["name", "value"], [["a,b", 1], ['say "hi"', None]])
    out = format_csv(t)
    assert list(csv.reader(io.StringIO(out))) == [["name", "value"], ["a,b", "1"], ['say "hi"', ""]]
    assert out.splitlines()[0] == "name,value"


def test_json_is_list_of_objects_keyed_by_heading_with_types_kept_and_empty_cells_null() -> None:
    data = json.loads(format_json(TABLE))
    assert data == [
        {"class": "local", "addr": "$management", "phs": None, "in": 0},
        {"class": "mobile", "addr": "my-address", "phs": "0", "in": 12},
    ]


def test_render_dispatches_on_format() -> None:
    assert render(TABLE, "text") == format_text(TABLE)
    assert render(TABLE, "csv") == format_csv(TABLE)
    assert render(TABLE, "json") == format_json(TABLE)
