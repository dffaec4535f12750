"""Command-line parsing of qdstat and qdmanage, and their one-line usage errors (no router)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qdrouter.tools import qdmanage, qdstat
from qdrouter.tools.cli_common import UsageError, sasl_password

from .conftest import run_tool


def test_qdstat_defaults() -> None:
    args = qdstat.build_parser().parse_args([])
    assert (args.show, args.bus, args.timeout, args.router, args.format, args.limit) == (
        "general", "127.0.0.1:5672", 5.0, None, "text", None)


@pytest.mark.parametrize(("argv", "view"), [
    (["-g"], "general"), (["-c"], "connections"), (["-l"], "links"), (["-a"], "addresses"),
    (["--addresses"], "addresses"), (["-n"], "nodes"), (["--autolinks"], "autolinks"),
    (["--linkroutes"], "linkroutes"), (["--vhosts"], "vhosts"), (["--vhostgroups"], "vhostgroups"),
    (["-m"], "memory"),
])
def test_qdstat_view_options(argv: list, view: str) -> None:
    assert qdstat.build_parser().parse_args(argv).show == view


def test_qdstat_connection_and_output_options() -> None:
    args = qdstat.build_parser().parse_args(
        ["-b", "amqp://example:5673", "-r", "R2", "-t", "2.5", "--limit", "3", "--csv",
         "--sasl-mechanisms", "PLAIN", "--sasl-username", "u", "--sasl-password", "p",
         "--ssl-certificate", "c.pem", "--ssl-key", "k.pem", "--ssl-trustfile", "ca.pem"])
    assert (args.bus, args.router, args.timeout, args.limit, args.format) == (
        "amqp://example:5673", "R2", 2.5, 3, "csv")
    assert (args.sasl_mechanisms, args.sasl_username, args.sasl_password) == ("PLAIN", "u", "p")
    assert (args.ssl_certificate, args.ssl_key, args.ssl_trustfile) == ("c.pem", "k.pem", "ca.pem")


def test_qdstat_limit_0_is_no_limit() -> None:
    # As qdrouterd's qdstat documents --limit: "0 (default) for no limit".
    assert qdstat.build_parser().parse_args(["--limit", "0"]).limit is None
    assert qdstat.build_parser().parse_args([]).limit is None


@pytest.mark.parametrize("argv", [
    ["-a", "-l"],  # one view per run
    ["--csv", "--json"],
    ["--limit", "-1"],
    ["--limit", "x"],
    ["-t", "-1"],
    ["--bogus"],
])
def test_qdstat_usage_errors_are_one_line(argv: list) -> None:
    r = run_tool("qdstat", *argv)
    assert r.code == 2
    lines = r.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("qdstat: error: "), r.err
    assert "Traceback" not in r.err


@pytest.mark.parametrize("argv, says", [
    (["-t", "abc"], "invalid number: 'abc'"),
    (["-t", "0"], "must be greater than 0: '0'"),
    (["--sasl-password-file", "/nonexistent/pw"], "cannot read --sasl-password-file"),
])
@pytest.mark.parametrize("tool", ["qdstat", "qdmanage"])
def test_connection_option_errors_name_the_option(tool: str, argv: list, says: str) -> None:
    r = run_tool(tool, *argv, *(["query", "--type=listener"] if tool == "qdmanage" else []))
    assert r.code == 2, r.err
    assert r.err.startswith(f"{tool}: error: ") and says in r.err, r.err
    assert "Traceback" not in r.err


def test_password_file_gives_its_first_line(tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_text("s3cret with spaces\r\nsecond line\n", encoding="utf-8")
    parser = qdstat.build_parser()
    args = parser.parse_args(["--sasl-password", "ignored", "--sasl-password-file", str(secret)])
    assert sasl_password(args) == "s3cret with spaces"
    assert sasl_password(qdstat.build_parser().parse_args(["--sasl-password", "p"])) == "p"


def test_qdstat_version_and_help() -> None:
    assert run_tool("qdstat", "--version").out.startswith("qdstat (qdmesh) ")
    help_text = run_tool("qdstat", "-h").out
    for option in ("-g", "-c", "-l", "-a", "-n", "--autolinks", "--linkroutes", "--vhosts",
                   "--vhostgroups", "-m", "--bus", "--router", "--timeout", "--limit", "--csv", "--json",
                   "--sasl-mechanisms", "--ssl-trustfile"):
        assert option in help_text


def test_qdmanage_request_attributes_and_keys() -> None:
    req = qdmanage.parse_request("CREATE", ["type=listener", "port=5555", "name=l1", "host=h"])
    assert (req.operation, req.entity_type, req.name) == ("create", "listener", "l1")
    assert req.attributes == {"port": "5555", "name": "l1", "host": "h"}


def test_qdmanage_request_update_words_and_values_with_equals() -> None:
    req = qdmanage.parse_request("update", ["log/DEFAULT", "enable=debug+", "x=a=b"])
    assert req.words == ["log/DEFAULT"]
    assert req.attributes == {"enable": "debug+", "x": "a=b"}
    assert req.name is None


def test_qdmanage_request_options_and_arguments_agree() -> None:
    req = qdmanage.parse_request("read", ["type=listener"], entity_type="listener", name="n")
    assert (req.entity_type, req.name) == ("listener", "n")
    with pytest.raises(UsageError, match="two different types"):
        qdmanage.parse_request("read", ["type=connector"], entity_type="listener")
    with pytest.raises(UsageError, match="given twice"):
        qdmanage.parse_request("create", ["a=1", "a=2"])
    with pytest.raises(UsageError, match="no attribute name"):
        qdmanage.parse_request("create", ["=1"])


def test_qdmanage_operation_spellings() -> None:
    assert qdmanage.parse_request("GET_TYPES", []).operation == "get-types"
    assert qdmanage.parse_request("Get-Mgmt-Nodes", []).operation == "get-mgmt-nodes"


def test_qdmanage_format_result() -> None:
    assert json.loads(qdmanage.format_result([{"a": 1}])) == [{"a": 1}]
    assert qdmanage.format_result({"a": 1}, indent=4) == '{\n    "a": 1\n}'
    # GET-JSON-SCHEMA's string is pretty-printed when it is JSON, passed through otherwise.
    assert qdmanage.format_result('{"x":[1]}') == '{\n  "x": [\n    1\n  ]\n}'
    assert qdmanage.format_result("not json") == "not json"


@pytest.mark.parametrize(("argv", "stdin", "message"), [
    (["read"], None, "read needs --name or --identity"),
    (["delete", "--type", "listener"], None, "delete needs --name or --identity"),
    (["create", "port=1"], None, "create needs --type"),
    (["create", "--stdin", "--type", "listener"], "{not json", "--stdin: not valid JSON"),
    (["create", "--stdin", "--type", "listener"], "[1, 2]", "expected a JSON map"),
    (["query", "--stdin"], "{}", "--stdin goes with create or update"),
    (["get-log", "limit=x"], None, "limit must be an integer"),
    (["read", "a", "b"], None, "unexpected arguments"),
])
def test_qdmanage_usage_errors_are_one_line_before_connecting(argv: list, stdin: str | None,
                                                              message: str) -> None:
    # -b names a port nobody listens on: these must fail before any connection attempt.
    r = run_tool("qdmanage", "-b", "127.0.0.1:1", *argv, stdin=stdin)
    assert r.code == 2, r.err
    assert r.err.count("\n") == 1 and r.err.startswith("qdmanage: error: "), r.err
    assert message in r.err


def test_qdmanage_argparse_errors_are_one_line() -> None:
    r = run_tool("qdmanage")
    assert r.code == 2
    assert r.err.count("\n") == 1 and r.err.startswith("qdmanage: error: ")
    # Only the operation is missing: ARG is optional.
    assert "required: OPERATION (" in r.err, r.err


def test_qdmanage_version() -> None:
    assert run_tool("qdmanage", "--version").out.startswith("qdmanage (qdmesh) ")


def test_options_after_the_operation() -> None:
    args = qdmanage.build_parser().parse_intermixed_args(
        ["query", "name", "--type", "listener", "port", "-b", "h:1"])
    assert (args.operation, args.arguments, args.type, args.bus) == ("query", ["name", "port"],
                                                                      "listener", "h:1")
