"""Routers with policy, users in a Cyrus sasldb, and clients that log in to a vhost.

``policy_router(body, users=...)`` starts a real router process whose config is a router
section (with saslConfigDir pointing at a fresh sasldb when users are given), one listener
and ``body`` (policy and vhost sections). ``connect(net, router, user, vhost)`` opens a real
proton connection authenticating with PLAIN (or ANONYMOUS without a user)."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List

import pytest
from proton import SASL

from qdrouter.tools.management_client import ManagementClient
from tests.prerequisites import require
from tests.router.amqpclient import Client, Net
from tests.router.routerkind import NO_CYRUS, c_router_has_cyrus, router_kind
from tests.router.routerproc import Router

MECHANISMS = "ANONYMOUS PLAIN SCRAM-SHA-1 SCRAM-SHA-256"


def cyrus_available() -> bool:
    return bool(SASL.extended()) and shutil.which("saslpasswd2") is not None


def make_sasl_config(directory: Path, users: Dict[str, str], name: str = "qdrouterd") -> Path:
    """A Cyrus SASL config dir: ``name``.conf and a sasldb holding ``users`` (name -> password)."""
    require(cyrus_available(), "python-qpid-proton built with Cyrus SASL and saslpasswd2 "
                               "(.ci/setup.d/05-cyrus-proton.sh)")
    directory.mkdir(parents=True, exist_ok=True)
    database = directory / "users.sasldb"
    for user, password in users.items():
        subprocess.run(["saslpasswd2", "-c", "-p", "-f", str(database), user], input=password.encode(),
                       check=True, timeout=20)
    (directory / f"{name}.conf").write_text(
        "pwcheck_method: auxprop\nauxprop_plugin: sasldb\n"
        f"sasldb_path: {database}\nmech_list: {MECHANISMS} EXTERNAL\n")
    return directory


def router_section(router: Router, sasl_dir: Path | None, extra: str = "") -> None:
    """Put SASL settings (and ``extra`` lines) into the router section of a generated config."""
    text = router.config_path.read_text()
    lines = ""
    if sasl_dir is not None:
        lines += f"    saslConfigDir: {sasl_dir}\n    saslConfigName: qdrouterd\n"
    lines += extra
    router.config_path.write_text(text.replace("    mode: standalone\n", "    mode: standalone\n" + lines, 1))


PolicyRouter = Callable[..., Router]


@pytest.fixture
def policy_router(tmp_path: Path) -> Iterator[PolicyRouter]:
    """``policy_router(body, users={...}, listener={...})`` -> a started router; each must exit
    cleanly (no traceback) at teardown."""
    started: List[Router] = []

    def make(body: str, users: Dict[str, str] | None = None, listener: Dict[str, str] | None = None,
             router_extra: str = "", extra_listeners: Dict[str, Dict[str, str]] | None = None) -> Router:
        if users and router_kind() == "c" and not c_router_has_cyrus():
            pytest.skip(NO_CYRUS)
        workdir = tmp_path / f"r{len(started)}"
        workdir.mkdir()
        sasl_dir = make_sasl_config(workdir / "sasl", users) if users else None
        listeners = {name: dict(attrs) for name, attrs in (extra_listeners or {}).items()}
        router = Router(workdir, router_id=f"P{len(started)}", extra_config=body, extra_listeners=listeners)
        text = router.config_path.read_text()
        settings = {"saslMechanisms": MECHANISMS if users else "ANONYMOUS"}
        settings.update(listener or {})
        default = f"    port: {router.port}\n    saslMechanisms: ANONYMOUS\n"
        replacement = f"    port: {router.port}\n" + "".join(
            f"    {key}: {value}\n" for key, value in settings.items())
        router.config_path.write_text(text.replace(default, replacement, 1))
        router_section(router, sasl_dir, router_extra)
        started.append(router)
        return router.start()

    yield make
    errors = []
    for router in started:
        try:
            router.stop(check=True)
        except AssertionError as error:
            errors.append(str(error))
    if errors:
        pytest.fail("\n\n".join(errors), pytrace=False)


class LoginClient(Client):
    """tests/router's Client, connecting as ``user`` to ``vhost`` (None: ANONYMOUS, no hostname)."""

    def __init__(self, net: Net, url: str, user: str | None = None, password: str | None = None,
                 vhost: str | None = None, mechanism: str | None = None, **options: Any) -> None:
        login = {"user": user, "password": password, "virtual_host": vhost,
                 "allowed_mechs": mechanism or ("PLAIN" if user else "ANONYMOUS"),
                 "allow_insecure_mechs": True, **options}
        login = {key: value for key, value in login.items() if value is not None}
        super().__init__(net, url, **login)


def login(net: Net, url: str, user: str | None = None, vhost: str | None = None, password: str | None = None,
          mechanism: str | None = None, expect_open: bool = True, **options: Any) -> LoginClient:
    """Open a connection and wait until it is open (or, with expect_open False, refused)."""
    password = password if password is not None else (f"pw-{user}" if user else None)
    client = LoginClient(net, url, user, password, vhost, mechanism, **options)
    net.clients.append(client)
    net.wait(lambda: client.opened or client.remote_closed or client.transport_closed, 10,
             f"connection as {user} to {vhost}")
    if expect_open:
        net.pump(0.05)
        assert client.alive, f"connection as {user} to vhost {vhost} refused: {client.error}"
    else:
        net.wait(lambda: client.remote_closed or client.transport_closed, 10, "the refusal")
    return client


def refusal(net: Net, url: str, user: str | None = None, vhost: str | None = None, **options: Any) -> str:
    """Connect expecting a refusal; returns the AMQP error's description."""
    client = login(net, url, user, vhost, expect_open=False, **options)
    assert client.error is not None, "connection refused without an AMQP error"
    return str(client.error.description)


def wait_until_only_management_connected(via_url: str, timeout: float = 10.0) -> None:
    """Wait until the router lists no connection but the management query's own, made
    through ``via_url``.
    A start-up probe's connection counts against connection limits until the router has
    seen it close: a fixed pause may be too short on a busy machine."""
    deadline = time.monotonic() + timeout
    with ManagementClient(via_url, timeout=5) as client:
        while True:
            rows = client.query("connection")
            if len(rows) <= 1:
                return
            assert time.monotonic() < deadline, f"connections still listed after {timeout} s: {rows}"
            time.sleep(0.05)


def users(*names: str) -> Dict[str, str]:
    return {name: f"pw-{name}" for name in names}
