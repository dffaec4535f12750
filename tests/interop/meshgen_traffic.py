"""The traffic script of a generated mesh (tests/interop/meshgen.py), drawn from its seed, and
what each check counted: anycast closest and balanced between two routers, multicast from one
router to receivers on several (copies per receiver), request/response over a dynamic
reply-to, management of one router through another (qdmesh's ManagementClient and qdrouterd's
qdmanage), and optionally an interior router killed and restarted under unsettled traffic.

Every check waits, polling, until the mesh is ready for it (every interior router knows every
other, a consumer's address is known on every interior router, a sender has credit), and
counts what happened instead of raising: a mesh that never got ready shows as ``ready: 0``."""

from __future__ import annotations

import itertools
import json
import random
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Sequence, Tuple

from proton import Message

from qdrouter.tools.management_client import ManagementClient
from tests.interop.meshgen import GenMesh, MeshSpec, build_pair, generate
from tests.interop.mixed_topology import ADDRESS_TYPE, query, remote_count
from tests.interop.peers import upstream_tool
from tests.mesh.meshproc import NODE_TYPE, shortest_paths
from tests.router.amqpclient import Net, ReceiverLink, SenderLink, msg

Counts = Dict[str, object]
Results = Dict[str, Counts]
READY_TIMEOUT = 60.0     # convergence, an address known everywhere, credit
OUTCOME_TIMEOUT = 30.0   # every outcome of a batch


@dataclass(frozen=True)
class Plan:
    closest: Tuple[str, str]          # (producer, consumer)
    balanced: Tuple[str, str]
    multicast_from: str
    multicast_to: Tuple[str, ...]
    request: Tuple[str, str]          # (client, service)
    management: Tuple[str, str]       # (asked router, router asked about): interiors
    kill: Tuple[str, str, str] | None  # (producer, consumer, interior router killed)


def plan_for(spec: MeshSpec, kill: bool = False) -> Plan:
    """The traffic of ``spec``'s seed: positions are router ids, the same in both meshes."""
    rng = random.Random(f"{spec.seed}-traffic")
    names, interiors = spec.names, spec.interiors

    def pair(among: Sequence[str]) -> Tuple[str, str]:
        a, b = rng.sample(list(among), 2)
        return a, b
    receivers = tuple(sorted(rng.sample(names, rng.randint(2, min(4, len(names))))))
    killed = None
    if kill:
        killed = _kill_plan(rng, spec)
    return Plan(pair(names), pair(names), rng.choice(names), receivers, pair(names), pair(interiors), killed)


def _kill_plan(rng: random.Random, spec: MeshSpec) -> Tuple[str, str, str]:
    """(producer, consumer, victim): where some pair's cheapest path crosses a third interior
    router, that router is the victim, so that the stream has to find another path or wait."""
    links = [(lk.connector, lk.listener, lk.cost) for lk in spec.links]
    crossings = []
    for a, b in itertools.permutations(spec.names, 2):
        ia, ib = spec.interior_of(a), spec.interior_of(b)
        if ia != ib:
            _, hops = shortest_paths(spec.interiors, links, ia)[ib]
            crossings += [(a, b, hop) for hop in sorted(hops) if hop != ib]
    if crossings:
        return rng.choice(crossings)
    victim = rng.choice(spec.interiors)
    producer, consumer = rng.sample([n for n in spec.names if spec.interior_of(n) != victim], 2)
    return producer, consumer, victim


def _safely(probe: Callable[[], bool]) -> bool:
    try:
        return probe()
    except Exception:  # a router still starting or restarting: not ready yet
        return False


