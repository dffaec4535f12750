#!/usr/bin/env python3
"""Soak: a router (or a 3-router mesh) under every kind of churn at once, watched for leaks.

    cd bench && python soak.py --duration 1800 --topology single      # or --topology mesh
    python soak.py --duration 600 --router-cmd /root/.cache/qdr-1.19.0/bin/qdrouterd-c
    python soak.py --topology edges --edge-cycles 200    # edge routers come and go (soak_edges.py)

For --duration seconds, at the same time: connection churn (open, attach, send 3 unsettled,
close, at --churn-rate), link churn on a long-lived connection, dynamic reply-to churn,
management polling every second (what `qdstat -a`, `-l` and `-c` ask), unsettled and
pre-settled traffic through a multicast, a balanced and a closest address, policy-refused
connections (vhost refused.example), garbage connections (random bytes) and, on the mesh,
router C killed (SIGKILL) and restarted every --kill-every seconds. Clients are
bench/soak_clients.py processes; senders connect to routers that stay up (A, B), consumers
also to C.

Every --sample seconds it records each router's RSS, open fds, /proc/PID/smaps_rollup and
(qdmesh) the objects Python's collector tracks (qdmesh_python_gc_objects on /metrics). The
result (in --out): soak.json (samples and client tallies), soak.svg (RSS over time) and
soak.md (the table): RSS growth after warm-up, as a least-squares slope, per 100,000
connections, links and management requests (each figure charges all the growth to that one
activity: an upper bound), fds at the end against before the clients, and every unsettled
message's fate. Exit 1 if a target is missed (--max-growth-mb, unaccounted messages, fds).
Standard library only, like the other bench scripts (the clients need python-qpid-proton).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any, Dict, List, Sequence

from processes import HOST, free_port, wait_for_port
from soak_edges import add_arguments as add_edge_arguments
from soak_edges import run_edges
from soak_report import markdown, write_svg

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
def router_config(name: str, port: int, http_port: int, mesh: Dict[str, Any] | None,
                  edge_port: int | None = None, log_enable: str | None = None) -> str:
    """The router's configuration in qdrouterd's JSON form (both routers read it alike)."""
    listener = {"host": HOST, "saslMechanisms": "ANONYMOUS", "authenticatePeer": False}
    interior = mesh is not None or edge_port is not None
    entities: List[Any] = [
        ["router", {"mode": "interior" if interior else "standalone", "id": name, "workerThreads": 1}],
        ["listener", {**listener, "port": str(port)}],
        ["listener", {"host": HOST, "port": str(http_port), "http": True}],
    ]
    if edge_port is not None:
        entities.append(["listener", {**listener, "port": str(edge_port), "role": "edge"}])
    if log_enable is not None:
        entities.append(["log", {"module": "DEFAULT", "enable": log_enable}])
    if mesh:
        entities.append(["listener", {**listener, "port": str(mesh["inter_port"]), "role": "inter-router"}])
        for peer_port in mesh["connect_to"]:
            entities.append(["connector", {"host": HOST, "port": str(peer_port), "role": "inter-router",
                                           "saslMechanisms": "ANONYMOUS"}])
    for prefix in ("multicast", "balanced", "closest"):
        entities.append(["address", {"prefix": prefix, "distribution": prefix}])
    # Clients connect to the vhost 127.0.0.1 (their URL's host) and may do anything there;
    # a connection to vhost refused.example is refused (no such vhost, no default one).
    entities.append(["policy", {"enableVhostPolicy": True, "maxConnections": 65535}])
    entities.append(["vhost", {"hostname": HOST, "maxConnections": 65535, "allowUnknownUser": True,
                               "groups": {"$default": {"remoteHosts": "*", "sources": "*", "targets": "*",
                                                       "allowDynamicSource": True,
                                                       "allowAnonymousSender": True}}}])
    return json.dumps(entities, indent=1)


class RouterProc:
    def __init__(self, args: argparse.Namespace, name: str, workdir: Path,
                 mesh: Dict[str, Any] | None = None, edge_port: int | None = None,
                 router_cmd: str | None = None, log_enable: str | None = None) -> None:
        self.name = name
        self.port = free_port()
        self.http_port = free_port()
        self.edge_port = edge_port
        self.config = workdir / f"{name}.json"
        self.config.write_text(router_config(name, self.port, self.http_port, mesh, edge_port, log_enable))
        self.log = workdir / f"{name}.log"
        router_cmd = router_cmd or args.router_cmd
        if router_cmd:
            words = shlex.split(router_cmd)
            self.argv = [w.format(config=self.config, port=self.port, python=args.python) for w in words]
            if not any("{config}" in w for w in words):
                self.argv += ["-c", str(self.config)]
        else:
            self.argv = [args.python, "-m", "qdrouter", "-c", str(self.config)]
        self.env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO / "router"),
                                                                             os.environ.get("PYTHONPATH")])))
        self.proc: subprocess.Popen | None = None
        self.restarts = 0
        self.start()

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         env=self.env, start_new_session=True)
        wait_for_port(self.port, _Alive(self.proc), 30.0)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    @property
    def url(self) -> str:
        return f"{HOST}:{self.port}"


class _Alive:
    """What processes.wait_for_port asks of a process."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc

    @property
    def returncode(self) -> int | None:
        return self.proc.poll()

    def stderr_tail(self) -> str:
        return ""


