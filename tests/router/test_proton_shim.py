"""The router says which proton shim its data path runs on, and routes on either: the
compiled one (built with the package, and for this checkout by tests/conftest.py) or its
Python fallback. The other data-path modules run on both too (conftest.BOTH_PROTON_SHIMS)."""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig

from tests.prerequisites import require

from .amqpclient import ACCEPTED, Net, msg, send_and_settle
from .routerproc import Router, RouterFactory, build_proton_shim


def test_the_shim_builds_for_this_interpreter() -> None:
    require(can_compile(), "a C compiler and Python's headers (Debian: gcc, python3-dev)")
    build = build_proton_shim(sys.executable)
    assert build.returncode == 0, f"proton_shim_build.py failed:\n{build.stderr[-3000:]}"


def can_compile() -> bool:
    headers = os.path.join(sysconfig.get_paths()["include"], "Python.h")
    return bool(shutil.which("cc") or shutil.which("gcc")) and os.path.exists(headers)


def test_the_router_logs_which_shim_it_runs_on(router: Router, proton_shim: str) -> None:
    log = router.stderr_text()
    if proton_shim == "compiled":
        assert "Data path: proton shim (compiled)" in log, log
        assert "fallback" not in log, log
    else:
        assert "Data path: the proton shim's Python fallback (QDROUTER_PROTON_SHIM is off)" in log, log


def test_a_batch_of_many_events_routes_every_message(router_factory: RouterFactory, net: Net) -> None:
    """More deliveries arrive in one read than one batch of events holds (256): every message
    still arrives in order, and every outcome gets back."""
    router = router_factory()
    receiver = net.connect(router.url).receiver("closest.batch", credit=2000)
    sender = net.connect(router.url).sender("closest.batch")
    net.wait(lambda: sender.credit > 0, 10, "credit")
    outcomes = send_and_settle(net, sender, [msg(f"m{i}") for i in range(1500)], timeout=30)
    assert [o.state for o in outcomes] == [ACCEPTED] * 1500
    assert receiver.bodies() == [f"m{i}" for i in range(1500)]
