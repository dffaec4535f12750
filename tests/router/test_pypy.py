"""The router on PyPy (Python 3.9), where it reaches its throughput targets: it must keep
starting and routing there, and it runs with the GC nursery it needs (qdrouter/tuning/pypy_gc.py).

PyPy comes from .ci/setup.d/15-pypy.sh: a venv with python-qpid-proton only; the router is
this checkout's, through PYTHONPATH (routerproc.router_env).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Dict

import pytest
from proton import symbol

from tests.prerequisites import require
from tests.router_http.scrape import interpreter, router_info, scrape

from .amqpclient import Net, msg, send_and_settle
from .routerproc import Router, RouterFactory, build_proton_shim

PYPY_VENV = Path(os.environ.get("QDMESH_PYPY_VENV")
                 or Path(os.environ.get("QDMESH_CACHE") or Path.home() / ".cache/qdmesh") / "pypy-venv")
PYPY = PYPY_VENV / "bin" / "python"


@pytest.fixture
def pypy_router(router_factory: RouterFactory, monkeypatch: pytest.MonkeyPatch) -> RouterFactory:
    """``router_factory``, with routers started by PyPy's ``qdrouterd`` entry point."""
    require(PYPY.exists(), f"a PyPy venv with python-qpid-proton at {PYPY_VENV} (.ci/setup.d/15-pypy.sh)")
    build = build_proton_shim(str(PYPY))
    assert build.returncode == 0, f"the proton shim does not build for PyPy:\n{build.stderr[-3000:]}"
    monkeypatch.setenv("QDROUTER_TEST_CMD", f"{PYPY} -m qdrouter")
    monkeypatch.delenv("PYPY_GC_NURSERY", raising=False)
    return router_factory


def process_environment(router: Router) -> Dict[str, str]:
    raw = Path(f"/proc/{router.pid}/environ").read_bytes()
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {key.decode(): value.decode() for key, value in pairs}


def process_executable(router: Router) -> str:
    return os.readlink(f"/proc/{router.pid}/exe")


def test_router_on_pypy_routes_unsettled_and_presettled(pypy_router: RouterFactory, net: Net) -> None:
    router = pypy_router()
    assert "pypy" in process_executable(router), "the router under test must be PyPy"
    receiver = net.connect(router.url).receiver("closest.pypy")
    sender = net.connect(router.url).sender("closest.pypy")
    outcomes = send_and_settle(net, sender, [msg(f"m{i}") for i in range(200)], timeout=30)
    assert [o.name for o in outcomes] == ["accepted"] * 200
    presettled = net.connect(router.url).sender("closest.pypy", presettled=True)
    net.wait(lambda: presettled.credit > 0, 10, "credit for the pre-settled sender")
    for i in range(20):
        presettled.send(msg(f"p{i}"))
    net.wait(lambda: len(receiver.received) == 220, 20, "all 220 messages at the receiver")
    assert receiver.bodies() == [f"m{i}" for i in range(200)] + [f"p{i}" for i in range(20)]
    assert [r.arrived_settled for r in receiver.received] == [False] * 200 + [True] * 20


def test_qdrouterd_on_pypy_sets_the_router_nursery(pypy_router: RouterFactory, net: Net) -> None:
    """PyPy reads its nursery size only at start-up: qdrouterd re-executes itself (same pid,
    so pid files and supervisors are unaffected) with PYPY_GC_NURSERY set, and serves."""
    router = pypy_router()
    assert process_environment(router).get("PYPY_GC_NURSERY") == "32MB"
    receiver = net.connect(router.url).receiver("closest.nursery")
    sender = net.connect(router.url).sender("closest.nursery")
    assert [o.name for o in send_and_settle(net, sender, [msg("after re-exec")])] == ["accepted"]
    assert receiver.bodies() == ["after re-exec"]