def _poll(net: Net, probe: Callable[[], bool], timeout: float = READY_TIMEOUT) -> bool:
    """Pump ``net`` (its clients stay alive) until ``probe()``; whether it came true."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _safely(probe):
            return True
        net.pump(0.2)
    return False


def wait_ready(net: Net, mesh: GenMesh, timeout: float = 90.0) -> bool:
    """Every interior router lists every other with a path, every edge router attached."""
    return _poll(net, lambda: mesh.converged() and edges_attached(mesh), timeout)


def edges_attached(mesh: GenMesh) -> bool:
    spec = mesh.spec
    for uplink in {spec.interior_of(e) for e in spec.edges}:
        rows = query(mesh.url(uplink), "org.apache.qpid.dispatch.connection", ["role"])
        wanted = sum(spec.interior_of(e) == uplink for e in spec.edges)
        if sum(row["role"] == "edge" for row in rows) < wanted:
            return False
    return True


def _subscribers(url: str, address: str) -> int:
    rows = query(url, ADDRESS_TYPE, ["key", "subscriberCount"])
    return sum(int(r["subscriberCount"] or 0) for r in rows if r["key"] == f"M0{address}")


def consumers_known(mesh: GenMesh, address: str, consumers: Sequence[str]) -> bool:
    """Whether every interior router knows the consumers of ``address`` on the routers
    ``consumers``: their interior routers as subscribers (local) or remote routers."""
    at = {mesh.spec.interior_of(c) for c in consumers}
    return (all(remote_count(mesh[n], address) == len(at - {n}) for n in mesh.spec.interiors)
            and all(_subscribers(mesh.url(n), address) > 0 for n in at))


def _ready_sender(net: Net, mesh: GenMesh, at: str, address: str | None) -> Tuple[SenderLink, bool]:
    sender = net.connect(mesh.url(at)).sender(address)
    return sender, _poll(net, lambda: sender.credit > 0, 30)


def _settle(net: Net, sender: SenderLink, tags: List[str]) -> Counts:
    """Wait for each outcome; how many of each (``none``: no outcome in time)."""
    _poll(net, lambda: all(t in sender.outcomes for t in tags), OUTCOME_TIMEOUT)
    names = Counter(sender.outcomes[t].name if t in sender.outcomes else "none" for t in tags)
    return {k: names.get(k, 0) for k in ("accepted", "released", "modified", "rejected", "none")}


def _accepted_bodies(sender: SenderLink, sent: Dict[str, str]) -> List[str]:
    return [b for t, b in sent.items() if t in sender.outcomes and sender.outcomes[t].name == "accepted"]


def anycast(net: Net, mesh: GenMesh, producer: str, consumer: str, address: str, count: int = 20) -> Counts:
    receiver = net.connect(mesh.url(consumer)).receiver(address)
    ready = _poll(net, lambda: consumers_known(mesh, address, [consumer]))
    sender, credit = _ready_sender(net, mesh, producer, address)
    sent = {sender.send(msg(f"{address} #{i}")): f"{address} #{i}" for i in range(count)}
    counts = _settle(net, sender, list(sent))
    accepted = _accepted_bodies(sender, sent)
    _poll(net, lambda: set(accepted) <= set(receiver.bodies()), 10)
    seen = Counter(receiver.bodies())
    counts.update(ready=int(ready and credit), received=len(seen),
                  duplicates=sum(seen.values()) - len(seen), lost=sum(b not in seen for b in accepted))
    return counts


def multicast(net: Net, mesh: GenMesh, source: str, at: Sequence[str], address: str,
              count: int = 5) -> Counts:
    """``count`` unsettled messages from ``source`` to a receiver on each router ``at``: the
    outcomes, and the copies of each message each receiver got (``copies@ROUTER``)."""
    receivers = {n: net.connect(mesh.url(n)).receiver(address) for n in at}
    ready = _poll(net, lambda: consumers_known(mesh, address, at))
    sender, credit = _ready_sender(net, mesh, source, address)
    bodies = [f"{address} #{i}" for i in range(count)]
    counts = _settle(net, sender, [sender.send(msg(b)) for b in bodies])
    _poll(net, lambda: all(set(bodies) <= set(r.bodies()) for r in receivers.values()), 15)
    net.pump(1.5)  # time for every further copy to arrive
    counts["ready"] = int(ready and credit)
    for name, receiver in receivers.items():
        seen = Counter(receiver.bodies())
        counts[f"copies@{name}"] = [seen[b] for b in bodies]
    return counts


def request_response(net: Net, mesh: GenMesh, client_at: str, service_at: str, address: str,
                     count: int = 10) -> Counts:
    """Requests from ``client_at`` to a service on ``service_at``, each answered to the
    client's dynamic reply-to address: requests accepted, replies received."""
    service = net.connect(mesh.url(service_at))
    requests = service.receiver(address)
    answer = service.sender(None)
    ready = _poll(net, lambda: consumers_known(mesh, address, [service_at]))
    client = net.connect(mesh.url(client_at))
    reply_to = client.receiver(None, dynamic=True)
    ready = _poll(net, lambda: bool(reply_to.address), 30) and ready
    sender, credit = _ready_sender(net, mesh, client_at, address)
    tags = [sender.send(Message(body=f"request {i}", reply_to=reply_to.address)) for i in range(count)]
    answered: List[str] = []

    def serve() -> bool:
        for got in requests.received[len(answered):]:
            answered.append(answer.send(Message(address=got.message.reply_to, body=f"re {got.message.body}")))
        return len(set(reply_to.bodies())) >= count and all(t in sender.outcomes for t in tags)
    _poll(net, serve, OUTCOME_TIMEOUT)
    counts = _settle(net, sender, tags)
    replies = _settle(net, answer, answered)
    counts.update(ready=int(ready and credit), replies=len(set(reply_to.bodies())),
                  replies_released=replies["released"] + replies["modified"] + replies["none"])
    return counts


