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


@pytest.mark.timeout(600)
def test_hold(broker: RabbitBroker, router_factory: RouterFactory) -> None:
    routers = [router_factory(router_id="A"), router_factory(router_id="B")]
    assert broker.proc is not None
    report = {"run": os.environ["QDMESH_TEST_RUN"], "pytest": os.getpid(),
              "broker": broker.proc.pid, "routers": [r.pid for r in routers]}
    Path(os.environ["QDMESH_HOLD_REPORT"]).write_text(json.dumps(report))
    time.sleep(600)          # until the outer test stops this run
