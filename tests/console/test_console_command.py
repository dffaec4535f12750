"""`qdmesh console` as a command: bad arguments and unusable ports get clear errors, a router
that cannot be reached is reported on the page, the console is read-only."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import List

from tests.console.consoleproc import ConsoleProcess, run_console_command
from tests.router.routerproc import free_port


def test_bad_arguments_are_named() -> None:
    result = run_console_command(["--router", "127.0.0.1:5672", "--port", "70000"])
    assert result.returncode == 2 and "--port must be between 0 and 65535" in result.stderr
    result = run_console_command(["--router", "127.0.0.1:5672", "--interval", "0"])
    assert result.returncode == 2 and "--interval must be > 0 seconds, not 0" in result.stderr
    result = run_console_command(["--router", "127.0.0.1:5672", "--timeout", "-1"])
    assert result.returncode == 2 and "--timeout must be > 0 seconds, not -1" in result.stderr
    result = run_console_command([])
    assert result.returncode == 2 and "--router" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_busy_port_is_a_clear_error() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        result = run_console_command(["--router", "127.0.0.1:5672", "--port", str(port)])
    assert result.returncode == 1
    assert f"console: cannot serve on 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr


def test_unreachable_router_is_reported_and_the_console_is_read_only(
        tmp_path: Path, consoles: List[ConsoleProcess]) -> None:
    console = ConsoleProcess(tmp_path, f"127.0.0.1:{free_port()}", interval=0.3)
    consoles.append(console)
    deadline = time.monotonic() + 15
    while True:
        with urllib.request.urlopen(console.url + "/api/mesh", timeout=5) as reply:
            view = json.load(reply)
        if view.get("error", "").startswith("cannot read the mesh through"):
            break
        assert time.monotonic() < deadline, f"no error shown: {view}"
        time.sleep(0.2)
    assert view["routers"] == []
    for method in ("POST", "PUT", "DELETE"):
        request = urllib.request.Request(console.url + "/api/mesh", data=b"{}", method=method)
        try:
            urllib.request.urlopen(request, timeout=5)
            raise AssertionError(f"{method} was accepted")
        except urllib.error.HTTPError as error:
            assert error.code == 405
    for path in ("/static/../server.py", "/static/nothing.js", "/etc/passwd", "/api/router?id=nobody"):
        try:
            urllib.request.urlopen(console.url + path, timeout=5)
            raise AssertionError(f"{path} was served")
        except urllib.error.HTTPError as error:
            assert error.code == 404
