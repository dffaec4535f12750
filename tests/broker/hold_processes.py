"""Not collected by default (no ``test_`` prefix): tests/broker/test_reaper.py runs it in a pytest
of its own, which it then interrupts or kills. It starts what a real run starts (a RabbitMQ
node with its epmd, two routers), says so in a file, and waits to be stopped."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.broker.rabbit import RabbitBroker
from tests.router.routerproc import RouterFactory


# tests/broker/test_reaper.py's timeout case sets a short timeout, with pytest-timeout's
# thread method, which ends pytest with os._exit: no teardown at all.
@pytest.mark.timeout(int(os.environ.get("QDMESH_HOLD_TIMEOUT", "600")),
                     method=os.environ.get("QDMESH_HOLD_TIMEOUT_METHOD", "signal"))
def test_hold(broker: RabbitBroker, router_factory: RouterFactory) -> None:
    routers = [router_factory(router_id="A"), router_factory(router_id="B")]
    assert broker.proc is not None
    report = {"run": os.environ["QDMESH_TEST_RUN"], "pytest": os.getpid(),
              "broker": broker.proc.pid, "routers": [r.pid for r in routers]}
    Path(os.environ["QDMESH_HOLD_REPORT"]).write_text(json.dumps(report))
    time.sleep(600)          # until the outer test stops this run
