"""Helpers for the waypoint / auto-link tests: router config, qdstat and qdmanage as a person runs
them (``python -m qdrouter.tools.qdstat|qdmanage`` subprocesses), bounded polling."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Sequence, Tuple

from tests.router.routerproc import Router, RouterFactory, router_env

from .rabbit import RabbitBroker

#: Long enough for the router's connector back-off (2, 4, 8, 16 s between attempts) to catch a
#: broker that takes ~10 s to start.
ACTIVATE_TIMEOUT = 60.0


def connector(name: str, broker: RabbitBroker) -> str:
    return (f"connector {{\n    name: {name}\n    host: 127.0.0.1\n    port: {broker.port}\n"
            f"    role: route-container\n    saslMechanisms: ANONYMOUS\n}}\n")


def autolink(address: str, direction: str, external: str | None = None,
             connection: str | None = None, container_id: str | None = None,
             old_names: bool = False) -> str:
    """An autoLink section; ``old_names`` uses addr/dir/externalAddr (the 0.7 book's names)."""
    a, d, e = ("addr", "dir", "externalAddr") if old_names else ("address", "direction", "externalAddress")
    lines = [f"{a}: {address}", f"{d}: {direction}"]
    if connection is not None:
        lines.append(f"connection: {connection}")
    if container_id is not None:
        lines.append(f"containerId: {container_id}")
    if external is not None:
        lines.append(f"{e}: {external}")
    return "autoLink {\n" + "".join(f"    {line}\n" for line in lines) + "}\n"


def queue_links(address: str, external: str, connection: str, **kw: Any) -> str:
    """The pair of auto-links (in and out) through one broker queue."""
    return (autolink(address, "in", external, connection, **kw)
            + autolink(address, "out", external, connection, **kw))


def waypoint_router(router_factory: RouterFactory, brokers: Dict[str, RabbitBroker], links: str,
                    prefix: str = "queue") -> Router:
    """A router with a connector per broker (named by the dict's keys), ``address { prefix:
    PREFIX waypoint: yes }`` and the given autoLink sections."""
    extra = "".join(connector(name, b) for name, b in brokers.items())
    extra += f"address {{\n    prefix: {prefix}\n    waypoint: yes\n}}\n" + links
    return router_factory(router_id="R", addresses={}, extra_config=extra)


# -- the tools -----------------------------------------------------------------------------
def run_tool(tool: str, router: Router, *args: str, timeout: float = 30.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", f"qdrouter.tools.{tool}", "-b", f"127.0.0.1:{router.port}",
                           *args], capture_output=True, text=True, timeout=timeout,
                          env=router_env(), stdin=subprocess.DEVNULL)


def _ok(r: subprocess.CompletedProcess, what: str) -> str:
    assert r.returncode == 0, f"{what} exited {r.returncode}: {r.stderr.strip() or r.stdout.strip()}"
    return str(r.stdout)


def qdstat_text(router: Router, *args: str) -> str:
    return _ok(run_tool("qdstat", router, *args), f"qdstat {' '.join(args)}")


def qdstat_json(router: Router, *args: str) -> List[Dict[str, Any]]:
    rows = json.loads(qdstat_text(router, *args, "--json"))
    assert isinstance(rows, list), rows
    return rows


def qdmanage(router: Router, *args: str) -> Any:
    out = _ok(run_tool("qdmanage", router, *args), f"qdmanage {' '.join(args)}")
    return json.loads(out) if out.strip() else None


def autolinks(router: Router) -> List[Dict[str, Any]]:
    """``qdmanage query --type autoLink``: every auto-link's attributes."""
    rows = qdmanage(router, "query", "--type", "autoLink")
    assert isinstance(rows, list), rows
    return rows


def link_key(a: Dict[str, Any]) -> Tuple[str, str, str]:
    """(address, direction, connection or containerId) of an auto-link, whichever names it uses."""
    return (str(a.get("address", a.get("addr"))), str(a.get("direction", a.get("dir"))),
            str(a.get("connection") or a.get("containerId")))


def statuses(router: Router) -> Dict[Tuple[str, str, str], str]:
    return {link_key(a): str(a.get("operStatus")) for a in autolinks(router)}


def connector_status(router: Router, name: str) -> Tuple[str, str]:
    rows = qdmanage(router, "query", "--type", "connector")
    for c in rows:
        if c.get("name") == name:
            return str(c.get("connectionStatus")), str(c.get("connectionMsg"))
    raise AssertionError(f"no connector {name!r} in {rows}")


def address_rows(router: Router, addr: str) -> Dict[str, Dict[str, Any]]:
    """``qdstat -a`` rows of ``addr`` keyed by phase ("0", "1")."""
    return {str(r["phs"]): r for r in qdstat_json(router, "-a") if r.get("addr") == addr}


def wait_for(check: Callable[[], Tuple[bool, Any]], timeout: float, what: str,
             interval: float = 0.5) -> Any:
    """Poll ``check`` (returning (done, detail)) until done; fail naming the last detail seen."""
    deadline = time.monotonic() + timeout
    while True:
        done, detail = check()
        if done:
            return detail
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; last seen: {detail!r}")
        time.sleep(interval)


def wait_statuses(router: Router, keys: Sequence[Tuple[str, str, str]], wanted: Sequence[str],
                  timeout: float = ACTIVATE_TIMEOUT) -> Dict[Tuple[str, str, str], Any]:
    """Wait until every auto-link in ``keys`` has an operStatus in ``wanted``."""
    def check() -> Tuple[bool, Any]:
        rows = autolinks(router)
        now = {link_key(a): (str(a.get("operStatus")), a.get("lastError")) for a in rows}
        return all(now.get(k, ("?",))[0] in wanted for k in keys), now
    return wait_for(check, timeout, f"auto-links {list(keys)} to be {'/'.join(wanted)}")