def management(mesh: GenMesh, asked: str, about: str) -> Counts:
    """router.node of ``about``, asked through ``asked``: answered by qdmesh's
    ManagementClient (and its table: id -> next hop, cost) and by qdrouterd's qdmanage."""
    counts: Counts = {"answered": 0, "table": None, "answered_qdmanage": 0}
    try:
        with ManagementClient(mesh.url(asked)[len("amqp://"):], timeout=10, router=about) as client:
            rows = client.query(NODE_TYPE, ["id", "nextHop", "cost"])
        counts["answered"] = 1
        counts["table"] = sorted([str(r["id"]), str(r["nextHop"]), r["cost"]] for r in rows)
    except Exception as error:  # counted, not raised: the other mesh may answer
        counts["error"] = str(error)[:200]
    done = upstream_tool("qdmanage", mesh[asked].port, "-r", about, "query", "--type", "router.node", "id")
    if done.returncode == 0:
        counts["answered_qdmanage"] = int(len(json.loads(done.stdout)) == len(mesh.spec.interiors))
    return counts


class Stream:
    """Keeps ``window`` unsettled messages in flight from ``sender``."""

    def __init__(self, net: Net, sender: SenderLink, address: str, window: int = 10) -> None:
        self.net, self.sender, self.address, self.window = net, sender, address, window
        self.sent: Dict[str, str] = {}

    def run(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            unsettled = sum(t not in self.sender.outcomes for t in self.sent)
            for _ in range(max(0, min(self.window - unsettled, self.sender.credit))):
                body = f"{self.address} #{len(self.sent)}"
                self.sent[self.sender.send(msg(body))] = body
            self.net.pump(0.05)


def kill_restart(net: Net, mesh: GenMesh, producer: str, consumer: str, victim: str, address: str) -> Counts:
    """A stream from ``producer`` to ``consumer`` while ``victim`` is killed (SIGKILL) and
    started again: no message without an outcome, none accepted and not received, and a last
    batch accepted once the mesh has healed. How many were released meanwhile depends on
    timing, so it is shown (``during``) but not compared."""
    receiver: ReceiverLink = net.connect(mesh.url(consumer)).receiver(address)
    ready = _poll(net, lambda: consumers_known(mesh, address, [consumer]))
    sender, credit = _ready_sender(net, mesh, producer, address)
    stream = Stream(net, sender, address)
    stream.run(2.0)
    mesh.kill(victim)
    stream.run(4.0)
    mesh.start_router(victim)
    healed = _poll(net, lambda: mesh.converged() and consumers_known(mesh, address, [consumer]), 90)
    stream.run(1.0)
    tail = [sender.send(msg(f"{address} tail {i}")) for i in range(10)]
    tail_counts = _settle(net, sender, tail)
    counts = _settle(net, sender, list(stream.sent))
    accepted = _accepted_bodies(sender, stream.sent)
    _poll(net, lambda: set(accepted) <= set(receiver.bodies()), 10)
    seen = set(receiver.bodies())
    return {"ready": int(ready and credit), "healed": int(healed), "none": counts["none"],
            "lost": sum(b not in seen for b in accepted), "tail_accepted": tail_counts["accepted"],
            "during": f"{len(stream.sent)} sent, {counts['accepted']} acc, "
                      f"{counts['released'] + counts['modified']} rel/mod"}


def run_checks(net: Net, mesh: GenMesh, plan: Plan) -> Results:
    """Every check of ``plan`` on ``mesh`` (already started), keyed by a name that is the
    same in both meshes of a seed."""
    (cp, cc), (bp, bc), (rc, rs) = plan.closest, plan.balanced, plan.request
    asked, about = plan.management
    checks: Dict[str, Callable[[], Counts]] = {
        "converged": lambda: {"ready": int(wait_ready(net, mesh))},
        f"closest {cp}->{cc}": lambda: anycast(net, mesh, cp, cc, f"closest/gen-{cp}-{cc}"),
        f"balanced {bp}->{bc}": lambda: anycast(net, mesh, bp, bc, f"balanced/gen-{bp}-{bc}"),
        f"multicast {plan.multicast_from}->{','.join(plan.multicast_to)}": lambda: multicast(
            net, mesh, plan.multicast_from, plan.multicast_to, f"multicast/gen-{plan.multicast_from}"),
        f"request {rc}->{rs}": lambda: request_response(net, mesh, rc, rs, f"closest/svc-{rs}"),
        f"management {asked}->{about}": lambda: management(mesh, asked, about),
    }
    if plan.kill is not None:
        kp, kc, victim = plan.kill
        checks[f"kill {victim} under {kp}->{kc}"] = lambda: kill_restart(net, mesh, kp, kc, victim,
                                                                         f"closest/kill-{kp}-{kc}")
    results: Results = {}
    for name, check in checks.items():
        started = time.monotonic()
        results[name] = check()
        results[name]["seconds"] = round(time.monotonic() - started, 1)  # shown, not compared
    return results


AT_LEAST = ("ready", "healed", "accepted", "received", "replies", "answered", "answered_qdmanage",
            "tail_accepted")
AT_MOST = ("released", "modified", "rejected", "none", "duplicates", "lost", "replies_released")


def compare(mixed: Results, all_c: Results) -> List[str]:
    """What the mixed mesh did worse than the all-C mesh: fewer accepted, received, answered;
    more released, modified, refused, lost or duplicated; other multicast copies per receiver
    or another management table. Empty: no worse."""
    worse = []
    for check, theirs in all_c.items():
        ours = mixed.get(check, {})
        for key, value in theirs.items():
            mine = ours.get(key)
            if key in AT_LEAST and not (isinstance(mine, int) and mine >= value):  # type: ignore[operator]
                worse.append(f"{check}: {key} {mine} < all-C {value}")
            elif key in AT_MOST and not (isinstance(mine, int) and mine <= value):  # type: ignore[operator]
                worse.append(f"{check}: {key} {mine} > all-C {value}")
            elif (key.startswith("copies@") or key == "table") and mine != value:
                worse.append(f"{check}: {key} {mine} != all-C {value}")
    return worse


@dataclass
class SeedRun:
    """One seed's mixed mesh and all-C mesh, the checks' counts on each, and the verdict."""
    spec: MeshSpec
    plan: Plan
    results: Dict[str, Results]
    worse: List[str]
    stop_errors: List[str]
    seconds: float

    @property
    def ok(self) -> bool:
        return not self.worse and not self.stop_errors


def _run_mesh(mesh: GenMesh, plan: Plan) -> Results:
    mesh.start()
    net = Net()
    try:
        return run_checks(net, mesh, plan)
    finally:
        net.close()


def run_seed(workdir: Path, seed: int, kill: bool = False, **generate_args: Any) -> SeedRun:
    """Generate ``seed``'s mesh; start it and its all-C twin and run the checks on both at once
    (a thread and a client event loop each); stop both whatever happens, and compare."""
    started = time.monotonic()
    spec = generate(seed, **generate_args)
    plan = plan_for(spec, kill)
    meshes = build_pair(workdir, spec)
    stop_errors: List[str] = []
    with ThreadPoolExecutor(len(meshes)) as pool:
        futures = {kind: pool.submit(_run_mesh, mesh, plan) for kind, mesh in meshes.items()}
        try:
            results = {kind: future.result() for kind, future in futures.items()}
        finally:
            wait(list(futures.values()))
            for kind, errors in zip(meshes, pool.map(GenMesh.stop, meshes.values())):
                stop_errors += [f"{kind} {error}" for error in errors]
    return SeedRun(spec, plan, results, compare(results["mixed"], results["all-c"]), stop_errors,
                   time.monotonic() - started)
