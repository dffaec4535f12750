"""The `qdmanage` command: any AMQP management operation on a router, JSON out."""

from __future__ import annotations

import json
import sys
import textwrap
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Sequence

from .cli_common import (
    ToolArgumentParser,
    UsageError,
    argv_or_default,
    client_from_args,
    make_parser,
    run_tool,
    write_out,
)
from .errors import NotFound
from .management_client import ManagementClient

PROG = "qdmanage"
DESCRIPTION = "Query and change a qdmesh (or qdrouterd) router through AMQP management."
EPILOG = """operations:
  query [ATTR ...]      entities of --type (all types if none), only the named attributes if given
  create ATTR=VALUE...  create an entity of --type (or type=TYPE); --stdin: a JSON map or list of maps
  read                  one entity, by --name or --identity
  update ATTR=VALUE...  change attributes of the entity named by --name/--identity; --stdin: JSON
  delete                delete the entity named by --name or --identity
  get-types, get-attributes, get-operations, get-annotations   [--type TYPE]
  get-mgmt-nodes, get-schema, get-json-schema, get-log [--limit N]
  any other name is sent as that operation on the entity given by --type/--name/--identity

For read, update and delete a bare argument (as in `qdmanage update log/DEFAULT enable=debug+`)
is the entity's identity, or its name if no identity matches.
"""

_KEYS = ("type", "name", "identity")


@dataclass
class Request:
    """The command line, sorted out: the entity addressed and the rest of the arguments."""

    operation: str
    entity_type: str | None = None
    name: str | None = None
    identity: str | None = None
    attributes: Dict[str, Any] = field(default_factory=dict)
    words: List[str] = field(default_factory=list)  # arguments without '='


def build_parser() -> ToolArgumentParser:
    parser = make_parser(PROG, DESCRIPTION, EPILOG)
    parser.add_argument("operation", metavar="OPERATION", help="see below")
    # default=[]: without one, argparse counts ARG as required ("required: OPERATION, ARG").
    parser.add_argument("arguments", metavar="ARG", nargs="*", default=[],
                        help="ATTR=VALUE settings, or attribute names for query")
    ent = parser.add_argument_group("entity options")
    ent.add_argument("--type", help="entity type: long name or short name such as listener, autoLink")
    ent.add_argument("--name", help="the entity's name")
    ent.add_argument("--identity", help="the entity's identity")
    ent.add_argument("--stdin", action="store_true",
                     help="read attributes from standard input as a JSON map (or a list of maps to "
                          "create or update several entities)")
    ent.add_argument("--limit", type=int, metavar="N", help="get-log: at most the N newest entries")
    ent.add_argument("--indent", type=int, default=2, metavar="N", help="JSON indentation (default 2)")
    return parser


def parse_request(operation: str, arguments: Sequence[str], entity_type: str | None = None,
                  name: str | None = None, identity: str | None = None) -> Request:
    """Split ATTR=VALUE arguments from bare words; type=, name=, identity= address the entity."""
    req = Request(operation.lower().replace("_", "-"), entity_type, name, identity)
    for arg in arguments:
        key, sep, value = arg.partition("=")
        if not sep:
            req.words.append(arg)
            continue
        if not key:
            raise UsageError(f"argument {arg!r} has no attribute name before '='")
        if key in _KEYS:
            _set_key(req, key, value)
            if key == "name" and req.operation == "create":
                req.attributes[key] = value  # a created entity's name is one of its attributes
            continue
        if key in req.attributes:
            raise UsageError(f"attribute {key!r} given twice")
        req.attributes[key] = value
    return req


def _set_key(req: Request, key: str, value: str) -> None:
    current = getattr(req, key if key != "type" else "entity_type")
    if current is not None and current != value:
        raise UsageError(f"two different {key}s: {current!r} and {value!r}")
    setattr(req, key if key != "type" else "entity_type", value)


def _read_stdin() -> Any:
    try:
        data = json.load(sys.stdin)
    except ValueError as e:
        raise UsageError(f"--stdin: not valid JSON: {e}") from None
    items = data if isinstance(data, list) else [data]
    if not items or not all(isinstance(i, dict) for i in items):
        raise UsageError("--stdin: expected a JSON map or a non-empty list of maps")
    return data


def _need_entity(req: Request) -> None:
    if req.name is None and req.identity is None and not req.words:
        raise UsageError(f"{req.operation} needs --name or --identity")
    if len(req.words) > 1:
        raise UsageError(f"{req.operation}: unexpected arguments {' '.join(req.words[1:])!r}")


def _by_key(req: Request, action: Callable[[str | None, str | None], Any]) -> Any:
    """``action(name, identity)``; a bare word is tried as identity, then as name."""
    if req.name is not None or req.identity is not None:
        return action(req.name, req.identity)
    try:
        return action(None, req.words[0])
    except NotFound:
        return action(req.words[0], None)


