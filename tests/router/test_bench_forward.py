"""bench/loadgen/qdm-forward, the C forwarder bench/run.py --forward measures as a reference for
a router on proton's engine: it must pass every message on unchanged and in order, give the
producer exactly its window of credit and no more while the consumer takes nothing (so what it
holds stays bounded, as a router's does), carry each unsettled message's outcome back to its
producer, and release what a departing consumer left unsettled."""

from __future__ import annotations

import json
import os
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
from proton import Message

from tests.prerequisites import require

from .amqpclient import ACCEPTED, REJECTED, RELEASED, Net
from .test_bench_loadgen import proton_c_dev_installed

BUILD_FORWARD = Path(__file__).resolve().parents[2] / "bench" / "loadgen" / "build-forward.sh"
WINDOW = 20


@pytest.fixture(scope="module")
def forward_binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require(proton_c_dev_installed(),
            "proton-C's headers and pkg-config (libqpid-proton11-dev) for bench/loadgen")
    out = tmp_path_factory.mktemp("forward") / "qdm-forward"
    env = {**os.environ, "OUT": str(out), "CFLAGS": "-O2 -Werror"}
    subprocess.run(["sh", str(BUILD_FORWARD), "--system"], check=True, capture_output=True, text=True,
                   env=env)
    return out


@contextmanager
def running_forwarder(binary: Path, window: int = WINDOW) -> Iterator[str]:
    """The forwarder on a free port, as a URL; it must still run at the end, and stop cleanly."""
    proc = subprocess.Popen([str(binary), "-l", "127.0.0.1:0", "-w", str(window)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())
        assert ready["event"] == "ready"
        yield f"amqp://127.0.0.1:{ready['port']}"
        assert proc.poll() is None, "the forwarder must keep running"
    finally:
        proc.terminate()
        assert proc.wait(5) == 0


def test_pre_settled_messages_pass_unchanged_and_in_order(forward_binary: Path, net: Net) -> None:
    with running_forwarder(forward_binary) as url:
        rcv = net.connect(url).receiver("bench/q", credit=50)
        snd = net.connect(url).sender("bench/q", presettled=True)
        messages = [Message(body=f"m{i}", properties={"n": i}) for i in range(1000)]
        for m in messages:
            snd.send(m)
        net.wait(lambda: len(rcv.received) == 1000, 20, "all 1000 messages through the forwarder")
        assert [(r.message.body, r.message.properties) for r in rcv.received] == \
            [(m.body, m.properties) for m in messages]
        assert [r.raw for r in rcv.received] == [m.encode() for m in messages]
        assert all(r.arrived_settled for r in rcv.received)


def test_the_producer_gets_its_window_and_no_more_while_the_consumer_takes_nothing(
        forward_binary: Path, net: Net) -> None:
    with running_forwarder(forward_binary) as url:
        rcv = net.connect(url).receiver("bench/q", credit=0, refill=False)
        snd = net.connect(url).sender("bench/q", presettled=True)
        net.wait(lambda: snd.credit == WINDOW, 10, "the producer's window")
        for i in range(WINDOW * 3):
            snd.send(Message(body=i))
        net.pump(1.0)
        # The forwarder holds one window's worth; two windows wait at the producer (proton
        # counts them as credit below zero).
        assert snd.max_credit_seen == WINDOW
        assert snd.credit == -2 * WINDOW and len(rcv.received) == 0
        rcv.flow(WINDOW * 3)
        net.wait(lambda: len(rcv.received) == WINDOW * 3, 10, "every message once the consumer asks")
        assert rcv.bodies() == list(range(WINDOW * 3))
        assert snd.max_credit_seen == WINDOW


def test_each_unsettled_message_gets_its_consumers_outcome(forward_binary: Path, net: Net) -> None:
    with running_forwarder(forward_binary) as url:
        rcv = net.connect(url).receiver("bench/q", credit=50, settle=None)
        snd = net.connect(url).sender("bench/q")
        for i in range(3):
            snd.send(Message(body=i))
        net.wait(lambda: len(rcv.unsettled) == 3, 10, "three unsettled deliveries at the consumer")
        net.pump(0.3)
        assert snd.settled_count() == 0, "no outcome before the consumer's"
        rcv.settle_unsettled(ACCEPTED, count=1)
        rcv.settle_unsettled(REJECTED, count=1)
        rcv.settle_unsettled(RELEASED, count=1)
        net.wait(snd.all_settled, 10, "the three outcomes at the producer")
        assert [snd.outcomes[tag].name for tag in snd.tags] == ["accepted", "rejected", "released"]


def test_a_consumer_that_leaves_has_its_unsettled_messages_released(forward_binary: Path, net: Net) -> None:
    with running_forwarder(forward_binary) as url:
        rcv = net.connect(url).receiver("bench/q", credit=5, refill=False, settle=None)
        snd = net.connect(url).sender("bench/q")
        for i in range(5):
            snd.send(Message(body=i))
        net.wait(lambda: len(rcv.unsettled) == 5, 10, "five unsettled deliveries at the consumer")
        rcv.close()
        net.wait(snd.all_settled, 10, "the outcomes of what the consumer held")
        assert snd.outcome_counts() == {"released": 5}


def refusal(binary: Path, *args: str) -> str:
    """What the forwarder says when it refuses to start with ``args`` (exit code 1)."""
    done = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=5)
    assert done.returncode == 1, done
    return done.stderr


def test_usage_mistakes_are_named(forward_binary: Path) -> None:
    assert "usage: qdm-forward -l HOST:PORT [-w WINDOW]" in refusal(forward_binary, "-w", "10")
    assert "invalid window: 'none'" in refusal(forward_binary, "-l", "127.0.0.1:0", "-w", "none")
    assert "invalid window: '0'" in refusal(forward_binary, "-l", "127.0.0.1:0", "-w", "0")