def sample(router: RouterProc, started: float) -> Dict[str, Any]:
    assert router.proc is not None
    pid = router.proc.pid
    row: Dict[str, Any] = {"t": round(time.monotonic() - started, 1), "router": router.name, "pid": pid}
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        row["rss_kb"] = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS")))
        row["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
            key, value = line.split(":", 1)
            if key in ("Rss", "Pss", "Anonymous", "Private_Dirty"):
                row["smaps_" + key.lower() + "_kb"] = int(value.split()[0])
    except (OSError, StopIteration, ValueError):
        row["gone"] = True
        return row
    try:
        with urllib.request.urlopen(f"http://{HOST}:{router.http_port}/metrics", timeout=5) as reply:
            for line in reply.read().decode().splitlines():
                if line.startswith("qdmesh_python_gc_objects"):
                    row["py_objects"] = int(float(line.split()[-1]))
    except (OSError, ValueError):
        pass
    return row


class Background(threading.Thread):
    """A loop at a fixed period until stopped; counts what it did."""

    def __init__(self, period: float, action: Any) -> None:
        super().__init__(daemon=True)
        self.period = period
        self.action = action
        self.done = 0
        self.failed = 0
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(self.period):
            try:
                self.action()
                self.done += 1
            except Exception:  # counted; the soak goes on
                self.failed += 1


MANAGED = ("org.apache.qpid.dispatch.router.address", "org.apache.qpid.dispatch.router.link",
           "org.apache.qpid.dispatch.connection")


class ManagementPoller:
    """What `qdstat -a`, `-l` and `-c` ask (qdstat takes one of them at a time), once a poll,
    on a new connection each time as qdstat does: through qdstat's own client in this process
    (three qdstat processes a second would cost a core here), and every tenth poll through
    the qdstat command itself, in turn with -a, -l and -c. Counts requests made."""

    def __init__(self, args: argparse.Namespace, url: str) -> None:
        sys.path.insert(0, str(REPO / "router"))
        from qdrouter.tools.management_client import ManagementClient

        self.client_class = ManagementClient
        self.args = args
        self.url = url
        self.polls = 0
        self.requests = 0

    def __call__(self) -> None:
        self.polls += 1
        if self.polls % 10 == 0:
            option = ("-a", "-l", "-c")[self.polls // 10 % 3]
            subprocess.run([self.args.qdstat, "-b", self.url, option, "-t", "10"], check=True, timeout=20,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.requests += 1
            return
        with self.client_class(self.url, timeout=10) as client:
            for entity_type in MANAGED:
                client.query(entity_type)
                self.requests += 1


def garbage(port: int) -> None:
    with socket.create_connection((HOST, port), timeout=5) as sock:
        sock.sendall(os.urandom(random.randint(8, 512)))
        sock.settimeout(5)
        while sock.recv(4096):
            pass


def refused(url: str) -> None:
    """A connection the policy refuses (no vhost refused.example): the open is answered with
    a close. Raises unless it was refused."""
    from proton import ConnectionException
    from proton.utils import BlockingConnection

    try:
        connection = BlockingConnection(url, timeout=10, virtual_host="refused.example")
    except ConnectionException:
        return
    connection.close()
    raise RuntimeError("a connection to vhost refused.example was allowed")


def client(args: argparse.Namespace, command: str, url: str, extra: Sequence[str], workdir: Path,
           tag: str) -> subprocess.Popen:
    argv = [args.client_python, str(BENCH / "soak_clients.py"), command, "--url", url,
            "--duration", str(args.duration), *extra]
    out = open(workdir / f"client-{tag}.json", "wb")
    return subprocess.Popen(argv, stdout=out, stderr=open(workdir / f"client-{tag}.err", "wb"),
                            stdin=subprocess.DEVNULL, start_new_session=True)


def slope_per_s(points: List[tuple]) -> float:
    """Least-squares slope of (t, value) points."""
    n = len(points)
    if n < 2:
        return 0.0
    mt = sum(p[0] for p in points) / n
    mv = sum(p[1] for p in points) / n
    var = sum((p[0] - mt) ** 2 for p in points)
    return sum((p[0] - mt) * (p[1] - mv) for p in points) / var if var else 0.0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--duration", type=float, default=1800.0, help="seconds of load")
    p.add_argument("--warmup", type=float, default=None,
                   help="seconds left out of the growth (default: a fifth)")
    p.add_argument("--topology", choices=("single", "mesh", "edges"), default="single",
                   help="edges: edge routers attaching and leaving, nothing else (soak_edges.py)")
    p.add_argument("--router-cmd", default=None,
                   help="router command instead of 'PYTHON -m qdrouter -c CONFIG' ({config}, {port}, "
                        "{python} substituted; '-c CONFIG' appended without {config}), e.g. qdrouterd-c")
    p.add_argument("--python", default=sys.executable, help="interpreter that runs the router")
    p.add_argument("--client-python", default=sys.executable, help="interpreter that runs the clients")
    p.add_argument("--qdstat", default=str(Path(sys.executable).with_name("qdstat")))
    p.add_argument("--churn-rate", type=float, default=100.0, help="connections opened a second")
    p.add_argument("--link-rate", type=float, default=100.0, help="links attached a second")
    p.add_argument("--reply-rate", type=float, default=20.0, help="dynamic reply-to links a second")
    p.add_argument("--traffic-rate", type=float, default=100.0, help="messages a second per address")
    p.add_argument("--qdstat-every", type=float, default=1.0)
    p.add_argument("--garbage-every", type=float, default=0.2)
    p.add_argument("--refused-every", type=float, default=0.5)
    p.add_argument("--kill-every", type=float, default=60.0, help="mesh: router C killed and restarted")
    p.add_argument("--sample", type=float, default=5.0, help="seconds between samples")
    p.add_argument("--max-growth-mb", type=float, default=5.0, help="target: RSS growth after warm-up")
    p.add_argument("--out", default=None, help="folder for soak.json/.svg/.md (default: a new temp folder)")
    add_edge_arguments(p)
    return p.parse_args(argv)


def run(args: argparse.Namespace) -> Dict[str, Any]:
    import tempfile

    workdir = Path(args.out or tempfile.mkdtemp(prefix="soak-"))
    workdir.mkdir(parents=True, exist_ok=True)
    if args.topology == "edges":
        return run_edges(args, workdir, RouterProc, sample)
    warmup = args.warmup if args.warmup is not None else args.duration / 5
    routers: List[RouterProc] = []
    threads: List[Background] = []
    clients: Dict[str, subprocess.Popen] = {}
    try:
        if args.topology == "single":
            routers.append(RouterProc(args, "R", workdir))
            a = b = c = routers[0]
        else:
            ports = [free_port() for _ in range(3)]
            for i, name in enumerate("ABC"):
                mesh = {"inter_port": ports[i], "connect_to": ports[:i]}
                routers.append(RouterProc(args, name, workdir, mesh))
            a, b, c = routers
            time.sleep(5)  # the mesh forms
        started = time.monotonic()
        samples = [sample(r, started) for r in routers]
        baseline_fds = {r.name: samples[i].get("fds") for i, r in enumerate(routers)}
        consumers = ",".join(dict.fromkeys([a.url, c.url]))
        plan = [
            ("churn", b.url, ["--rate", str(args.churn_rate), "--consumer-url", a.url,
                              "--address", "closest/churn"]),
            ("links", a.url, ["--rate", str(args.link_rate), "--consumer-url", b.url,
                              "--address", "balanced/links"]),
            ("replyto", b.url, ["--rate", str(args.reply_rate), "--consumer-url", a.url,
                                "--address", "closest/service"]),
            ("traffic", a.url, ["--rate", str(args.traffic_rate), "--consumer-url", consumers,
                                "--address", "multicast/presettled", "--presettled"]),
            ("traffic", a.url, ["--rate", str(args.traffic_rate), "--consumer-url", consumers,
                                "--address", "multicast/unsettled"]),
            ("traffic", b.url, ["--rate", str(args.traffic_rate), "--consumer-url", consumers,
                                "--address", "balanced/unsettled"]),
            ("traffic", b.url, ["--rate", str(args.traffic_rate), "--consumer-url", consumers,
                                "--address", "closest/unsettled"]),
        ]
        for index, (command, url, extra) in enumerate(plan):
            tag = f"{index}-{command}-{extra[extra.index('--address') + 1].replace('/', '_')}"
            clients[tag] = client(args, command, url, extra, workdir, tag)
        poller = ManagementPoller(args, a.url)
        threads = [Background(args.qdstat_every, poller),
                   Background(args.garbage_every, lambda: garbage(a.port)),
                   Background(args.refused_every, lambda: refused(b.url))]
        for thread in threads:
            thread.start()
        kills = 0
        next_kill = time.monotonic() + args.kill_every
        next_sample = time.monotonic() + args.sample
        while time.monotonic() - started < args.duration:
            time.sleep(0.2)
            now = time.monotonic()
            if args.topology == "mesh" and now >= next_kill:
                c.kill()
                c.start()
                kills += 1
                next_kill = now + args.kill_every
            if now >= next_sample:
                samples += [sample(r, started) for r in routers]
                next_sample = now + args.sample
                dead = [r.name for r in routers if r.proc is not None and r.proc.poll() is not None]
                if dead:
                    raise RuntimeError(f"router(s) {dead} died: see {workdir}")
        for thread in threads:
            thread.halt.set()
        for thread in threads:
            thread.join(30)
        tallies: Dict[str, Any] = {}
        for tag, proc in clients.items():
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
            text = (workdir / f"client-{tag}.json").read_text().strip()
            tallies[tag] = json.loads(text.splitlines()[-1]) if text else {"error": "no result"}
        time.sleep(3)  # connections the clients closed are gone from the router
        final = [sample(r, started) for r in routers]
        samples += final
    finally:
        for thread in threads:
            thread.halt.set()
        for proc in clients.values():
            if proc.poll() is None:
                proc.kill()
        for router in routers:
            router.stop()
    return summarise(args, workdir, samples, final, baseline_fds, tallies, threads, poller.requests, warmup,
                     kills if args.topology == "mesh" else 0)


def summarise(args: argparse.Namespace, workdir: Path, samples: List[Dict[str, Any]],
              final: List[Dict[str, Any]], baseline_fds: Dict[str, Any], tallies: Dict[str, Any],
              threads: List[Background], management_requests: int, warmup: float, kills: int
              ) -> Dict[str, Any]:
    totals: Dict[str, int] = {}
    for tally in tallies.values():
        for key, value in tally.items():
            if isinstance(value, int):
                totals[key] = totals.get(key, 0) + value
    steady = [n for n in ("A", "B", "R")]
    growth: Dict[str, Any] = {}
    for name in steady:
        points = [(s["t"], s["rss_kb"] / 1024) for s in samples if s["router"] == name and "rss_kb" in s
                  and warmup <= s["t"] <= args.duration]
        if not points:
            continue
        slope = slope_per_s(points)
        span = points[-1][0] - points[0][0]
        mb = slope * span
        share = span / args.duration  # of the run's work, what the fitted span saw
        growth[name] = {
            "rss_start_mb": round(points[0][1], 1), "rss_end_mb": round(points[-1][1], 1),
            "growth_mb": round(mb, 2), "over_s": round(span),
            "mb_per_100k_connections": round(mb / max(1, totals.get("connections", 0) * share) * 1e5, 2),
            "mb_per_100k_links": round(mb / max(1, totals.get("links", 0) * share) * 1e5, 2),
            "mb_per_100k_management": round(mb / max(1, management_requests * share) * 1e5, 2),
            "py_objects": [s.get("py_objects") for s in samples if s["router"] == name][-1],
            "churn_rate": args.churn_rate,
        }
    fds = {s["router"]: {"before": baseline_fds.get(s["router"]), "after": s.get("fds")} for s in final}
    result = {
        "duration_s": args.duration, "warmup_s": warmup, "topology": args.topology,
        "router_cmd": args.router_cmd or f"{args.python} -m qdrouter",
        "growth": growth, "fds": fds, "clients": tallies, "totals": totals,
        "management_requests": management_requests, "qdstat_failed": threads[0].failed,
        "garbage_connections": threads[1].done, "refused_connections": threads[2].done,
        "refused_failed": threads[2].failed, "kills": kills, "samples": samples,
    }
    problems = []
    for name, g in growth.items():
        if abs(g["growth_mb"]) > args.max_growth_mb:
            problems.append(f"router {name}: RSS grew {g['growth_mb']} MB after warm-up")
    if totals.get("unaccounted", 0) or totals.get("pending", 0):
        problems.append(f"{totals.get('unaccounted', 0)} unsettled messages unaccounted, "
                        f"{totals.get('pending', 0)} still pending")
    for name, f in fds.items():
        if name != "C" and f["before"] is not None and f["after"] is not None and f["after"] > f["before"]:
            problems.append(f"router {name}: {f['after']} fds at the end, {f['before']} before")
    result["problems"] = problems
    (workdir / "soak.json").write_text(json.dumps(result, indent=1))
    write_svg(workdir / "soak.svg", samples, warmup, args.duration)
    (workdir / "soak.md").write_text(markdown(result))
    result["workdir"] = str(workdir)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    result = run(args)
    print((Path(result["workdir"]) / "soak.md").read_text())
    print(f"(samples, svg and tallies in {result['workdir']})")
    return 1 if result["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