def _with_keys(item: Dict[str, Any], req: Request) -> Request:
    """A Request for one --stdin map: its type/name/identity override the command line's."""
    sub = Request(req.operation, item.get("type", req.entity_type), item.get("name", req.name),
                  item.get("identity", req.identity))
    sub.attributes = {k: v for k, v in item.items() if k not in ("type", "identity")}
    return sub


def _create(client: ManagementClient, req: Request) -> Any:
    if req.entity_type is None:
        raise UsageError("create needs --type (or type=TYPE)")
    return client.create(req.entity_type, req.attributes, name=req.name)


def _update(client: ManagementClient, req: Request) -> Any:
    _need_entity(req)
    attrs = {k: v for k, v in req.attributes.items() if k != "name"}
    return _by_key(req, lambda n, i: client.update(req.entity_type, attrs, name=n, identity=i))


def _bulk(client: ManagementClient, req: Request, data: Any,
          one: Callable[[ManagementClient, Request], Any]) -> Any:
    if isinstance(data, dict):
        return one(client, _merge(req, data))
    return [one(client, _with_keys(item, req)) for item in data]


def _merge(req: Request, data: Dict[str, Any]) -> Request:
    merged = _with_keys(data, req)
    merged.words = req.words
    merged.attributes = {**req.attributes, **merged.attributes}
    return merged


def execute(client: ManagementClient, req: Request, stdin: Any = None, limit: int | None = None) -> Any:
    """Run the request; returns what to print as JSON (None: print nothing)."""
    op = req.operation
    if op == "query":
        return client.query(req.entity_type, req.words)
    if op == "create":
        return _bulk(client, req, stdin, _create) if stdin is not None else _create(client, req)
    if op == "update":
        return _bulk(client, req, stdin, _update) if stdin is not None else _update(client, req)
    if op == "read":
        _need_entity(req)
        return _by_key(req, lambda n, i: client.read(req.entity_type, name=n, identity=i))
    if op == "delete":
        _need_entity(req)
        _by_key(req, lambda n, i: client.delete(req.entity_type, name=n, identity=i))
        return None
    node_ops: Dict[str, Callable[[], Any]] = {
        "get-types": lambda: client.get_types(req.entity_type),
        "get-attributes": lambda: client.get_attributes(req.entity_type),
        "get-operations": lambda: client.get_operations(req.entity_type),
        "get-annotations": lambda: client.get_annotations(req.entity_type),
        "get-mgmt-nodes": client.get_mgmt_nodes,
        "get-schema": client.get_schema,
        "get-json-schema": client.get_json_schema,
        "get-log": lambda: client.get_log(limit),
    }
    if op in node_ops:
        return node_ops[op]()
    # An operation this tool does not know: the entity type may define it (custom operations).
    return client.request(op.upper(), entity_type=req.entity_type, name=req.name, identity=req.identity,
                          body=req.attributes or None)


def write_query(client: ManagementClient, req: Request, indent: int) -> None:
    """The query's entities as the JSON list format_result would print, written a page at a
    time as the pages come (QUERY's offset and count), so that a table of any size costs this
    tool one page of memory."""
    out = sys.stdout
    prefix = " " * max(indent, 0)
    first = True
    for names, rows in client.query_pages(req.entity_type, req.words):
        for row in rows:
            out.write("[\n" if first else ",\n")
            first = False
            out.write(textwrap.indent(json.dumps(dict(zip(names, row)), indent=indent), prefix))
    out.write("[]\n" if first else "\n]\n")
    out.flush()


def format_result(result: Any, indent: int = 2) -> str:
    if isinstance(result, str):
        # GET-JSON-SCHEMA's string: pretty-print it when it is JSON, as everything else is.
        try:
            return json.dumps(json.loads(result), indent=indent)
        except ValueError:
            return result
    return json.dumps(result, indent=indent)


def _limit(req: Request, option: int | None) -> int | None:
    text = req.attributes.pop("limit", None) if req.operation == "get-log" else None
    if text is None:
        return option
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"limit must be an integer, not {text!r}") from None


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_intermixed_args(argv_or_default(argv))

    def body() -> int:
        req = parse_request(args.operation, args.arguments, args.type, args.name, args.identity)
        if req.operation == "get-log":
            limit = _limit(req, args.limit)
        else:
            limit = args.limit
        stdin = _read_stdin() if args.stdin else None
        if stdin is not None and req.operation not in ("create", "update"):
            raise UsageError("--stdin goes with create or update")
        with client_from_args(args, PROG) as client:
            if req.operation == "query":
                write_query(client, req, args.indent)
                return 0
            result = execute(client, req, stdin, limit)
        if result is not None:
            write_out(format_result(result, args.indent))
        return 0

    return run_tool(PROG, body)


if __name__ == "__main__":
    raise SystemExit(main())
