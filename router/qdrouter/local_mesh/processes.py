"""The routers of a local mesh as child processes: started with their configuration, watched
until every one lists all the others in ``router.node`` (through management), and stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Dict, List, Sequence

from .plan import MeshError, RouterSpec

STOP_GRACE = 5.0


def _die_with_parent() -> None:
    # In the child before exec: SIGTERM when qdmesh dies, even by SIGKILL (Linux).  The routers
    # have their own sessions, so nothing else would stop them if qdmesh were killed outright.
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        pass


class RouterProcess:
    def __init__(self, spec: RouterSpec, python: str, workdir: Path) -> None:
        self.spec = spec
        self.config = workdir / f"{spec.router_id}.conf"
        self.log = workdir / f"{spec.router_id}.log"
        self.popen: subprocess.Popen[bytes] | None = None
        self._log_file: IO[bytes] | None = None
        self.python = python

    def start(self, config_text: str, env: Dict[str, str]) -> None:
        self.config.write_text(config_text)
        self._log_file = open(self.log, "wb")
        try:
            # Own session: a terminal's Ctrl-C reaches only us, and we stop the routers in order.
            # --drain-timeout 0: the whole mesh stops together, so there is nowhere to drain to.
            self.popen = subprocess.Popen([self.python, "-m", "qdrouter", "-c", str(self.config),
                                           "--drain-timeout", "0"],
                                          stdin=subprocess.DEVNULL, stdout=self._log_file,
                                          stderr=subprocess.STDOUT, env=env, start_new_session=True,
                                          preexec_fn=_die_with_parent if sys.platform == "linux" else None)
        except OSError as e:
            raise MeshError(f"cannot start router {self.spec.router_id} with {self.python}: {e}") from None

    def exit_code(self) -> int | None:
        return None if self.popen is None else self.popen.poll()

    def last_log_line(self) -> str:
        try:
            lines = [x for x in self.log.read_text(errors="replace").splitlines() if x.strip()]
        except OSError:
            return ""
        return lines[-1].strip() if lines else ""

    def died(self) -> MeshError:
        last = self.last_log_line()
        return MeshError(f"router {self.spec.router_id} exited with code {self.exit_code()}"
                         + (f": {last}" if last else ""))

    def close_log(self) -> None:
        if self._log_file is not None:
            self._log_file.close()


def wait_converged(procs: Sequence[RouterProcess], timeout: float, poll: float = 0.25) -> None:
    """Return once every router's router.node lists all the others; MeshError on timeout."""
    from ..tools.errors import ManagementError
    from ..tools.management_client import ManagementClient

    everyone = {p.spec.router_id for p in procs}
    clients: Dict[str, ManagementClient] = {}
    missing: Dict[str, str] = {p.spec.router_id: "not answering yet" for p in procs}
    deadline = time.monotonic() + timeout
    try:
        while missing:
            for p in procs:
                rid = p.spec.router_id
                if rid not in missing:
                    continue
                if p.exit_code() is not None:
                    raise p.died()
                client = clients.get(rid)
                if client is None:
                    client = clients[rid] = ManagementClient(p.spec.address, timeout=2.0)
                try:
                    absent = everyone - {rid} - {str(r.get("id")) for r in client.query("router.node")}
                except ManagementError as e:
                    missing[rid] = f"management not reachable ({e})"
                    clients.pop(rid).close()  # reconnect next round: the router may still be starting
                    continue
                if absent:
                    missing[rid] = "does not know " + ", ".join(sorted(absent))
                else:
                    del missing[rid]
            if not missing:
                return
            if time.monotonic() > deadline:
                details = "; ".join(f"{rid} {why}" for rid, why in sorted(missing.items()))
                raise MeshError(f"mesh did not converge within {timeout:g}s: {details}")
            time.sleep(poll)
    finally:
        for client in clients.values():
            client.close()


def stop_all(procs: Sequence[RouterProcess], grace: float = STOP_GRACE) -> List[str]:
    """SIGTERM every router, wait up to `grace` s for all, SIGKILL the rest; ids killed."""
    running = [p for p in procs if p.popen is not None and p.popen.poll() is None]
    for p in running:
        assert p.popen is not None
        p.popen.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    killed = []
    for p in running:
        assert p.popen is not None
        try:
            p.popen.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.popen.kill()
            p.popen.wait()
            killed.append(p.spec.router_id)
    for p in procs:
        p.close_log()
    return killed


def child_env() -> Dict[str, str]:
    env = dict(os.environ)
    # Run the routers from the same source tree as this command (and under --python too).
    src = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    return env