def test_reexec_keeps_the_command_line_with_interpreter_options(pypy_router: RouterFactory,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QDROUTER_TEST_CMD", f"{PYPY} -u -m qdrouter")
    router = pypy_router()
    command_line = Path(f"/proc/{router.pid}/cmdline").read_bytes().split(b"\0")[:-1]
    # The tests' routers stop at once (--drain-timeout 0, tests/router/routerproc.py).
    assert [part.decode() for part in command_line] == [str(PYPY), "-u", "-m", "qdrouter", "-c",
                                                        str(router.config_path), "--drain-timeout", "0"]
    assert process_environment(router).get("PYPY_GC_NURSERY") == "32MB"


def test_a_nursery_chosen_by_the_user_is_kept(pypy_router: RouterFactory,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYPY_GC_NURSERY", "8MB")
    router = pypy_router()
    assert process_environment(router).get("PYPY_GC_NURSERY") == "8MB"


def test_router_on_pypy_lengthens_jit_traces_unless_told(pypy_router: RouterFactory,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """qdrouter/tuning/pypy_jit.py: the router's trace limit, said at start; a --jit option of the
    user's wins (the router then leaves the JIT alone, and says nothing)."""
    router = pypy_router()
    assert "PyPy JIT: trace_limit=12000" in router.stderr_text()
    monkeypatch.setenv("QDROUTER_TEST_CMD", f"{PYPY} --jit trace_limit=9000 -m qdrouter")
    chosen = pypy_router()
    command_line = Path(f"/proc/{chosen.pid}/cmdline").read_bytes().split(b"\0")
    assert b"trace_limit=9000" in command_line
    assert "PyPy JIT:" not in chosen.stderr_text()


def test_metrics_say_the_router_runs_on_pypy(pypy_router: RouterFactory) -> None:
    router = pypy_router(extra_listeners={"http": {"http": "true"}})
    samples = scrape(router.ports["http"])
    assert interpreter(samples).startswith("PyPy 3.")
    assert router_info(samples)["proton_shim"] == "compiled"


def test_router_on_pypy_without_the_compiled_shim_routes(pypy_router: RouterFactory, net: Net,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the compiled shim the router reads its sockets in Python, and PyPy 3.9 has no
    os.readv: it must start and route all the same, large messages (several reads) too."""
    monkeypatch.setenv("QDROUTER_PROTON_SHIM", "off")
    router = pypy_router(extra_listeners={"http": {"http": "true"}})
    assert router_info(scrape(router.ports["http"]))["proton_shim"] == "fallback"
    receiver = net.connect(router.url).receiver("closest.fallback")
    sender = net.connect(router.url).sender("closest.fallback")
    bodies = [f"m{i}" for i in range(100)] + ["x" * 700_000]
    outcomes = send_and_settle(net, sender, [msg(body) for body in bodies], timeout=30)
    assert [o.name for o in outcomes] == ["accepted"] * 101
    assert receiver.bodies() == bodies


# On PyPy the fast path keeps a pre-settled message without router annotations in its read
# arena until the send, instead of in bytes (amqp/data_path/deliveries.py); these cover what differs.

def test_presettled_messages_more_than_the_arena_holds_arrive_whole(pypy_router: RouterFactory,
                                                                    net: Net) -> None:
    """Five producers, 40 pre-settled messages of 60 KiB each, sent while the router is
    stopped: when it goes on, one loop turn reads more than the arena's 1 MiB (256 KiB per
    producer), so the fast path flushes the sends it holds before reading on. Every message
    arrives whole, each producer's in order."""
    router = pypy_router()
    receiver = net.connect(router.url).receiver("closest.arena", credit=400)
    senders = [net.connect(router.url).sender("closest.arena", presettled=True) for _ in range(5)]
    net.wait(lambda: all(s.credit >= 40 for s in senders), 10, "credit for every producer")

    def body(producer: int, index: int) -> str:
        return f"{producer}:{index}:" + chr(65 + (producer * 7 + index) % 26) * 60_000

    os.kill(router.pid, signal.SIGSTOP)
    try:
        for index in range(40):
            for producer, sender in enumerate(senders):
                sender.send(msg(body(producer, index)))
        net.pump(1.0)  # into the sockets' buffers, while the router cannot read
    finally:
        os.kill(router.pid, signal.SIGCONT)
    net.wait(lambda: len(receiver.received) == 200, 60, "all 200 messages at the receiver")
    bodies = receiver.bodies()
    for producer in range(5):
        assert [b for b in bodies if b.startswith(f"{producer}:")] == [body(producer, i) for i in range(40)]
    assert all(r.arrived_settled for r in receiver.received)


def test_presettled_multicast_copies_share_the_arena_bytes(pypy_router: RouterFactory, net: Net) -> None:
    router = pypy_router()
    receivers = [net.connect(router.url).receiver("multicast.arena") for _ in range(3)]
    sender = net.connect(router.url).sender("multicast.arena", presettled=True)
    net.wait(lambda: sender.credit > 0, 10, "credit for the multicast sender")
    for index in range(200):
        sender.send(msg(f"tick {index}"))
    net.wait(lambda: all(len(r.received) == 200 for r in receivers), 20, "200 copies at each receiver")
    for receiver in receivers:
        assert receiver.bodies() == [f"tick {index}" for index in range(200)]


def test_presettled_messages_held_for_credit_or_annotated_keep_their_bytes(pypy_router: RouterFactory,
                                                                           net: Net) -> None:
    """A consumer granting 5 credits at a time: most messages wait in the router for credit
    (made into bytes, out of the arena, which is reused meanwhile). Every other message
    carries message annotations (not the arena's kind at all). All arrive intact, in order."""
    router = pypy_router()
    receiver = net.connect(router.url).receiver("closest.held", credit=5)
    sender = net.connect(router.url).sender("closest.held", presettled=True)
    net.wait(lambda: sender.credit > 0, 10, "credit for the producer")
    for index in range(300):
        annotations = {symbol("x-opt-app.n"): index} if index % 2 else None
        sender.send(msg(f"held {index}", annotations=annotations))
    net.wait(lambda: len(receiver.received) == 300, 30, "all 300 messages at the receiver")
    assert receiver.bodies() == [f"held {index}" for index in range(300)]
    assert [r.message.annotations for r in receiver.received][:4] == [
        None, {symbol("x-opt-app.n"): 1}, None, {symbol("x-opt-app.n"): 3}]
