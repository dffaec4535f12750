"""Bad configuration: the router refuses to start with one clear message, never a traceback."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import List

import pytest

from .routerproc import free_port, run_qdrouter

pytestmark = pytest.mark.qdmesh_only(
    "qdmesh's config errors: one short message naming FILE:LINE, and linkCapacity below 1 refused; "
    "qdrouterd 1.19 logs a Python traceback for each and accepts linkCapacity: 0")

GOOD_ROUTER = "router {\n    mode: standalone\n    id: R1\n}\n"


def _listener(port: int, extra: str = "") -> str:
    return f"listener {{\n    host: 127.0.0.1\n    port: {port}\n    saslMechanisms: ANONYMOUS\n{extra}}}\n"


def _run(tmp_path: Path, text: str, name: str = "bad.conf") -> subprocess.CompletedProcess:
    conf = tmp_path / name
    conf.write_text(text)
    return run_qdrouter(["-c", str(conf)], timeout=20)


def _assert_clear_failure(res: subprocess.CompletedProcess, must_mention: List[str]) -> str:
    err = res.stderr
    assert res.returncode != 0, f"router accepted a bad config (exit 0)\nstderr: {err}"
    assert "Traceback" not in err, f"a Python traceback instead of a message:\n{err}"
    assert err.strip(), "no error message on stderr"
    assert len(err.strip().splitlines()) <= 6, f"message should be one short paragraph:\n{err}"
    for word in must_mention:
        assert word in err, f"{word!r} not mentioned in: {err}"
    return err


def _line_of(text: str, needle: str) -> int:
    for n, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return n
    raise AssertionError(needle)


def test_unknown_attribute(tmp_path: Path) -> None:
    text = GOOD_ROUTER + _listener(free_port(), "    prot: 5672\n")
    err = _assert_clear_failure(_run(tmp_path, text), ["bad.conf", "listener", "prot"])
    assert f"bad.conf:{_line_of(text, 'prot:')}" in err, f"file:line missing from: {err}"


def test_bad_enum_value(tmp_path: Path) -> None:
    text = GOOD_ROUTER + _listener(free_port()) + "address {\n    prefix: x\n    distribution: sideways\n}\n"
    err = _assert_clear_failure(_run(tmp_path, text), ["bad.conf", "address", "distribution", "sideways"])
    assert f"bad.conf:{_line_of(text, 'sideways')}" in err, f"file:line missing from: {err}"


def test_bad_router_mode(tmp_path: Path) -> None:
    text = "router {\n    mode: sovereign\n    id: R1\n}\n" + _listener(free_port())
    _assert_clear_failure(_run(tmp_path, text), ["bad.conf", "router", "mode", "sovereign"])


def test_unknown_section(tmp_path: Path) -> None:
    text = GOOD_ROUTER + _listener(free_port()) + "listenr {\n    port: 1\n}\n"
    err = _assert_clear_failure(_run(tmp_path, text), ["bad.conf", "listenr"])
    assert f"bad.conf:{_line_of(text, 'listenr')}" in err, f"file:line missing from: {err}"


def test_missing_config_file(tmp_path: Path) -> None:
    missing = tmp_path / "does-not-exist.conf"
    res = run_qdrouter(["-c", str(missing)])
    _assert_clear_failure(res, ["does-not-exist.conf"])


def test_unbalanced_braces(tmp_path: Path) -> None:
    text = GOOD_ROUTER + "listener {\n    host: 127.0.0.1\n    port: 5999\n"
    _assert_clear_failure(_run(tmp_path, text), ["bad.conf"])


def test_attribute_outside_section(tmp_path: Path) -> None:
    text = "mode: standalone\n" + GOOD_ROUTER
    _assert_clear_failure(_run(tmp_path, text), ["bad.conf"])


def test_negative_port(tmp_path: Path) -> None:
    text = GOOD_ROUTER + _listener(-5)
    _assert_clear_failure(_run(tmp_path, text), ["bad.conf", "port"])


@pytest.mark.parametrize("mistake", ["prot", "workerThread"])
def test_error_names_the_attribute_exactly(tmp_path: Path, mistake: str) -> None:
    text = f"router {{\n    mode: standalone\n    id: R1\n    {mistake}: 1\n}}\n"
    err = _assert_clear_failure(_run(tmp_path, text), ["bad.conf", "router"])
    assert re.search(rf"\b{mistake}\b", err), err



def test_link_capacity_below_one(tmp_path: Path) -> None:
    text = GOOD_ROUTER + _listener(free_port(), "    linkCapacity: 0\n")
    _assert_clear_failure(_run(tmp_path, text), ["listener", "linkCapacity"])
