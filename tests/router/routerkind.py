"""Which router the behaviour tests start: qdmesh (this checkout) or the C router.

The behaviour suites (tests/router, tests/management, tests/linkroute, tests/policy,
tests/mesh) start every router through tests/router/routerproc.py's ``Router``, from one
config text. With ``$QDROUTER_TEST_CMD`` naming the C router's binary (``qdrouterd-c``),
the same tests run against the reference implementation (docs/routing.md, "Differences from
qdrouterd"):

- ``for_c_router(config)`` is what the C router is given instead of the config a test wrote:
  ``workerThreads: 1`` in the router section (qdrouterd starts four by default; a CI host
  may have two cores and routers of several tests at once), every host on 127.0.0.1 (the tests
  connect there), no attribute the C router's schema lacks (``QDMESH_ONLY_ATTRIBUTES``), and
  ``groups``/``openProperties`` maps in the JSON layout its parser reads (``_json_line``).
- Three markers sort the tests that do not pass against the C router, each with its reason:
  ``qdmesh_only(reason)`` (a qdmesh feature the C router lacks: the test is skipped there),
  ``differs_from_c(reason)`` (a deliberate difference, listed in docs/routing.md) and
  ``c_router_bug(reason)`` (the C router's own fault, with the evidence in the reason): both
  are expected to fail against the C router (xfail). Against qdmesh the markers change nothing.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import subprocess
from typing import List, Tuple

import pytest

# Listener/router attributes of qdmesh that qdrouterd 1.19's schema does not have (the C
# router refuses a config naming them). Dropped for the C router.
QDMESH_ONLY_ATTRIBUTES = ("metricsMaxAddresses", "canaryIntervalSeconds")

MARKERS = {
    "qdmesh_only": "qdmesh only (the C router has no such feature)",
    "differs_from_c": "deliberate difference from qdrouterd (docs/routing.md)",
    "c_router_bug": "a fault of qdrouterd 1.19",
}


def router_kind() -> str:
    """"c" when the tests' routers are the C router, else "qdmesh".

    ``$QDROUTER_TEST_KIND`` (``c`` or ``qdmesh``) says so explicitly; otherwise a
    ``$QDROUTER_TEST_CMD`` that does not run the ``qdrouter`` Python module (as ``pypy3 -m
    qdrouter`` does) is taken to be the C router."""
    explicit = os.environ.get("QDROUTER_TEST_KIND")
    if explicit in ("c", "qdmesh"):
        return explicit
    command = shlex.split(os.environ.get("QDROUTER_TEST_CMD", ""))
    if not command or any(a == "-m" and b == "qdrouter" for a, b in zip(command, command[1:])):
        return "qdmesh"
    return "c"


_SECTION = re.compile(r"^\s*([A-Za-z]+)\s*\{\s*$")
_ATTRIBUTE = re.compile(r"^(\s*)([$A-Za-z][\w-]*)\s*:\s*(.*?)\s*$")
_ANY_HOST = {"0.0.0.0", "localhost", "::", "::1", "", '""'}


def for_c_router(config: str) -> str:
    """The config text a test wrote, in the form the C router starts from (see above)."""
    out: List[str] = []
    section = ""
    has_threads = False
    json_depth = 0
    after_close = False
    for line in config.splitlines():
        if json_depth:
            json_depth, after_close, line = _json_line(line, json_depth, after_close)
            out.append(line)
            continue
        opened = _SECTION.match(line)
        if opened:
            section = opened.group(1)
            has_threads = False
            out.append(line)
            continue
        if line.strip() == "}":
            if section == "router" and not has_threads:
                out.append("    workerThreads: 1")
            section = ""
            out.append(line)
            continue
        attribute = _ATTRIBUTE.match(line)
        if attribute and section:
            indent, name, value = attribute.groups()
            if name in QDMESH_ONLY_ATTRIBUTES:
                continue
            if name == "workerThreads" and section == "router":
                has_threads = True
                line = f"{indent}workerThreads: 1"
            elif name == "host" and value in _ANY_HOST:
                line = f"{indent}host: 127.0.0.1"
            elif name in _JSON_VALUED and value == "{":
                json_depth, after_close = 1, False
        out.append(line)
    return "\n".join(out) + "\n"


# qdrouterd's parser takes these attributes' values as JSON (quoted keys); qdmesh also takes
# them in the file's own form (``name: value``, nested ``name: {``). Either way they are
# rewritten in the one JSON layout qdrouterd 1.19 reads: its parser counts a map's end only
# where ``}`` ends a line, so a closing ``},`` (valid JSON) throws its count off and the rest
# of the file is misread; the comma goes in front of the next key instead.
_JSON_VALUED = ("groups", "openProperties")
_JSON_ATTRIBUTE = re.compile(r'^(?:,\s*)?"?([$A-Za-z][\w-]*)"?\s*:\s*(.*?)\s*$')
_JSON_LITERAL = re.compile(r'^(true|false|null|-?\d+(\.\d+)?|".*"|\[.*\])$')


def _json_line(line: str, depth: int, after_close: bool) -> Tuple[int, bool, str]:
    """One line inside a JSON-valued attribute: (depth after it, whether it closed a map, the
    line as JSON). qdrouterd reads these lines one by one: a map ends with a bare ``}`` on
    its line, so a key that follows a closed map takes the comma in front."""
    stripped = line.split("#")[0].strip()
    indent = line[:len(line) - len(line.lstrip())]
    if stripped.rstrip(",") == "}":
        return depth - 1, True, f"{indent}}}"
    attribute = _JSON_ATTRIBUTE.match(stripped)
    if not attribute:
        return depth, after_close, line
    name, value = attribute.groups()
    comma = ", " if after_close else ""
    if value == "{":
        return depth + 1, False, f'{indent}{comma}"{name}": {{'
    value = value.rstrip(",")
    if not _JSON_LITERAL.match(value):
        value = '"' + value.replace('"', '\\"') + '"'
    return depth, False, f'{indent}{comma}"{name}": {value},'


NO_CYRUS = ("C router build: its proton (the system's libqpid-proton-core) has no Cyrus SASL, so it "
            "cannot log users in with PLAIN or SCRAM")


@functools.cache
def c_router_has_cyrus() -> bool:
    """Whether the C router of $QDROUTER_TEST_CMD links a proton built with Cyrus SASL (the
    PLAIN and SCRAM logins of the policy tests need it). The command may be a wrapper script:
    every executable it names is looked at with ldd."""
    command = shlex.split(os.environ.get("QDROUTER_TEST_CMD", ""))
    if not command:
        return False
    programs = [command[0]]
    try:
        with open(command[0], "rb") as f:
            if f.read(2) == b"#!":
                f.seek(0)
                programs += [w for w in re.findall(r"[\w./-]+", f.read().decode(errors="replace"))
                             if w.startswith("/") and os.path.isfile(w) and os.access(w, os.X_OK)]
    except OSError:
        return False
    for program in programs:
        libraries = _ldd(program)
        if "libsasl2" in libraries:
            return True
        for proton in re.findall(r"=> (\S*libqpid-proton[\w.-]*)", libraries):
            if "libsasl2" in _ldd(proton):
                return True
    return False


def _ldd(path: str) -> str:
    try:
        return subprocess.run(["ldd", path], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def apply_marks(items: List[pytest.Item]) -> None:
    """Against the C router: skip qdmesh_only tests, expect differs_from_c and c_router_bug
    tests to fail. Each marker must give its reason."""
    c_router = router_kind() == "c"
    for item in items:
        for name, what in MARKERS.items():
            marker = item.get_closest_marker(name)
            if marker is None:
                continue
            reason = marker.args[0] if marker.args else marker.kwargs.get("reason")
            if not reason:
                raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.{name} needs a reason")
            if not c_router:
                continue
            if name == "qdmesh_only":
                item.add_marker(pytest.mark.skip(reason=f"{what}: {reason}"))
            else:
                item.add_marker(pytest.mark.xfail(reason=f"{what}: {reason}", strict=False))
