"""Every process a test run starts ends with the run, however the run ends.

Tests start routers, RabbitMQ nodes (whose beam and epmd detach from us), C routers, an API
server and etcd, Spark's JVM, Chromium... mostly in sessions of their own, so neither Ctrl-C
at the terminal nor pytest's death reaches them by itself. Three layers make sure they end:

1. A marker. At session start ``start_run`` adds this run's id to ``QDMESH_TEST_RUN`` in
   pytest's environment; every process started from then on inherits it (the tests' Popen
   calls pass ``os.environ`` on), including daemons that leave our process tree, and the
   kernel keeps it readable in ``/proc/PID/environ``. Nested runs (a test that runs pytest)
   append their id, so the outer run's reaper also covers the inner run's processes.
2. A watchdog: a small process in a session of its own (so Ctrl-C at the terminal does not
   stop it first) that polls pytest's pid every ``POLL_S``. While pytest lives it also notes
   pytest's descendants, to catch a child started with an environment of its own. When
   pytest is gone without having said it finished (SIGKILL, os._exit from a thread timeout,
   a crash), the watchdog kills every process carrying the marker and every noted
   descendant still alive, then exits.
3. ``finish_run`` at session end (normal end, Ctrl-C, SIGTERM: conftest turns SIGTERM into
   KeyboardInterrupt so fixtures tear down) does the same kill in-process and dismisses the
   watchdog; and the next run's ``start_run`` reaps any earlier run whose pytest is dead,
   should a watchdog itself have been killed.

Runs are recorded under ``RUNS_DIR/<run id>/`` (pytest's pid and start time), so concurrent
runs by other users of the machine are never touched: only runs whose pytest is dead are.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Dict, Iterable, List, Set, Tuple

MARKER = "QDMESH_TEST_RUN"
RUNS_DIR = Path(os.environ.get("QDMESH_CACHE", str(Path.home() / ".cache" / "qdmesh"))) / "test-runs"
POLL_S = 0.5
TERM_GRACE_S = 3.0
RECORD_GRACE_S = 60.0     # a run's directory exists this long at most before its record does

Proc = Tuple[int, str]       # (pid, start time in clock ticks): a pid alone may be reused


def _start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 22 (starttime), counted after the command name, which may hold spaces.
    return stat.rsplit(")", 1)[1].split()[19]


def _ppid(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _alive(proc: Proc) -> bool:
    return _start_time(proc[0]) == proc[1]


def _pids() -> List[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def marked(run_id: str) -> Set[Proc]:
    """Processes whose environment carries ``run_id`` in the marker (this user's only)."""
    needle = f"{MARKER}=".encode()
    found: Set[Proc] = set()
    me = os.getpid()
    for pid in _pids():
        if pid == me:
            continue
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        for entry in environ.split(b"\0"):
            if entry.startswith(needle) and run_id in entry[len(needle):].decode(errors="replace").split(":"):
                start = _start_time(pid)
                if start is not None:
                    found.add((pid, start))
                break
    return found


def descendants(root: int) -> Set[Proc]:
    children: Dict[int, List[int]] = {}
    for pid in _pids():
        parent = _ppid(pid)
        if parent is not None:
            children.setdefault(parent, []).append(pid)
    found: Set[Proc] = set()
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        start = _start_time(pid)
        if start is not None and pid != os.getpid():
            found.add((pid, start))
        todo.extend(children.get(pid, []))
    return found


def kill_all(procs: Iterable[Proc], grace_s: float = TERM_GRACE_S) -> List[int]:
    """SIGTERM (a clean stop for brokers and routers), then SIGKILL what is left; the pids hit."""
    procs = {p for p in procs if _alive(p)}
    for pid, _ in procs:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(_alive(p) for p in procs):
        time.sleep(0.1)
    for proc in procs:
        if _alive(proc):
            try:
                os.kill(proc[0], signal.SIGKILL)
            except OSError:
                pass
    return sorted(pid for pid, _ in procs)


def reap(run_id: str, extra: Iterable[Proc] = ()) -> List[int]:
    """End every process of run ``run_id``; a second pass catches what the first one's
    victims started while dying (rabbitmq-server's script starting beam)."""
    hit = kill_all(marked(run_id) | set(extra))
    hit += kill_all(marked(run_id))
    remove_containers(run_id)
    return hit


# -- Docker containers: the daemon's children, found by label -------------------------------------
LABEL_PREFIX = "qdmesh.test-run."


def container_labels() -> List[str]:
    """``docker run`` options labelling a container with every run it belongs to."""
    runs = [part for part in os.environ.get(MARKER, "").split(":") if part]
    return [option for run_id in runs for option in ("--label", f"{LABEL_PREFIX}{run_id}=1")]


def remove_containers(run_id: str) -> None:
    if shutil.which("docker") is None:
        return
    try:
        listed = subprocess.run(["docker", "ps", "-aq", "--filter", f"label={LABEL_PREFIX}{run_id}"],
                                capture_output=True, text=True, timeout=20)
        ids = listed.stdout.split()
        if ids:
            subprocess.run(["docker", "rm", "-f", *ids], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        pass    # no daemon (it cannot hold containers of ours then) or a stuck one: nothing to do


# -- the run's record and its watchdog ----------------------------------------------------------
def _record(run_dir: Path) -> Dict[str, str] | None:
    try:
        return dict(json.loads((run_dir / "run.json").read_text()))
    except (OSError, ValueError):
        return None


def _younger_than(path: Path, seconds: float) -> bool:
    try:
        return time.time() - path.stat().st_mtime < seconds
    except OSError:
        return True     # gone meanwhile: its own run removed it


def reap_stale_runs() -> List[int]:
    """Reap runs whose pytest is dead (a watchdog killed with it); leave live runs alone."""
    hit: List[int] = []
    if not RUNS_DIR.is_dir():
        return hit
    for run_dir in RUNS_DIR.iterdir():
        record = _record(run_dir)
        if record is not None and _alive((int(record["pid"]), record["start"])):
            continue
        if record is None and _younger_than(run_dir, RECORD_GRACE_S):
            continue    # a run starting now (parallel workers start together): not written yet
        if record is not None and not (run_dir / "finished").exists():
            hit += reap(run_dir.name)
        shutil.rmtree(run_dir, ignore_errors=True)
    return hit


_watchdog: subprocess.Popen | None = None


def start_run(watchdog: bool = True) -> str:
    """Mark this process's environment with a new run id, start the watchdog; the run id
    ("" when there is no reaper here: no /proc, or no writable cache directory).

    ``watchdog=False`` for a parallel run's workers: the run that started them carries its
    own id in their marker and its watchdog notes their descendants, so one watchdog (each
    scans /proc twice a second) covers them all; a worker's own ``finish_run`` still ends
    what it started."""
    global _watchdog
    if not Path("/proc/self/environ").exists():
        return ""          # not Linux: no /proc to find processes by; fixtures still stop theirs
    run_id = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    run_dir = RUNS_DIR / run_id
    try:
        reap_stale_runs()
        run_dir.mkdir(parents=True)
    except OSError as error:
        print(f"tests/reaper.py: no reaper for this run ({error})", file=sys.stderr)
        return ""
    me = os.getpid()
    (run_dir / "run.json").write_text(json.dumps({"pid": str(me), "start": _start_time(me)}))
    chain = [part for part in os.environ.get(MARKER, "").split(":") if part]
    os.environ[MARKER] = ":".join([*chain, run_id])
    env = {k: v for k, v in os.environ.items() if k != MARKER}   # the watchdog is not a victim
    repo = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = repo + os.pathsep + env.get("PYTHONPATH", "")
    if not watchdog:
        return run_id
    with open(run_dir / "watchdog.log", "ab") as log:
        _watchdog = subprocess.Popen(
            [sys.executable, "-m", "tests.reaper", "watch", str(me), run_id],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
            cwd=repo, start_new_session=True)
    return run_id


def finish_run(run_id: str) -> List[int]:
    """End the run's leftovers now, dismiss its watchdog, forget the run."""
    if not run_id:
        return []
    global _watchdog
    run_dir = RUNS_DIR / run_id
    try:
        (run_dir / "finished").touch()
    except OSError:
        pass
    if _watchdog is not None:
        _watchdog.terminate()
        try:
            _watchdog.wait(10)
        except subprocess.TimeoutExpired:
            _watchdog.kill()
            _watchdog.wait()
        _watchdog = None
    hit = reap(run_id, descendants(os.getpid()))
    shutil.rmtree(run_dir, ignore_errors=True)
    return hit


def watch(pid: int, run_id: str) -> None:
    """The watchdog's loop (``python -m tests.reaper watch PID RUN_ID``)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is pytest's to handle, not ours
    stopped = False

    def dismissed(signum: int, frame: object) -> None:
        nonlocal stopped
        stopped = True
    signal.signal(signal.SIGTERM, dismissed)
    pytest_proc = (pid, _start_time(pid) or "")
    seen: Set[Proc] = set()
    run_dir = RUNS_DIR / run_id
    while not stopped and _alive(pytest_proc):
        seen = {p for p in seen | descendants(pid) if _alive(p)}
        time.sleep(POLL_S)
    if stopped or (run_dir / "finished").exists():
        return
    hit = reap(run_id, seen)
    print(f"pytest {pid} died without finishing; ended {len(hit)} processes: {hit}", flush=True)
    shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "watch":
        watch(int(sys.argv[2]), sys.argv[3])
    else:
        sys.exit("usage: python -m tests.reaper watch PYTEST_PID RUN_ID")


def stop_process(proc: subprocess.Popen, grace_s: float = 20.0) -> None:
    """One process a test started and owns: SIGTERM, then SIGKILL after ``grace_s``."""
    proc.terminate()
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
