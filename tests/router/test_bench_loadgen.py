"""bench/loadgen's C load generators, which every figure in bench/README.md rests on: they
speak correct AMQP to an independent stack (each of bench/interop_check.py's checks, with
python-qpid-proton peers), and through a real router the receiver counts every message once
and summarises its latencies consistently."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from tests.prerequisites import require

from .routerproc import Router

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import interop_check  # noqa: E402
from measure import RECV, SEND, ensure_built  # noqa: E402


def proton_c_dev_installed() -> bool:
    if shutil.which("pkg-config") is None or (shutil.which("cc") or shutil.which("gcc")) is None:
        return False
    return any(
        subprocess.run(["pkg-config", "--exists", package], capture_output=True).returncode == 0
        for package in ("libqpid-proton-proactor", "libqpid-proton")
    )


@pytest.fixture(scope="module")
def load_generators() -> None:
    require(proton_c_dev_installed(),
            "proton-C's headers and pkg-config (libqpid-proton11-dev) for bench/loadgen")
    ensure_built(False)


@pytest.mark.parametrize("check", list(interop_check.CHECKS.values()), ids=list(interop_check.CHECKS))
def test_load_generators_interoperate_with_python_qpid_proton(load_generators: None,
                                                              check: Callable[[], None]) -> None:
    check()



def test_unsettled_run_through_a_router_counts_and_summarises_every_message(
        load_generators: None, router: Router) -> None:
    count = 3000
    target = f"127.0.0.1:{router.port}"
    receiver = interop_check.start(
        [str(RECV), "-c", target, "-a", "closest/loadgen", "-m", str(count), "-w", "200", "-t", "60"])
    try:
        assert receiver.stdout is not None
        assert json.loads(receiver.stdout.readline())["event"] == "ready"
        sender = interop_check.finish(interop_check.start(
            [str(SEND), "-c", target, "-a", "closest/loadgen", "-m", str(count), "-t", "60"]))
        result = interop_check.finish(receiver)
    finally:
        if receiver.poll() is None:
            receiver.kill()
    assert sender["_exit"] == 0 and sender["sent"] == count and sender["accepted"] == count, sender
    assert result["_exit"] == 0, result["_stderr"]
    assert result["messages"] == count and result["unsettled"] == count and result["presettled"] == 0
    assert result["invalid"] == 0 and result["no_timestamp"] == 0
    assert 0 <= result["p50_us"] <= result["p90_us"] <= result["p99_us"] <= result["max_us"], result
    assert 0 < result["mean_us"] <= result["max_us"], result
    assert result["msgs_per_sec"] > 0 and result["seconds"] > 0, result
